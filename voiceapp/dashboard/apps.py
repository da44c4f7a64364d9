from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "voiceapp.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
