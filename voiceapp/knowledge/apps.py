from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "voiceapp.knowledge"
    label = "knowledge"
    verbose_name = "Knowledge documents"
    default_auto_field = "django.db.models.BigAutoField"
