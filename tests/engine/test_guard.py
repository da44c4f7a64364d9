"""The reply guard: loops, invented numbers, language drift and the sentence cap."""

from __future__ import annotations

from voiceapp.engine.guard import Action, GuardSettings, ReplyGuard, numbers_in


def guard(**kwargs: object) -> ReplyGuard:
    allowed = kwargs.pop("allowed", set())
    return ReplyGuard(GuardSettings(**kwargs), allowed)  # type: ignore[arg-type]


def test_numbers_in_reads_digits_and_number_words() -> None:
    assert numbers_in("We open at 8:00 am, until six.") == {"8", "6"}
    assert numbers_in("Call 555-0142") == {"555", "142"}
    assert numbers_in("one moment please") == set()


def test_a_clause_said_twice_ends_the_reply() -> None:
    g = guard()
    assert g.check("I'm not sure.").action is Action.SPEAK

    verdict = g.check("I'm not sure.")

    assert verdict.action is Action.STOP
    assert verdict.text == ""
    assert g.reason == "loop"


def test_a_word_loop_inside_a_clause_is_cut_to_its_first_occurrence() -> None:
    verdict = guard().check("No, no, no, no, no, no,")

    assert verdict.action is Action.STOP
    assert verdict.text == "No."


def test_a_loop_across_clauses_is_caught() -> None:
    g = guard()
    assert g.check("I'm afraid it's not here,").action is Action.SPEAK
    assert g.check("I'm afraid it's not here,").action is Action.STOP


def test_an_invented_number_is_replaced_by_the_decline() -> None:
    g = guard(decline="I don't know that.", allowed={"8", "2"})
    assert g.check("We open at 8 am on Saturday.").action is Action.SPEAK

    verdict = g.check("You can call us at 123-456-7890.")

    assert verdict.action is Action.STOP
    assert verdict.text == "I don't know that."
    assert g.reason == "invented_number"


def test_numbers_are_not_checked_when_switched_off() -> None:
    assert guard(check_numbers=False).check("It is 42.").action is Action.SPEAK


def test_a_french_clause_in_an_english_call_ends_the_reply() -> None:
    g = guard(language="en")

    verdict = g.check("Je suis désolé, nous ne sommes pas ouverts le dimanche.")

    assert verdict.action is Action.STOP
    assert g.reason == "language"
    assert guard(language="en").check("The bakery is open on Sunday.").action is Action.SPEAK


def test_the_sentence_cap_speaks_the_last_sentence_then_stops() -> None:
    g = guard(max_sentences=2, check_numbers=False)
    assert g.check("We open at eight.").action is Action.SPEAK

    verdict = g.check("We close at two.")

    assert verdict.action is Action.STOP
    assert verdict.text == "We close at two."
    assert g.reason == "sentence_cap"


def test_a_clause_about_languages_is_dropped_when_the_caller_did_not_ask() -> None:
    from voiceapp.engine.guard import Action, GuardSettings, ReplyGuard

    guard = ReplyGuard(GuardSettings(language_talk=True, check_numbers=False))
    verdict = guard.check("I'm sorry, but I can only answer in English.")
    assert verdict.action is Action.SPEAK and verdict.reason == "language_talk"
    assert verdict.text == ""  # dropped, and the reply goes on
    assert guard.check("How can I help?").text == "How can I help?"
    disclaimer = "As a phone chat assistant, I keep it to two short sentences."
    assert guard.check(disclaimer).text == ""
    free = ReplyGuard(GuardSettings(language_talk=False, check_numbers=False))
    assert free.check("Yes, I speak English.").action is Action.SPEAK
