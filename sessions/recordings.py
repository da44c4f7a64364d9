"""Call recordings: from the spool a call writes (sessions/realtime/recording.py) to
an Ogg Opus file in the default storage, and away again when it expires.

A call whose persona records calls spools raw PCM16 stereo (caller left, agent
right) into `CALL_RECORDING_SPOOL_DIR` as it runs. When it ends the runner calls
`call_recording_keep`, which queues the Celery task `calls.encode_recording`:
`call_recording_encode` encodes the spool with libopus (PyAV), saves the file
under `call-recordings/<org>/` and writes the `CallRecording`. Deleting the row,
or the call it belongs to, deletes the file once the transaction commits
(`sessions/signals.py`). Beat's `calls.purge_expired_recordings` deletes
recordings past their persona's retention and spool files left by a process
that died.
"""

from __future__ import annotations

import logging
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import av
import numpy as np
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from sessions.models import Call, CallRecording
from sessions.realtime.recording import CaptureResult
from voiceapp.personas.models import RECORDING_RETENTION_DAYS

log = logging.getLogger(__name__)

# The goodbye spoken after the maximum duration is reached is recorded too.
GOODBYE_ALLOWANCE_S = 30.0
OPUS_BIT_RATE = 48_000  # stereo speech: 24 kb/s a side
STALE_SPOOL_S = 24 * 3600  # a spool this old was left by a process that died


def spool_path(call_id: str) -> Path:
    """Where a call spools its audio (a folder every web and Celery process sees)."""
    folder = Path(settings.CALL_RECORDING_SPOOL_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{call_id}.pcm"


def call_recording_keep(*, call_id: str, captured: CaptureResult) -> None:
    """Queue the encoding of a finished call's spooled audio."""
    from sessions.tasks import encode_recording

    encode_recording.delay(
        call_id=call_id,
        spool=str(captured.path),
        rate=captured.rate,
        channels=captured.channels,
        marks=captured.marks,
    )


def encode_ogg_opus(pcm: Path, out: Path, *, rate: int, channels: int) -> float:
    """Encode raw interleaved PCM16 as Ogg Opus; the seconds encoded."""
    layout = "stereo" if channels == 2 else "mono"
    frames = 0
    with av.open(str(out), "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=rate, layout=layout)
        stream.bit_rate = OPUS_BIT_RATE
        with pcm.open("rb") as source:
            while block := source.read(rate * channels * 2):  # a second at a time
                samples = np.frombuffer(block, dtype="<i2")
                samples = samples[: len(samples) - len(samples) % channels]
                frame = av.AudioFrame.from_ndarray(
                    samples.reshape(1, -1), format="s16", layout=layout
                )
                frame.sample_rate = rate
                frame.pts = frames
                frames += frame.samples
                for packet in stream.encode(frame):
                    container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return frames / rate


def call_recording_encode(
    *, call_id: str, spool: str, rate: int, channels: int, marks: dict[str, float]
) -> CallRecording | None:
    """Encode a call's spool into its `CallRecording` (replacing one it had); the
    spool is removed either way. None when the call is gone."""
    source = Path(spool)
    try:
        call = Call.objects.select_related("persona").filter(pk=call_id).first()
        if call is None or not source.exists():
            return None
        with tempfile.TemporaryDirectory() as tmp:
            encoded = Path(tmp) / "call.ogg"
            seconds = encode_ogg_opus(source, encoded, rate=rate, channels=channels)
            with encoded.open("rb") as f:
                name = default_storage.save(f"call-recordings/{call.org_id}/{call.pk}.ogg", File(f))
        days = call.persona.recording_retention_days if call.persona else RECORDING_RETENTION_DAYS
        now = timezone.now()
        with transaction.atomic():
            CallRecording.objects.filter(call=call).delete()  # its file goes on commit
            return CallRecording.objects.create(
                call=call,
                file=name,
                duration_s=round(seconds, 2),
                size_bytes=default_storage.size(name),
                marks=marks,
                created_at=now,
                expires_at=now + timedelta(days=days),
            )
    finally:
        source.unlink(missing_ok=True)


def call_recording_delete_file(*, name: str) -> None:
    """Remove a recording's file from storage (a missing one is no error)."""
    if name:
        default_storage.delete(name)


def recordings_purge_expired(*, now: datetime | None = None) -> int:
    """Delete recordings past their expiry (the calls stay); the number deleted.
    Spool files older than a day, left by a process that died, go too."""
    now = now or timezone.now()
    deleted = 0
    while ids := list(
        CallRecording.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:500]
    ):
        with transaction.atomic():
            deleted += CallRecording.objects.filter(pk__in=ids).delete()[0]
    folder = Path(settings.CALL_RECORDING_SPOOL_DIR)
    if folder.is_dir():
        for leftover in folder.glob("*.pcm"):
            if time.time() - leftover.stat().st_mtime > STALE_SPOOL_S:
                leftover.unlink(missing_ok=True)
    if deleted:
        log.info("Retention: deleted %s call recordings", deleted)
    return deleted
