"""What the benchmarks that build calls in this process share: Django set up as
a bench runs it, and the LLM settings a new persona starts with."""

from __future__ import annotations

import os
from typing import Any


def setup_django() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "voiceapp.settings")
    os.environ.setdefault("SECRET_KEY", "bench")
    django.setup()


def persona_llm(**options: Any) -> Any:
    """`LLMOptions` with a new persona's reply length and temperature (the model
    fields' defaults), and `options`."""
    setup_django()
    from voiceapp.engine.llm import LLMOptions
    from voiceapp.personas.models import Persona

    field = Persona._meta.get_field
    return LLMOptions(
        max_tokens=int(field("max_reply_tokens").default),
        temperature=float(field("temperature").default),
        **options,
    )
