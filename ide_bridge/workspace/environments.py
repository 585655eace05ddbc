"""Where a participant works on a trial: one backend per value of the arm's ``ide`` setting.

Every backend implements the same four steps (ide.md §1):

- ``provision(trial)``: prepare the environment before the participant is sent to it;
- ``launch_url(trial)``: the URL the participant opens to work;
- ``collect(trial)``: the participant's current files (what a submission would contain);
- ``teardown(trial)``: release whatever ``provision`` created, once the trial is closed.

Only the in-browser editor is implemented. An arm configured for an environment that this
installation cannot provide gets a clear refusal (``EnvironmentUnavailable``), never a stub
that pretends to work: the trial is then not started.
"""

from __future__ import annotations

import abc

from django.urls import reverse

from study.models import Arm, Trial
from study.trials.files import current_files

__all__ = [
    "BrowserEnvironment",
    "Environment",
    "EnvironmentUnavailable",
    "get_environment",
]


class EnvironmentUnavailable(Exception):
    """The arm's environment cannot be provided on this installation (message is for people)."""


class Environment(abc.ABC):
    """The interface every environment backend implements."""

    ide: str

    @abc.abstractmethod
    def provision(self, trial: Trial) -> None:
        """Prepare the environment (idempotent: reopening a trial calls it again)."""

    @abc.abstractmethod
    def launch_url(self, trial: Trial) -> str:
        """Where the participant works on ``trial``."""

    @abc.abstractmethod
    def collect(self, trial: Trial) -> dict[str, str]:
        """The participant's current editable files (path -> text, every editable path)."""

    @abc.abstractmethod
    def teardown(self, trial: Trial) -> None:
        """Release the environment after the trial closed (idempotent)."""


class BrowserEnvironment(Environment):
    """The Monaco workspace served by this app. Its files derive from the trial's instance
    (deterministic in template and seed) plus the autosaved editable files, so there is
    nothing to create or delete."""

    ide = Arm.IDE.BROWSER

    def provision(self, trial: Trial) -> None:
        return None

    def launch_url(self, trial: Trial) -> str:
        return reverse("ide_bridge:workspace", args=[trial.pk])

    def collect(self, trial: Trial) -> dict[str, str]:
        return current_files(trial)

    def teardown(self, trial: Trial) -> None:
        return None


ENVIRONMENTS: dict[str, Environment] = {Arm.IDE.BROWSER: BrowserEnvironment()}

UNAVAILABLE: dict[str, str] = {
    Arm.IDE.CODESPACES: "Codespaces trials are not available on this installation.",
}


def get_environment(ide: str) -> Environment:
    """The backend for an arm's ``ide`` value; ``EnvironmentUnavailable`` if there is none."""
    try:
        return ENVIRONMENTS[ide]
    except KeyError:
        message = UNAVAILABLE.get(ide, f"The work environment {ide!r} is not available.")
        raise EnvironmentUnavailable(message) from None
