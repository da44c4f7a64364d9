from django.apps import AppConfig


class TelephonyConfig(AppConfig):
    name = "telephony"
    verbose_name = "Telephony"
    default_auto_field = "django.db.models.BigAutoField"
