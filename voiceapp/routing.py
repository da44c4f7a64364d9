"""WebSocket routes. The realtime call endpoints are added by the calls app."""

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []
