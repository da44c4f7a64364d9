from voiceapp.engine.chunker import ClauseChunker


def feed(chunker: ClauseChunker, text: str) -> list[str]:
    """Feed text as an LLM would: a few characters at a time."""
    out: list[str] = []
    for i in range(0, len(text), 3):
        out += chunker.push(text[i : i + 3])
    return out + chunker.flush()


def test_first_clause_is_cut_at_a_comma_without_waiting_for_the_full_stop() -> None:
    # given a reply whose first sentence has a comma after three words
    chunker = ClauseChunker()
    # when the text up to just past the comma has arrived
    early = chunker.push("Yes, of course, I")
    # then the first clause is ready already; the rest follows by sentence
    assert early == ["Yes, of course,"]
    rest = chunker.push(" can book that for you. It is done.") + chunker.flush()
    assert rest == ["I can book that for you.", "It is done."]


def test_first_clause_needs_three_words_before_a_comma() -> None:
    chunker = ClauseChunker()
    assert chunker.push("Well, ") == []
    assert chunker.push("the capital is Paris, ") == ["Well, the capital is Paris,"]


def test_sentence_end_is_a_cut_even_for_one_word() -> None:
    assert feed(ClauseChunker(), "Hello! How can I help you today?") == [
        "Hello!",
        "How can I help you today?",
    ]


def test_later_clauses_are_cut_at_commas_only_after_six_words() -> None:
    clauses = feed(
        ClauseChunker(),
        "Paris is the capital. It is big, old and lovely, with many museums to see.",
    )
    assert clauses == [
        "Paris is the capital.",
        "It is big, old and lovely,",
        "with many museums to see.",
    ]


def test_numbers_and_abbreviations_do_not_split() -> None:
    clauses = feed(ClauseChunker(), "It costs 3.50 dollars. Ask Dr. Smith about it.")
    assert clauses == ["It costs 3.50 dollars.", "Ask Dr. Smith about it."]


def test_long_first_clause_without_punctuation_is_cut_at_seven_words() -> None:
    text = "one two three four five six seven eight nine ten eleven twelve"
    clauses = feed(ClauseChunker(), text)
    assert clauses[0] == "one two three four five six seven"
    assert clauses[1] == "eight nine ten eleven twelve"


def test_flush_drops_text_without_letters_or_digits() -> None:
    chunker = ClauseChunker()
    chunker.push("Done. ")
    assert chunker.push("*") == []
    assert chunker.flush() == []
