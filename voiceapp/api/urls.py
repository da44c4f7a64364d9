from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from sessions.apis import CallViewSet, UsageView
from telephony.apis import OutboundCallViewSet, PhoneNumberViewSet, SipTrunkViewSet
from voiceapp.api.exceptions import api_not_found
from voiceapp.knowledge.apis import DocumentViewSet
from voiceapp.personas.apis import PersonaFactViewSet, PersonaViewSet, VoiceViewSet
from voiceapp.personas.tool_apis import PersonaToolViewSet
from voiceapp.tenants.apis import LLMEndpointViewSet
from webhooks.apis import WebhookEndpointViewSet

router = SimpleRouter()
router.register("personas", PersonaViewSet, basename="persona")
router.register("voices", VoiceViewSet, basename="voice")
router.register("llm-endpoints", LLMEndpointViewSet, basename="llm-endpoint")
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")
router.register("calls", CallViewSet, basename="call")
router.register("sip-trunks", SipTrunkViewSet, basename="sip-trunk")
router.register("phone-numbers", PhoneNumberViewSet, basename="phone-number")
router.register("outbound-calls", OutboundCallViewSet, basename="outbound-call")

fact_list = PersonaFactViewSet.as_view({"get": "list", "post": "create", "put": "replace"})
fact_detail = PersonaFactViewSet.as_view(
    {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}
)

tool_list = PersonaToolViewSet.as_view({"get": "list", "post": "create"})
tool_detail = PersonaToolViewSet.as_view(
    {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}
)
tool_test = PersonaToolViewSet.as_view({"post": "test"})

document_list = DocumentViewSet.as_view({"get": "list", "post": "create"})
document_detail = DocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"})
document_refresh = DocumentViewSet.as_view({"post": "refresh"})
document_passages = DocumentViewSet.as_view({"get": "passages"})

app_name = "api"
urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("usage/", UsageView.as_view(), name="usage"),
    path("personas/<int:persona_pk>/facts/", fact_list, name="persona-fact-list"),
    path("personas/<int:persona_pk>/facts/<int:pk>/", fact_detail, name="persona-fact-detail"),
    path("personas/<int:persona_pk>/tools/", tool_list, name="persona-tool-list"),
    path("personas/<int:persona_pk>/tools/<int:pk>/", tool_detail, name="persona-tool-detail"),
    path("personas/<int:persona_pk>/tools/<int:pk>/test/", tool_test, name="persona-tool-test"),
    path("personas/<int:persona_pk>/documents/", document_list, name="persona-document-list"),
    path(
        "personas/<int:persona_pk>/documents/<int:pk>/",
        document_detail,
        name="persona-document-detail",
    ),
    path(
        "personas/<int:persona_pk>/documents/<int:pk>/refresh/",
        document_refresh,
        name="persona-document-refresh",
    ),
    path(
        "personas/<int:persona_pk>/documents/<int:pk>/passages/",
        document_passages,
        name="persona-document-passages",
    ),
    path("", include(router.urls)),
    re_path(r"^.*$", api_not_found),
]
