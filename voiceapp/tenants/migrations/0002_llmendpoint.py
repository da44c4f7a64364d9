import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import voiceapp.tenants.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='LLMEndpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=80)),
                ('base_url', models.CharField(help_text='The OpenAI-compatible API root, usually ending in /v1.', max_length=500, validators=[voiceapp.tenants.models.validate_endpoint_url], verbose_name='base URL')),
                ('model', models.CharField(help_text='The model name the server expects.', max_length=200)),
                ('api_key_encrypted', models.TextField(blank=True, editable=False)),
                ('api_key_hint', models.CharField(blank=True, editable=False, max_length=8)),
                ('timeout_s', models.FloatField(default=10.0, help_text='How long to wait for the connection, the first token and each next one.', validators=[django.core.validators.MinValueValidator(1.0, 'The timeout must be between 1 and 120 seconds.'), django.core.validators.MaxValueValidator(120.0, 'The timeout must be between 1 and 120 seconds.')], verbose_name='timeout (s)')),
                ('is_default', models.BooleanField(default=False, help_text='Personas without an endpoint of their own use this one.', verbose_name='organization default')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('org', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='llm_endpoints', to='tenants.organization')),
            ],
            options={
                'verbose_name': 'LLM endpoint',
                'ordering': ['name'],
                'constraints': [models.UniqueConstraint(fields=('org', 'name'), name='llm_endpoint_unique_name', violation_error_message='Another endpoint of this organization has this name.'), models.UniqueConstraint(condition=models.Q(('is_default', True)), fields=('org',), name='llm_endpoint_one_default_per_org', violation_error_message="Another endpoint is already this organization's default.")],
            },
        ),
    ]
