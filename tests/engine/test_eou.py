"""The end-of-turn score of the real LLM on finished and unfinished transcripts."""

import pytest

from voiceapp.engine.eou import OPENING, chat_prompt
from voiceapp.engine.inference import InferenceError, LocalInference
from voiceapp.engine.turns import TurnSettings

THRESHOLD = TurnSettings().eou_threshold
UNFINISHED_AT = TurnSettings().eou_unfinished_threshold
FINISHED = [
    "What is the capital of France?",
    "What time does the store open tomorrow morning?",
    "Is there parking near the shop?",
    "I would like to order a birthday cake for Friday.",
    "Thank you, that was all I needed.",
]
UNFINISHED = [
    "I would like to order.",  # Whisper's full stop where the caller paused
    "Can you tell me.",
    "I need to change.",
    "What is the capital?",
    "One, two, three.",
]
MID_PHRASE = UNFINISHED[:4]  # the pauses of bench.turns's paused sentences
# Finished turns the model is unsure of: under the finished threshold at times.
UNSURE = ["Can you recommend a good book?", "Yes, please."]


@pytest.mark.parametrize("text", FINISHED)
async def test_finished_turns_score_at_or_above_the_threshold(
    models: LocalInference, text: str
) -> None:
    assert await models.end_of_turn(text, "") >= THRESHOLD


@pytest.mark.parametrize("text", UNFINISHED)
async def test_unfinished_turns_score_below_the_threshold(
    models: LocalInference, text: str
) -> None:
    assert await models.end_of_turn(text, "") < THRESHOLD


@pytest.mark.parametrize("text", MID_PHRASE)
async def test_a_pause_mid_phrase_gets_the_long_wait(models: LocalInference, text: str) -> None:
    assert await models.end_of_turn(text, "") <= UNFINISHED_AT


@pytest.mark.parametrize("text", UNSURE)
async def test_unsure_finished_turns_wait_less_than_a_broken_phrase(
    models: LocalInference, text: str
) -> None:
    assert await models.end_of_turn(text, "") > UNFINISHED_AT


async def test_the_score_reads_the_words_not_the_punctuation(models: LocalInference) -> None:
    # the same words with and without Whisper's punctuation score the same
    plain = await models.end_of_turn("i would like to order", "")
    assert plain == await models.end_of_turn("I would like to order.", "")


def test_the_prompt_is_an_open_caller_message_after_the_agents_reply() -> None:
    prompt = chat_prompt("Can you tell me, please...", "We open at nine.")
    assert prompt.endswith("<|im_start|>user\ncan you tell me please")
    assert "<|im_start|>assistant\nWe open at nine.<|im_end|>" in prompt
    assert OPENING in chat_prompt("hello")


async def test_without_a_scorer_the_request_is_a_clear_error(models: LocalInference) -> None:
    bare = LocalInference(models.asr, models.llm, models.tts)
    try:
        with pytest.raises(InferenceError, match="no end-of-turn model"):
            await bare.end_of_turn("hello", "")
    finally:
        bare.close()


def test_calls_taking_turns_score_alike_from_saved_prompt_heads(models: LocalInference) -> None:
    # given the scorer, and three calls whose agents said different things
    scorer = models.eou
    assert scorer is not None
    replies = [
        "Hello! Thanks for calling. How can I help you today?",
        "I'm sorry, I don't know that. I can take a message and someone will call you back.",
        "We open at nine tomorrow morning.",
    ]
    texts = ["Can you recommend a good", "What time do you close?"]
    # when each call's turn is scored once alone (its head evaluated afresh)
    fresh = {}
    for reply in replies:
        for text in texts:
            scorer._llama.n_tokens = 0
            scorer._heads.clear()
            fresh[(reply, text)] = scorer.probability(text, reply)
    # and each call's reply was read as it played, as the call has the scorer do
    for reply in replies:
        scorer.probability("", reply)
    # and then the calls take turns, as three calls on one worker do
    restored_before = scorer.head_restores
    taking_turns = {
        (reply, text): scorer.probability(text, reply) for text in texts for reply in replies
    }
    # then each turn's head was loaded from its snapshot, not evaluated again
    assert scorer.head_restores - restored_before == len(replies) * len(texts)
    # and the scores are the ones the fresh evaluation gave
    for key, probability in taking_turns.items():
        assert probability == pytest.approx(fresh[key], abs=1e-3), key
