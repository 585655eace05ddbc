"""The participant's coding environment: editor, AI gateway, telemetry, submissions."""
