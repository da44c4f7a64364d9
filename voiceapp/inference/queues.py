"""How many requests wait in the shared inference queues (``inference.<kind>``),
read from the channel layer without taking anything off them."""

from __future__ import annotations

import logging
import time
from functools import lru_cache
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from voiceapp.inference.protocol import CHANNELS

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _redis(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)


def queue_depths() -> dict[str, int] | None:
    """Waiting requests per kind; None when the layer cannot be read.

    Redis layer: the channel is a sorted set scored by send time, and messages
    older than the layer's expiry are dead (workers drop them unread), so the
    depth is one ZCOUNT per kind. In-memory layer (embedded mode): the queues of
    this process, which is where the embedded worker serves them."""
    layer = get_channel_layer()
    if isinstance(layer, InMemoryChannelLayer):
        return {kind: _memory_depth(layer, channel) for kind, channel in CHANNELS.items()}
    config = settings.CHANNEL_LAYERS["default"].get("CONFIG", {})
    if not settings.REDIS_URL:
        return None
    prefix, expiry = config.get("prefix", "asgi"), float(config.get("expiry", 60))
    oldest_live = time.time() - expiry
    try:
        client = _redis(settings.REDIS_URL)
        pipe = client.pipeline(transaction=False)
        for channel in CHANNELS.values():
            pipe.zcount(prefix + channel, oldest_live, "+inf")
        counts = pipe.execute()
    except Exception:  # a metrics scrape must not fail because Redis is away
        logger.warning("inference queue depth: Redis unreachable", exc_info=True)
        return None
    return dict(zip(CHANNELS, (int(n) for n in counts), strict=True))


def _memory_depth(layer: InMemoryChannelLayer, channel: str) -> int:
    queue = layer.channels.get(channel)
    return queue.qsize() if queue is not None else 0
