"""The real default models, loaded once per test process, and a prompt's length
in tokens as llama.cpp reads it."""

from __future__ import annotations

import functools

from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import Message
from voiceapp.engine.models import ModelSettings, load_inference
from voiceapp.engine.vad import SileroModel


@functools.cache
def shared_models() -> LocalInference:
    """The real default models, loaded once per test process."""
    return load_inference(ModelSettings())


@functools.cache
def shared_vad() -> SileroModel:
    return SileroModel()


def prompt_tokens(llama: Llama, messages: list[Message]) -> int:
    """The tokens of `messages` under the model's own chat template, as llama.cpp reads them."""
    formatter = Jinja2ChatFormatter(
        template=llama.metadata["tokenizer.chat_template"],
        eos_token=llama.detokenize([llama.token_eos()]).decode(),
        bos_token=llama.detokenize([llama.token_bos()]).decode(),
    )
    prompt = formatter(messages=messages)  # type: ignore[arg-type]
    return len(
        llama.tokenize(prompt.prompt.encode(), add_bos=not prompt.added_special, special=True)
    )
