"""The ``researcher`` group and the permissions it carries.

Researchers are staff users in this group. Each feature that researchers use adds its
permissions to ``RESEARCHER_PERMISSIONS``; ``migrate`` keeps the group in step.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.db import transaction

RESEARCHER_GROUP = "researcher"

# "app_label.codename" of every permission researchers hold.
RESEARCHER_PERMISSIONS: tuple[str, ...] = (
    "study.view_user",
    # Study configuration (researchers only see studies they are on; see study.access).
    *(
        f"study.{verb}_{model}"
        for verb in ("view", "add", "change")
        for model in (
            "study",
            "track",
            "arm",
            "taskpoolentry",
            "consentform",
            "questionnaire",
            "questionnaireversion",
            "item",
        )
    ),
    *(f"study.{verb}_{model}" for verb in ("view", "add", "change") for model in ("participant",)),
    "study.view_configsnapshot",
    "study.view_withdrawal",
    "study.view_retentionpolicy",
    "study.change_retentionpolicy",
    "study.view_consentevent",
    "study.view_response",
    "study.view_answer",
    "study.delete_track",
    "study.delete_arm",
    "study.delete_taskpoolentry",
    "study.delete_item",
    # The IDE's telemetry and integrity flags (read-only admin pages, replay).
    "ide_bridge.view_trialevent",
    "ide_bridge.view_integrityflag",
    "ide_bridge.view_airequest",
    # The evaluation engine's records.
    *(
        f"evaluation.view_{model}"
        for model in (
            "tasktemplate",
            "taskinstance",
            "calibration",
            "submission",
            "evaluation",
        )
    ),
    # Expert review of task instances (study.reviews): read and give ratings.
    *(f"evaluation.{verb}_expertrating" for verb in ("view", "add", "change")),
    # The LLM arm (study.benchmarks): see sweeps and their runs, start sweeps, add C1 notes.
    *(
        f"evaluation.view_{model}"
        for model in ("modelendpoint", "dataset", "sweep", "agentrun", "agentrequest")
    ),
    *(f"evaluation.{verb}_{model}" for verb in ("view", "add") for model in ("intervention",)),
    "evaluation.add_sweep",
    # Model endpoints (evaluation admin): configure them and test their connection.
    "evaluation.add_modelendpoint",
    "evaluation.change_modelendpoint",
    # Template validation results (read-only admin pages).
    "evaluation.view_templatevalidation",
    "evaluation.view_templatestatus",
)
# Deliberately NOT here: reading the vault ("study.view_vault", contact and compensation data)
# and the audit log ("study.view_auditevent"); give those to the study coordinator only.


def sync_researcher_group(using: str = "default") -> Group:
    """Create the group if needed and give it exactly ``RESEARCHER_PERMISSIONS``."""
    with transaction.atomic(using=using):
        group, _ = Group.objects.using(using).get_or_create(name=RESEARCHER_GROUP)
        wanted: list[Permission] = []
        for dotted in RESEARCHER_PERMISSIONS:
            app_label, codename = dotted.split(".", 1)
            wanted.extend(
                Permission.objects.using(using).filter(
                    content_type__app_label=app_label, codename=codename
                )
            )
        group.permissions.set(wanted)
    return group
