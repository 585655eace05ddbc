"""IRB export packages: a codebook-driven, streaming, de-identifying package builder.

- ``registry``: table specifications (columns with codebook metadata and a streaming row
  generator); apps register their tables (study here, ``ide_bridge.exports`` for telemetry).
- ``pseudonyms``: HMAC pseudonyms keyed by ``EXPORT_HMAC_KEY`` per export scope.
- ``selection``: who is in the package, and the export context the generators read.
- ``kanon``: generalisation of quasi-identifiers until k-anonymity holds.
- ``tables`` / ``tables_questionnaires``: the study's own tables.
- ``package`` / ``readme``: the writer (CSV files, codebook, datapackage, manifest, reports, zip).
- ``jobs`` / ``tasks``: the researcher-UI path (an ``ExportJob`` built in the worker).

See docs in ``/work/shared/notes/privacy-export.md`` for the design.
"""

from __future__ import annotations
