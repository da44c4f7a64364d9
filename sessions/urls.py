from django.urls import include, path

from sessions import views

urlpatterns = [
    path("realtime/client_secrets", views.client_secrets, name="realtime_client_secrets"),
    path("widget/sessions", views.widget_session, name="widget_session"),
    path("widget/check", views.widget_check, name="widget_check"),
]

try:  # the WebRTC endpoint lives beside the other transports
    from sessions import webrtc_urls
except ImportError:  # pragma: no cover - only while it is being built
    webrtc_urls = None  # type: ignore[assignment]
if webrtc_urls is not None:
    urlpatterns.append(path("realtime/calls", include(webrtc_urls)))
