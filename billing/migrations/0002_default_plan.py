from django.db import migrations


def create_default_plan(apps, schema_editor):
    Plan = apps.get_model("billing", "Plan")
    if not Plan.objects.filter(is_default=True).exists():
        Plan.objects.get_or_create(
            slug="free",
            defaults={"name": "Free", "included_seconds": 100 * 3600, "is_default": True},
        )


class Migration(migrations.Migration):
    dependencies = [("billing", "0001_initial")]

    operations = [migrations.RunPython(create_default_plan, migrations.RunPython.noop)]
