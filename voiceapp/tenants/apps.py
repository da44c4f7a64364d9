from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "voiceapp.tenants"
    label = "tenants"
    verbose_name = "Tenants and accounts"
    default_auto_field = "django.db.models.BigAutoField"
