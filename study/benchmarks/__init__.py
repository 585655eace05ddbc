"""Researcher pages of the LLM arm: sweeps (start, follow, inspect runs, C1 interventions) and
the leaderboard, with a study's human conditions beside the models."""
