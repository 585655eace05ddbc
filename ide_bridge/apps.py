from __future__ import annotations

from django.apps import AppConfig


class IdeBridgeConfig(AppConfig):
    name = "ide_bridge"
    verbose_name = "IDE bridge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The study layer asks for deletions and extra export tables/metrics through signals
        # and registries, because it must not import this app. (Imported here: this module
        # loads before the app registry is ready.)
        from ide_bridge import data_removal, metrics
        from ide_bridge.telemetry import exports
        from study import signals

        signals.participant_data_deleted.connect(
            data_removal.delete_participant_data, dispatch_uid="ide-delete-participant-data"
        )
        signals.telemetry_purge_requested.connect(
            data_removal.purge_telemetry, dispatch_uid="ide-purge-telemetry"
        )
        exports.register_export_tables()
        metrics.register()
