from __future__ import annotations

from django.db import models
from django.utils import timezone

from voiceapp.personas.models import Persona

MAX_DOCUMENTS_PER_PERSONA = 20
MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
MAX_PASSAGES_PER_DOCUMENT = 500
MAX_TITLE_CHARS = 200
MAX_URL_CHARS = 500
REFRESH_HOURS_CHOICES = [(0, "Never"), (6, "Every 6 hours"), (24, "Daily"), (168, "Weekly")]


class KnowledgeDocument(models.Model):
    """A file or a web page the persona answers from: split into passages when it is
    processed (a Celery task), and fetched again on a schedule when it is a URL."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        PROCESSING = "processing", "Processing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=MAX_TITLE_CHARS)
    filename = models.CharField(max_length=255, blank=True)
    url = models.CharField("URL", max_length=MAX_URL_CHARS, blank=True)
    refresh_hours = models.PositiveIntegerField(
        default=24,
        choices=REFRESH_HOURS_CHOICES,
        help_text="How often the page is fetched again (URLs only).",
    )
    format = models.CharField(max_length=16, blank=True)
    # The uploaded file (or the page as last fetched), so that any worker can
    # process it; at most MAX_DOCUMENT_BYTES.
    content = models.BinaryField(editable=False, default=bytes)
    content_sha256 = models.CharField(max_length=64, blank=True, editable=False)
    size_bytes = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="0 to 100, while processing.")
    stage = models.CharField(max_length=80, blank=True)
    error = models.TextField(blank=True)
    passage_count = models.PositiveIntegerField(default=0)
    fetched_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    next_refresh_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["next_refresh_at"], name="document_next_refresh"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def busy(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.PROCESSING)


class KnowledgePassage(models.Model):
    """One retrievable piece of a document: a sentence or a few, with the heading
    it sits under, and its sentence embedding (float32, little-endian)."""

    document = models.ForeignKey(
        KnowledgeDocument, on_delete=models.CASCADE, related_name="passages"
    )
    position = models.PositiveIntegerField()
    heading = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    embedding = models.BinaryField(default=bytes, editable=False)

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "position"], name="passage_document_position"
            )
        ]

    def __str__(self) -> str:
        return self.text if len(self.text) <= 60 else f"{self.text[:59]}…"
