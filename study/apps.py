from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class StudyConfig(AppConfig):
    name = "study"
    verbose_name = "Study"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: this module loads before the app registry is ready.
        from allauth.mfa.signals import authenticator_added
        from django.db.models.signals import post_migrate

        from study.exports import tables, tables_questionnaires
        from study.researchers.mfa import remember_set_up
        from study.results.consumers import connect_monitor_signals

        post_migrate.connect(_sync_groups, sender=self, dispatch_uid="study-sync-groups")
        # The study's own export tables (ide_bridge registers its tables in its ready()).
        tables.register_tables()
        tables_questionnaires.register_tables()
        # Push "something changed" to open live monitors (they also poll, for the default run).
        connect_monitor_signals()
        # A researcher who just set up TOTP (with a code) stays signed in (researchers/mfa.py).
        authenticator_added.connect(remember_set_up, dispatch_uid="study-mfa-set-up")


def _sync_groups(sender: AppConfig, **kwargs: Any) -> None:
    from study.researchers.roles import sync_researcher_group  # needs the loaded models

    sync_researcher_group(using=kwargs.get("using", "default"))
