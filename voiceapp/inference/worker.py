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
from collections.abc import AsyncIterator, Awaitable, Coroutine, Mapping
from typing import Any

from voiceapp.engine.audio import float_to_pcm16, pcm16_to_float
from voiceapp.engine.inference import LocalInference, ThreadStream

from .capacity import Advert, CapacityAdvertiser, PoolRegistry, RedisPoolRegistry
from .protocol import (
    CANCEL,
    CHANNELS,
    HEARTBEAT_S,
    KINDS,
    MALFORMED_REQUEST,
    WORKER_CHANNEL_PREFIX,
    AsrPayload,
    DoneMessage,
    EouPayload,
    LlmPayload,
    ProtocolError,
    Request,
    TtsPayload,
    as_chat_messages,
    as_llm_options,
    as_voice,
    decode_request,
    decode_worker_message,
    encode_accepted,
    encode_audio,
    encode_done,
    encode_error,
    encode_heartbeat,
    encode_result,
    encode_score,
    encode_token,
    layer_send,
    redis_hosts,
)

log = logging.getLogger(__name__)

# ASR and LLM slots: as many readings and replies as the loaded models run at once.
DEFAULT_SLOTS = {"eou": 1, "caption": 1}
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
        if "asr" in kinds and "caption" not in kinds:
            kinds = (*kinds, "caption")  # a worker that reads turns reads their captions too
        self.layer = layer
        self.inference = inference
        self.kinds = kinds
        self.slots = {
            **DEFAULT_SLOTS,
            "llm": inference.llm_slots,
            "asr": inference.asr_slots,
            "tts": inference.tts_slots,
            **(slots or {}),
        }
        self.channel = ""
        self.ready = asyncio.Event()
        self.served = dict.fromkeys(KINDS, 0)
        self._busy = dict.fromkeys(KINDS, 0)  # requests in progress, however they came
        self._freed = asyncio.Event()  # set whenever a request ends
        self._handlers: dict[str, asyncio.Task[None]] = {}
        # the model streams of requests in progress (LLM and TTS), which a cancel stops
        self._streams: dict[str, ThreadStream[Any]] = {}
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
            try:
                request = decode_request(message, kind)
            except ProtocolError as exc:
                self._refuse(exc)
                continue
            if self._busy[kind] >= self.slots[kind]:
                # A request sent to this worker by name took the slot while this loop
                # waited: back to the shared queue, where an idle worker takes it.
                try:
                    await self.layer.send(CHANNELS[kind], message)
                    continue
                except Exception as exc:
                    log.warning("could not requeue a %s request (%s): serving it", kind, exc)
            self._start(request)

    async def _free_slot(self, kind: str) -> None:
        while self._busy[kind] >= self.slots[kind]:
            self._freed.clear()
            await self._freed.wait()

    def _refuse(self, error: ProtocolError) -> None:
        """A request this worker cannot read: answered with an error when it says where
        to, else only logged. The worker goes on either way."""
        if error.reply_channel is None or error.request_id is None:
            log.warning("dropping a malformed request with nowhere to reply: %s", error)
            return
        log.warning("refusing malformed request %s: %s", error.request_id, error)
        reply = encode_error(error.request_id, MALFORMED_REQUEST, str(error), worker=self.channel)
        self._spawn(self._send_quietly(error.reply_channel, reply))

    async def _send_quietly(self, channel: str, message: Mapping[str, object]) -> None:
        try:
            await layer_send(self.layer, channel, message)
        except Exception as exc:
            log.warning("could not send %s to %s: %s", message.get("type"), channel, exc)

    def _start(self, request: Request) -> None:
        """Take a request: it holds one of the kind's slots until its handler ends."""
        kind = request["kind"]
        self._busy[kind] += 1
        self._spawn(self._handle(request)).add_done_callback(lambda _t: self._release(kind))

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
            raw = await self._receive(self.channel)
            try:
                message = decode_worker_message(raw)
            except ProtocolError as exc:
                self._refuse(exc)
                continue
            if message["type"] == CANCEL:
                self._stop(message["request_id"])
            elif message["kind"] in self.kinds:
                self._spawn(self._direct(message))

    def _stop(self, request_id: str) -> None:
        """A request the caller gave up: its model stops at its next token or audio
        piece, and its handler is cancelled.

        The model is told directly, not only through the handler's cancellation: a
        cancellation that lands while the handler sends a token through the channel
        layer was seen lost (2 of 8 cancelled replies in one `bench load` run went on
        to their end, holding the call's llama context from its next request).
        """
        stream = self._streams.get(request_id)
        if stream is not None:
            stream.cancel()
        handler = self._handlers.get(request_id)
        if handler is not None:
            handler.cancel()

    async def _direct(self, request: Request) -> None:
        """A request sent to this worker by name (a call's next LLM turn, for its cache).

        Taken when a slot is free before `accept_by`; otherwise left to expire, and the
        caller sends it to the shared queue.
        """
        kind = request["kind"]
        wait = request["accept_by"] - time.time()
        try:
            await asyncio.wait_for(self._free_slot(kind), max(0.0, wait))
        except TimeoutError:
            log.info("direct %s request %s: no free slot in time", kind, request["request_id"])
            return
        self._start(request)

    async def _send(self, reply: str, message: Mapping[str, object]) -> None:
        await layer_send(self.layer, reply, message)

    async def _handle(self, request: Request) -> None:
        kind, request_id, reply = request["kind"], request["request_id"], request["reply_channel"]
        if request_id in self._seen:
            # channels_redis can hand a shared-queue message out twice (its receive
            # puts messages in flight back on the queue; django/channels_redis#163).
            log.info("dropping a repeat of %s request %s", kind, request_id)
            return
        self._seen[request_id] = None
        while len(self._seen) > SEEN_REQUESTS:
            self._seen.popitem(last=False)
        if time.time() > request["accept_by"]:
            log.info("dropping stale %s request %s", kind, request_id)
            return
        send, worker = self._send, self.channel

        async def heartbeat() -> None:
            while True:
                await asyncio.sleep(HEARTBEAT_S)
                await send(reply, encode_heartbeat(request_id, worker=worker))

        current = asyncio.current_task()
        assert current is not None
        self._handlers[request_id] = current
        beat = asyncio.create_task(heartbeat())
        try:
            await send(reply, encode_accepted(request_id, worker=worker))
            done = encode_done(request_id, worker=worker)
            started = time.monotonic()
            waited = time.time() - request["queued_at"]
            audio_s = 0.0
            if request["kind"] == "asr" or request["kind"] == "caption":
                audio_s = await self._asr(
                    reply, request_id, request["payload"], caption=request["kind"] == "caption"
                )
            elif request["kind"] == "llm":
                done = await self._llm(reply, request_id, request["payload"])
            elif request["kind"] == "eou":
                await self._eou(reply, request_id, request["payload"])
            else:
                audio_s = await self._tts(reply, request_id, request["payload"])
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
                    reply, encode_error(request_id, f"{kind}_failed", str(exc), worker=worker)
                )
        finally:
            beat.cancel()
            self._handlers.pop(request_id, None)

    async def _asr(
        self, reply: str, request_id: str, payload: AsrPayload, *, caption: bool
    ) -> float:
        """Transcribe; returns the seconds of audio read."""
        audio = pcm16_to_float(payload["audio"])
        transcript = await self.inference.transcribe(
            audio, payload["language"], payload["model"], partial=caption
        )
        await self._send(reply, encode_result(request_id, transcript, worker=self.channel))
        return len(audio) / 16000

    async def _eou(self, reply: str, request_id: str, payload: EouPayload) -> None:
        probability = await self.inference.end_of_turn(payload["text"], payload["previous_reply"])
        await self._send(reply, encode_score(request_id, probability, worker=self.channel))

    async def _llm(self, reply: str, request_id: str, payload: LlmPayload) -> DoneMessage:
        """Stream the reply's deltas; returns its `done`, with its queue time and prompt
        usage."""
        stream = self.inference.generate(as_chat_messages(payload), as_llm_options(payload))
        first = True
        async with self._stoppable(request_id, stream):
            async for delta in stream:
                if first:
                    # the count is known by the first token with the local model only
                    usage = stream.usage if stream.usage.input_tokens else None
                    token = encode_token(
                        request_id,
                        delta,
                        worker=self.channel,
                        queue_ms=stream.queue_ms,
                        usage=usage,
                    )
                    first = False
                else:
                    token = encode_token(request_id, delta, worker=self.channel)
                await self._send(reply, token)
        return encode_done(
            request_id, worker=self.channel, queue_ms=stream.queue_ms, usage=stream.usage
        )

    async def _tts(self, reply: str, request_id: str, payload: TtsPayload) -> float:
        """Stream the synthesized audio; returns its seconds."""
        stream = self.inference.synthesize(
            payload["text"], as_voice(payload), background=payload.get("background", False)
        )
        seconds = 0.0
        async with self._stoppable(request_id, stream):
            async for chunk in stream:
                seconds += len(chunk.samples) / chunk.sample_rate
                audio = encode_audio(
                    request_id,
                    float_to_pcm16(chunk.samples),
                    chunk.sample_rate,
                    worker=self.channel,
                )
                await self._send(reply, audio)
        return seconds

    @contextlib.asynccontextmanager
    async def _stoppable(self, request_id: str, stream: ThreadStream[Any]) -> AsyncIterator[None]:
        """While `stream` serves `request_id`, a cancel of that request stops it
        (`_stop`); closed at the end, however it ends."""
        self._streams[request_id] = stream
        try:
            yield
        finally:
            self._streams.pop(request_id, None)
            await stream.aclose()


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
    parser.add_argument("--asr-threads", type=int, default=1, help="per replica")
    parser.add_argument("--asr-replicas", type=int, default=2, help="readings at once")
    parser.add_argument("--llm-threads", type=int, default=1)
    parser.add_argument("--llm-batch-threads", type=int, default=ModelSettings().llm_batch_threads)
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
            asr_replicas=args.asr_replicas,
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
