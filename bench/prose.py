"""Personas whose facts are written in their instructions, as businesses write
them: paragraphs of prose, not a list of facts. Graded as in bakery.py.

- `DEV`: a bakery, the kind of persona issue #21 tried (its parking, payment,
  lead-time and availability questions went wrong), tuned on from the start; a
  florist and a physiotherapy clinic, held out for the first round of changes
  (2026-12-05); and a hair studio and a vet, held out for the second
  (2026-12-06). All are development data now: their misses were read.
- The held-out set is in prose_heldout.py (2026-12-07).

Each persona's questions ask for what its prose says, in the caller's words
(paraphrases, not the prose's), and for things it does not say.
"""

from __future__ import annotations

from dataclasses import dataclass

from .bakery import Question


@dataclass(frozen=True, slots=True)
class ProsePersona:
    name: str
    instructions: str
    answerable: tuple[Question, ...]
    unanswerable: tuple[Question, ...]


NO_CHEQUES = (
    "not cheques",
    "no cheques",
    "not take cheques",
    "n't take cheques",
    "not accept cheques",
    "n't accept cheques",
)
NO_REFERRAL = ("no referral", "not needed", "n't need", "not need", "no need")


def _q(text: str, *groups: tuple[str, ...]) -> Question:
    return Question(text, groups)


BAKERY = ProsePersona(
    "bakery",
    "You are the friendly phone assistant of Crumb & Co, a small bakery in Westfield. "
    "Keep your answers short.\n\n"
    "We open at 7 in the morning and close at 5 in the afternoon from Tuesday to "
    "Saturday; on Sundays we are open from 8 until noon, and we are closed on Mondays. "
    "Our gluten-free loaves are baked on Wednesdays and Fridays only, so those are the "
    "days to come for them. A white sandwich loaf is 4 dollars and a seeded rye is 6 "
    "dollars. Birthday cakes need to be ordered at least three days ahead, and a "
    "deposit of 10 dollars secures the order. You can pay with cash or any card, "
    "including contactless. There is no car park of our own, but the town car park on "
    "Mill Lane is a two minute walk away and free for the first hour. We are at 9 "
    "Church Street, opposite the library. We do not deliver.",
    (
        _q("When do you have gluten free bread?", ("wednesday",), ("friday",)),
        _q("Which days can I get a gluten-free loaf?", ("wednesday",), ("friday",)),
        _q("Is there parking near you?", ("mill lane", "town car park")),
        _q("Where can I leave my car?", ("mill lane", "town car park")),
        _q("How early do I need to order a birthday cake?", ("three days", "3 days")),
        _q("Do I have to pay anything when I order a cake?", ("10", "ten")),
        _q("Can I pay by card?", ("any card", "cards", "card")),
        _q("Do you take contactless?", ("contactless",)),
        _q("What time do you open on Saturday?", ("7", "seven")),
        _q("Are you open on Monday?", ("closed", "not open")),
        _q("What are your hours on Sunday?", ("8", "eight"), ("noon", "12")),
        _q("How much is the rye bread?", ("6", "six")),
        _q("What's the price of a sandwich loaf?", ("4", "four")),
        _q("What's your address?", ("church street", "9 church")),
        _q("Can you deliver a cake to my house?", ("not deliver", "don't deliver")),
    ),
    (
        Question("Do you sell coffee?"),
        Question("Is there wifi in the shop?"),
        Question("Who bakes the bread?"),
        Question("Do you make wedding cakes?"),
    ),
)

FLORIST = ProsePersona(
    "florist",
    "You take calls for Petal Lane Flowers, a florist. Be warm and brief.\n\n"
    "The shop is open Monday to Friday 9 till 6 and Saturday 9 till 4; it stays shut on "
    "Sundays. A hand-tied bouquet starts at 35 dollars and a single rose is 5 dollars. "
    "We deliver anywhere in the city for 8 dollars, and orders placed before 1 pm go "
    "out the same day. Wedding flowers must be booked at least six weeks before the "
    "day. We take all major cards and PayPal, but not cheques. Customers can park for "
    "free in the two bays right outside the shop. Our sunflowers are only in stock "
    "from June to September. We are at 112 Station Road.",
    (
        _q("Can I get flowers delivered today?", ("1 pm", "1pm", "before 1", "one")),
        _q("How much does delivery cost?", ("8", "eight")),
        _q("How much is a bouquet?", ("35", "thirty-five", "thirty five")),
        _q("What does one rose cost?", ("5", "five")),
        _q("How far ahead should I book flowers for my wedding?", ("six weeks", "6 weeks")),
        _q("Can I pay with a cheque?", NO_CHEQUES),
        _q("Do you accept PayPal?", ("paypal",)),
        _q("Is there anywhere to park?", ("outside", "bays", "free")),
        _q("When can I buy sunflowers?", ("june",), ("september",)),
        _q("Are you open on Sunday?", ("shut", "closed", "not open")),
        _q("What time do you close on Saturday?", ("4", "four")),
        _q("Where is the shop?", ("station road", "112")),
    ),
    (
        Question("Do you sell house plants?"),
        Question("Can I do a flower arranging class?"),
        Question("Do you deliver to other countries?"),
    ),
)

CLINIC = ProsePersona(
    "clinic",
    "You answer the phone for Northside Physio, a physiotherapy clinic. Keep replies "
    "short and clear.\n\n"
    "Appointments run from 8 am to 8 pm on weekdays and 9 am to 1 pm on Saturdays. A "
    "first assessment lasts 45 minutes and costs 70 dollars; follow-up sessions are 30 "
    "minutes for 50 dollars. If you need to cancel, please tell us 24 hours before, or "
    "the full fee is charged. We are on the first floor of 30 King Street, and there is "
    "a lift. Parking is in the underground garage of the building, and we stamp your "
    "ticket so it is free. We accept cards and most health insurance plans, but please "
    "bring your insurance card to the first visit. No referral from a doctor is needed.",
    (
        _q("How long is the first appointment?", ("45", "forty-five", "forty five")),
        _q("What does a first visit cost?", ("70", "seventy")),
        _q("How much is a follow-up?", ("50", "fifty")),
        _q("Can I cancel the day before?", ("24 hours", "24", "twenty-four")),
        _q("Where do I park?", ("underground", "garage")),
        _q("Do I have to pay for parking?", ("free", "stamp")),
        _q("Is there a lift?", ("lift",)),
        _q(
            "Do I need a referral from my GP?",
            NO_REFERRAL,
        ),
        _q("What should I bring to my first appointment?", ("insurance card",)),
        _q("Are you open on Saturdays?", ("9", "nine"), ("1 pm", "1pm", "one")),
        _q("How late can I come on a weekday?", ("8 pm", "8pm", "eight")),
        _q("Do you take insurance?", ("insurance plans", "health insurance")),
    ),
    (
        Question("Do you offer massage?"),
        Question("Which physio is the best for knees?"),
        Question("Can I bring my child with me?"),
    ),
)

# Written on 2026-12-06, before the second round of retrieval changes, when the
# florist and the clinic had been looked at and joined the development set.
SALON = ProsePersona(
    "salon",
    "You are the receptionist of Mara's Hair Studio. Greet callers kindly and keep it "
    "short.\n\n"
    "The studio opens at 10 am and closes at 7 pm from Tuesday to Friday, and on "
    "Saturday from 9 am to 3 pm. On Sundays and Mondays the studio is closed. A women's "
    "cut and blow-dry costs 55 dollars, a men's cut is 30 dollars, and full colour "
    "starts at 90 dollars. New clients who want colour need a patch test at least 48 "
    "hours before the appointment. If you are more than 15 minutes late we may have to "
    "rebook you. Walk-ins are welcome on weekday mornings when a chair is free. We take "
    "cash and all cards, and gift vouchers can be bought at the desk. The studio is at "
    "4 Harbour Street, above the pharmacy, and street parking is metered until 6 pm.",
    (
        _q("What time do you open on a Wednesday?", ("10", "ten")),
        _q("Can I come in on a Monday?", ("closed", "not open", "shut")),
        _q("How late are you open on Saturday?", ("3 pm", "3pm", "three")),
        _q("How much is a haircut for a man?", ("30", "thirty")),
        _q("What do you charge for colouring?", ("90", "ninety")),
        _q("I've never had colour with you, do I need to come in first?", ("patch test",)),
        _q("What happens if I'm running late?", ("15", "fifteen"), ("rebook",)),
        _q("Can I just drop in without booking?", ("walk-in", "walk in", "welcome")),
        _q("Do you sell gift vouchers?", ("voucher",)),
        _q("Do you accept credit cards?", ("card",)),
        _q("Where are you?", ("harbour street", "4 harbour")),
        _q("Where can I park?", ("street parking", "metered", "meter")),
    ),
    (
        Question("Do you do eyebrow threading?"),
        Question("Which stylist is best with curly hair?"),
        Question("Is there a student discount?"),
    ),
)

VET = ProsePersona(
    "vet",
    "You answer calls for Greenfield Vets, a veterinary practice. Be calm and helpful.\n\n"
    "Consultations are by appointment from 8.30 am to 6.30 pm Monday to Friday and "
    "from 9 am to noon on Saturday. A standard consultation costs 48 dollars and a "
    "yearly vaccination is 65 dollars. Out of hours, emergencies are seen at the "
    "Riverside Animal Hospital on Canal Road. Dogs must be kept on a lead in the "
    "waiting room and cats should come in a carrier. Repeat prescriptions need two "
    "working days' notice. We accept cards and pet insurance, and payment is due at "
    "the time of treatment. There is a free car park behind the practice.",
    (
        _q("When can I see a vet on Saturday?", ("9", "nine"), ("noon", "12")),
        _q("What time do you close on weekdays?", ("6.30", "6:30", "six thirty")),
        _q("How much is an appointment?", ("48", "forty-eight", "forty eight")),
        _q("What does it cost to vaccinate my dog?", ("65", "sixty-five", "sixty five")),
        _q("My cat is ill in the middle of the night, where do I go?", ("riverside",)),
        _q("Does my dog need a lead inside?", ("lead",)),
        _q("How should I bring my cat?", ("carrier",)),
        _q("How much notice do you need for a repeat prescription?", ("two", "2")),
        _q("Do you take pet insurance?", ("insurance",)),
        _q("When do I have to pay?", ("time of treatment", "treatment")),
        _q("Is there parking?", ("car park", "behind")),
    ),
    (
        Question("Do you treat horses?"),
        Question("Can I buy dog food from you?"),
        Question("Which vet is on duty today?"),
    ),
)

DEV: tuple[ProsePersona, ...] = (BAKERY, FLORIST, CLINIC, SALON, VET)
