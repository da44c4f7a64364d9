from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from sessions.apis import CallViewSet, UsageView
from voiceapp.api.exceptions import api_not_found
from voiceapp.personas.apis import PersonaFactViewSet, PersonaViewSet, VoiceViewSet
from voiceapp.tenants.apis import LLMEndpointViewSet
from webhooks.apis import WebhookEndpointViewSet

router = SimpleRouter()
router.register("personas", PersonaViewSet, basename="persona")
router.register("voices", VoiceViewSet, basename="voice")
router.register("llm-endpoints", LLMEndpointViewSet, basename="llm-endpoint")
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")
router.register("calls", CallViewSet, basename="call")

fact_list = PersonaFactViewSet.as_view({"get": "list", "post": "create", "put": "replace"})
fact_detail = PersonaFactViewSet.as_view(
    {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}
)

app_name = "api"
urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("usage/", UsageView.as_view(), name="usage"),
    path("personas/<int:persona_pk>/facts/", fact_list, name="persona-fact-list"),
    path("personas/<int:persona_pk>/facts/<int:pk>/", fact_detail, name="persona-fact-detail"),
    path("", include(router.urls)),
    re_path(r"^.*$", api_not_found),
]
