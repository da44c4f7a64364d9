from django.apps import AppConfig


class CallsConfig(AppConfig):
    """Calls: realtime consumers, WebRTC peers, live state and call records.

    The Python package is ``sessions`` but the app label is ``calls``:
    ``sessions`` belongs to django.contrib.sessions.
    """

    name = "sessions"
    label = "calls"
    verbose_name = "Calls"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions import signals  # noqa: F401  (connects the receivers)
