"""The rules that grade the default persona's own replies (bench/conversation.py),
on replies the embedded model wrote in its run of 2026-12-04."""

from __future__ import annotations

from bench.chat_turns import TURNS, ChatTurn
from bench.conversation import grade, sentences_in

SATURDAY = ChatTurn("What time do you open on Saturday?", "business")


def test_the_set_has_at_least_40_turns_of_every_kind_the_issue_names() -> None:
    kinds = {turn.kind for turn in TURNS}
    assert len(TURNS) >= 40
    assert {"business", "small_talk", "repeat", "off_topic", "rude", "rambling"} <= kinds
    assert len({turn.text for turn in TURNS}) == len(TURNS)


def test_a_reply_about_languages_fails() -> None:
    graded = grade(
        ChatTurn("What did you just say?", "repeat"),
        "I'm sorry for any misunderstanding, but I'm unable to speak in English. "
        "Please try again later.",
    )
    assert graded.about_languages
    assert not graded.ok


def test_an_invented_opening_time_fails_and_an_honest_one_passes() -> None:
    invented = grade(SATURDAY, "We usually open around 10:30 am for the Saturday.")
    assert invented.invented
    assert not invented.ok
    honest = grade(SATURDAY, "I'm sorry, I don't know our Saturday hours.")
    assert honest.honest and not honest.invented
    assert honest.ok


def test_more_than_three_sentences_fail() -> None:
    reply = "I don't know. I'm not sure. I can't say. I really cannot tell."
    assert sentences_in(reply) == 4
    assert not grade(SATURDAY, reply).ok


def test_an_empty_reply_fails() -> None:
    assert not grade(SATURDAY, "").ok


def test_a_request_to_repeat_is_answered_by_the_agents_last_words_said_again() -> None:
    what = next(turn for turn in TURNS if turn.text == "What did you just say?")
    goodbye = "Goodbye, and thank you for calling."
    # in a fresh call the last words are the greeting; in a call, its last line
    assert grade(what, "Sure. Hi! How can I help you today?").ok
    assert grade(what, "Sure. Goodbye, and thank you for calling.", said_before=goodbye).ok
    # another line, or part of the last one, is not the same words again
    assert not grade(what, "Goodbye.", said_before=goodbye).ok
    assert not grade(what, "Sure. Thanks for calling.", said_before=goodbye).ok
    # only a request to repeat is answered so
    assert not grade(SATURDAY, f"Sure. {goodbye}", said_before=goodbye).relevant
