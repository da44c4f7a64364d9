"""Several turns in one call with a fresh organization's default persona and the
embedded model: what its rules say stays out of what the LLM reads, and a new
question after an offer of a message is answered, not taken as the message."""

from __future__ import annotations

from dataclasses import replace

from sessions.realtime.actions import BUILT_IN, TAKE_MESSAGE
from tests.support.engine_calls import collect_until, fast_config
from tests.support.inference import RecordingInference
from voiceapp.engine.call import VoiceCall
from voiceapp.engine.frames import ResponseDone, ToolCallMade
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.prompt import MESSAGE_DECLINE
from voiceapp.engine.vad import SileroModel
from voiceapp.personas.services import DEFAULT_INSTRUCTIONS


async def typed(call: VoiceCall, text: str) -> tuple[ResponseDone, list[ToolCallMade]]:
    """The caller's typed turn and the reply it gets (text only)."""
    call.add_message("user", text)
    call.create_response()
    frames = await collect_until(call, lambda f: isinstance(f, ResponseDone), 60.0)
    return frames[-1], [f for f in frames if isinstance(f, ToolCallMade)]


def default_persona_call(inference: RecordingInference, vad_model: SileroModel) -> VoiceCall:
    actions = (BUILT_IN[TAKE_MESSAGE],)
    config = fast_config(instructions=DEFAULT_INSTRUCTIONS, actions=actions, speak=False)
    llm = replace(config.llm, tools=actions)
    return VoiceCall(replace(config, llm=llm), inference, vad_model)


async def test_the_rules_lines_stay_out_of_the_llms_prompt_and_a_new_question_is_answered(
    models: LocalInference, vad_model: SileroModel
) -> None:
    inference = RecordingInference(models)
    call = default_persona_call(inference, vad_model)
    try:
        # a question about the business is declined as written, with the offer
        first, calls = await typed(call, "What time do you open on Saturday?")
        assert first.text == MESSAGE_DECLINE and not calls

        # a question of another kind is the caller moving on: the LLM answers it
        second, calls = await typed(call, "Can you tell me a joke?")
        assert second.status == "completed" and second.text and not calls
        assert second.text != MESSAGE_DECLINE
        answered = [r for r in inference.llm if r.messages[-1]["role"] == "user"]
        assert answered, "the joke went to the LLM"
        sent = " ".join(m["content"] for m in answered[-1].messages)
        assert MESSAGE_DECLINE not in sent and "Saturday?" not in sent

        # the conversation itself keeps every turn
        said = [m["content"] for m in call.history]
        assert said[:2] == ["What time do you open on Saturday?", MESSAGE_DECLINE]
        assert said[-1] == second.text

        # asked to repeat, twice: the agent's words again, not "Sure. Sure. ..."
        again, _ = await typed(call, "Sorry, what did you say?")
        assert again.text == f"Sure. {second.text}"
        twice, _ = await typed(call, "Pardon?")
        assert twice.text == again.text
    finally:
        await call.close()
