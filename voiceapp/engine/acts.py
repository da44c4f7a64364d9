"""What a caller's turn asks of an agent that knows nothing about its business.

A persona with no facts (a fresh organization's default persona, say) is
answered by the small embedded model, which makes up what it cannot know:
asked "What time do you open on Saturday?" it gave an hour, asked to repeat
itself it talked about languages (docs/QUALITY.md). Two kinds of turn are
therefore not the model's to answer:

- **repeat**: "Say that again?", "Pardon?", "Can you speak up?": the agent says
  its last words again (`Act.REPEAT`), told by the caller's words (`asks_to_repeat`);
- **business**: a question about the business itself (its hours, prices, place,
  stock, bookings, contact, staff) that no fact answers: the agent says it does
  not know (`Act.BUSINESS`);
- **live**: the weather, the news, the traffic, a match: the agent says it
  cannot check that (`Act.LIVE`);
- **wellbeing**: "How are you doing?": the agent says it is well and offers help
  (the model said the question back, word for word);
- **thanks** and **goodbye**: "you're welcome" and a goodbye (the model wandered
  off: "No worries, I'm back on my phone");
- **rude**: an insult or the caller's frustration: the agent apologises and
  offers help (`Act.RUDE`), where the model answered with nonsense or sarcasm.
- **general**: general knowledge (sums, history, science, geography), for a
  persona that declines it (`Persona.general_questions` off, the default): the
  model got about half of such answers wrong ("the biggest planet is Neptune").

All but the first are told by sentence embeddings (embedder.py): the turn's
similarity to each kind's examples against its similarity to examples of
everything else a caller says (general knowledge, advice, small talk,
questions about the agent). The examples are generic and name no business;
the thresholds were set on bench/chat_dev_turns.py, and bench/chat_turns.py is
held out. Everything else is the model's (`Act.OTHER`).
"""

from __future__ import annotations

import enum
import re
import threading
from dataclasses import dataclass

import numpy as np

from .embedder import SentenceEncoder, shared_encoder


class Act(enum.Enum):
    REPEAT = "repeat"
    BUSINESS = "business"
    LIVE = "live"  # news, weather, traffic, scores: nothing the agent can look up
    IDENTITY = "identity"  # is this a person or a machine? who is it?
    LINE = "line"  # can you hear me? are you still there?
    WELLBEING = "wellbeing"  # how are you? how's it going?
    THANKS = "thanks"
    GOODBYE = "goodbye"
    RUDE = "rude"
    GENERAL = "general"  # general knowledge, for a persona that declines it
    OTHER = "other"


_REPEAT = re.compile(
    r"\b(repeat|say (that|it|this) again|again\?|come again|pardon|"
    r"didn'?t (catch|hear|get|understand) (that|you|it|what)|"
    r"what did you (just )?say|what was that|(cut|cutting|breaking) (out|up)|"
    r"can'?t (hear|understand) you|barely hear|hard to hear|"
    r"(speak|talk)( a (bit|little))? (up|louder|slower|more slowly)|louder|slower|"
    r"slow(er)? down|more slowly|"
    r"too (fast|quick|quickly|quiet|quietly))\b",
    re.I,
)


def asks_to_repeat(text: str) -> bool:
    """The caller asks the agent to say it again, louder or slower."""
    return len(text.split()) <= 12 and bool(_REPEAT.search(text))


# Questions about a business's own details, for no business in particular.
BUSINESS_EXAMPLES = (
    "What are your opening hours?",
    "Are you open at the weekend?",
    "What time do you shut on Fridays?",
    "Do you work on bank holidays?",
    "How much do you charge for that?",
    "What does it cost?",
    "How much is the small one?",
    "What's the price of a large box?",
    "Is there a fee if I cancel?",
    "Where can I find you?",
    "What's the best way to get to your shop?",
    "Do you have somewhere to park?",
    "Which cards do you accept?",
    "Can I pay online?",
    "Do you offer home delivery?",
    "Do you ship abroad?",
    "Is that in stock at the moment?",
    "Do you sell second-hand ones?",
    "Have you got any appointments left this week?",
    "Can I make a booking for Thursday?",
    "Is anyone available to come out tomorrow?",
    "How can I contact you?",
    "What number can I call you on?",
    "Do you have a website?",
    "How long is the wait at the moment?",
    "How long will the work take?",
    "Do you do discounts for students?",
    "Are dogs allowed inside?",
    "Which of your staff is in today?",
    "Do you cater for allergies?",
)
# Live information no agent on a call can look up.
LIVE_EXAMPLES = (
    "What's the weather going to be like later?",
    "Is it cold outside today?",
    "Is it going to be sunny tomorrow?",
    "What's the traffic like on the motorway?",
    "What's in the news today?",
    "Who's winning the match right now?",
    "What's the exchange rate today?",
    "Are the trains running on time this morning?",
)
# Whether the caller is talking to a person: the agent must not claim to be one.
IDENTITY_EXAMPLES = (
    "Are you a human?",
    "Are you a computer?",
    "Am I speaking to a machine?",
    "Is this a recording?",
    "Is this a real person?",
    "Are you an AI?",
    "Who am I speaking with?",
    "What should I call you?",
)
# The caller checks the line.
LINE_EXAMPLES = (
    "Is this thing working?",
    "Are you still there?",
    "Am I coming through okay?",
    "Hello? Is anybody there?",
    "Can you hear me all right?",
    "You've gone quiet, are you there?",
)
WELLBEING_EXAMPLES = (
    "How are you doing?",
    "How's it going?",
    "How has your day been?",
    "Are you having a good day?",
    "How are things with you?",
    "You alright?",
)
THANKS_EXAMPLES = (
    "Thank you so much.",
    "Thanks, that helps.",
    "Cheers, I appreciate it.",
    "Brilliant, thanks a lot.",
    "Okay, thank you.",
)
GOODBYE_EXAMPLES = (
    "Bye for now.",
    "Goodbye.",
    "Talk to you later, bye.",
    "I have to go now, bye.",
    "That's everything, goodbye.",
)
# Insults, frustration and complaints about the agent or the call.
RUDE_EXAMPLES = (
    "You're annoying.",
    "That's not what I asked.",
    "This is ridiculous.",
    "Stop wasting my time.",
    "I'm getting fed up with this.",
    "Are you even listening?",
    "Be quiet.",
    "These phone menus drive me mad.",
    "What a pointless conversation.",
    "Oh, for goodness' sake.",
)
# General knowledge: sums, history, science, geography. Among everything else a
# caller says for `classify`; told from the rest for a persona that declines it.
KNOWLEDGE_EXAMPLES = (
    "What's the tallest mountain in the world?",
    "Who painted the Mona Lisa?",
    "How many minutes are in an hour?",
    "How many grams are in a kilo?",
    "What's five times six?",
)
# More of it, only for telling general knowledge from the rest of `OTHER`.
MORE_KNOWLEDGE_EXAMPLES = (
    "Who wrote Romeo and Juliet?",
    "Who invented the light bulb?",
    "When did the Second World War end?",
    "What year did the Berlin Wall come down?",
    "What's the capital city of Japan?",
    "Which is the longest river on Earth?",
    "What is the largest ocean?",
    "How many continents are there?",
    "How far away is the moon?",
    "Why do leaves change colour in autumn?",
    "What's the chemical symbol for gold?",
    "At what temperature does water boil?",
    "What's twelve plus nine?",
    "What's the square root of eighty-one?",
    "What's twenty percent of fifty?",
    "How many centimetres are in a metre?",
    "How many ounces are in a pound?",
    "Who was the first person to walk on the moon?",
    "Which country has the most people?",
    "What's the fastest animal in the world?",
)
# Everything else a caller says: advice, requests to the agent, small talk,
# questions about the agent or the call (and, for `classify`, general knowledge).
CONVERSATION_EXAMPLES = (
    "Can you tell me a funny story?",
    "Give me a tip for remembering names.",
    "How do I boil an egg?",
    "What should I cook for dinner tonight?",
    "Do you know any good films?",
    "Can I speak with a manager?",
    "I'm just calling to see what you do.",
    "Do you speak French?",
    "Can you help me with something?",
    "Hang on a moment.",
    # the caller about themselves, and what they said: the conversation's own matter
    "My name is Sam.",
    "I'm calling about my son.",
    "What did I just tell you?",
    "Say hello to my friend here.",
    "Can you spell that for me?",
    "Okay, one more question.",
    "Let me think for a second.",
)
OTHER_EXAMPLES = KNOWLEDGE_EXAMPLES + CONVERSATION_EXAMPLES


@dataclass(frozen=True, slots=True)
class ActSettings:
    min_score: float = 0.20  # the mean of an act's best 3 similarities
    margin: float = 0.05  # ... over that of the examples of everything else
    # "How are you?" is near much other small talk ("Nice to meet you!", "How are the
    # puppies doing?": 0.38-0.52); it is told from this (0.57-0.76 for the real ones).
    wellbeing_min: float = 0.55
    # General knowledge, told from the rest of what the model answers (`OTHER`) and
    # from questions about the business
    general_min: float = 0.30
    general_margin: float = 0.10
    top: int = 3


class TurnActs:
    """Tells repeat requests, questions about the business or about live events,
    and rude turns from the others (which are the model's)."""

    def __init__(self, encoder: SentenceEncoder, settings: ActSettings | None = None) -> None:
        self._encoder = encoder
        self.settings = settings or ActSettings()
        self._examples = {
            Act.BUSINESS: encoder.encode(BUSINESS_EXAMPLES),
            Act.LIVE: encoder.encode(LIVE_EXAMPLES),
            Act.IDENTITY: encoder.encode(IDENTITY_EXAMPLES),
            Act.LINE: encoder.encode(LINE_EXAMPLES),
            Act.WELLBEING: encoder.encode(WELLBEING_EXAMPLES),
            Act.THANKS: encoder.encode(THANKS_EXAMPLES),
            Act.GOODBYE: encoder.encode(GOODBYE_EXAMPLES),
            Act.RUDE: encoder.encode(RUDE_EXAMPLES),
            Act.OTHER: encoder.encode(OTHER_EXAMPLES),
        }
        self._knowledge = encoder.encode(KNOWLEDGE_EXAMPLES + MORE_KNOWLEDGE_EXAMPLES)
        self._conversation = encoder.encode(CONVERSATION_EXAMPLES)

    def classify(self, text: str, *, general: bool = False) -> Act:
        """What `text` asks (blocking: a model runs; call it from a thread in a loop).
        `general`: tell general knowledge (`Act.GENERAL`) from the rest of `OTHER`."""
        if asks_to_repeat(text):
            return Act.REPEAT
        vector = self._encoder.encode([text])[0]
        scores = self._scores(vector)
        other = scores.pop(Act.OTHER)
        act = max(scores, key=lambda a: scores[a])
        cfg = self.settings
        if scores[act] < cfg.min_score or scores[act] < other + cfg.margin:
            act = Act.OTHER
        elif act is Act.WELLBEING and scores[act] < cfg.wellbeing_min:
            act = Act.OTHER
        if act is Act.OTHER and general and self._general(vector):
            return Act.GENERAL
        return act

    def scores(self, text: str) -> dict[Act, float]:
        """The turn's closeness to each act's examples (the mean of the best few)."""
        return self._scores(self._encoder.encode([text])[0])

    def _general(self, vector: np.ndarray) -> bool:
        """Closer to general knowledge than to the rest of `OTHER`, and than to the
        business's own questions ("What is the full number of the pharmacy?", Whisper's
        reading of "phone number", is about the business)."""
        knowledge = self._closeness(self._knowledge, vector)
        rest = max(
            self._closeness(self._conversation, vector),
            self._closeness(self._examples[Act.BUSINESS], vector),
        )
        cfg = self.settings
        return knowledge >= cfg.general_min and knowledge >= rest + cfg.general_margin

    def _scores(self, vector: np.ndarray) -> dict[Act, float]:
        return {act: self._closeness(ex, vector) for act, ex in self._examples.items()}

    def _closeness(self, examples: np.ndarray, vector: np.ndarray) -> float:
        return float(np.sort(examples @ vector)[-self.settings.top :].mean())


_shared: TurnActs | None = None
_shared_lock = threading.Lock()


def shared_acts() -> TurnActs | None:
    """The process's classifier on the packaged encoder (None when not installed)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            encoder = shared_encoder()
            if encoder is None:
                return None
            _shared = TurnActs(encoder)
        return _shared
