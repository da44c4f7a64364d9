from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("personas", "0003_persona_llm_endpoint"),
    ]

    operations = [
        migrations.AddField(
            model_name="persona",
            name="asr_model",
            field=models.CharField(
                choices=[
                    ("tiny.en", "Whisper tiny.en (fastest)"),
                    ("base", "Whisper base (more accurate, slower)"),
                ],
                default="tiny.en",
                help_text="Whisper base hears more words right and takes longer per turn than tiny.en.",
                max_length=20,
                verbose_name="speech recognition model",
            ),
        ),
    ]
