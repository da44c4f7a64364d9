import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("personas", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="PersonaFact",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "question",
                    models.CharField(
                        blank=True,
                        help_text="How a caller might ask, e.g. “When are you open?” (optional).",
                        max_length=300,
                    ),
                ),
                (
                    "answer",
                    models.CharField(
                        error_messages={"blank": "Write the answer the agent should give."},
                        help_text="What the agent should know, e.g. “We are open 9 to 5, "
                        "Monday to Friday.”",
                        max_length=1000,
                    ),
                ),
                (
                    "position",
                    models.PositiveIntegerField(default=0, help_text="Lower numbers come first."),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "persona",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="facts",
                        to="personas.persona",
                    ),
                ),
            ],
            options={
                "ordering": ["position", "id"],
                "indexes": [
                    models.Index(fields=["persona", "position"], name="fact_persona_position")
                ],
            },
        ),
    ]
