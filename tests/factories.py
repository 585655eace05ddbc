"""factory_boy factories for the test personas and, later, study objects."""

from __future__ import annotations

import factory
from django.contrib.auth.hashers import make_password

from study.models import User
from study.researchers.roles import sync_researcher_group

DEFAULT_PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.LazyFunction(lambda: make_password(DEFAULT_PASSWORD))


class ResearcherFactory(UserFactory):
    username = factory.Sequence(lambda n: f"researcher{n}@example.org")
    email = factory.SelfAttribute("username")  # type: ignore[assignment]
    is_staff = True

    @factory.post_generation
    def researcher_group(obj: User, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            obj.groups.add(sync_researcher_group())
