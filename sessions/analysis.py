"""Post-call analysis: once a call has ended, a task (`calls.analyze_call`) writes
its `CallAnalysis` (summary, the persona's fields, the success verdict) and sends
the `call.analyzed` webhook. The org's own LLM endpoint writes it when the persona
has one; otherwise the built-in rules do (voiceapp/engine/analysis.py)."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import IntegrityError, transaction

from sessions.models import Call, CallAnalysis
from voiceapp.engine.analysis import Analysis, Line, LLMAnalyst, RulesAnalyst
from voiceapp.engine.llm import LLMError, LLMOptions

logger = logging.getLogger(__name__)

ANALYSIS_MAX_TOKENS = 400


def _rules(criterion: str) -> RulesAnalyst:
    from voiceapp.engine.embedder import shared_encoder

    # the encoder (loaded once a process) only decides a success criterion
    return RulesAnalyst(shared_encoder() if criterion.strip() else None)


def _analyse(call: Call) -> Analysis:
    from voiceapp.inference.runtime import persona_endpoint_llm

    persona = call.persona
    schema = persona.analysis_fields if persona is not None else {}
    criterion = persona.success_criterion if persona is not None else ""
    lines = [
        Line(role=i.role, text=i.text)
        for i in call.items.order_by("at_s", "id")
        if i.text and i.role in ("user", "assistant")
    ]
    rules = _rules(criterion)
    # The org's own model writes the record when the persona asks for one (fields or
    # a criterion); a bare summary is the rules', which cost no model request.
    asks = bool(schema) or bool(criterion.strip())
    llm = persona_endpoint_llm(persona) if persona is not None and asks else None
    if llm is None:
        return rules.analyze(lines, schema, criterion)
    options = LLMOptions(max_tokens=ANALYSIS_MAX_TOKENS, temperature=0.0, model=persona.llm_model)
    try:
        return LLMAnalyst(llm, options, rules).analyze(lines, schema, criterion)
    except LLMError as exc:
        logger.warning(
            "Call %s: the LLM endpoint failed the analysis (%s); rules used", call.pk, exc
        )
        return rules.analyze(lines, schema, criterion)


def call_analyze(*, call_id: str) -> CallAnalysis | None:
    """Write the call's analysis (once: a second run returns the first) and send
    `call.analyzed`. None for a call that does not exist or has not ended."""
    from webhooks.services import call_event_on_commit

    call = Call.objects.select_related("persona", "org").filter(pk=call_id).first()
    if call is None or call.ended_at is None:
        return None
    existing = CallAnalysis.objects.filter(call=call).first()
    if existing is not None:
        return existing
    started = time.monotonic()
    result = _analyse(call)
    try:
        with transaction.atomic():
            analysis = CallAnalysis.objects.create(
                call=call,
                summary=result.summary,
                fields=result.fields,
                success=result.success,
                success_reason=result.success_reason[:500],
                criterion=call.persona.success_criterion if call.persona else "",
                method=result.method,
                duration_ms=int((time.monotonic() - started) * 1000),
            )
            call_event_on_commit(
                call_id=str(call.pk), org_id=call.org_id, event_type="call.analyzed"
            )
    except IntegrityError:  # written meanwhile by a task delivered twice
        return CallAnalysis.objects.filter(call=call).first()
    return analysis


def call_analysis_on_commit(*, call_id: str) -> None:
    """Queue the call's analysis once the ending transaction commits."""

    def enqueue() -> None:
        if settings.CALL_ANALYSIS_THREAD:
            # No task broker: analyse in a thread, so the hang-up is not held up.
            threading.Thread(target=_analyze_in_thread, args=(call_id,), daemon=True).start()
            return
        from sessions.tasks import analyze_call

        try:
            analyze_call.delay(call_id)
        except Exception:
            logger.exception("Could not queue the analysis of call %s", call_id)

    transaction.on_commit(enqueue)


def _analyze_in_thread(call_id: str) -> None:
    from django.db import close_old_connections

    try:
        call_analyze(call_id=call_id)
    except Exception:
        logger.exception("Analysing call %s failed", call_id)
    finally:
        close_old_connections()
