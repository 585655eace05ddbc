"""Routes of the human study (namespace ``study``): one prefix per capability package, so
``/study/<package>/...`` is served by ``study/<package>/urls.py`` and its ``views.py``."""

from __future__ import annotations

from django.urls import include, path
from django.views.generic import RedirectView

app_name = "study"

urlpatterns = [
    # The participant's entry point (login redirects and links point here).
    path("", RedirectView.as_view(pattern_name="study:next"), name="home"),
    path("journey/", include("study.journey.urls")),
    path("enrolment/", include("study.enrolment.urls")),
    path("questionnaires/", include("study.questionnaires.urls")),
    path("trials/", include("study.trials.urls")),
    path("results/", include("study.results.urls")),
    path("exports/", include("study.exports.urls")),
    path("previews/", include("study.previews.urls")),
    path("researchers/", include("study.researchers.urls")),
    path("reviews/", include("study.reviews.urls")),
    path("benchmarks/", include("study.benchmarks.urls")),
]
