"""Feed a WAV question through the engine in real time and write the spoken reply."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from voiceapp.engine.audio import AudioFormatError, pcm16_to_float, read_wav, write_wav
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import (
    ErrorFrame,
    ResponseDone,
    TranscriptFinal,
    TranscriptPartial,
    TTSAudio,
)
from voiceapp.engine.llm import LLM
from voiceapp.inference.runtime import (
    call_config_from_persona,
    get_inference,
    persona_endpoint_llm,
    route_llm,
    stop_embedded,
    vad_model,
)


def _find_persona(slug: str, org_slug: str | None) -> Any:
    from voiceapp.personas.models import Persona

    personas = (
        Persona.objects.select_related("voice", "org").prefetch_related("facts").filter(slug=slug)
    )
    if org_slug:
        personas = personas.filter(org__slug=org_slug)
    found = list(personas[:10])
    if not found:
        where = f" in organization {org_slug!r}" if org_slug else ""
        raise CommandError(f"no persona with slug {slug!r}{where}")
    if len(found) > 1:
        orgs = ", ".join(sorted(p.org.slug for p in found))
        raise CommandError(f"persona slug {slug!r} is ambiguous; pass --org (one of: {orgs})")
    return found[0]


async def run_turn(
    config: CallConfig,
    audio: np.ndarray,
    rate: int,
    *,
    realtime: bool,
    timeout_s: float,
    llm: LLM | None = None,
) -> dict[str, Any]:
    """Stream `audio` then silence into a call; collect the first response.
    `llm`: the persona's own endpoint, which then answers instead of the workers."""
    inference = route_llm(await get_inference(), llm)
    call = VoiceCall(config, inference, vad_model())
    step = rate // 50  # 20 ms, like a transport
    silence = np.zeros(int(rate * timeout_s), dtype=np.float32)
    stream = np.concatenate([audio, silence])
    result: dict[str, Any] = {"transcript": None, "partials": [], "reply": None}
    reply: list[np.ndarray] = []
    done = asyncio.Event()

    async def feed() -> None:
        started = time.monotonic()
        for i in range(0, len(stream), step):
            if done.is_set():
                return
            call.push_samples(stream[i : i + step], rate)
            if realtime:
                await asyncio.sleep(max(0.0, started + (i + step) / rate - time.monotonic()))
            else:
                await asyncio.sleep(0)

    feeder = asyncio.create_task(feed())
    try:
        async with asyncio.timeout(timeout_s + len(audio) / rate + 5):
            async for frame in call.frames():
                if isinstance(frame, TranscriptPartial):
                    result["partials"].append(frame.text)
                elif isinstance(frame, TranscriptFinal):
                    result["transcript"] = frame.text
                elif isinstance(frame, TTSAudio):
                    reply.append(pcm16_to_float(frame.pcm))
                elif isinstance(frame, ErrorFrame):
                    result["error"] = {"code": frame.code, "message": frame.message}
                elif isinstance(frame, ResponseDone):
                    result.update(reply=frame.text, status=frame.status, latency=frame.latency)
                    break
    except TimeoutError:
        result["error"] = {"code": "timeout", "message": "no reply before the timeout"}
    finally:
        done.set()
        feeder.cancel()
        await asyncio.gather(feeder, return_exceptions=True)
        await call.close()
        await stop_embedded()
    result["audio"] = np.concatenate(reply) if reply else np.zeros(0, dtype=np.float32)
    return result


class Command(BaseCommand):
    help = "Speak a WAV question to a persona through the realtime engine; write its reply."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--persona", required=True, help="persona slug")
        parser.add_argument("--org", help="organization slug, when the persona slug is ambiguous")
        parser.add_argument("--in", dest="input", required=True, help="question WAV (PCM16)")
        parser.add_argument("--out", required=True, help="where to write the reply WAV")
        parser.add_argument("--rate", type=int, default=24000, help="reply sample rate")
        parser.add_argument("--fast", action="store_true", help="feed faster than real time")
        parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait")

    def handle(self, *args: Any, **options: Any) -> None:
        persona = _find_persona(options["persona"], options.get("org"))
        config = call_config_from_persona(persona, output_sample_rate=options["rate"])
        try:
            audio, rate = read_wav(options["input"])
        except (OSError, EOFError, AudioFormatError) as exc:
            raise CommandError(f"cannot read {options['input']}: {exc}") from exc
        if audio.size == 0:
            raise CommandError(f"{options['input']} holds no audio")
        result = asyncio.run(
            run_turn(
                config,
                audio,
                rate,
                realtime=not options["fast"],
                timeout_s=options["timeout"],
                llm=persona_endpoint_llm(persona),
            )
        )
        write_wav(options["out"], result.pop("audio"), options["rate"])
        self.stdout.write(json.dumps(result, indent=2))
        if result.get("error") or result.get("reply") is None:
            raise CommandError(f"no reply: {result.get('error')}")
