"""Read-ahead with the real models: what the scorer and the LLM read before the next turn."""

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.support.inference import RecordingInference
from voiceapp.engine.eou import chat_prompt
from voiceapp.engine.history import History
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import LlamaLLM, LLMOptions, Message
from voiceapp.engine.prompt import PromptBuilder
from voiceapp.engine.readahead import ReadAhead, ReadAheadSettings
from voiceapp.engine.tasks import TaskOwner

INSTRUCTIONS = "You are the assistant of a small town library. Answer in one sentence."
REPLY = "We open at nine in the morning."


@dataclass
class Reader:
    read_ahead: ReadAhead
    recorder: RecordingInference
    history: History
    prompt: Callable[..., list[Message]]  # what the call's next request would send
    call_id: str


def new_reader(
    models: LocalInference, owner: TaskOwner, settings: ReadAheadSettings | None = None
) -> Reader:
    """A read-ahead as a call makes it: its history, its prompt, its task owner."""
    settings = settings or ReadAheadSettings()
    recorder = RecordingInference(models)
    history = History()
    builder = PromptBuilder(instructions=INSTRUCTIONS)

    def prompt(words: str | None = None) -> list[Message]:
        sent = history.for_llm(settings.history_budget_chars)
        if words is not None:
            sent.append({"role": "user", "content": words})
        return builder.messages(sent)

    call_id = f"call_{uuid.uuid4().hex[:20]}"
    read_ahead = ReadAhead(settings, recorder, history, prompt, owner, call_id=call_id)
    return Reader(read_ahead, recorder, history, prompt, call_id)


async def settle(owner: TaskOwner, timeout_s: float = 60.0) -> None:
    """Wait until every task the owner holds (each read ahead) has ended."""
    async with asyncio.timeout(timeout_s):
        while owner.pending():
            await asyncio.wait(owner.pending())


def scorer_holds(models: LocalInference, text: str, previous_reply: str) -> bool:
    """The end-of-turn scorer's context begins with the prompt of `text` after `previous_reply`."""
    assert models.eou is not None
    scorer = models.eou._llama
    head = scorer.tokenize(chat_prompt(text, previous_reply).encode(), add_bos=False, special=True)
    read: list[int] = scorer.input_ids[: scorer.n_tokens].tolist()
    return read[: len(head) - 1] == head[:-1]


async def test_the_opening_prompt_is_read_by_the_scorer_and_the_embedded_llm(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call's read-ahead on the embedded LLM, before the caller speaks
    reader = new_reader(models, task_owner)
    # when it reads the opening
    reader.read_ahead.opening()
    await settle(task_owner)
    # then the end-of-turn scorer read the opening, with no reply before it
    assert reader.recorder.scored == [("", "")]
    assert scorer_holds(models, "", "")
    # and the LLM read the call's prompt in the call's context: one token, dropped
    [read] = reader.recorder.llm
    assert read.messages == reader.prompt()
    assert read.options.max_tokens == 1 and read.options.session == reader.call_id
    task = reader.read_ahead.llm_read
    assert task is not None and task.done() and not task.cancelled()
    # and the call's first request finds that prompt in its cache
    question = {"role": "user", "content": "When do you open?"}
    options = LLMOptions(max_tokens=1, session=reader.call_id)
    stream = models.generate([*reader.prompt(), question], options)
    try:
        async for _ in stream:
            pass
    finally:
        await stream.aclose()
    assert stream.usage.cached_tokens >= read.stream.usage.input_tokens - 4 > 0


async def test_a_personas_own_endpoint_is_not_asked_to_read_the_opening(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call whose LLM is a persona's own endpoint (billed per request)
    reader = new_reader(models, task_owner, ReadAheadSettings(embedded_llm=False))
    # when it reads the opening
    reader.read_ahead.opening()
    await settle(task_owner)
    # then only the (embedded) end-of-turn scorer read it; the LLM was not asked
    assert reader.recorder.scored == [("", "")]
    assert reader.recorder.llm == [] and reader.read_ahead.llm_read is None


async def test_without_the_end_of_turn_model_the_scorer_reads_nothing(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call whose turns end by the punctuation rule, not the end-of-turn model
    reader = new_reader(models, task_owner, ReadAheadSettings(end_of_turn_model=False))
    # when it reads the opening, and later a reply
    reader.read_ahead.opening()
    reader.read_ahead.next_turn(REPLY, direct=False)
    reader.read_ahead.reply_kept(REPLY)
    await settle(task_owner)
    # then the scorer was never asked; the LLM read the opening
    assert reader.recorder.scored == []
    assert [r.messages for r in reader.recorder.llm] == [reader.prompt()]


async def test_a_reply_within_the_budget_is_read_by_the_scorer_only(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call answering its caller's first question, far from its history budget
    reader = new_reader(models, task_owner)
    reader.history.add("user", "When do you open?")
    before = reader.prompt()
    # when its reply plays
    trimmed = reader.read_ahead.next_turn(REPLY, direct=False)
    await settle(task_owner)
    # then the scorer read the reply, the history stayed whole and the LLM was not asked
    assert not trimmed and reader.prompt() == before
    assert reader.recorder.scored == [("", REPLY)]
    assert scorer_holds(models, "", REPLY)
    assert reader.recorder.llm == []


async def test_a_history_near_its_budget_is_trimmed_and_the_llm_reads_the_new_prompt(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call whose history is within a quarter of its 600-character budget
    reader = new_reader(models, task_owner, ReadAheadSettings(history_budget_chars=600))
    for n in range(5):
        reader.history.add("user", f"Question number {n} about the opening hours?")
        reader.history.add("assistant", f"Answer number {n}: we open at nine every day.")
    reader.history.add("user", "Is there parking near the library?")
    before = reader.prompt()
    # when a reply plays
    trimmed = reader.read_ahead.next_turn(REPLY, direct=False)
    await settle(task_owner)
    # then the history was trimmed now (not at the next turn) and the LLM read the
    # trimmed prompt with the reply after it, as the next turn will send it
    assert trimmed
    after = reader.prompt()
    assert len(after) < len(before) and after[-1] == before[-1]
    [read] = reader.recorder.llm
    assert read.messages == [*after, {"role": "assistant", "content": REPLY}]
    assert read.options.max_tokens == 1 and read.options.session == reader.call_id
    # and the scorer read the reply
    assert reader.recorder.scored == [("", REPLY)]


async def test_a_personas_own_endpoint_is_not_asked_to_read_a_trimmed_history(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call on a persona's own endpoint whose history is near its budget
    settings = ReadAheadSettings(history_budget_chars=600, embedded_llm=False)
    reader = new_reader(models, task_owner, settings)
    for n in range(5):
        reader.history.add("user", f"Question number {n} about the opening hours?")
        reader.history.add("assistant", f"Answer number {n}: we open at nine every day.")
    before = reader.prompt()
    # when a reply plays
    trimmed = reader.read_ahead.next_turn(REPLY, direct=False)
    await settle(task_owner)
    # then the history was trimmed, but the endpoint (billed per request) was not asked
    assert trimmed and len(reader.prompt()) < len(before)
    assert reader.recorder.llm == [] and reader.read_ahead.llm_read is None
    assert reader.recorder.scored == [("", REPLY)]


@pytest.mark.parametrize("direct_answers", [True, False])
async def test_a_reply_spoken_as_written_is_read_by_the_llm_if_the_call_answers_so(
    models: LocalInference, task_owner: TaskOwner, direct_answers: bool
) -> None:
    # given a call that does (or does not) speak facts as written, within its budget
    settings = ReadAheadSettings(direct_answers=direct_answers)
    reader = new_reader(models, task_owner, settings)
    reader.history.add("user", "When do you open?")
    # when a reply that never went through the LLM plays (a fact as written, a greeting)
    trimmed = reader.read_ahead.next_turn(REPLY, direct=True)
    await settle(task_owner)
    # then the LLM reads it after the prompt only when the call speaks facts as written
    assert not trimmed
    expected = [[*reader.prompt(), {"role": "assistant", "content": REPLY}]]
    assert [r.messages for r in reader.recorder.llm] == (expected if direct_answers else [])


async def test_a_reply_kept_as_it_was_read_is_not_read_again(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a reply the scorer read while it played
    reader = new_reader(models, task_owner)
    reader.history.add("user", "When do you open?")
    reader.read_ahead.next_turn(REPLY, direct=False)
    # when it goes into the history whole
    reader.read_ahead.reply_kept(REPLY)
    await settle(task_owner)
    # then the scorer read it once
    assert reader.recorder.scored == [("", REPLY)]
    # when a later reply is cut short, or ends before it was read ahead
    reader.read_ahead.reply_kept("We open")
    await settle(task_owner)
    # then the scorer reads what the history keeps
    assert reader.recorder.scored == [("", REPLY), ("", "We open")]
    assert scorer_holds(models, "", "We open")


async def test_a_new_llm_read_replaces_one_still_running_and_requests_wait_for_it(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a read of the opening that has not run yet
    reader = new_reader(models, task_owner, ReadAheadSettings(end_of_turn_model=False))
    read_ahead = reader.read_ahead
    read_ahead.opening()
    first = read_ahead.llm_read
    # when another read starts (the instructions changed again)
    read_ahead.opening()
    second = read_ahead.llm_read
    # then a request waiting for the read ahead waits for the new one, the old one
    # is cancelled before it asked the LLM anything
    await read_ahead.wait_llm()
    assert first is not None and second is not None and first is not second
    assert first.cancelled()
    assert second.done() and not second.cancelled()
    assert len(reader.recorder.llm) == 1
    # and with no read in progress a request does not wait
    async with asyncio.timeout(0.1):
        await read_ahead.wait_llm()


async def reply_reads(reader: Reader, words: str) -> int:
    """The prompt tokens a request of the call with the caller's `words` reads anew."""
    options = LLMOptions(max_tokens=1, temperature=0.0, session=reader.call_id)
    stream = reader.recorder.generate(reader.prompt(words), options)
    async for _ in stream:
        pass
    return stream.usage.input_tokens - stream.usage.cached_tokens


async def test_the_callers_words_so_far_are_read_open_and_the_turn_reads_the_rest(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call whose LLM has read its opening prompt
    reader = new_reader(models, task_owner, ReadAheadSettings(end_of_turn_model=False))
    reader.read_ahead.opening()
    await settle(task_owner)
    cold = await reply_reads(reader, "Is the library open on Sunday?")
    reader.read_ahead.opening()
    await settle(task_owner)
    # when a live caption has read the caller's words so far
    reader.read_ahead.words_so_far("Is the library open...")
    await settle(task_owner)
    # then the LLM read them as the caller's message, left open, without the caption's
    # closing mark
    read = reader.recorder.llm[-1]
    assert read.options.open_turn and read.options.session == reader.call_id
    assert read.messages == reader.prompt("Is the library open")
    # and the turn's request does not read again what the caption had caught (the
    # message's header too, which the opening's prompt did not hold)
    after = await reply_reads(reader, "Is the library open on Sunday?")
    assert isinstance(models.llm, LlamaLLM)
    assert after <= cold - models.llm.count_tokens("Is the library open"), (cold, after)


async def test_the_callers_words_are_not_read_by_an_endpoint_nor_over_a_read(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a call on a persona's own endpoint, and one with the reads turned off
    for settings in (
        ReadAheadSettings(embedded_llm=False, end_of_turn_model=False),
        ReadAheadSettings(words_so_far=False, end_of_turn_model=False),
    ):
        reader = new_reader(models, task_owner, settings)
        # when a caption comes, then nothing is read
        reader.read_ahead.words_so_far("What time do you")
        await settle(task_owner)
        assert reader.recorder.llm == []
    # given a call whose LLM is still reading its opening prompt
    reader = new_reader(models, task_owner, ReadAheadSettings(end_of_turn_model=False))
    reader.read_ahead.opening()
    reading = reader.read_ahead.llm_read
    # when a caption comes, then that read goes on and the caption is not read (the next
    # one will be)
    reader.read_ahead.words_so_far("What time do you")
    assert reader.read_ahead.llm_read is reading
    await settle(task_owner)
    assert reading is not None and not reading.cancelled()
    assert [r.options.open_turn for r in reader.recorder.llm] == [False]
