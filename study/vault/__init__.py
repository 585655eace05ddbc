"""The contact and compensation vault: encrypted, audited, and never referenced by research tables.

Research models link to nothing here. The only link is ``internal_id``, stored on the vault side.
See docs in ``study/vault/services.py`` and /work/shared/notes/privacy-export.md §10.
"""
