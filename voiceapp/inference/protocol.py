"""Message formats on the Channels layer between the call loop and inference workers.

Requests go to `inference.asr`, `inference.llm`, `inference.tts` or `inference.eou`; any worker
with a free slot takes one. Replies go to the caller's `reply_channel`, each
tagged with the `request_id`:

    request   {"type": "inference.request", "kind", "request_id", "reply_channel",
               "accept_by": unix seconds, "payload": {...}}
    accepted  {"type": "inference.accepted", "request_id", "worker": worker channel}
    heartbeat {"type": "inference.heartbeat", "request_id"}          every 0.2 s while busy
    result    {"type": "inference.result", "request_id", "transcript": {...}}     (asr)
    token     {"type": "inference.token", "request_id", "text", "queue_ms"?, "usage"?} (llm)
    audio     {"type": "inference.audio", "request_id", "pcm": bytes, "sample_rate"} (tts)
    score     {"type": "inference.score", "request_id", "probability"}           (eou)
    done      {"type": "inference.done", "request_id", "queue_ms", "usage"?}
    error     {"type": "inference.error", "request_id", "code", "message"}
    cancel    {"type": "inference.cancel", "request_id"}   caller -> the worker channel

Every reply also carries "worker": the channel of the worker that sent it, so a
caller keeps to one worker when a shared-queue message was handed out twice.

A retried request keeps its reply channel and gets a new request id; a worker
that accepts the abandoned attempt late is sent a cancel for it. A call's next
LLM turn is sent to the worker channel of the worker that served its last one
(it holds the call's prompt in its cache), with a short `accept_by`.

Payloads: asr {"audio": PCM16 16 kHz mono bytes, "language"}; llm {"messages",
"max_tokens", "temperature", "model"}; tts {"text", "voice_id", "model_path", "speed"};
eou {"text", "previous_reply"} (the probability that the caller's turn is finished
after "text").

An LLM reply's "usage" is {"input_tokens", "cached_tokens"}: the prompt tokens the
model read, and how many of those came from its prefix cache. It rides on `done`,
and also on the first token when the count is known by then (the local model), so a
reply closed before its end (barge-in) still reports the prompt it read.
"""

from __future__ import annotations

import asyncio
from typing import Any

KINDS = ("asr", "llm", "tts", "eou")
CHANNELS = {kind: f"inference.{kind}" for kind in KINDS}
WORKER_CHANNEL_PREFIX = "inference.worker"  # + ".<uuid>": one per worker, for cancels
REPLY_CHANNEL_PREFIX = "inference.reply"  # + ".<uuid>": one per request, shared by its attempts
HEARTBEAT_S = 0.2


def redis_hosts(url: str) -> list[dict[str, object]]:
    """channels_redis host entries for `url`.

    redis-py 8 reads with a 5 s socket timeout by default, the same as
    channels_redis's 5 s blocking pop, so an idle receive fails with
    TimeoutError; a longer socket timeout keeps idle receivers alive.
    """
    return [{"address": url, "socket_timeout": 30}]


SEND_TRIES = 3


async def layer_send(layer: Any, channel: str, message: dict[str, Any]) -> None:
    """`layer.send`, tried again on a connection error: after a Redis restart the
    layer's pooled connections are dead, and each fails once before reconnecting.
    A full channel is not retried."""
    from channels.exceptions import ChannelFull

    for attempt in range(SEND_TRIES):
        try:
            await layer.send(channel, message)
            return
        except ChannelFull:
            raise
        except Exception:
            if attempt == SEND_TRIES - 1:
                raise
            await asyncio.sleep(0.05 * (attempt + 1))


def reconnecting_retry() -> Any:
    """A redis-py `retry` for clients that outlive a Redis restart: a command on a
    pooled connection that died is sent again on a new one (redis-py's asyncio
    clients do not retry by default). Not for blocking pops."""
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    return Retry(ExponentialBackoff(cap=0.5, base=0.05), 3)
