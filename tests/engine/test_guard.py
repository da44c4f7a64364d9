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


def test_the_sentence_cap_cuts_a_clause_that_holds_sentences_past_it() -> None:
    # given a clause the chunker could not cut ("no." reads as "No. 5"), with two sentences
    g = guard(max_sentences=3, check_numbers=False)
    assert g.check("No, no. I'm afraid not of that.").action is Action.SPEAK

    verdict = g.check("No, no. The answer to all questions is yes!")

    # then the reply ends after its third sentence, in the middle of that clause
    assert verdict.action is Action.STOP and g.reason == "sentence_cap"
    assert verdict.text == "No, no."


def test_sentences_are_counted_across_clauses_not_by_their_ends_in_each() -> None:
    g = guard(max_sentences=2, check_numbers=False)
    # a title and a time are not sentence ends; a comma clause ends no sentence
    assert g.check("Dr. Lee is in at 9 a.m. on Mondays,").action is Action.SPEAK
    assert g.check("and on Fridays.").action is Action.SPEAK

    verdict = g.check("Come along. Bring your card.")

    assert verdict.action is Action.STOP and verdict.text == "Come along."


def test_a_lists_numbering_is_not_spoken_nor_counted_as_sentences() -> None:
    g = guard(max_sentences=3, check_numbers=True)
    verdicts = [g.check(c) for c in ["1.", "Stay calm, 2.", "Breathe slowly, 3.", "Sleep well."]]

    assert " ".join(v.text for v in verdicts if v.text) == "Stay calm. Breathe slowly. Sleep well."
    assert [v.action for v in verdicts] == [Action.SPEAK] * 3 + [Action.STOP]
    assert g.reason == "sentence_cap"  # no number was taken for an invented one
    assert guard(check_numbers=False).check("4. Eat breakfast.").text == "Eat breakfast."
    # a figure that ends a sentence is not a list's, nor are figures after a comma
    # when no list has begun
    assert guard(check_numbers=False).check("We open at 9.").text == "We open at 9."
    sizes = "We have sizes 1, 2."
    assert guard(check_numbers=False).check(sizes).text == sizes


def test_a_clause_that_says_the_callers_words_back_is_dropped() -> None:
    g = guard(caller_text="Ugh, forget it. How are you today?", check_numbers=False)

    verdict = g.check("How are you today.")

    assert verdict.action is Action.SPEAK and verdict.text == "" and g.reason == "echo"
    assert g.check("I'm well, thanks for asking.").text == "I'm well, thanks for asking."
    # two words are not an echo, nor are the caller's words inside a longer answer
    assert guard(caller_text="Thank you").check("Thank you.").text == "Thank you."
    answer = "Yes, you can forget it, no charge."
    assert guard(caller_text="Ugh, forget it.").check(answer).text == answer
    # nor a part of what they said, read back or said as asked
    for caller, clause in (
        ("Please confirm the address: 12 Mill Lane, Leeds.", "12 Mill Lane, Leeds."),
        ("Repeat after me: the quick brown fox.", "The quick brown fox."),
    ):
        assert guard(caller_text=caller, check_numbers=False).check(clause).text == clause


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
