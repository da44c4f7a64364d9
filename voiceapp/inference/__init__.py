"""Inference workers (ASR, LLM, TTS) on the Channels layer, and the client the call loop uses.

`protocol`, `worker` and `client` import no Django: the benchmark and tests run
them against a plain channel layer. `runtime` is the Django glue (settings,
personas, the embedded worker).
"""
