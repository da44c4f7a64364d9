"""JSON API for personas and voices (``/api/v1/``), authenticated by secret key."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from voiceapp.personas.models import LLMBackend, Persona, Voice
from voiceapp.personas.selectors import persona_list, voice_list
from voiceapp.personas.services import persona_create, persona_delete, persona_update


class VoiceSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="voice_id")

    class Meta:
        model = Voice
        fields = ["id", "name", "language", "quality", "sample_rate"]


class PersonaSerializer(serializers.ModelSerializer):
    voice = serializers.SlugRelatedField(
        slug_field="voice_id", queryset=Voice.objects.filter(is_available=True), required=False
    )
    llm_backend = serializers.ChoiceField(choices=LLMBackend.choices, required=False)
    allowed_origins = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=50
    )

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
            "vad_threshold",
            "end_of_turn_silence_ms",
            "interruptions_enabled",
            "idle_timeout_s",
            "max_call_duration_s",
            "allowed_origins",
            "is_active",
            "asr_model",
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


class PersonaViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The organization's personas."""

    serializer_class = PersonaSerializer
    queryset = Persona.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self) -> Any:
        return persona_list(org=self.request.user.org)

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if getattr(self.request, "user", None) is not None and hasattr(self.request.user, "org"):
            context["org"] = self.request.user.org
        return context

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
