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

from sessions.admission import pool_snapshot_sync, refusals
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
        yield from pool_metrics()


def pool_metrics() -> Iterator[Metric]:
    """The inference pool as admission control sees it (sessions/admission.py)."""
    state, adverts = pool_snapshot_sync()
    yield GaugeMetricFamily(
        "voiceapp_pool_workers", "Inference workers advertising capacity.", value=state.workers
    )
    yield GaugeMetricFamily(
        "voiceapp_pool_capacity_calls",
        "Calls the advertising workers are sized for (the scarcest kind's sum).",
        value=state.capacity or 0,
    )
    yield GaugeMetricFamily(
        "voiceapp_pool_active_calls", "Calls holding an inference pool slot.", value=state.active
    )
    yield CounterMetricFamily(
        "voiceapp_admission_refused",
        "Calls refused with server_busy (pool full or overloaded).",
        value=refusals(),
    )
    busy = GaugeMetricFamily(
        "voiceapp_worker_busy_slots", "Requests in progress.", labels=["worker", "kind"]
    )
    slots = GaugeMetricFamily("voiceapp_worker_slots", "Request slots.", labels=["worker", "kind"])
    wait = GaugeMetricFamily(
        "voiceapp_worker_queue_wait_p95_seconds",
        "Queue wait before a worker took a request, p95 over its last 30 s.",
        labels=["worker", "kind"],
    )
    rtf = GaugeMetricFamily(
        "voiceapp_worker_real_time_factor",
        "Seconds of work per second of audio over the last 30 s (ASR and TTS).",
        labels=["worker", "kind"],
    )
    cpu = GaugeMetricFamily(
        "voiceapp_worker_cpu_share", "Share of its cores the worker used.", labels=["worker"]
    )
    overloaded = GaugeMetricFamily(
        "voiceapp_worker_overloaded", "1 when the worker takes no new calls.", labels=["worker"]
    )
    devices = GaugeMetricFamily(
        "voiceapp_worker_devices",
        "Where the worker's models run (always 1; the labels say it): ASR device and "
        "compute type, LLM and end-of-utterance layers on the GPU (-1: all), TTS provider.",
        labels=["worker", "asr", "asr_compute_type", "llm_gpu_layers", "eou_gpu_layers", "tts"],
    )
    for advert in adverts:
        worker = advert.worker.rsplit(".", 1)[-1][:12]
        cpu.add_metric([worker], advert.cpu)
        plan = advert.devices
        if plan:
            labels = [
                str(plan.get("asr_device", "")),
                str(plan.get("asr_compute_type", "")),
                str(plan.get("llm_gpu_layers", "")),
                str(plan.get("eou_gpu_layers", "")),
                str((plan.get("tts_providers") or [""])[0]),
            ]
            devices.add_metric([worker, *labels], 1)
        overloaded.add_metric([worker], float(advert.overloaded))
        for kind in advert.kinds:
            busy.add_metric([worker, kind], advert.busy.get(kind, 0))
            slots.add_metric([worker, kind], advert.slots.get(kind, 0))
            stats = advert.stats.get(kind, {})
            if "wait_p95_ms" in stats:
                wait.add_metric([worker, kind], stats["wait_p95_ms"] / 1000)
            if "rtf" in stats:
                rtf.add_metric([worker, kind], stats["rtf"])
    yield from (busy, slots, wait, rtf, cpu, overloaded, devices)


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
