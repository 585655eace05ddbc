"""The study's admin pages live in their capability packages; Django's admin autodiscovery
imports this module, which imports each of them so they register their models."""

from __future__ import annotations

from study.audit import admin as audit_admin
from study.configuration import admin as configuration_admin
from study.enrolment import admin as enrolment_admin
from study.questionnaires import admin as questionnaires_admin
from study.researchers import admin as researchers_admin
from study.trials import admin as trials_admin

__all__ = [
    "audit_admin",
    "configuration_admin",
    "enrolment_admin",
    "questionnaires_admin",
    "researchers_admin",
    "trials_admin",
]
