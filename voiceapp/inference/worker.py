"""The inference worker: serves ASR, LLM and TTS requests from the Channels layer.

Plain Python on top of any channel layer (Redis in production, the in-memory
layer when embedded in the web process). Run it with
`python manage.py inference_worker`, or without Django with
`python -m voiceapp.inference.worker --redis-url redis://...`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Coroutine, Mapping
from typing import Any

from voiceapp.engine.asr import DEFAULT_ASR_MODEL, Transcript
from voiceapp.engine.audio import float_to_pcm16, pcm16_to_float
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import LLMOptions, PromptUsage
from voiceapp.engine.tts import VoiceSpec

from .capacity import Advert, CapacityAdvertiser, PoolRegistry, RedisPoolRegistry
from .protocol import CHANNELS, HEARTBEAT_S, KINDS, WORKER_CHANNEL_PREFIX, layer_send, redis_hosts

log = logging.getLogger(__name__)

DEFAULT_SLOTS = {"asr": 1, "llm": 1, "tts": 2, "eou": 1}
STOP_TIMEOUT_S = 1.0
SEEN_REQUESTS = 4096
LAYER_RETRY_FIRST_S = 0.1
LAYER_RETRY_MAX_S = 1.0


class InferenceWorker:
    """Takes requests only when it has a free slot, so idle workers get the next one."""

    def __init__(
        self,
        layer: Any,
        inference: LocalInference,
        *,
        kinds: tuple[str, ...] = KINDS,
        slots: Mapping[str, int] | None = None,
        registry: PoolRegistry | None = None,
        max_calls: int = 0,
        wait_budget_ms: float = 250.0,
    ) -> None:
        """`registry`: where to advertise capacity (none: not advertised); `max_calls`:
        the calls this worker is sized for; `wait_budget_ms`: the queue wait (p95) past
        which it reports itself overloaded."""
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown inference kinds: {sorted(unknown)}")
        self.layer = layer
        self.inference = inference
        self.kinds = kinds
        self.slots = {**DEFAULT_SLOTS, "llm": inference.llm_slots, **(slots or {})}
        self.channel = ""
        self.ready = asyncio.Event()
        self.served = dict.fromkeys(KINDS, 0)
        self._busy = dict.fromkeys(KINDS, 0)  # requests in progress, however they came
        self._freed = asyncio.Event()  # set whenever a request ends
        self._handlers: dict[str, asyncio.Task[None]] = {}
        self._seen: OrderedDict[str, None] = OrderedDict()  # request ids taken lately
        self._tasks: set[asyncio.Task[None]] = set()
        self.capacity = CapacityAdvertiser(
            registry,
            self._load,
            kinds=kinds,
            max_calls=max_calls,
            wait_budget_ms=wait_budget_ms,
            devices=inference.devices.as_dict() if inference.devices else None,
        )

    async def run(self) -> None:
        """Serve until cancelled; cancels requests in progress on the way out."""
        # A plain (not process-specific "!") name: channels_redis receives on
        # those with a simple blocking pop that is safe to cancel.
        self.channel = f"{WORKER_CHANNEL_PREFIX}.{uuid.uuid4().hex}"
        loops = [asyncio.create_task(self._serve(kind)) for kind in self.kinds]
        loops.append(asyncio.create_task(self._control()))
        if self.capacity.registry is not None:
            # advertised before ready: a call admitted after that sees this worker
            await self.capacity.publish()
            loops.append(asyncio.create_task(self.capacity.run()))
        self.ready.set()
        log.info(
            "inference worker %s serving %s on %s",
            self.channel,
            ",".join(self.kinds),
            self.inference.devices.describe() if self.inference.devices else "unknown devices",
        )
        try:
            await asyncio.gather(*loops)
        finally:
            tasks = [*loops, *self._tasks]
            for task in tasks:
                task.cancel()
            # redis-py can miss a cancellation that lands inside a blocking pop;
            # such a receive ends with its event loop, so do not wait for it forever.
            _, stuck = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            if stuck:
                log.debug("%d worker tasks still stopping", len(stuck))
            await self.capacity.withdraw(self.channel, STOP_TIMEOUT_S)

    def _load(self) -> tuple[str, dict[str, int], dict[str, int]]:
        """This worker's channel, slots and busy slots, for its capacity adverts."""
        slots = {kind: self.slots[kind] for kind in self.kinds}
        return self.channel, slots, {kind: self._busy[kind] for kind in self.kinds}

    def advert(self) -> Advert:
        """This worker's capacity and load now."""
        return self.capacity.advert()

    async def _receive(self, channel: str) -> dict[str, Any]:
        """The next message on `channel`. While the layer (Redis) is unreachable the
        receive is retried with backoff: the worker outlives a Redis restart."""
        delay = LAYER_RETRY_FIRST_S
        while True:
            try:
                message = await self.layer.receive(channel)
            except Exception as exc:
                if delay == LAYER_RETRY_FIRST_S:
                    log.warning("channel layer unreachable (%s): retrying %s", exc, channel)
                await asyncio.sleep(delay)
                delay = min(delay * 2, LAYER_RETRY_MAX_S)
                continue
            if delay > LAYER_RETRY_FIRST_S:
                log.warning("channel layer back: serving %s again", channel)
            return dict(message)

    async def _serve(self, kind: str) -> None:
        while True:
            await self._free_slot(kind)
            message = await self._receive(CHANNELS[kind])
            if self._busy[kind] >= self.slots[kind]:
                # A request sent to this worker by name took the slot while this loop
                # waited: back to the shared queue, where an idle worker takes it.
                try:
                    await self.layer.send(CHANNELS[kind], message)
                    continue
                except Exception as exc:
                    log.warning("could not requeue a %s request (%s): serving it", kind, exc)
            self._start(kind, message)

    async def _free_slot(self, kind: str) -> None:
        while self._busy[kind] >= self.slots[kind]:
            self._freed.clear()
            await self._freed.wait()

    def _start(self, kind: str, message: dict[str, Any]) -> None:
        """Take a request: it holds one of the kind's slots until its handler ends."""
        self._busy[kind] += 1
        self._spawn(self._handle(kind, message)).add_done_callback(lambda _t: self._release(kind))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task of this worker's, cancelled with it."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _release(self, kind: str) -> None:
        self._busy[kind] -= 1
        self._freed.set()

    async def _control(self) -> None:
        while True:
            message = await self._receive(self.channel)
            kind = message.get("type")
            if kind == "inference.cancel":
                handler = self._handlers.get(str(message.get("request_id")))
                if handler is not None:
                    handler.cancel()
            elif kind == "inference.request" and message.get("kind") in self.kinds:
                self._spawn(self._direct(str(message["kind"]), message))

    async def _direct(self, kind: str, message: dict[str, Any]) -> None:
        """A request sent to this worker by name (a call's next LLM turn, for its cache).

        Taken when a slot is free before `accept_by`; otherwise left to expire, and the
        caller sends it to the shared queue.
        """
        wait = float(message.get("accept_by", 0.0)) - time.time()
        try:
            await asyncio.wait_for(self._free_slot(kind), max(0.0, wait))
        except TimeoutError:
            log.info("direct %s request %s: no free slot in time", kind, message.get("request_id"))
            return
        self._start(kind, message)

    async def _send(self, reply: str, message: dict[str, Any]) -> None:
        """A reply, signed with this worker's channel: the caller keeps to one worker."""
        await layer_send(self.layer, reply, {**message, "worker": self.channel})

    async def _handle(self, kind: str, message: dict[str, Any]) -> None:
        request_id = str(message.get("request_id", ""))
        reply = message.get("reply_channel")
        if not reply or not request_id:
            log.warning("dropping malformed %s request", kind)
            return
        if request_id in self._seen:
            # channels_redis can hand a shared-queue message out twice (its receive
            # puts messages in flight back on the queue; django/channels_redis#163).
            log.info("dropping a repeat of %s request %s", kind, request_id)
            return
        self._seen[request_id] = None
        while len(self._seen) > SEEN_REQUESTS:
            self._seen.popitem(last=False)
        if time.time() > float(message.get("accept_by", float("inf"))):
            log.info("dropping stale %s request %s", kind, request_id)
            return
        send = self._send

        async def heartbeat() -> None:
            while True:
                await asyncio.sleep(HEARTBEAT_S)
                await send(reply, {"type": "inference.heartbeat", "request_id": request_id})

        current = asyncio.current_task()
        assert current is not None
        self._handlers[request_id] = current
        beat = asyncio.create_task(heartbeat())
        try:
            await send(
                reply,
                {"type": "inference.accepted", "request_id": request_id, "worker": self.channel},
            )
            payload = message.get("payload") or {}
            done: dict[str, Any] = {"type": "inference.done", "request_id": request_id}
            started = time.monotonic()
            waited = time.time() - float(message.get("queued_at", time.time()))
            audio_s = 0.0
            if kind == "asr":
                audio_s = await self._asr(reply, request_id, payload)
            elif kind == "llm":
                done["queue_ms"], done["usage"] = await self._llm(reply, request_id, payload)
            elif kind == "eou":
                await self._eou(reply, request_id, payload)
            else:
                audio_s = await self._tts(reply, request_id, payload)
            self.capacity.record(
                kind, wait_s=waited, service_s=time.monotonic() - started, audio_s=audio_s
            )
            self.served[kind] += 1
            await send(reply, done)
        except asyncio.CancelledError:
            log.debug("%s request %s cancelled", kind, request_id)
            raise
        except Exception as exc:
            log.warning("%s request %s failed: %s", kind, request_id, exc)
            with contextlib.suppress(Exception):
                await send(
                    reply,
                    {
                        "type": "inference.error",
                        "request_id": request_id,
                        "code": f"{kind}_failed",
                        "message": str(exc),
                    },
                )
        finally:
            beat.cancel()
            self._handlers.pop(request_id, None)

    async def _asr(self, reply: str, request_id: str, payload: dict[str, Any]) -> float:
        """Transcribe; returns the seconds of audio read."""
        audio = pcm16_to_float(bytes(payload["audio"]))
        language = str(payload.get("language", "en"))
        model = str(payload.get("model") or DEFAULT_ASR_MODEL)
        t: Transcript = await self.inference.transcribe(audio, language, model)
        await self._send(
            reply,
            {
                "type": "inference.result",
                "request_id": request_id,
                "transcript": {
                    "text": t.text,
                    "no_speech_prob": t.no_speech_prob,
                    "avg_logprob": t.avg_logprob,
                    "audio_seconds": t.audio_seconds,
                    "rejected": t.rejected,
                },
            },
        )
        return len(audio) / 16000

    async def _eou(self, reply: str, request_id: str, payload: dict[str, Any]) -> None:
        probability = await self.inference.end_of_turn(
            str(payload["text"]), str(payload.get("previous_reply", ""))
        )
        await self._send(
            reply,
            {"type": "inference.score", "request_id": request_id, "probability": probability},
        )

    async def _llm(
        self, reply: str, request_id: str, payload: dict[str, Any]
    ) -> tuple[float | None, dict[str, int]]:
        """Stream the reply's deltas; its queue time and prompt usage for `done`."""
        options = LLMOptions.from_wire(payload)
        messages = [
            {"role": str(m["role"]), "content": str(m["content"])} for m in payload["messages"]
        ]
        stream = self.inference.generate(messages, options)
        first = True
        try:
            async for delta in stream:
                message: dict[str, Any] = {
                    "type": "inference.token",
                    "request_id": request_id,
                    "text": delta,
                }
                if first:
                    message["queue_ms"] = stream.queue_ms
                    if stream.usage.input_tokens:
                        message["usage"] = _usage_wire(stream.usage)
                    first = False
                await self._send(reply, message)
        finally:
            await stream.aclose()
        return stream.queue_ms, _usage_wire(stream.usage)

    async def _tts(self, reply: str, request_id: str, payload: dict[str, Any]) -> float:
        """Stream the synthesized audio; returns its seconds."""
        voice = VoiceSpec(
            voice_id=str(payload.get("voice_id", "")),
            model_path=str(payload["model_path"]),
            speed=float(payload.get("speed", 1.0)),
        )
        stream = self.inference.synthesize(str(payload["text"]), voice)
        seconds = 0.0
        try:
            async for chunk in stream:
                seconds += len(chunk.samples) / chunk.sample_rate
                await self._send(
                    reply,
                    {
                        "type": "inference.audio",
                        "request_id": request_id,
                        "pcm": float_to_pcm16(chunk.samples),
                        "sample_rate": chunk.sample_rate,
                    },
                )
        finally:
            await stream.aclose()
        return seconds


def _usage_wire(usage: PromptUsage) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "cached_tokens": usage.cached_tokens}


async def serve_forever(
    worker: InferenceWorker, until: Awaitable[Any] | None = None, announce: bool = False
) -> None:
    """Run a worker until `until` completes or SIGTERM/SIGINT arrives."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    runner = asyncio.create_task(worker.run())
    if announce:
        await worker.ready.wait()
        print(f"WORKER READY {worker.channel}", flush=True)
    waiters: list[asyncio.Future[Any]] = [runner, asyncio.ensure_future(stop.wait())]
    if until is not None:
        waiters.append(asyncio.ensure_future(until))
    done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    if runner in done and not runner.cancelled() and runner.exception() is not None:
        log.error("inference worker stopped", exc_info=runner.exception())
    for w in waiters:
        w.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)


def main(argv: list[str] | None = None) -> None:
    """Standalone worker without Django (used by the benchmark)."""
    from channels_redis.core import RedisChannelLayer

    from voiceapp.engine.models import ModelSettings, load_inference

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--prefix", default="asgi", help="channel layer prefix")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--asr-threads", type=int, default=2)
    parser.add_argument("--llm-threads", type=int, default=1)
    parser.add_argument("--llm-batch-threads", type=int, default=2)
    parser.add_argument("--tts-threads", type=int, default=1)
    parser.add_argument("--llm-http-base-url", default="")
    parser.add_argument("--inference-device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--asr-device", default="", help="cpu, cuda or auto (overrides)")
    parser.add_argument("--asr-compute-type", default="default")
    parser.add_argument("--llm-gpu-layers", type=int, help="-1: all on the GPU (overrides)")
    parser.add_argument(
        "--max-calls", type=int, default=0, help="calls it is sized for (0: do not advertise)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    inference = load_inference(
        ModelSettings(
            asr_threads=args.asr_threads,
            llm_threads=args.llm_threads,
            llm_batch_threads=args.llm_batch_threads,
            tts_threads=args.tts_threads,
            llm_http_base_url=args.llm_http_base_url,
            inference_device=args.inference_device,
            asr_device=args.asr_device,
            asr_compute_type=args.asr_compute_type,
            llm_gpu_layers=args.llm_gpu_layers,
        )
    )
    layer = RedisChannelLayer(hosts=redis_hosts(args.redis_url), prefix=args.prefix, expiry=30)

    async def serve() -> None:
        registry = RedisPoolRegistry(args.redis_url, args.prefix) if args.max_calls else None
        worker = InferenceWorker(
            layer,
            inference,
            kinds=tuple(args.kinds.split(",")),
            registry=registry,
            max_calls=args.max_calls,
        )
        await serve_forever(worker, announce=True)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
