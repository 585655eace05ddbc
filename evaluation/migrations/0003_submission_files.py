"""Submissions carry every editable file of a task (path -> text) instead of one solution.py.

Existing submissions become ``{"solution.py": <their text>}``; a source that was not UTF-8
(which grading refused anyway) keeps its text with the invalid bytes replaced by U+FFFD.
"""

from django.db import migrations, models


def files_from_source(apps, schema_editor):  # type: ignore[no-untyped-def]
    Submission = apps.get_model("evaluation", "Submission")
    for row in Submission.objects.only("pk", "source").iterator():
        text = bytes(row.source).decode("utf-8", "replace").replace("\x00", "\ufffd")
        Submission.objects.filter(pk=row.pk).update(files={"solution.py": text})


def source_from_files(apps, schema_editor):  # type: ignore[no-untyped-def]
    Submission = apps.get_model("evaluation", "Submission")
    for row in Submission.objects.only("pk", "files").iterator():
        text = (row.files or {}).get("solution.py", "")
        Submission.objects.filter(pk=row.pk).update(source=text.encode())


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0002_evaluation_time_limit")]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="files",
            field=models.JSONField(default=dict),
            preserve_default=False,
        ),
        migrations.RunPython(files_from_source, source_from_files),
        migrations.RemoveField(model_name="submission", name="source"),
        migrations.AlterField(
            model_name="submission",
            name="files",
            field=models.JSONField(
                help_text="The instance's editable files as submitted (path -> text); read-only "
                "files always come from the instance."
            ),
        ),
        migrations.AlterField(
            model_name="submission",
            name="sha256",
            field=models.CharField(
                help_text="sha256 of solution.py's bytes for a one-file task, else of the files' "
                "canonical JSON.",
                max_length=64,
            ),
        ),
    ]
