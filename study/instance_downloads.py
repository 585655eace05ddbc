"""A file of an instance's participant workspace as a download (text, or an image's bytes).

Only participant files and images can be named: hidden tests, references and calibration data
are not among them. Used by the participant's trial page and the experts' review pages.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse

from evaluation.spec import Instance


def participant_file_download(instance: Instance, name: str) -> HttpResponse:
    if name in instance.participant_files:
        body: str | bytes = instance.participant_files[name]
        content_type = "text/plain; charset=utf-8"
    elif name in instance.images:
        body, content_type = instance.images[name], "application/octet-stream"
    else:
        raise Http404("no such file")
    response = HttpResponse(body, content_type=content_type)
    basename = name.rsplit("/", 1)[-1].replace('"', "")
    response["Content-Disposition"] = f'attachment; filename="{basename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
