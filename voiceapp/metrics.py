"""``GET /metrics``: Prometheus text, behind ``Authorization: Bearer <METRICS_TOKEN>``.

Everything is read at scrape time from the shared stores (Postgres for calls and
turns, the channel layer for inference queues), so any web process answers for
the whole deployment and nothing is lost when a process restarts. With
``METRICS_TOKEN`` unset the endpoint does not exist (404); a missing or wrong
token is a 401."""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from sessions.selectors import call_active_count, call_counts_by_end_reason, turn_v2v_histogram
from voiceapp.inference.queues import queue_depths

# Upper bounds of the v2v histogram's buckets, in seconds (+Inf is added).
V2V_BUCKETS_S = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


class VoiceAppCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        calls = CounterMetricFamily(
            "voiceapp_calls",
            "Ended calls (every organization), by end reason.",
            labels=["end_reason"],
        )
        for reason, n in sorted(call_counts_by_end_reason().items()):
            calls.add_metric([reason], n)
        yield calls

        yield GaugeMetricFamily(
            "voiceapp_calls_active",
            "Calls in progress: not ended, and their process reported within CALL_STALE_AFTER_S.",
            value=call_active_count(stale_after_s=settings.CALL_STALE_AFTER_S),
        )

        histogram = turn_v2v_histogram(bounds_ms=tuple(b * 1000 for b in V2V_BUCKETS_S))
        buckets = [
            (floatToGoString(bound), n)
            for bound, n in zip(V2V_BUCKETS_S, histogram.buckets, strict=True)
        ]
        yield HistogramMetricFamily(
            "voiceapp_turn_v2v_seconds",
            "Voice-to-voice latency of recorded turns: the caller stopped speaking "
            "to the first reply audio sent.",
            buckets=[*buckets, ("+Inf", histogram.count)],
            sum_value=histogram.total / 1000,
        )

        depths = queue_depths()
        if depths is not None:
            queue = GaugeMetricFamily(
                "voiceapp_inference_queue_depth",
                "Requests waiting in the shared inference queue of each kind.",
                labels=["kind"],
            )
            for kind, n in depths.items():
                queue.add_metric([kind], n)
            yield queue


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(VoiceAppCollector())


def _authorized(request: HttpRequest, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.METRICS_TOKEN
    if not token:
        return HttpResponse("Not found.\n", status=404, content_type="text/plain")
    if not _authorized(request, token):
        response = HttpResponse(
            "Give the metrics token: Authorization: Bearer <METRICS_TOKEN>.\n",
            status=401,
            content_type="text/plain",
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
