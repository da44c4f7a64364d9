"""The conversation history: what the LLM is sent, trimming in halves, what was heard."""

import pytest

from voiceapp.engine.history import History, heard_text


def conversation(turns: int) -> History:
    history = History()
    for n in range(turns):
        history.add("user", f"Question number {n} about the opening hours?")
        history.add("assistant", f"Answer number {n}: we open at nine every day.")
    return history


def test_a_caller_turn_is_sent_with_its_facts_and_kept_as_said() -> None:
    # given a caller turn whose prompt text carries a retrieved fact
    history = History()
    history.add("system", "Be brief.")
    history.add("user", "When do you open?", sent="Facts: we open at 9.\n\nWhen do you open?")
    history.add("assistant", "At nine.", sent="At nine.")
    # then the conversation keeps the words as said, and the LLM gets the facts too
    assert history.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "When do you open?"},
        {"role": "assistant", "content": "At nine."},
    ]
    assert history.for_llm(10_000)[1] == {
        "role": "user",
        "content": "Facts: we open at 9.\n\nWhen do you open?",
    }
    assert history.last("assistant") == "At nine." and history.last("tool") is None


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown role 'tool'"):
        History().add("tool", "42")


def test_trimming_drops_to_half_the_budget_and_starts_with_a_caller_turn() -> None:
    # given a conversation far over a 400-character budget
    history = conversation(20)
    # when it is trimmed
    sent = history.for_llm(400)
    # then at most half the budget is kept, the newest messages, from a caller turn
    assert sum(len(m["content"]) for m in sent) <= 200
    assert sent[0]["role"] == "user"
    assert sent == history.messages[len(history) - len(sent) :]


def test_trimming_keeps_a_stable_prefix_until_the_budget_is_reached_again() -> None:
    # given a trimmed conversation
    history = conversation(20)
    first = history.for_llm(400)
    # when a few more turns are added that still fit the budget
    prefixes_stay = []
    for n in range(3):
        history.add("user", f"Follow-up {n}?")
        history.add("assistant", f"Reply {n}.")
        now = history.for_llm(400)
        prefixes_stay.append(now[: len(first)] == first)
    # then each prompt extends the first one instead of sliding by a turn
    assert prefixes_stay == [True, True, True]
    # and once the budget is passed again, it is halved again from a caller turn
    for n in range(10):
        history.add("user", f"Another long question number {n} about parking?")
        history.add("assistant", f"Another long answer number {n}: behind the shop.")
    again = history.for_llm(400)
    assert again[0]["role"] == "user" and sum(len(m["content"]) for m in again) <= 200
    assert again[-1] == history.messages[-1]


def test_trimming_ahead_happens_within_the_headroom_and_then_holds_the_prefix() -> None:
    # given a conversation of 300 characters, under a 400-character budget
    history = History()
    for n in range(5):
        history.add("user", f"Question {n} about the shop?")  # 27 characters
        history.add("assistant", f"Answer {n}: the shop is open.")  # 29 characters
    history.add("user", "And parking near the shop?")
    history.add("assistant", "Behind the shop, two hours free.")
    total = sum(len(m["content"]) for m in history.messages)
    assert 300 < total <= 400
    # when it is trimmed with 100 characters of headroom
    trimmed = history.trim(400, headroom_chars=100)
    # then it is cut to half the budget now, from a caller turn
    kept = history.for_llm(400)
    assert trimmed and sum(len(m["content"]) for m in kept) <= 200
    assert kept[0]["role"] == "user" and kept[-1] == history.messages[-1]
    # and a second call, or the turn's own prompt, keeps that prefix unchanged
    assert not history.trim(400, headroom_chars=100)
    history.add("user", "Thanks!")
    assert history.for_llm(400)[: len(kept)] == kept


def test_trimming_ahead_counts_the_reply_about_to_be_added() -> None:
    # given under 200 characters of history, with a 400-character budget
    history = conversation(2)
    assert 150 < sum(len(m["content"]) for m in history.messages) < 200
    # when a 150-character reply is about to be added, with 100 characters of headroom
    assert history.trim(400, headroom_chars=100, pending_chars=150)
    history.add("assistant", "x" * 150)
    # then what is kept, the reply included, is at most half the budget
    kept = history.for_llm(400)
    assert sum(len(m["content"]) for m in kept) <= 200 and kept[-1]["content"] == "x" * 150


def test_trimming_ahead_leaves_a_history_with_room_alone() -> None:
    history = conversation(2)
    before = history.for_llm(10_000)
    assert not history.trim(10_000, headroom_chars=2_500)
    assert history.for_llm(10_000) == before


def test_truncating_the_reply_keeps_what_was_heard() -> None:
    # given a reply of two clauses, one second of audio each at 1000 samples/s
    clauses = [("We open at nine.", 1000), ("On Sundays we open at ten in the morning.", 1000)]
    # then what was heard is cut at whole clauses, and within one at the words
    # fully played (4.5 of 9 words: 4)
    assert heard_text(clauses, 0, 1000) == ""
    assert heard_text(clauses, 1000, 1000) == "We open at nine."
    assert heard_text(clauses, 1500, 1000) == "We open at nine. On Sundays we open"
    assert heard_text(clauses, 5000, 1000) == f"{clauses[0][0]} {clauses[1][0]}"
    # and truncation replaces the latest reply only
    history = History()
    history.add("user", "When?")
    history.add("assistant", "Earlier reply.")
    history.add("user", "And Sunday?")
    history.add("assistant", f"{clauses[0][0]} {clauses[1][0]}")
    history.truncate_reply(heard_text(clauses, 1500, 1000))
    assert [m["content"] for m in history.messages if m["role"] == "assistant"] == [
        "Earlier reply.",
        "We open at nine. On Sundays we open",
    ]


def test_keep_last_bounds_the_history_and_keeps_what_is_sent() -> None:
    # given a long history whose caller turns are sent with facts
    history = History()
    for n in range(10):
        history.add("user", f"q{n}", sent=f"facts + q{n}")
        history.add("assistant", f"a{n}")
    # when only the latest four messages are kept
    history.keep_last(4)
    # then those four remain, each still sent as before
    assert [m["content"] for m in history.messages] == ["q8", "a8", "q9", "a9"]
    assert [m["content"] for m in history.for_llm(10_000)] == [
        "facts + q8",
        "a8",
        "facts + q9",
        "a9",
    ]
    history.keep_last(10)
    assert len(history) == 4


def test_a_hidden_exchange_is_kept_but_never_sent() -> None:
    # given a turn the rules answered as written, between two the LLM answered
    history = History()
    history.add("user", "q0")
    history.add("assistant", "a0")
    history.add("user", "Where are you?")
    history.hide_last("user")
    history.add("assistant", "I'm sorry, I don't know that.", hidden=True)
    history.add("user", "q2")
    # then the conversation holds all five, and the LLM is sent the other three
    assert len(history) == 5
    assert [m["content"] for m in history.for_llm(10_000)] == ["q0", "a0", "q2"]
    # and forgetting old messages keeps the hidden ones hidden
    history.keep_last(3)
    assert [m["content"] for m in history.for_llm(10_000)] == ["q2"]
