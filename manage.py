#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # Configuration errors are the operator's to fix: one clear sentence, no traceback.
        sys.stderr.write(f"Configuration error: {exc}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
