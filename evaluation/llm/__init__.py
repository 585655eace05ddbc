"""The LLM arm: model endpoints and their client, the agent harness, sweeps, template
validation and expert review. It knows nothing about participants."""
