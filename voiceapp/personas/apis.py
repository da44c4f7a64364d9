"""JSON API for personas, their facts and voices (``/api/v1/``), authenticated by secret key."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from voiceapp.api.viewsets import OrgModelViewSet
from voiceapp.engine.knowledge import Fact
from voiceapp.personas.models import (
    MAX_FACTS_PER_PERSONA,
    Action,
    LLMBackend,
    Persona,
    PersonaFact,
    Voice,
)
from voiceapp.personas.selectors import (
    persona_fact_list,
    persona_get,
    persona_list,
    voice_list,
)
from voiceapp.personas.services import (
    persona_create,
    persona_delete,
    persona_fact_create,
    persona_fact_delete,
    persona_fact_update,
    persona_facts_replace,
    persona_update,
)
from voiceapp.tenants.models import LLMEndpoint
from voiceapp.tenants.selectors import llm_endpoint_list


class VoiceSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="voice_id")

    class Meta:
        model = Voice
        fields = ["id", "name", "language", "quality", "sample_rate"]


class VoiceIdField(serializers.SlugRelatedField):
    """A voice by its id. An id with a NUL in it names no voice: Postgres would
    refuse the lookup itself, and that must be the caller's 400, not our 500."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and "\x00" in data:
            self.fail("does_not_exist", slug_name=self.slug_field, value=data)
        return super().to_internal_value(data)


class PersonaSerializer(serializers.ModelSerializer):
    voice = VoiceIdField(
        slug_field="voice_id", queryset=Voice.objects.filter(is_available=True), required=False
    )
    llm_backend = serializers.ChoiceField(choices=LLMBackend.choices, required=False)
    allowed_origins = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=50
    )
    actions = serializers.ListField(
        child=serializers.ChoiceField(choices=Action.choices),
        required=False,
        max_length=len(Action.choices),
        help_text="Built-in actions the agent may take: take_message, end_call, "
        "transfer_call (which needs handoff_text), press_keys (phone calls: automated menus).",
    )
    llm_endpoint = serializers.PrimaryKeyRelatedField(
        queryset=LLMEndpoint.objects.none(),
        required=False,
        allow_null=True,
        help_text="One of the organization's LLM endpoints; null uses its default.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        org = self.context.get("org")
        if org is not None:
            self.fields["llm_endpoint"].queryset = llm_endpoint_list(org=org)

    class Meta:
        model = Persona
        fields = [
            "id",
            "name",
            "slug",
            "instructions",
            "greeting",
            "agent_speaks_first",
            "voice",
            "llm_backend",
            "llm_model",
            "temperature",
            "max_reply_tokens",
            "language",
            "general_questions",
            "vad_threshold",
            "end_of_turn_silence_ms",
            "interruptions_enabled",
            "idle_timeout_s",
            "max_call_duration_s",
            "allowed_origins",
            "is_active",
            "llm_endpoint",
            "asr_model",
            "record_calls",
            "recording_notice",
            "recording_retention_days",
            "actions",
            "handoff_text",
            "handoff_url",
            "transfer_to",
            "voicemail_message",
            "analysis_fields",
            "success_criterion",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
        extra_kwargs = {"slug": {"required": False, "validators": []}}

    # Model validation (ranges, slug uniqueness, greeting rules) runs in the services.
    def create(self, validated_data: dict[str, Any]) -> Persona:
        return persona_create(org=self.context["org"], **validated_data)

    def update(self, instance: Persona, validated_data: dict[str, Any]) -> Persona:
        return persona_update(persona=instance, **validated_data)


class PersonaViewSet(OrgModelViewSet):
    """The organization's personas."""

    serializer_class = PersonaSerializer
    queryset = Persona.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self) -> Any:
        return persona_list(org=self.request.user.org)

    def perform_destroy(self, instance: Persona) -> None:
        persona_delete(persona=instance)


class VoiceViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Voices installed on this server."""

    serializer_class = VoiceSerializer
    pagination_class = None

    def get_queryset(self) -> Any:
        return voice_list()

    @extend_schema(responses=VoiceSerializer(many=True))
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(
            self.get_serializer(self.get_queryset(), many=True).data, status.HTTP_200_OK
        )


class PersonaFactSerializer(serializers.ModelSerializer):
    class Meta:
        model = PersonaFact
        fields = ["id", "question", "answer", "position", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]
        extra_kwargs = {
            "position": {
                "required": False,
                "help_text": "Order among the persona's facts (lower first); "
                "by default a new fact goes last.",
            }
        }

    # The cap and the rest of the validation run in the services.
    def create(self, validated_data: dict[str, Any]) -> PersonaFact:
        return persona_fact_create(persona=self.context["persona"], **validated_data)

    def update(self, instance: PersonaFact, validated_data: dict[str, Any]) -> PersonaFact:
        return persona_fact_update(fact=instance, **validated_data)


class PersonaFactInputSerializer(serializers.Serializer):
    question = serializers.CharField(
        max_length=PersonaFact._meta.get_field("question").max_length,
        required=False,
        allow_blank=True,
        default="",
    )
    answer = serializers.CharField(max_length=PersonaFact._meta.get_field("answer").max_length)


class OfPersona:
    """For views under ``personas/<persona_pk>/``: the persona, the caller's org's
    (a 404 for another organization's)."""

    request: Request
    kwargs: dict[str, Any]

    def persona(self) -> Persona:
        if not hasattr(self, "_persona"):
            self._persona = persona_get(org=self.request.user.org, pk=self.kwargs["persona_pk"])
        return self._persona


@extend_schema_view(
    list=extend_schema(summary="List a persona's facts, in order"),
    create=extend_schema(summary="Add a fact (it goes last unless a position is given)"),
    retrieve=extend_schema(summary="One fact"),
    update=extend_schema(summary="Change a fact"),
    partial_update=extend_schema(summary="Change some fields of a fact"),
    destroy=extend_schema(summary="Delete a fact"),
)
class PersonaFactViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
    OfPersona,
):
    """A persona's knowledge: facts the agent answers from. When none matches what the
    caller asks, the agent says it does not know (and offers to take a message when
    the persona's take_message action is on)."""

    serializer_class = PersonaFactSerializer
    queryset = PersonaFact.objects.none()  # for the schema; requests use get_queryset
    pagination_class = None  # at most MAX_FACTS_PER_PERSONA per persona

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return PersonaFact.objects.none()
        return persona_fact_list(org=self.request.user.org, persona=self.persona())

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False) and self.action == "create":
            context["persona"] = self.persona()
        return context

    def perform_destroy(self, instance: PersonaFact) -> None:
        persona_fact_delete(fact=instance)

    @extend_schema(
        operation_id="personas_facts_replace",
        summary="Replace all of a persona's facts",
        description=f"The list becomes the persona's facts, in this order (at most "
        f"{MAX_FACTS_PER_PERSONA}). An empty list removes them all.",
        request=PersonaFactInputSerializer(many=True),
        responses=PersonaFactSerializer(many=True),
    )
    def replace(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        persona = self.persona()
        incoming = PersonaFactInputSerializer(
            data=request.data, many=True, max_length=MAX_FACTS_PER_PERSONA
        )
        incoming.is_valid(raise_exception=True)
        facts = persona_facts_replace(
            persona=persona,
            facts=[
                Fact(answer=f["answer"], question=f["question"]) for f in incoming.validated_data
            ],
        )
        return Response(PersonaFactSerializer(facts, many=True).data, status.HTTP_200_OK)
