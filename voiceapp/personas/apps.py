from django.apps import AppConfig


class PersonasConfig(AppConfig):
    name = "voiceapp.personas"
    label = "personas"
    verbose_name = "Personas and voices"
    default_auto_field = "django.db.models.BigAutoField"
