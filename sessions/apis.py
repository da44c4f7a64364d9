"""JSON API for call records and usage (``/api/v1/calls/``, ``/api/v1/usage/``),
authenticated by secret key. Read-only: calls are written by the call loop."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions.models import Call, CallAnalysis, CallItem, CallTurn
from sessions.selectors import (
    call_analysis_find,
    call_get_with_transcript,
    call_list,
    usage_summary,
)
from telephony.apis import OutboundCallCreateSerializer, OutboundCallSerializer, outbound_call_place
from voiceapp.engine.tracing import SPAN_NAMES
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization

MAX_USAGE_DAYS = 366
DATE_FORMAT_HELP = "a date like 2026-01-31 (YYYY-MM-DD, UTC)"


# --- Query parameters --------------------------------------------------------------


class DayField(serializers.DateField):
    """A UTC day written exactly YYYY-MM-DD (``strptime`` alone takes 2026-1-5)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            input_formats=["%Y-%m-%d"],
            error_messages={"invalid": f"Give {DATE_FORMAT_HELP}."},
            **kwargs,
        )

    def to_internal_value(self, value: Any) -> date:
        if not isinstance(value, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
            self.fail("invalid")
        return super().to_internal_value(value)


class _DateRangeSerializer(serializers.Serializer):
    """``start``/``end`` as YYYY-MM-DD: whole UTC days, both included."""

    start = DayField(required=False)
    end = DayField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        start, end = attrs.get("start"), attrs.get("end")
        if start and end and end < start:
            raise ValidationError({"end": "The end date is before the start date."})
        return attrs


class CallFilterSerializer(_DateRangeSerializer):
    persona = serializers.SlugField(required=False, max_length=60)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200)


class UsageQuerySerializer(_DateRangeSerializer):
    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        end: date | None = attrs.get("end")
        start: date = attrs.get("start") or (end or timezone.now().date()).replace(day=1)
        if end is None:  # the last day of start's month
            end = (start.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
        if end < start:
            raise ValidationError({"end": "The end date is before the start date."})
        if (end - start).days + 1 > MAX_USAGE_DAYS:
            raise ValidationError(
                {"end": f"The range may span at most {MAX_USAGE_DAYS} days; ask in parts."}
            )
        return {"start": start, "end": end}


def _query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """Validated query parameters; a bad value is a 400 naming the parameter."""
    params = {k: v for k, v in request.query_params.items() if k in serializer_class().fields}
    serializer = serializer_class(data=params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --- Serializers -------------------------------------------------------------------


class CallItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = CallItem
        fields = ["role", "text", "at_s", "interrupted", "tool"]


class CallTurnSerializer(serializers.ModelSerializer):
    latency = serializers.SerializerMethodField(
        help_text="The turn's latency spans in milliseconds (null where a span did not "
        "happen): " + ", ".join(SPAN_NAMES) + "."
    )

    class Meta:
        model = CallTurn
        fields = ["response_id", "status", "at_s", "latency"]

    def get_latency(self, turn: CallTurn) -> dict[str, float | None]:
        return {name: _span(turn, name) for name in SPAN_NAMES}


def _span(turn: CallTurn, name: str) -> float | None:
    value = getattr(turn, name, None)
    if value is None:
        value = (turn.spans or {}).get(name)
    return float(value) if isinstance(value, int | float) else None


class CallSerializer(serializers.ModelSerializer):
    persona = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        help_text="The persona's slug; null when the persona was deleted since.",
    )
    duration_s = serializers.FloatField(
        read_only=True, allow_null=True, help_text="Null while the call is live."
    )
    end_reason = serializers.ChoiceField(
        choices=[("", "Still live"), *Call.EndReason.choices], read_only=True
    )
    source = serializers.ChoiceField(
        choices=[("", "Unknown"), *Call.Source.choices],
        read_only=True,
        help_text="widget (publishable key), api (secret key) or test (a member on the "
        "dashboard); empty for calls recorded before it was kept.",
    )
    origin = serializers.CharField(
        read_only=True, help_text="The page origin a widget call was allowed for."
    )
    key_name = serializers.CharField(
        read_only=True, help_text="The name of the key that placed the call, as it was then."
    )

    class Meta:
        model = Call
        fields = [
            "id",
            "persona",
            "persona_name",
            "transport",
            "source",
            "origin",
            "caller_number",
            "transferred_to",
            "key_name",
            "started_at",
            "ended_at",
            "duration_s",
            "end_reason",
        ]
        read_only_fields = fields


class CallAnalysisSerializer(serializers.ModelSerializer):
    class Meta:
        model = CallAnalysis
        fields = ["summary", "fields", "success", "success_reason", "criterion", "method"]
        read_only_fields = fields


class CallDetailSerializer(CallSerializer):
    analysis = serializers.SerializerMethodField(
        help_text="Written after the call ends (null until then): a summary, the persona's "
        "fields and the success verdict."
    )
    transcript = CallItemSerializer(source="items", many=True, read_only=True)
    turns = CallTurnSerializer(many=True, read_only=True)
    tool_calls = serializers.IntegerField(
        read_only=True, help_text="How many actions the agent took (transcript items of role tool)."
    )

    class Meta(CallSerializer.Meta):
        fields = [*CallSerializer.Meta.fields, "tool_calls", "analysis", "transcript", "turns"]
        read_only_fields = fields

    @extend_schema_field(CallAnalysisSerializer(allow_null=True))
    def get_analysis(self, call: Call) -> dict[str, Any] | None:
        analysis = call_analysis_find(call=call)
        return dict(CallAnalysisSerializer(analysis).data) if analysis is not None else None


class UsagePersonaSerializer(serializers.Serializer):
    persona = serializers.CharField(allow_null=True, help_text="Slug; null: deleted personas.")
    seconds = serializers.IntegerField()
    calls = serializers.IntegerField()


class UsageDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    seconds = serializers.IntegerField()
    calls = serializers.IntegerField()


class UsageSerializer(serializers.Serializer):
    start = serializers.DateField()
    end = serializers.DateField()
    seconds = serializers.IntegerField(help_text="Billed seconds: each call rounded up.")
    calls = serializers.IntegerField()
    tool_calls = serializers.IntegerField(help_text="Actions the agent took in these calls.")
    by_persona = UsagePersonaSerializer(many=True)
    by_day = UsageDaySerializer(many=True, help_text="Every day of the range, in order.")


# --- Views -------------------------------------------------------------------------


class CallCursorPagination(CursorPagination):
    """Newest first; stable while new calls arrive (a cursor, not page numbers)."""

    ordering = ("-started_at", "-id")
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 200

    def decode_cursor(self, request: Request) -> Any:
        try:
            return super().decode_cursor(request)
        except NotFound as exc:
            raise ValidationError(
                {"cursor": "Invalid cursor: use the next or previous link as given."}
            ) from exc


CALL_FILTERS = [
    OpenApiParameter(
        "persona", OpenApiTypes.STR, description="Only calls with this persona (its slug)."
    ),
    OpenApiParameter(
        "start", OpenApiTypes.DATE, description="Calls started on or after this UTC day."
    ),
    OpenApiParameter(
        "end", OpenApiTypes.DATE, description="Calls started on or before this UTC day."
    ),
]


def _persona_of(org: Organization, slug: str) -> Persona:
    persona = Persona.objects.filter(org=org, slug=slug).first()
    if persona is None:
        raise ValidationError({"persona": f"No persona with the slug “{slug}”."})
    return persona


@extend_schema_view(
    list=extend_schema(
        summary="List calls, newest first",
        description="Cursor-paginated: follow `next` / `previous`. Dates are UTC days, "
        "both included; a bad value is a 400 naming the parameter.",
        parameters=CALL_FILTERS,
    ),
    retrieve=extend_schema(
        summary="One call with its transcript and the latency spans of each turn",
        responses=CallDetailSerializer,
    ),
)
class CallViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """The organization's calls: who called which persona, when, for how long, how it
    ended; one call's transcript (what was said, and heard of interrupted replies)."""

    serializer_class = CallSerializer
    pagination_class = CallCursorPagination
    queryset = Call.objects.none()  # for the schema; requests use the selectors
    lookup_value_regex = (
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    )

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return CallDetailSerializer if self.action == "retrieve" else CallSerializer

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return Call.objects.none()
        org = self.request.user.org
        filters = _query(CallFilterSerializer, self.request)
        persona = _persona_of(org, filters["persona"]) if "persona" in filters else None
        return call_list(
            org=org, persona=persona, start=filters.get("start"), end=filters.get("end")
        )

    def get_object(self) -> Call:
        return call_get_with_transcript(org=self.request.user.org, pk=self.kwargs["pk"])

    @extend_schema(request=OutboundCallCreateSerializer, responses={202: OutboundCallSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Place an outbound phone call (docs/TELEPHONY.md)."""
        return outbound_call_place(request)


class UsageView(APIView):
    """Seconds of calls (each rounded up to the second) and calls, in total, per
    persona and per day."""

    @extend_schema(
        summary="Usage over a range of days",
        description=f"`start` defaults to the first day of `end`'s month (of this month "
        f"without `end`), `end` to the last day of `start`'s month. At most "
        f"{MAX_USAGE_DAYS} days. Counts ended calls by the UTC day they started.",
        parameters=[
            OpenApiParameter("start", OpenApiTypes.DATE, description="First UTC day, included."),
            OpenApiParameter("end", OpenApiTypes.DATE, description="Last UTC day, included."),
        ],
        responses=UsageSerializer,
    )
    def get(self, request: Request) -> Response:
        query = _query(UsageQuerySerializer, request)
        summary = usage_summary(org=request.user.org, start=query["start"], end=query["end"])
        return Response(UsageSerializer(summary).data)
