"""IRB export packages: a codebook-driven, streaming, de-identifying package builder.

- ``registry``: table specifications (columns with codebook metadata and a streaming row
  generator); apps register their tables (study here, ``ide_bridge.telemetry.exports`` for
  telemetry).
- ``pseudonyms``: HMAC pseudonyms keyed by ``EXPORT_HMAC_KEY`` per export scope.
- ``selection``: who is in the package, and the export context the generators read.
- ``kanon``: generalisation of quasi-identifiers until k-anonymity holds.
- ``tables`` / ``tables_questionnaires``: the study's own tables.
- ``package`` / ``readme`` / ``pgcopy``: the writer (CSV files streamed, PostgreSQL COPY for
  bulk tables, codebook, datapackage, manifest, reports, zip).
- ``jobs`` / ``tasks``: services and the Celery task behind ``manage.py export_study`` and the
  researcher pages (an ``ExportJob`` built in the worker).

Design: tiers (vault / internal / public), HMAC pseudonyms per scope, k-anonymity on the joint
quasi-identifier set, relative times, a codebook generated from the table specs.
"""

from __future__ import annotations
