"""Run an inference worker: load the models once, serve `inference.asr|llm|tts`."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import get_channel_layer
from django.core.management.base import BaseCommand, CommandError

from voiceapp.engine.devices import DeviceError
from voiceapp.inference.protocol import KINDS
from voiceapp.inference.runtime import local_models, new_worker
from voiceapp.inference.worker import serve_forever


class Command(BaseCommand):
    help = "Serve ASR, LLM and TTS requests from the Channels layer until SIGTERM."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--kinds",
            default=",".join(KINDS),
            help="comma-separated subset of " + ",".join(KINDS) + " (asr brings caption with it)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        layer = get_channel_layer()
        if layer is None or type(layer).__name__ == "InMemoryChannelLayer":
            raise CommandError(
                "A separate worker needs a shared channel layer: set REDIS_URL "
                "(without it the worker runs embedded in the web process)."
            )
        kinds = tuple(k.strip() for k in options["kinds"].split(",") if k.strip())
        if set(kinds) - set(KINDS):
            raise CommandError(f"--kinds must be a subset of {','.join(KINDS)}")
        try:
            models = local_models()
        except DeviceError as exc:  # a GPU asked for and missing: say what to change
            raise CommandError(str(exc)) from exc

        async def serve() -> None:
            # made inside the loop: its capacity adverts use this loop's Redis client
            await serve_forever(new_worker(layer, models, kinds), announce=True)

        asyncio.run(serve())
