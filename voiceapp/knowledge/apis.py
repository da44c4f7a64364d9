"""JSON API for a persona's documents (``/api/v1/personas/<id>/documents/``).

POST a file as multipart (``file``, optional ``title``), or JSON with ``url`` (and
optional ``title`` and ``refresh_hours``). The answer is 201 with the document
queued; ``status``, ``progress`` and ``stage`` show its processing, and
``passage_count`` what came of it. ``POST .../documents/<id>/refresh/`` processes
it again (a URL is fetched again); ``GET .../documents/<id>/passages/`` lists what
the agent retrieves from."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from voiceapp.api.parsers import SafeJSONParser
from voiceapp.personas.apis import OfPersona

from .models import MAX_DOCUMENT_BYTES, REFRESH_HOURS_CHOICES, KnowledgeDocument, KnowledgePassage
from .selectors import document_list, passage_list
from .services import (
    document_create_from_file,
    document_create_from_url,
    document_delete,
    document_refresh,
)


class DocumentSerializer(serializers.ModelSerializer):
    class Meta:
        model = KnowledgeDocument
        fields = [
            "id",
            "title",
            "filename",
            "url",
            "refresh_hours",
            "format",
            "size_bytes",
            "status",
            "progress",
            "stage",
            "error",
            "passage_count",
            "fetched_at",
            "processed_at",
            "next_refresh_at",
            "created_at",
        ]
        read_only_fields = fields


class DocumentCreateSerializer(serializers.Serializer):
    file = serializers.FileField(
        required=False,
        help_text=f"PDF, DOCX, Markdown, HTML or text, at most {MAX_DOCUMENT_BYTES // 2**20} MB.",
    )
    url = serializers.CharField(required=False, max_length=500, help_text="A web page (http/s).")
    title = serializers.CharField(required=False, max_length=200, default="")
    refresh_hours = serializers.ChoiceField(
        choices=[h for h, _ in REFRESH_HOURS_CHOICES],
        required=False,
        default=24,
        help_text="URLs only: fetched again this often (0: never).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if bool(attrs.get("file")) == bool(attrs.get("url")):
            raise ValidationError("Send either a file (multipart) or a url, not both.")
        return attrs


class PassageSerializer(serializers.ModelSerializer):
    class Meta:
        model = KnowledgePassage
        fields = ["position", "heading", "text"]


@extend_schema_view(
    list=extend_schema(summary="List a persona's documents"),
    retrieve=extend_schema(summary="One document, with its processing progress"),
    destroy=extend_schema(summary="Delete a document and its passages"),
)
class DocumentViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
    OfPersona,
):
    """Files and web pages the persona answers from, split into passages
    (docs/KNOWLEDGE.md)."""

    serializer_class = DocumentSerializer
    queryset = KnowledgeDocument.objects.none()  # for the schema; requests use get_queryset
    pagination_class = None  # at most MAX_DOCUMENTS_PER_PERSONA per persona
    parser_classes = [MultiPartParser, SafeJSONParser]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return KnowledgeDocument.objects.none()
        return document_list(persona=self.persona())

    @extend_schema(
        summary="Add a document: a file (multipart) or a URL (JSON); processed by a task",
        request=DocumentCreateSerializer,
        responses={201: DocumentSerializer},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = DocumentCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        persona = self.persona()
        if data.get("file"):
            upload = data["file"]
            if upload.size > MAX_DOCUMENT_BYTES:
                raise ValidationError({"file": f"Upload at most {MAX_DOCUMENT_BYTES // 2**20} MB."})
            document = document_create_from_file(
                persona=persona, name=upload.name or "", data=upload.read(), title=data["title"]
            )
        else:
            document = document_create_from_url(
                persona=persona,
                url=data["url"],
                title=data["title"],
                refresh_hours=data["refresh_hours"],
            )
        document.refresh_from_db()
        return Response(DocumentSerializer(document).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: KnowledgeDocument) -> None:
        document_delete(document=instance)

    @extend_schema(summary="Process a document again (a URL is fetched again)", request=None)
    @action(detail=True, methods=["post"])
    def refresh(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        document = document_refresh(document=self.get_object())
        return Response(DocumentSerializer(document).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="The passages the agent retrieves from", responses=PassageSerializer(many=True)
    )
    @action(detail=True, methods=["get"])
    def passages(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rows = passage_list(document=self.get_object())
        return Response(PassageSerializer(rows, many=True).data)
