from voiceapp.engine.chunker import ChunkerSettings, ClauseChunker, joined_words


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


def test_first_clause_ends_as_its_mark_arrives() -> None:
    # given a reply streamed token by token, its first sentence ending in a full stop
    chunker = ClauseChunker()
    assert chunker.push("The capital of France is Paris") == []
    # when the full stop arrives, before the next word that would confirm it
    # then the first clause is out already
    assert chunker.push(".") == ["The capital of France is Paris."]
    assert chunker.push(" It is big") == []
    # and later clauses still wait for the whitespace after their mark
    assert chunker.push(".") == []
    assert chunker.push(" Very") + chunker.flush() == ["It is big.", "Very"]


def test_first_clause_waits_for_the_next_word_without_first_at_mark() -> None:
    chunker = ClauseChunker(ChunkerSettings(first_at_mark=False))
    assert chunker.push("The capital of France is Paris") + chunker.push(".") == []
    assert chunker.push(" It") == ["The capital of France is Paris."]


def test_first_clause_ends_at_a_comma_as_it_arrives_after_three_words() -> None:
    chunker = ClauseChunker()
    assert chunker.push("Well") == []
    assert chunker.push(",") == []  # one word: not a clause of its own
    assert chunker.push(" of course") == []
    assert chunker.push(",") == ["Well, of course,"]


def test_first_clause_waits_after_a_number_a_short_form_or_a_name_with_a_dot() -> None:
    # a figure may go on ("3.50"), and so may "Dr.", "a.m." and "No. 5"
    for head in ("It costs 3", "Ask Dr", "We open at 9 a", "It is No"):
        chunker = ClauseChunker()
        assert chunker.push(head) + chunker.push(".") == [], head
    # a web address the prompt holds: the reply may copy it
    prompt = ["Order online at rosiesbakery.co.uk or call us."]
    chunker = ClauseChunker(joined=joined_words(prompt))
    assert chunker.push("Order at rosiesbakery") + chunker.push(".") == []
    assert feed(chunker, "co.uk today.") == ["Order at rosiesbakery.co.uk today."]
    chunker = ClauseChunker()
    assert chunker.push("Visit www") + chunker.push(".") == []


def test_marks_after_a_first_clause_cut_at_its_mark_are_not_a_clause() -> None:
    chunker = ClauseChunker()
    assert chunker.push("Hello") + chunker.push("!") == ["Hello!"]
    # more of the mark, then the next sentence
    assert chunker.push("!") == []
    assert chunker.push('"') == []
    assert chunker.push(" How are you?") + chunker.flush() == ["How are you?"]


def test_joined_words_are_those_before_a_dot_inside_a_name() -> None:
    assert joined_words(["See rosies.co.uk, e.g. today. Or www.bake.com."]) == {
        "rosies",
        "co",
        "e",
        "www",
        "bake",
    }
