"""A trial's draft is a map of editable paths to text (multi-file workspaces).

A draft saved before (``draft_saved_at`` set, even to an empty text) becomes
``{"solution.py": draft_code}``, the one editable file of every task until then.
"""

from django.db import migrations, models


def files_from_code(apps, schema_editor):  # type: ignore[no-untyped-def]
    Trial = apps.get_model("study", "Trial")
    saved = Trial.objects.exclude(draft_saved_at=None) | Trial.objects.exclude(draft_code="")
    for row in saved.only("pk", "draft_code").iterator():
        Trial.objects.filter(pk=row.pk).update(draft_files={"solution.py": row.draft_code})


def code_from_files(apps, schema_editor):  # type: ignore[no-untyped-def]
    Trial = apps.get_model("study", "Trial")
    for row in Trial.objects.exclude(draft_files={}).only("pk", "draft_files").iterator():
        code = (row.draft_files or {}).get("solution.py", "")
        Trial.objects.filter(pk=row.pk).update(draft_code=code)


class Migration(migrations.Migration):
    dependencies = [("study", "0007_arm_submission_channels")]

    operations = [
        migrations.AddField(
            model_name="trial",
            name="draft_files",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Last saved text of each editable file the participant changed "
                "(path -> text); the others are the starter's.",
            ),
        ),
        migrations.RunPython(files_from_code, code_from_files),
        migrations.RemoveField(model_name="trial", name="draft_code"),
    ]
