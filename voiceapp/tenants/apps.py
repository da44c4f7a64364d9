from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _site_from_settings(*, using: str, **kwargs: Any) -> None:
    from voiceapp.tenants.services import site_update_from_settings

    site_update_from_settings(using=using)


class TenantsConfig(AppConfig):
    name = "voiceapp.tenants"
    label = "tenants"
    verbose_name = "Tenants and accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # At every migrate (./dev run and the compose migration step run one), so a
        # changed SITE_NAME or SITE_URL reaches the emails after the next start.
        post_migrate.connect(_site_from_settings, sender=self)
