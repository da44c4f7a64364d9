from django.contrib import admin
from django.urls import include, path

from voiceapp.dashboard.views import favicon, landing
from voiceapp.metrics import metrics

urlpatterns = [
    path("", landing, name="landing"),
    path("favicon.ico", favicon, name="favicon"),
    path("accounts/", include("allauth.urls")),
    path("dashboard/billing/", include("billing.urls")),
    path("dashboard/", include("voiceapp.dashboard.urls")),
    path("api/v1/", include("voiceapp.api.urls")),
    path("v1/", include("sessions.urls")),
    path("admin/", admin.site.urls),
    path("metrics", metrics, name="metrics"),
]
