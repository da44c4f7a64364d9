import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('personas', '0002_personafact'),
        ('tenants', '0002_llmendpoint'),
    ]

    operations = [
        migrations.AddField(
            model_name='persona',
            name='llm_endpoint',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='personas', to='tenants.llmendpoint', verbose_name='LLM endpoint'),
        ),
    ]
