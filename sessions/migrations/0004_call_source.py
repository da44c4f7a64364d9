from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('calls', '0003_call_usage'),
    ]

    operations = [
        migrations.AddField(
            model_name='call',
            name='source',
            field=models.CharField(blank=True, choices=[('widget', 'Widget'), ('api', 'API'), ('test', 'Dashboard test')], max_length=10),
        ),
        migrations.AddField(
            model_name='call',
            name='origin',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='call',
            name='key_name',
            field=models.CharField(blank=True, max_length=100),
        ),
    ]
