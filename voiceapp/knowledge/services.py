"""Writing a persona's documents: add a file or a URL, process it into passages,
fetch a URL again when it is due, delete.

Processing (`document_process`, a Celery task) reads the document, splits it into
passages, embeds them and then swaps them in, in one transaction: a document that
fails leaves the passages it had (none for a new one) and says why; its progress
(0-100 and the stage) is written as it goes, for the dashboard and the API.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import threading
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from voiceapp.personas.models import Persona
from webhooks import netguard

from .extract import UnreadableDocument, detect_format, extract
from .models import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENTS_PER_PERSONA,
    MAX_PASSAGES_PER_DOCUMENT,
    MAX_TITLE_CHARS,
    KnowledgeDocument,
    KnowledgePassage,
)
from .passages import Passage, passages_of

logger = logging.getLogger(__name__)

_EMBED_BATCH = 32
Status = KnowledgeDocument.Status


def _size_text(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{max(1, n // 1024)} KB"


def _check_room(persona: Persona) -> None:
    if persona.documents.count() >= MAX_DOCUMENTS_PER_PERSONA:
        raise ValidationError(
            f"This persona holds {MAX_DOCUMENTS_PER_PERSONA} documents, the most it can. "
            "Delete one to add another."
        )


def _title(title: str, fallback: str) -> str:
    return (title.strip() or fallback.strip() or "Untitled")[:MAX_TITLE_CHARS]


@transaction.atomic
def document_create_from_file(
    *, persona: Persona, name: str, data: bytes, title: str = ""
) -> KnowledgeDocument:
    """Store an uploaded file and queue it for processing. Raises ValidationError
    (too large, not a format we read, the persona's documents full)."""
    _check_room(persona)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ValidationError(
            f"The file is {_size_text(len(data))}; upload at most {_size_text(MAX_DOCUMENT_BYTES)}."
        )
    try:
        fmt = detect_format(data, name=name)
    except UnreadableDocument as exc:
        raise ValidationError(str(exc)) from exc
    document = KnowledgeDocument.objects.create(
        persona=persona,
        title=_title(title, name.rsplit("/", 1)[-1]),
        filename=name.rsplit("/", 1)[-1][:255],
        format=fmt,
        content=data,
        content_sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        refresh_hours=0,
        stage="Waiting to be processed",
    )
    _enqueue_on_commit(document.pk)
    return document


@transaction.atomic
def document_create_from_url(
    *, persona: Persona, url: str, title: str = "", refresh_hours: int = 24
) -> KnowledgeDocument:
    """Add a web page, fetched and processed by a task (and again every
    `refresh_hours`, 0: never). Raises ValidationError (a URL the server may not
    fetch, the persona's documents full)."""
    _check_room(persona)
    url = url.strip()
    try:
        netguard.resolve(url, allow_private=_allow_private(), what="Documents")
    except netguard.UnsafeURL as exc:
        raise ValidationError({"url": str(exc)}) from exc
    document = KnowledgeDocument.objects.create(
        persona=persona,
        title=_title(title, url),
        url=url,
        refresh_hours=refresh_hours,
        stage="Waiting to be fetched",
    )
    _enqueue_on_commit(document.pk)
    return document


def document_refresh(*, document: KnowledgeDocument) -> KnowledgeDocument:
    """Process the document again now (a URL is fetched again). Raises
    ValidationError while it is already being processed."""
    updated = (
        KnowledgeDocument.objects.filter(pk=document.pk)
        .exclude(status__in=[Status.QUEUED, Status.PROCESSING])
        .update(status=Status.QUEUED, progress=0, stage="Waiting to be processed", error="")
    )
    if not updated:
        raise ValidationError("This document is being processed already.")
    transaction.on_commit(lambda: _enqueue(document.pk))
    document.refresh_from_db()
    return document


def document_delete(*, document: KnowledgeDocument) -> None:
    document.delete()


def documents_refresh_due(*, now: timezone.datetime | None = None) -> int:
    """Queue the URL documents whose refresh is due; how many."""
    now = now or timezone.now()
    due = list(
        KnowledgeDocument.objects.filter(next_refresh_at__lte=now)
        .exclude(url="")
        .exclude(refresh_hours=0)
        .exclude(status__in=[Status.QUEUED, Status.PROCESSING])
        .values_list("pk", flat=True)
    )
    for pk in due:
        KnowledgeDocument.objects.filter(pk=pk).update(
            status=Status.QUEUED, stage="Waiting to be fetched", progress=0
        )
        _enqueue(pk)
    return len(due)


def _allow_private() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS)


def _enqueue_on_commit(pk: int) -> None:
    transaction.on_commit(lambda: _enqueue(pk))


def _enqueue(pk: int) -> None:
    from .tasks import process_document

    if settings.DOCUMENT_PROCESS_THREAD:
        # No task broker (the embedded default runs Celery tasks inline): process in
        # a thread, so the upload's page comes back at once and shows the progress.
        threading.Thread(target=_process_in_thread, args=(pk,), daemon=True).start()
        return
    try:
        process_document.delay(pk)
    except Exception:
        logger.exception("Could not queue document %s", pk)
        _fail(pk, "The document could not be queued for processing. Try again.")


def _process_in_thread(pk: int) -> None:
    from django.db import close_old_connections

    try:
        document_process(document_id=pk)
    finally:
        close_old_connections()


# --- Processing -----------------------------------------------------------------


def _progress(pk: int, progress: int, stage: str) -> None:
    KnowledgeDocument.objects.filter(pk=pk).update(
        status=Status.PROCESSING, progress=progress, stage=stage
    )


def _fail(pk: int, error: str) -> None:
    now = timezone.now()
    document = KnowledgeDocument.objects.filter(pk=pk).first()
    if document is None:
        return
    fields: dict[str, object] = {
        "status": Status.FAILED,
        "error": error,
        "stage": "",
        "progress": 0,
        "processed_at": now,
    }
    if document.url and document.refresh_hours:
        fields["next_refresh_at"] = now + timedelta(hours=document.refresh_hours)
    KnowledgeDocument.objects.filter(pk=pk).update(**fields)


class _FetchFailed(Exception):
    pass


def _fetch(url: str) -> tuple[bytes, str]:
    try:
        page = netguard.get(
            url,
            allow_private=_allow_private(),
            timeout_s=settings.DOCUMENT_FETCH_TIMEOUT_S,
            max_bytes=MAX_DOCUMENT_BYTES,
            what="Documents",
        )
    except netguard.UnsafeURL as exc:
        raise _FetchFailed(str(exc)) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise _FetchFailed(f"The page could not be fetched: {exc or type(exc).__name__}.") from exc
    if page.status != 200:
        raise _FetchFailed(f"Fetching the page gave HTTP {page.status}; it should give 200.")
    if page.too_large:
        raise _FetchFailed(f"The page is larger than {_size_text(MAX_DOCUMENT_BYTES)}.")
    return page.body, page.content_type


def _embed(pk: int, passages: list[Passage]) -> list[bytes]:
    """Each passage's embedding (empty bytes without the embedding model)."""
    from voiceapp.engine.embedder import shared_encoder
    from voiceapp.engine.knowledge import Fact, fact_text

    encoder = shared_encoder()
    if encoder is None:
        return [b""] * len(passages)
    out: list[bytes] = []
    for start in range(0, len(passages), _EMBED_BATCH):
        batch = passages[start : start + _EMBED_BATCH]
        texts = [fact_text(Fact(answer=p.text, question=p.heading)) for p in batch]
        vectors = np.asarray(encoder.encode(texts), dtype="<f4")
        out.extend(v.tobytes() for v in vectors)
        done = start + len(batch)
        _progress(
            pk, 40 + 55 * done // len(passages), f"Indexing passages ({done} of {len(passages)})"
        )
    return out


def document_process(*, document_id: int) -> KnowledgeDocument | None:
    """Read, split, embed and store one document's passages (the Celery task's
    body). Never raises for the document's own faults: they end as FAILED with a
    message. None when the document was deleted meanwhile."""
    document = KnowledgeDocument.objects.filter(pk=document_id).first()
    if document is None:
        return None
    pk = document.pk
    now = timezone.now()
    data, fmt = bytes(document.content), document.format
    try:
        if document.url:
            _progress(pk, 5, "Fetching the page")
            data, content_type = _fetch(document.url)
            fmt = detect_format(data, name=document.url.split("?")[0], content_type=content_type)
            digest = hashlib.sha256(data).hexdigest()
            unchanged = (
                digest == document.content_sha256
                and document.passage_count > 0
                and document.error == ""
            )
            KnowledgeDocument.objects.filter(pk=pk).update(fetched_at=now)
            if unchanged:
                return _finish_unchanged(pk, now)
        _progress(pk, 20, "Reading the text")
        sections = extract(data, fmt)
        _progress(pk, 35, "Cutting it into passages")
        passages = passages_of(sections)
        if len(passages) > MAX_PASSAGES_PER_DOCUMENT:
            raise UnreadableDocument(
                f"The document has {len(passages)} passages; at most "
                f"{MAX_PASSAGES_PER_DOCUMENT} are kept a document. Split it into smaller files."
            )
        embeddings = _embed(pk, passages)
    except (_FetchFailed, UnreadableDocument) as exc:
        _fail(pk, str(exc))
        return KnowledgeDocument.objects.filter(pk=pk).first()
    except Exception:
        logger.exception("Processing document %s failed", pk)
        _fail(pk, "The document could not be processed (an error on our side). Try again.")
        return KnowledgeDocument.objects.filter(pk=pk).first()
    return _store(pk, data, fmt, passages, embeddings, now)


def _finish_unchanged(pk: int, now: timezone.datetime) -> KnowledgeDocument | None:
    document = KnowledgeDocument.objects.filter(pk=pk).first()
    if document is None:
        return None
    KnowledgeDocument.objects.filter(pk=pk).update(
        status=Status.READY,
        progress=100,
        stage="",
        next_refresh_at=_next_refresh(document, now),
    )
    document.refresh_from_db()
    return document


def _next_refresh(document: KnowledgeDocument, now: timezone.datetime) -> timezone.datetime | None:
    if not document.url or not document.refresh_hours:
        return None
    return now + timedelta(hours=document.refresh_hours)


@transaction.atomic
def _store(
    pk: int,
    data: bytes,
    fmt: str,
    passages: list[Passage],
    embeddings: list[bytes],
    now: timezone.datetime,
) -> KnowledgeDocument | None:
    document = KnowledgeDocument.objects.select_for_update().filter(pk=pk).first()
    if document is None:
        return None  # deleted while it was processed
    KnowledgePassage.objects.filter(document=document).delete()
    KnowledgePassage.objects.bulk_create(
        KnowledgePassage(
            document=document,
            position=i,
            heading=p.heading[:300],
            text=p.text,
            embedding=vector,
        )
        for i, (p, vector) in enumerate(zip(passages, embeddings, strict=True))
    )
    document.content = data
    document.content_sha256 = hashlib.sha256(data).hexdigest()
    document.size_bytes = len(data)
    document.format = fmt
    document.status = Status.READY
    document.progress = 100
    document.stage = ""
    document.error = ""
    document.passage_count = len(passages)
    document.processed_at = now
    document.next_refresh_at = _next_refresh(document, now)
    document.save()
    return document
