from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from sessions.models import Call
from voiceapp.tenants.models import Organization


def call_list(*, org: Organization, persona_id: int | None = None) -> QuerySet[Call]:
    calls = Call.objects.filter(org=org)
    return calls.filter(persona_id=persona_id) if persona_id else calls


def call_get(*, org: Organization, pk: str) -> Call:
    return get_object_or_404(Call.objects.filter(org=org), pk=pk)
