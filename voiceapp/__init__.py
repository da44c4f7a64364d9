import os

# OpenBLAS (numpy's) starts a thread per core, and each spins for a while after
# every matrix product, waiting for the next: faster-whisper's mel filter is one
# such product per transcript. On 2 cores the spinning took 40 % of the CPU an ASR
# replica used (docs/CAPACITY.md, 2026-12-06), CPU that a call's next stage needed.
# The products here are small; one thread does them as fast. It must be set before
# numpy is first imported, so it is set here, when Django loads the settings.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from voiceapp.celery import app as celery_app

__all__ = ["celery_app"]
