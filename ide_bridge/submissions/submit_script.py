"""The ``submit`` script a participant runs in their task folder (offered as a download).

It checks that every editable file of the task is there (``solution.py``, or a project's
modules such as ``app/pricing.py``), packs the current folder with ``tar`` and ``gzip -n`` and
posts it to ``POST /ide/submissions/<id>`` with ``curl --fail-with-body``. ``.git``,
``__pycache__``, other caches and the script itself (it holds the token) stay out of the
archive. The token reaches curl on its standard input, so it does not show in the process list.
The same files give the same archive, so running the script again is a harmless retry: the
server recognises the archive and answers 200.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from django.urls import reverse

# What ``secrets.token_urlsafe`` (and base64) produce; anything else would need escaping in
# curl's config syntax.
_TOKEN = re.compile(r"[A-Za-z0-9_\-.~+/=]{16,512}")
_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,200}")  # bank paths: no quoting needed
EXCLUDED = (".git", "__pycache__", ".venv", "node_modules", ".pytest_cache", ".mypy_cache")

_TEMPLATE = """\
#!/bin/sh
# Submits this task folder to the HAI-Eval study platform (trial {trial_id}).
#
# Run it from your task folder, the one with {first}:   sh submit
# The token below opens this trial only; please do not share it.
# You can submit once. Running the script again with unchanged files only confirms the upload.
set -eu

SUBMISSION_URL={url}
TRIAL_TOKEN={token}

for file in {editable}; do
    if [ ! -f "$file" ]; then
        echo "submit: $file is missing; run this script from your task folder." >&2
        exit 2
    fi
done
for tool in tar gzip curl; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "submit: '$tool' is needed but was not found." >&2
        exit 2
    fi
done

workdir=$(mktemp -d "${{TMPDIR:-/tmp}}/submission.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
trap 'exit 130' INT TERM

# The same files give the same archive (gzip -n: no time stamp), so a rerun is a retry.
# This script stays out of the archive (it holds the token); COPYFILE_DISABLE: no ._* files
# from macOS tar.
self=$(basename "$0")
COPYFILE_DISABLE=1 tar cf "$workdir/workspace.tar" \\
    {excludes} \\
    --exclude="./$self" .
gzip -n "$workdir/workspace.tar"
archive="$workdir/workspace.tar.gz"

echo "submit: uploading $(wc -c < "$archive" | tr -d ' ') bytes..."
status=0
response=$(printf 'header = "Authorization: Bearer %s"\\n' "$TRIAL_TOKEN" |
    curl --config - --fail-with-body --silent --show-error --retry 3 --max-time 120 \\
        -H "Content-Type: application/gzip" --data-binary "@$archive" \\
        --write-out '\\n%{{http_code}}' "$SUBMISSION_URL") || status=$?
code=$(printf '%s\\n' "$response" | tail -n 1)
body=$(printf '%s\\n' "$response" | sed '$d')
printf '%s\\n' "$body"
if [ "$status" -ne 0 ]; then
    echo "submit: the upload failed (HTTP $code, curl exit code $status)." >&2
    exit 1
fi
case "$code" in
    201) echo "submit: done, your work was submitted (HTTP 201)." ;;
    200) echo "submit: this exact archive had already been received; nothing changed (HTTP 200)." ;;
    *) echo "submit: unexpected answer (HTTP $code)." >&2; exit 1 ;;
esac
"""


def submission_url(base_url: str, trial_id: int) -> str:
    path = reverse("ide_bridge:submission", kwargs={"trial_id": int(trial_id)})
    return base_url.rstrip("/") + path


def render_submit_script(
    base_url: str, trial_id: int, token: str, editable: Sequence[str] = ("solution.py",)
) -> str:
    """A POSIX ``sh`` script that uploads the current folder as the trial's submission;
    ``editable`` are the instance's editable paths, which must all be in the folder."""
    if not _TOKEN.fullmatch(token):
        raise ValueError("The trial token has characters the submit script cannot carry.")
    if not editable or not all(_PATH.fullmatch(path) for path in editable):
        raise ValueError("The editable paths have characters the submit script cannot carry.")
    if not base_url.startswith(("http://", "https://")):
        raise ValueError("base_url must be an absolute http(s) URL.")
    excludes = " \\\n    ".join(shlex.quote(f"--exclude={name}") for name in EXCLUDED)
    return _TEMPLATE.format(
        trial_id=int(trial_id),
        url=shlex.quote(submission_url(base_url, trial_id)),
        token=shlex.quote(token),
        excludes=excludes,
        editable=" ".join(shlex.quote(path) for path in editable),
        first=editable[0],
    )
