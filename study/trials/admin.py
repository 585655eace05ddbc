"""The engine's submissions and evaluations in the admin, as the study sees them.

``evaluation`` knows nothing about participants, so its admin lists every submission. The study
replaces those two admins with the same pages scoped to the researcher's trials (a participant's
editable files and grading report are study data); superusers still see every row.
"""

from __future__ import annotations

from django.contrib import admin

from evaluation.admin import EvaluationAdmin, SubmissionAdmin
from evaluation.models import Evaluation, Submission
from study.access.admin import ScopedAdminMixin

admin.site.unregister(Submission)
admin.site.unregister(Evaluation)


@admin.register(Submission)
class StudySubmissionAdmin(ScopedAdminMixin, SubmissionAdmin):
    pass


@admin.register(Evaluation)
class StudyEvaluationAdmin(ScopedAdminMixin, EvaluationAdmin):
    pass
