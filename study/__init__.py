"""The human study: participants, consent, questionnaires, schedule, assignment, trials."""
