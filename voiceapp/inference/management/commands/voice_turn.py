"""Feed a recorded question through the engine and write the spoken reply."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from voiceapp.engine.asr import DEFAULT_ASR_MODEL, Transcript
from voiceapp.engine.audio import (
    AudioFormatError,
    check_rate,
    pcm16_to_float,
    read_audio_file,
    write_wav,
)
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import (
    ErrorFrame,
    Frame,
    ResponseDone,
    SpeechStarted,
    SpeechStopped,
    TranscriptFinal,
    TranscriptPartial,
    TTSAudio,
)
from voiceapp.engine.inference import AudioChunk, Inference, Stream, TokenStream
from voiceapp.engine.llm import LLM, LLMOptions, Message
from voiceapp.engine.tts import VoiceSpec
from voiceapp.inference.client import ChannelsInference
from voiceapp.inference.runtime import (
    call_config_from_persona,
    get_inference,
    persona_endpoint_llm,
    route_llm,
    stop_embedded,
    vad_model,
)

# Reply audio is released as soon as it is synthesized: the command waits for the
# reply to be generated, not for it to be played out in real time.
UNPACED_LEAD_MS = 10**9
TAIL_MARGIN_MS = 500  # silence after the longest end-of-turn wait


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


class _WatchedInference:
    """The call's inference, counting the transcriptions in flight.

    Every turn the call answers starts with a transcription, and a transcript
    holding words is emitted the moment it returns. So once all the input has
    been fed and no transcription is left in flight, a call that emitted no
    transcript heard nothing to answer (silence, or noise the ASR rejected).
    """

    def __init__(self, inner: Inference) -> None:
        self._inner = inner
        self._in_flight = 0
        self.idle = asyncio.Event()
        self.idle.set()

    async def transcribe(
        self,
        audio: np.ndarray,
        language: str,
        model: str = DEFAULT_ASR_MODEL,
        *,
        partial: bool = False,
    ) -> Transcript:
        self._in_flight += 1
        self.idle.clear()
        try:
            return await self._inner.transcribe(audio, language, model, partial=partial)
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self.idle.set()

    def generate(self, messages: list[Message], options: LLMOptions) -> TokenStream:
        return self._inner.generate(messages, options)

    def synthesize(
        self, text: str, voice: VoiceSpec, *, background: bool = False
    ) -> Stream[AudioChunk]:
        return self._inner.synthesize(text, voice, background=background)

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        return await self._inner.end_of_turn(text, previous_reply)

    async def settled(self) -> None:
        """Return once no transcription is in flight, including any just spawned."""
        while True:
            await self.idle.wait()
            for _ in range(3):  # a task spawned by the last audio starts within a loop turn
                await asyncio.sleep(0)
            if self.idle.is_set():
                return


@dataclass
class TurnResult:
    """What one question got; `turn` is None when the input held nothing to answer."""

    turn: dict[str, Any] | None = None
    transcript: str | None = None
    partials: list[str] = field(default_factory=list)
    reply: str | None = None
    status: str | None = None
    latency: dict[str, float | None] | None = None
    error: dict[str, str] | None = None
    audio: list[np.ndarray] = field(default_factory=list)
    _speech: dict[str, dict[str, Any]] = field(default_factory=dict)

    def take(self, frame: Frame) -> bool:
        """Record one frame of the call; True once the response is done."""
        if isinstance(frame, SpeechStarted):
            self._speech[frame.item_id] = {
                "item_id": frame.item_id,
                "audio_start_ms": frame.audio_start_ms,
            }
        elif isinstance(frame, SpeechStopped):
            self._speech.setdefault(frame.item_id, {"item_id": frame.item_id})
            self._speech[frame.item_id]["audio_end_ms"] = frame.audio_end_ms
        elif isinstance(frame, TranscriptPartial):
            self.partials.append(frame.text)
        elif isinstance(frame, TranscriptFinal):
            self.transcript = frame.text
            self.turn = self._speech.get(frame.item_id, {"item_id": frame.item_id})
        elif isinstance(frame, TTSAudio):
            self.audio.append(pcm16_to_float(frame.pcm))
        elif isinstance(frame, ErrorFrame):
            self.error = {"code": frame.code, "message": frame.message}
        elif isinstance(frame, ResponseDone):
            self.reply, self.status, self.latency = frame.text, frame.status, frame.latency
            return True
        return False

    def reply_audio(self) -> np.ndarray:
        return np.concatenate(self.audio) if self.audio else np.zeros(0, dtype=np.float32)

    def as_json(self, reply_rate: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "turn": self.turn,
            "transcript": self.transcript,
            "partials": self.partials,
            "reply": self.reply,
            "status": self.status,
            "latency": self.latency,
            "reply_seconds": round(sum(len(a) for a in self.audio) / reply_rate, 3),
        }
        if self.error is not None:
            out["error"] = self.error
        return out


def _tail_ms(config: CallConfig) -> int:
    """Silence after the question long enough to end the turn whatever its transcript says."""
    t = config.turns
    return max(t.end_of_turn_ms, t.complete_end_of_turn_ms, t.incomplete_end_of_turn_ms) + (
        TAIL_MARGIN_MS
    )


async def _feed(call: VoiceCall, stream: np.ndarray, rate: int, *, realtime: bool) -> None:
    step = rate // 50  # 20 ms, like a transport
    started = time.monotonic()
    for i in range(0, len(stream), step):
        call.push_samples(stream[i : i + step], rate)
        if realtime:
            await asyncio.sleep(max(0.0, started + (i + step) / rate - time.monotonic()))
        else:
            await asyncio.sleep(0)


async def _collect(call: VoiceCall, result: TurnResult) -> None:
    async for frame in call.frames():
        if result.take(frame):
            return


async def run_turn(
    config: CallConfig,
    audio: np.ndarray,
    rate: int,
    *,
    realtime: bool,
    timeout_s: float,
    llm: LLM | None = None,
) -> TurnResult:
    """Speak `audio` to a call, then silence; collect the reply to the turn it hears.

    `timeout_s` bounds the wait for the whole reply (transcript, text and audio)
    once the question has been fed; playout pacing is off, so a long reply does
    not take its spoken length. `llm`: the persona's own endpoint, which then
    answers instead of the workers.
    """
    config = replace(config, playback_lead_ms=UNPACED_LEAD_MS)
    shared = await get_inference()
    # One model request (a long reply's LLM stream) may take as long as the whole wait.
    limit = max(shared.settings.request_timeout_s, timeout_s)
    client = ChannelsInference(shared.layer, replace(shared.settings, request_timeout_s=limit))
    inference = _WatchedInference(route_llm(client, llm))
    call = VoiceCall(config, inference, vad_model())
    tail = np.zeros(rate * _tail_ms(config) // 1000, dtype=np.float32)
    result = TurnResult()
    feeder = asyncio.create_task(
        _feed(call, np.concatenate([audio, tail]), rate, realtime=realtime)
    )
    collector = asyncio.create_task(_collect(call, result))
    settler: asyncio.Task[None] | None = None
    try:
        await asyncio.wait({feeder, collector}, return_when=asyncio.FIRST_COMPLETED)
        if feeder.done():
            feeder.result()  # bad audio raises here
        async with asyncio.timeout(timeout_s):
            settler = asyncio.create_task(inference.settled())
            await asyncio.wait({collector, settler}, return_when=asyncio.FIRST_COMPLETED)
            # All input fed and transcribed: without a transcript there is no turn to answer.
            if collector.done() or result.transcript is not None:
                await collector
    except TimeoutError:
        result.error = {
            "code": "timeout",
            "message": f"no complete reply within {timeout_s:g} s of the end of the question",
        }
    finally:
        for task in (feeder, collector, settler):
            if task is not None:
                task.cancel()
        await asyncio.gather(
            *(t for t in (feeder, collector, settler) if t is not None), return_exceptions=True
        )
        await call.close()
        await client.close()
        await stop_embedded()
    return result


class Command(BaseCommand):
    help = "Speak a recorded question to a persona through the realtime engine; write its reply."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--persona", required=True, help="persona slug")
        parser.add_argument("--org", help="organization slug, when the persona slug is ambiguous")
        parser.add_argument(
            "--in",
            dest="input",
            required=True,
            help="question audio: any WAV (sample format, rate, channels), or FLAC, MP3, ...",
        )
        parser.add_argument("--out", required=True, help="where to write the reply WAV")
        parser.add_argument("--rate", type=int, default=24000, help="reply sample rate")
        parser.add_argument("--fast", action="store_true", help="feed faster than real time")
        parser.add_argument(
            "--timeout",
            type=float,
            default=60.0,
            help="seconds to wait for the whole reply once the question has been fed",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            check_rate(options["rate"])
        except AudioFormatError as exc:
            raise CommandError(f"--rate: {exc}") from exc
        if options["timeout"] <= 0:
            raise CommandError("--timeout must be a positive number of seconds")
        out_dir = Path(options["out"]).resolve().parent
        if not out_dir.is_dir():  # found out now, not after the models have run
            raise CommandError(f"cannot write {options['out']}: no folder {out_dir}")
        persona = _find_persona(options["persona"], options.get("org"))
        endpoint_llm = persona_endpoint_llm(persona)
        config = call_config_from_persona(
            persona, output_sample_rate=options["rate"], own_llm=endpoint_llm is not None
        )
        path = options["input"]
        try:
            audio, rate = read_audio_file(path)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except AudioFormatError as exc:  # it names the file
            raise CommandError(f"cannot read {exc}") from exc
        if audio.size == 0:
            raise CommandError(f"{path} holds no audio")
        result = asyncio.run(
            run_turn(
                config,
                audio,
                rate,
                realtime=not options["fast"],
                timeout_s=options["timeout"],
                llm=endpoint_llm,
            )
        )
        answered = result.error is None and result.status == "completed"
        if answered:
            try:
                write_wav(options["out"], result.reply_audio(), options["rate"])
            except OSError as exc:
                raise CommandError(f"cannot write {options['out']}: {exc.strerror or exc}") from exc
        self.stdout.write(json.dumps(result.as_json(options["rate"]), indent=2))
        if result.turn is None and result.error is None and result.status is None:
            return  # nothing to answer: no reply is written, and that is not an error
        if not answered:
            raise CommandError(f"no reply: {result.error or result.status}")
