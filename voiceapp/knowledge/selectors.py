from __future__ import annotations

import numpy as np
from django.db.models import QuerySet

from voiceapp.engine.knowledge import Fact
from voiceapp.personas.models import Persona

from .models import KnowledgeDocument, KnowledgePassage


def document_list(*, persona: Persona) -> QuerySet[KnowledgeDocument]:
    return KnowledgeDocument.objects.filter(persona=persona).defer("content")


def document_get(*, persona: Persona, pk: int) -> KnowledgeDocument:
    """Raises KnowledgeDocument.DoesNotExist (also for another persona's document)."""
    return document_list(persona=persona).get(pk=pk)


def passage_list(*, document: KnowledgeDocument) -> QuerySet[KnowledgePassage]:
    return KnowledgePassage.objects.filter(document=document).defer("embedding")


def persona_document_facts(*, persona: Persona) -> tuple[Fact, ...]:
    """The passages of all of `persona`'s documents, as facts for the retriever, each
    with its embedding. Documents whose last processing failed keep the passages
    they had. Reads what `persona_get_for_call` prefetched, else queries."""
    facts = []
    for document in persona.documents.all():
        for passage in document.passages.all():
            raw = bytes(passage.embedding)
            vector = np.frombuffer(raw, dtype="<f4") if raw else None
            facts.append(
                Fact(answer=passage.text, question=passage.heading, vector=vector, passage=True)
            )
    return tuple(facts)
