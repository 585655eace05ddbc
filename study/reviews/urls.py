"""``/study/reviews/``: expert review of template instances (researchers only).

- ``study:review_index`` — ``""`` (the bank's templates, their status and review progress)
- ``study:review_template`` — ``<slug>/<version>/`` (the version's instances to rate)
- ``study:review_instance`` — ``<slug>/<version>/<seed>/`` (the participant's view and the
  rating form; POST stores the ratings)
- ``study:review_file`` — ``<slug>/<version>/<seed>/files/<name>`` (a participant file)
- ``study:review_summary`` — ``<slug>/<version>/summary/`` (kappa, acceptance, validation)
"""

from __future__ import annotations

from django.urls import path

from study.reviews import views

urlpatterns = [
    path("", views.review_index, name="review_index"),
    path("<slug:slug>/<str:version>/", views.review_template, name="review_template"),
    path("<slug:slug>/<str:version>/summary/", views.review_summary, name="review_summary"),
    path("<slug:slug>/<str:version>/<int:seed>/", views.review_instance, name="review_instance"),
    path(
        "<slug:slug>/<str:version>/<int:seed>/files/<path:name>",
        views.review_file,
        name="review_file",
    ),
]
