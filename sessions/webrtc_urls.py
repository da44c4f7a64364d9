"""`/v1/realtime/calls`: the WebRTC call endpoint (included by voiceapp/urls.py)."""

from django.urls import path

from sessions.webrtc import calls_create

app_name = "webrtc"

urlpatterns = [
    path("", calls_create, name="calls"),
]
