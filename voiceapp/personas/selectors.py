"""Reads for personas and voices. Personas are always looked up through their org."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from voiceapp.knowledge.models import KnowledgeDocument, KnowledgePassage
from voiceapp.personas.models import Persona, PersonaFact, Voice
from voiceapp.tenants.models import LLMEndpoint, Organization


def persona_list(*, org: Organization) -> QuerySet[Persona]:
    return Persona.objects.filter(org=org).select_related("voice")


def persona_get(*, org: Organization, pk: int) -> Persona:
    return get_object_or_404(persona_list(org=org), pk=pk)


def persona_get_by_slug(*, org: Organization, slug: str) -> Persona:
    return get_object_or_404(persona_list(org=org), slug=slug)


def voice_list(*, available_only: bool = True) -> QuerySet[Voice]:
    voices = Voice.objects.all()
    return voices.filter(is_available=True) if available_only else voices


def voice_get(*, pk: int) -> Voice:
    return get_object_or_404(Voice, pk=pk)


def persona_get_for_call(*, org_id: int, pk: int) -> Persona:
    """The persona a call runs with: its voice, its facts (in order) and its documents'
    passages loaded, so the
    call's configuration is built without further queries (call loops run async).
    Raises Persona.DoesNotExist."""
    return (
        Persona.objects.select_related("voice")
        .prefetch_related(
            Prefetch("facts", queryset=PersonaFact.objects.order_by("position", "id")),
            Prefetch(
                "documents",
                queryset=KnowledgeDocument.objects.defer("content").order_by("created_at", "id"),
            ),
            Prefetch("documents__passages", queryset=KnowledgePassage.objects.order_by("position")),
        )
        .get(org_id=org_id, pk=pk)
    )


def persona_fact_list(*, org: Organization, persona: Persona) -> QuerySet[PersonaFact]:
    return PersonaFact.objects.filter(persona__org=org, persona=persona).order_by("position", "id")


def persona_fact_get(*, org: Organization, persona: Persona, pk: int) -> PersonaFact:
    return get_object_or_404(persona_fact_list(org=org, persona=persona), pk=pk)


def persona_llm_endpoint(*, persona: Persona) -> LLMEndpoint | None:
    """The endpoint a call with `persona` streams from: the persona's own, else its
    organization's default; None means the embedded workers."""
    endpoints = LLMEndpoint.objects.filter(org_id=persona.org_id)
    if persona.llm_endpoint_id is not None:
        own = endpoints.filter(pk=persona.llm_endpoint_id).first()
        if own is not None:
            return own
    return endpoints.filter(is_default=True).first()
