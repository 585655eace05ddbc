"""Settings split by environment: ``base`` (env-driven), ``dev``, ``test``, ``production``."""
