from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class StudyConfig(AppConfig):
    name = "study"
    verbose_name = "Study"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_sync_groups, sender=self, dispatch_uid="study-sync-groups")

        # A typed consent name is personal data: it goes to the encrypted vault only.
        from study import consent
        from study.vault.services import add_typed_consent_name

        consent.typed_name_sink = add_typed_consent_name

        # Push "something changed" to open live monitors (they also poll, for the default run).
        from study.consumers import connect_monitor_signals

        connect_monitor_signals()


def _sync_groups(sender: AppConfig, **kwargs: Any) -> None:
    from study.roles import sync_researcher_group

    sync_researcher_group(using=kwargs.get("using", "default"))
