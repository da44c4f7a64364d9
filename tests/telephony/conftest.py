from __future__ import annotations

from typing import Any

import pytest

from voiceapp.inference import runtime


@pytest.fixture
def embedded_models(settings: Any, monkeypatch: pytest.MonkeyPatch, models: Any) -> None:
    """The models in this process, as `sip_server` runs them without Redis: the call's
    inference worker runs in the test's event loop on the in-memory channel layer."""
    settings.INFERENCE_EMBEDDED = True
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(runtime, "_local", models)
