from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from voiceapp.api.exceptions import api_not_found
from voiceapp.personas.apis import PersonaViewSet, VoiceViewSet
from voiceapp.tenants.apis import LLMEndpointViewSet

router = SimpleRouter()
router.register("personas", PersonaViewSet, basename="persona")
router.register("voices", VoiceViewSet, basename="voice")
router.register("llm-endpoints", LLMEndpointViewSet, basename="llm-endpoint")

app_name = "api"
urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("", include(router.urls)),
    re_path(r"^.*$", api_not_found),
]
