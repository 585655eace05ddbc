"""Anonymous participant accounts, one-time login links and the public recruitment link.

Usernames are ``p-<adjective>-<noun>-<3 digits>`` (e.g. ``p-amber-fox-417``): easy to read out
or type on a credential sheet, about 2.1 million combinations, drawn with ``secrets`` and checked
against existing users. They are pseudonyms, not secrets; the login link is the credential.

Login links are ``/study/enrolment/login/<token>/`` with a 192-bit ``secrets.token_urlsafe`` token.
Only its sha256 is stored (``LoginLink.token_sha256``); the plain token exists once, in the returned
``NewAccount`` (or the path returned by ``issue_login_link``). A link works once: redemption is a
conditional ``UPDATE ... WHERE used_at IS NULL`` so two concurrent redemptions cannot both win.

Contact data and external ids (``PROLIFIC_PID`` ...) go only to the vault (``study.vault``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from study.models import LoginLink, Participant, Study, User
from study.vault.services import ExternalIdTaken, add_external_id, find_internal_id

logger = logging.getLogger(__name__)

MAX_BATCH = 500
DEFAULT_TTL_DAYS = 30
MAX_EXTERNAL_ID_LENGTH = 100
_EXTERNAL_ID = re.compile(r"^[A-Za-z0-9._@:-]+$")
TOO_MANY_JOINS = (
    "This study link has taken many new participants in the last hour. Please try again later."
)

_ADJECTIVES_TEXT = """
amber azure brave bright calm clever coral crisp eager fair gentle golden green happy honest
ivory jolly keen kind lively lucky lunar mellow merry misty noble olive patient plucky polar
proud quick quiet rapid rosy rustic sandy silver smart snowy solar steady sunny swift tidy
vivid warm witty
"""
ADJECTIVES = tuple(_ADJECTIVES_TEXT.split())
_NOUNS_TEXT = """
badger bear beaver bison crane deer dolphin eagle falcon finch fox gecko heron ibis koala
lark lemur lion lynx marten moose newt otter owl panda parrot pelican puffin quail rabbit
raven robin salmon seal sparrow swan tiger toucan trout turtle walrus whale wolf wombat wren
yak zebra hare
"""
NOUNS = tuple(_NOUNS_TEXT.split())


@dataclass(frozen=True)
class NewAccount:
    """A just-created (or just re-linked) participant. The token is never retrievable again."""

    participant: Participant
    username: str
    token: str = field(repr=False)
    login_path: str = field(repr=False)


class LinkInvalid(Exception):
    """A login link that cannot be used; ``str()`` is a message for the participant."""

    class Reason(StrEnum):
        UNKNOWN = "unknown"
        EXPIRED = "expired"
        USED = "used"
        WITHDRAWN = "withdrawn"

    MESSAGES = {
        Reason.UNKNOWN: "We do not know this login link. Please check that you copied the whole "
        "address, or ask the research team for a new link.",
        Reason.EXPIRED: "This login link has expired or has been replaced by a newer one. Please "
        "ask the research team for a new link.",
        Reason.USED: "This login link has already been used. Each link works only once; if you "
        "need to sign in again, ask the research team for a new link.",
        Reason.WITHDRAWN: "This account has left the study, so its login links no longer work. "
        "Thank you for your time.",
    }

    def __init__(self, reason: LinkInvalid.Reason, participant: Participant | None = None):
        super().__init__(self.MESSAGES[reason])
        self.reason = reason
        self.participant = participant

    @property
    def status(self) -> int:
        return 404 if self.reason == self.Reason.UNKNOWN else 410


class JoinRefused(Exception):
    """The recruitment link cannot create an account; ``str()`` is for the visitor."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


# --- Usernames and tokens ---------------------------------------------------------------------
def _candidate_username() -> str:
    adjective, noun = secrets.choice(ADJECTIVES), secrets.choice(NOUNS)
    return f"p-{adjective}-{noun}-{100 + secrets.randbelow(900)}"


def generate_usernames(n: int) -> list[str]:
    """``n`` distinct pseudonymous usernames that no existing user has."""
    chosen: set[str] = set()
    for _ in range(50):
        missing = n - len(chosen)
        if missing <= 0:
            break
        batch = {_candidate_username() for _ in range(missing)} - chosen
        taken = set(User.objects.filter(username__in=batch).values_list("username", flat=True))
        chosen |= batch - taken
    if len(chosen) < n:
        raise RuntimeError("Could not find enough unused participant usernames.")
    return list(chosen)[:n]


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def login_path(token: str) -> str:
    return reverse("study:login_link_confirm", args=[token])


def _new_link(participant: Participant, ttl_days: int) -> tuple[LoginLink, str]:
    token = secrets.token_urlsafe(24)
    link = LoginLink(
        participant=participant,
        token_sha256=hash_token(token),
        expires_at=timezone.now() + timedelta(days=ttl_days),
    )
    return link, token


# --- Creating accounts ------------------------------------------------------------------------
def _create_accounts(study: Study, n: int, ttl_days: int) -> list[NewAccount]:
    users = [User(username=username) for username in generate_usernames(n)]
    for user in users:
        user.set_unusable_password()
    User.objects.bulk_create(users)
    participants = Participant.objects.bulk_create(
        Participant(study=study, user=user, internal_id=secrets.token_hex(8)) for user in users
    )
    links = [_new_link(participant, ttl_days) for participant in participants]
    LoginLink.objects.bulk_create(link for link, _ in links)
    return [
        NewAccount(participant=p, username=p.user.username, token=t, login_path=login_path(t))
        for p, (_, t) in zip(participants, links, strict=True)
    ]


def create_participants(
    study: Study, n: int, *, created_by: User, ttl_days: int = DEFAULT_TTL_DAYS
) -> list[NewAccount]:
    """Create ``n`` participant accounts with one login link each, in one transaction.

    Users have no usable password; they sign in only through their link.
    """
    if not 1 <= n <= MAX_BATCH:
        raise ValueError(f"Create between 1 and {MAX_BATCH} accounts at a time.")
    with transaction.atomic():
        accounts = _create_accounts(study, n, ttl_days)
    logger.info("%s created %d participant accounts in %s", created_by, n, study.slug)
    return accounts


def credential_sheet_csv(accounts: list[NewAccount], base_url: str = "") -> str:
    """``username,login_url`` per account; ``base_url`` (``https://host``) makes URLs absolute."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["username", "login_url"])
    for account in accounts:
        writer.writerow([account.username, base_url.rstrip("/") + account.login_path])
    return out.getvalue()


# --- Login links ------------------------------------------------------------------------------
def _issue(participant: Participant, ttl_days: int) -> str:
    with transaction.atomic():
        now = timezone.now()
        LoginLink.objects.filter(
            participant=participant, used_at__isnull=True, expires_at__gt=now
        ).update(expires_at=now)
        link, token = _new_link(participant, ttl_days)
        link.save()
    return token


def issue_login_link(participant: Participant, ttl_days: int = DEFAULT_TTL_DAYS) -> str:
    """A new login link's path (``/study/enrolment/login/<token>/``); the participant's unused
    links die."""
    return login_path(_issue(participant, ttl_days))


def _find_link(token_sha256: str) -> LoginLink | None:
    return (
        LoginLink.objects.select_related("participant__user", "participant__study")
        .filter(token_sha256=token_sha256)
        .first()
    )


def _usable_link(token: str) -> LoginLink:
    link = _find_link(hash_token(token)) if len(token) <= 200 else None
    if link is None:
        raise LinkInvalid(LinkInvalid.Reason.UNKNOWN)
    participant = link.participant
    if participant.stage == Participant.Stage.WITHDRAWN or not participant.user.is_active:
        raise LinkInvalid(LinkInvalid.Reason.WITHDRAWN, participant)
    if link.used_at is not None:
        raise LinkInvalid(LinkInvalid.Reason.USED, participant)
    if link.expires_at <= timezone.now():
        raise LinkInvalid(LinkInvalid.Reason.EXPIRED, participant)
    return link


def check_login_link(token: str) -> Participant:
    """The link's participant if the link would work now; it stays unused (for GET pages)."""
    return _usable_link(token).participant


def redeem_login_link(token: str) -> Participant:
    """Use up a login link and return its participant, or raise ``LinkInvalid``."""
    link = _usable_link(token)
    now = timezone.now()
    claimed = LoginLink.objects.filter(pk=link.pk, used_at__isnull=True, expires_at__gt=now).update(
        used_at=now
    )
    if claimed != 1:  # another request redeemed it between our read and this update
        raise LinkInvalid(LinkInvalid.Reason.USED, link.participant)
    return link.participant


# --- Public recruitment link ------------------------------------------------------------------
def study_for_recruitment_token(token: str) -> Study | None:
    if not token:
        return None
    return Study.objects.filter(recruitment_token=token).first()


def clean_external_id(external_id: str | None) -> str | None:
    value = (external_id or "").strip()
    if not value:
        return None
    if len(value) > MAX_EXTERNAL_ID_LENGTH or not _EXTERNAL_ID.match(value):
        raise JoinRefused(
            "The participant id in this link looks damaged. Please open the link from the "
            "recruitment site again.",
            status=400,
        )
    return value


def check_recruiting(study: Study, token: str) -> None:
    if not study.recruitment_token or not secrets.compare_digest(study.recruitment_token, token):
        raise JoinRefused("We do not know this study link.", status=404)
    if study.status == Study.Status.CLOSED:
        raise JoinRefused("This study has finished and takes no new participants.", status=410)
    if study.status != Study.Status.RECRUITING:
        raise JoinRefused("This study is not open for participants yet.", status=403)


def _returning(study: Study, external_id: str, ttl_days: int) -> NewAccount | None:
    internal_id = find_internal_id(study.slug, external_id)
    if internal_id is None:
        return None
    participant = (
        Participant.objects.select_related("user").filter(study=study, internal_id=internal_id)
    ).first()
    if participant is None:
        raise JoinRefused("This participant id has already taken part in the study.", status=410)
    if participant.stage == Participant.Stage.WITHDRAWN or not participant.user.is_active:
        raise LinkInvalid(LinkInvalid.Reason.WITHDRAWN, participant)
    token = _issue(participant, ttl_days)
    return NewAccount(participant, participant.user.username, token, login_path(token))


def join_via_recruitment(
    study: Study,
    token: str,
    external_id: str | None,
    *,
    ttl_days: int = DEFAULT_TTL_DAYS,
    admit: Callable[[], bool] | None = None,
) -> NewAccount:
    """Create a participant from the public recruitment link, or re-link a returning one.

    The external id goes only to the vault; a keyed digest of it finds a returning participant.
    ``admit`` is asked only before a new account is made (the view's per-study rate limit);
    when it says no, the join is refused with 429 and returning participants still get in.
    """
    check_recruiting(study, token)
    external_id = clean_external_id(external_id)
    if external_id is not None:
        returning = _returning(study, external_id, ttl_days)
        if returning is not None:
            return returning
    if admit is not None and not admit():
        raise JoinRefused(TOO_MANY_JOINS, 429)
    try:
        with transaction.atomic():
            account = _create_accounts(study, 1, ttl_days)[0]
            if external_id is not None:
                param = study.recruitment_id_param or "external_id"
                add_external_id(account.participant.internal_id, study.slug, param, external_id)
    except ExternalIdTaken:  # a concurrent join with the same id won; use its participant
        assert external_id is not None
        returning = _returning(study, external_id, ttl_days)
        if returning is None:
            raise
        return returning
    logger.info("recruitment link created a participant in %s", study.slug)
    return account
