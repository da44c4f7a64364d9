"""The prompt a call sends its LLM each turn, written for small models.

A 135M-parameter model follows what is next to the question far better than
what is in a long system prompt. So, when a persona has knowledge:
- the system prompt says who the agent is, how to speak, and the one rule:
  answer from the facts given with the question, else say you don't know (and
  offer to take a message, when the persona's take_message action is on);
- two worked examples (one answered from a fact, one declined) come first, as
  earlier turns, so the model sees the pattern it should continue;
- each caller turn is sent as the retrieved facts, then the caller's words.
The system prompt and the examples never change during a call, so the LLM's
prefix cache keeps them; only the new turn is evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .knowledge import Encoder, Fact, KnowledgeBase, Match, terms
from .llm import Message

LANGUAGE_NAMES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
    "nl": "Dutch", "pt": "Portuguese", "pl": "Polish", "sv": "Swedish", "da": "Danish",
}  # fmt: skip

DEFAULT_REPLY_HINT = (
    "You are speaking on a voice call: answer in one or two short sentences, "
    "plain words, no lists, no markdown, no emojis."
)
GROUNDING_RULE = (
    "Answer only from the facts given with the caller's words. If they do not answer "
    "the question, say you don't know. Never make up "
    "numbers, prices, times, names or phone numbers."
)
# With the take_message action on (sessions/actions.py), a decline offers a message.
MESSAGE_GROUNDING_RULE = GROUNDING_RULE.replace(
    "say you don't know.", "say you don't know and offer to take a message."
)
DEFAULT_DECLINE = "I'm sorry, I don't know that."
MESSAGE_DECLINE = (
    "I'm sorry, I don't know that. I can take a message and someone will call you back."
)

# Worked examples, shown as earlier turns. Their facts are about nothing a real
# persona sells, so they cannot be mistaken for the persona's own.
_EXAMPLES: tuple[tuple[str, str | None, str], ...] = (
    (
        "Is the shop open on New Year's Day?",
        "The shop is closed on New Year's Day.",
        "No, sorry, we're closed on New Year's Day.",
    ),
    ("Do you repair old radios?", None, ""),  # "": the persona's decline
)

# A sentence of the instructions that tells the agent how to behave, not a fact a
# caller may ask about: "You are the assistant of ...", "Be brief.", "Never ...".
# "You can pay by card." and "Your order ..." speak to the caller: facts. Any
# other "You ..." ("You tell long stories.") speaks to the agent.
_CALLER_YOU = (
    r"you(?=('ll| can| could| may| might| need| get| pay| won't| cannot| can't| "
    r"have to| don't need| do not need| want| would| wish| arrive| come| visit| book| "
    r"order| bring| call| cancel)\b)"
)
_ADDRESSED_TO_AGENT = re.compile(
    rf"^((?!{_CALLER_YOU})you\b|"
    r"your (job|role|task|goal|name|answers?|replies|tone)|"
    r"be|do|don't|never|always|answer|speak|keep|act|behave|help|respond|reply|use|avoid|"
    r"greet|talk|say|explain|mention|introduce|thank|apologi[sz]e|transfer|"
    r"if|when asked|only|make sure|remember|try)\b",
    re.I,
)


def language_name(code: str) -> str | None:
    return LANGUAGE_NAMES.get(code.split("-")[0].lower())


# Within a sentence, "you" doing something the caller does not ("Whatever you are
# asked, you tell a story.") tells the agent how to behave, unless the sentence
# speaks for the business (we, our, us) or gives a figure ("If you are late, the
# table is held for 15 minutes.").
_AGENT_YOU = re.compile(rf"\b(?!{_CALLER_YOU})you\b", re.I)
_BUSINESS_VOICE = re.compile(r"\b(we|we're|we'll|our|ours|us)\b|[\d£$€]", re.I)


# A sentence that opens like an instruction ("If ...", "Use ...", "Always ...") still
# tells the caller, as the business, when it speaks for the business (we, our, us, a
# figure or a price) and says nothing of how to talk to callers: "If you need to
# cancel, please tell us 24 hours before.", "If a pizza arrives wrong, ring within
# half an hour and we'll remake it free.", "Use the loading bay for 15 minutes."
# "If you don't know, say so." and "If we are closed, take a message." tell the
# agent; so does any "You are ...", "Your role ..." and any "Never ..." or "Don't ...".
_AGENT_ONLY = re.compile(
    r"^(you are|you're|your (job|role|task|goal|name)|never|don't|do not|avoid)\b", re.I
)
_HOW_TO_TALK = re.compile(
    r"\b(callers?|answers?|answering|repl(y|ies)|respond|say|speak|talk|discuss|mention|"
    r"explain|greet|message|transfer|promise|apologi[sz]e|tone|polite|friendly|brief|"
    r"sentences?|words|language|english|tell (them|people|the caller))\b",
    re.I,
)


def _tells_the_agent(sentence: str) -> bool:
    return bool(_AGENT_YOU.search(sentence)) and not _BUSINESS_VOICE.search(sentence)


def _tells_the_caller(sentence: str) -> bool:
    return (
        bool(_BUSINESS_VOICE.search(sentence))
        and not _AGENT_ONLY.match(sentence)
        and not _HOW_TO_TALK.search(sentence)
    )


def facts_from_instructions(instructions: str) -> list[Fact]:
    """Sentences of free-text instructions that state something about the business
    (an hour, a price, how to pay, where to park), as opposed to telling the agent
    how to behave.

    Businesses write their facts into the instructions, as prose; retrieving the
    sentence that answers a question puts it next to the question too.
    """
    return split_instructions(instructions)[0]


# A sentence ends at a stop followed by a capital, a figure or a brand written
# "iPhone"; a short question that heads what follows ("Collecting? Use the loading
# bay.") stays with it, as the topic of its answer.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9£$€\"“]|[a-z][A-Z])")
_HEADING_QUESTION_WORDS = 3


def _sentences(line: str) -> list[str]:
    out: list[str] = []
    for sentence in _SENTENCE_END.split(line):
        sentence = sentence.strip()
        if not sentence:
            continue
        if out and out[-1].endswith("?") and len(out[-1].split()) <= _HEADING_QUESTION_WORDS:
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


def split_instructions(instructions: str) -> tuple[list[Fact], str]:
    """The instructions' facts (see facts_from_instructions), and the rest: what
    tells the agent how to behave, and who it is ("You take calls for Petal Lane
    Flowers, a florist.")."""
    facts: list[Fact] = []
    rest: list[str] = []
    for line in instructions.splitlines():
        line = line.strip(" -*\t")
        for sentence in _sentences(line):
            to_agent = _ADDRESSED_TO_AGENT.match(sentence) or _tells_the_agent(sentence)
            if to_agent and not _tells_the_caller(sentence):
                rest.append(sentence)  # "You are the assistant of ...": how to behave
            elif 3 <= len(sentence.split()) <= 60:
                facts.append(Fact(answer=sentence))
            else:
                rest.append(sentence)
    return facts, " ".join(r for r in rest if r)


@dataclass(frozen=True, slots=True)
class Turn:
    """What is sent for one caller turn, which facts it carried, and a direct answer.

    `direct` holds the best retrieved facts (ties included): the business's own
    answer, spoken as it was written, at once and without the LLM, which a
    small model cannot beat on facts.
    """

    content: str
    matches: tuple[Match, ...]
    direct: str | None = None
    # `direct` is the decline: asked about something no fact covers. A tool the
    # reply may call can still serve it, so the writer lets the LLM choose then.
    declined: bool = False


_QUESTION_START = re.compile(
    r"^\W*(so |and |but |um |uh |hi |hello |okay |ok |well |hey |please )*"
    r"(what|when|where|which|who|whom|whose|why|how|is|are|was|were|do|does|did|can|could|"
    r"will|would|should|shall|may|have|has|any|tell me|i'd like to know|i want to know)\b",
    re.I,
)


# Words of questions about the call itself, not about the business: the LLM answers
# these ("Can you hear me?", "What's your name?", "Are you a robot?").
_CALL_WORDS = frozenset(
    terms(
        "hear understand repeat again talking speaking speak name real human person robot "
        "bot ai machine doing fine day there busy wait still line call"
    )
)


# Words of greetings and pleasantries: a turn made only of these and call words
# ("How are you today?", "Good morning!") is small talk, not a question about the
# business, even though "today" or "morning" would match the opening hours.
_GREETING_WORDS = frozenset(
    terms("today tonight morning afternoon evening good great going nice well okay sorry")
)
# Turns made only of these get no facts. "call" and "line" are left out: "How can
# I call you?" asks for the phone number.
_SMALL_TALK_WORDS = (_CALL_WORDS | _GREETING_WORDS) - frozenset(terms("call line"))


def is_question(text: str) -> bool:
    """Whether the caller's words ask for something (Whisper marks most with "?")."""
    return text.rstrip().endswith("?") or bool(_QUESTION_START.search(text))


class PromptBuilder:
    """Builds the messages for each turn of one call."""

    def __init__(
        self,
        *,
        instructions: str,
        facts: tuple[Fact, ...] = (),
        reply_hint: str = DEFAULT_REPLY_HINT,
        language: str = "en",
        derive_facts: bool = True,
        direct_min_score: float | None = 0.0,
        decline: str = DEFAULT_DECLINE,
        takes_messages: bool = False,
        encoder: Encoder | None = None,
    ) -> None:
        """`direct_min_score`: the best retrieved facts, when they score at least this
        (above the retriever's own minimum), are spoken as written; None: never."""
        self.direct_min_score = direct_min_score
        self.decline = decline
        self.takes_messages = takes_messages
        self.instructions = instructions
        self._background = set(terms(instructions))
        self.reply_hint = reply_hint
        self.language = language
        derived, behaviour = (
            split_instructions(instructions) if derive_facts else ([], instructions)
        )
        # The words of who the agent is and how it behaves (the business's name) say
        # little about which fact a question needs; the facts' own words do.
        self.knowledge = KnowledgeBase([*facts, *derived], background=behaviour, encoder=encoder)
        # Grounded answers (and declines) only when the persona has knowledge to
        # ground them in; a persona without facts stays a general assistant.
        self.grounded = len(self.knowledge) > 0

    def system(self, instructions: str | None = None) -> str:
        parts = [(instructions or self.instructions).strip()]
        if self.reply_hint:
            parts.append(self.reply_hint)
        if self.grounded:
            parts.append(MESSAGE_GROUNDING_RULE if self.takes_messages else GROUNDING_RULE)
        name = language_name(self.language)
        if name and name != "English":  # small models drift into English without this
            parts.append(f"Always answer in {name}.")
        return "\n\n".join(p for p in parts if p)

    def examples(self) -> list[Message]:
        if not self.grounded:
            return []
        messages: list[Message] = []
        for question, fact, answer in _EXAMPLES:
            messages.append({"role": "user", "content": self._content(question, fact)})
            messages.append({"role": "assistant", "content": answer or self.decline})
        return messages

    def turn(self, text: str) -> Turn:
        """The user message for the caller's words `text`, with its retrieved facts."""
        if not self.grounded:
            return Turn(text, ())
        if not set(terms(text)) - _SMALL_TALK_WORDS:
            # Small talk or a question about the call itself ("Can you hear me?"): no
            # facts, and no "Facts: none" line, which a small model reads as a cue to
            # decline.
            return Turn(self._content(text, None, chat=True), ())
        matches = tuple(self.knowledge.retrieve(text))
        facts = " ".join(m.fact.answer.strip() for m in matches) or None
        direct = None
        if matches and self.direct_min_score is not None:
            best = matches[0].score
            chosen = [m for m in matches if m.score >= max(self.direct_min_score, best - 1e-9)]
            if chosen:
                direct = " ".join(m.fact.answer.strip() for m in chosen)
        if facts is None and not is_question(text):
            return Turn(self._content(text, None, chat=True), matches)
        if facts is None and self.direct_min_score is not None and self._asks_about(text):
            # Asked about something no fact covers: decline as written. Late in a call
            # the small model follows its own earlier answers ("We do not sell X.")
            # rather than the rule, and invents a negative.
            return Turn(self._content(text, facts), matches, self.decline, declined=True)
        return Turn(self._content(text, facts), matches, direct)

    def _asks_about(self, text: str) -> bool:
        """Whether a question names something (not only the call or the business)."""
        return bool(set(terms(text)) - self._background - _CALL_WORDS)

    @staticmethod
    def caller_words(content: str) -> str:
        """The caller's own words in a user message as `_content` writes it (the whole
        message when it is not in that form)."""
        _, marker, words = content.rpartition("Caller: ")
        if not marker:
            return content
        return re.sub(r" Answer in [A-Z][\w ]*\.$", "", words)

    def _content(self, text: str, facts: str | None, *, chat: bool = False) -> str:
        name = language_name(self.language)
        tail = f" Answer in {name}." if name and name != "English" else ""
        if chat:  # small talk ("thanks, bye"): no facts line, nothing to decline
            return f"Caller: {text}{tail}"
        if facts is None:
            return f"Facts: none that answer this.\nCaller: {text}{tail}"
        return f"Facts: {facts}\nCaller: {text}{tail}"

    def messages(self, history: list[Message], instructions: str | None = None) -> list[Message]:
        """System prompt, worked examples, then the call's history (as sent)."""
        return [
            {"role": "system", "content": self.system(instructions)},
            *self.examples(),
            *history,
        ]
