"""Documents of four made-up businesses, written for this eval, and the questions callers ask.

Each caller question is phrased the way people speak on the phone, and comes with the exact
words of the one sentence in that business's documents that answers it, or None where the
documents do not answer it. DEV is for tuning retrieval: the guest house and the plumber from the
start, the dog groomer and the language school since 2026-12-07 (they were the held-out set of
2026-12-06, whose misses were read). The held-out set is in document_heldout.py, written before
the changes after it and not tuned on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Document:
    """One uploaded file: its name, how it is written and its text."""

    name: str  # e.g. "harbour-dental-faq.md"
    format: str  # "markdown", "html", "text" or "docx-outline"
    body: str


@dataclass(frozen=True, slots=True)
class Case:
    """A caller's question and the words of the sentence that answers it."""

    document: str  # the business key, e.g. "dental"
    question: str  # what a caller says, spoken style
    # A short exact substring (case-sensitive, 2-6 words) that occurs in exactly one sentence
    # of that business's documents: the sentence that answers; None when nothing answers it.
    expect: str | None


@dataclass(frozen=True, slots=True)
class Business:
    """A business: who the agent is, the documents it uploaded and the questions asked."""

    key: str
    persona_instructions: str
    documents: tuple[Document, ...]
    cases: tuple[Case, ...]


def _lines(*lines: str) -> str:
    """One paragraph (or heading, or list item) per line, for the text and docx formats."""
    return "\n".join(lines) + "\n"


# --- DEV 1: a bed and breakfast (html + markdown) -------------------------------------------

_GULL_ROCK_ROOMS = """\
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Rooms and Rates | Gull Rock Guest House, Saltby Bay</title>
  <link rel="stylesheet" href="/assets/site.css">
</head>
<body>
<nav class="main-menu">
  <ul>
    <li><a href="/">Home</a></li>
    <li><a href="/rooms">Rooms &amp; Rates</a></li>
    <li><a href="/faq">Guest FAQ</a></li>
    <li><a href="/saltby">Things to do</a></li>
    <li><a href="/contact">Contact us</a></li>
    <li><a class="book-now" href="/book">Book now</a></li>
  </ul>
</nav>
<main>
  <h1>Rooms and Rates</h1>
  <p>Gull Rock Guest House has six en-suite rooms, four of them looking out over the
  harbour. All our prices are per room per night and include a full cooked breakfast
  for everyone staying in the room.</p>
  <h2>Prices for 2025</h2>
  <table class="rates">
    <tr><th>Room</th><th>Beds</th><th>Price</th></tr>
    <tr><td>Single room</td><td>Small double bed</td><td>£68 per night</td></tr>
    <tr><td>Standard double</td><td>Double bed</td><td>£92 per night</td></tr>
    <tr><td>Harbour view double</td><td>King-size bed</td><td>£110 per night</td></tr>
    <tr><td>Family room</td><td>Double bed and two singles</td><td>£136 per night</td></tr>
  </table>
  <p>From July to the end of August we ask for a minimum stay of two nights at weekends.</p>
  <h2>In every room</h2>
  <ul>
    <li>Free Wi-Fi and a flat-screen TV</li>
    <li>Tea and coffee tray with homemade shortbread</li>
    <li>Hairdryer, fluffy towels and local seaweed soap</li>
  </ul>
  <h2>Breakfast</h2>
  <p>Breakfast is served in the dining room from 7:30 to 9:30 am on weekdays and Saturdays,
  and from 8 to 10 am on Sundays. We can make vegetarian, vegan and gluten-free breakfasts
  if you let us know the day before.</p>
  <p>We do not serve evening meals, but there are five restaurants and a fish and chip shop
  within a short walk of the house.</p>
</main>
<footer>
  <p>Gull Rock Guest House | Marine Parade | Saltby Bay</p>
  <p>&copy; 2025 Gull Rock Guest House. <a href="/privacy">Privacy policy</a> |
  <a href="/cookies">Cookies</a></p>
</footer>
<script>
  window.dataLayer = window.dataLayer || [];
  function gtag(){dataLayer.push(arguments);}
  gtag('js', new Date());
  gtag('config', 'G-7QX2LM4K9D');
  document.querySelector('.book-now').addEventListener('click', function (e) {
    e.preventDefault();
    openBookingWidget({property: 'gull-rock', nights: 2});
  });
</script>
</body>
</html>
"""

_GULL_ROCK_FAQ = """\
# Guest FAQ

Everything you need to know before your stay at Gull Rock. If your question is not answered
here, call us on 01632 960 418 or email stay@gullrockhouse.example.

## Booking and payment

### How do I book?

You can book online through our website, or by phone between 9 am and 8 pm.

### Do you take a deposit?

We take a deposit of one night's rate when you book, and the rest is paid on arrival.

### What is your cancellation policy?

- If you cancel **14 days or more** before arrival, we refund your deposit in full.
- With less notice the deposit is kept, unless we manage to re-let the room.

### How can I pay?

We accept Visa, Mastercard and American Express, as well as cash. Sorry, we no longer take
cheques.

## Arrival and departure

### What time is check-in?

Check-in is from 3 pm to 8 pm. If you are arriving after 8 pm, please ring ahead and we will
leave a key in the lockbox by the front door.

### When do we have to leave?

Check-out is by 10:30 am, and you are welcome to leave your bags with us for the day.

### Is there parking?

We have four off-road parking spaces behind the house, free of charge and first come, first
served. When they are full, the long-stay car park on Cliff Road is a five-minute walk and
costs £6 a day.

## During your stay

### Can I bring my dog?

Well-behaved dogs are welcome in our two ground-floor rooms for £15 per dog per night. Dogs
are not allowed in the dining room.

### Is Gull Rock suitable for children?

Children of all ages are welcome, and we can put a cot and high chair in your room at no
extra cost.

### Is there a lift?

There is no lift, and the upper floors are reached by a fairly steep staircase. Both
ground-floor rooms have step-free access from the side entrance.

## Getting here

- You will find us on Marine Parade, opposite the lifeboat station.
- The beach is a two-minute walk down the slipway.
- Saltby Bay railway station is ten minutes away on foot.
- Buses to Kirkhaven leave from the harbour every half hour.
"""

GUEST_HOUSE = Business(
    "guesthouse",
    "You are the phone assistant of Gull Rock Guest House, a six-room bed and breakfast on "
    "the seafront in Saltby Bay. Answer callers briefly and warmly.",
    (
        Document("gull-rock-rooms.html", "html", _GULL_ROCK_ROOMS),
        Document("gull-rock-faq.md", "markdown", _GULL_ROCK_FAQ),
    ),
    (
        Case(
            "guesthouse",
            "Hi there, how much is it for a double with a view of the harbour?",
            "£110 per night",
        ),
        Case("guesthouse", "Is breakfast included or is that extra?", "include a full cooked"),
        Case("guesthouse", "What time's breakfast on a Sunday?", "8 to 10 am on Sundays"),
        Case(
            "guesthouse",
            "Um, my husband's coeliac, would he be able to get a breakfast without gluten?",
            "vegan and gluten-free breakfasts",
        ),
        Case(
            "guesthouse",
            "Can we have dinner at the guest house in the evening?",
            "We do not serve evening meals",
        ),
        Case(
            "guesthouse",
            "How much do I have to pay up front when I book?",
            "deposit of one night's rate",
        ),
        Case(
            "guesthouse",
            "If we cancel a month before, do we get our money back?",
            "we refund your deposit in full",
        ),
        Case("guesthouse", "Can I pay with a card?", "Visa, Mastercard and American Express"),
        Case(
            "guesthouse",
            "What's the earliest we can get into the room?",
            "Check-in is from 3 pm",
        ),
        Case(
            "guesthouse",
            "Hiya, our train doesn't get in till about half ten at night, is that gonna be okay?",
            "leave a key in the lockbox",
        ),
        Case(
            "guesthouse",
            "What time do we need to be out of the room on the last morning?",
            "Check-out is by 10:30 am",
        ),
        Case("guesthouse", "Have you got a car park?", "four off-road parking spaces"),
        Case(
            "guesthouse",
            "We've got a little terrier, can he come with us?",
            "£15 per dog per night",
        ),
        Case(
            "guesthouse",
            "We're coming with our baby, do you have a cot we could use?",
            "a cot and high chair",
        ),
        Case(
            "guesthouse",
            "My mum uses a walking frame, is there a lift in the building?",
            "There is no lift",
        ),
        Case(
            "guesthouse",
            "How far are you from the train station?",
            "ten minutes away on foot",
        ),
        Case("guesthouse", "Do you have a pool or a spa?", None),
        Case("guesthouse", "Is there air conditioning in the rooms?", None),
        Case("guesthouse", "Do you sell gift vouchers? It's for my parents' anniversary.", None),
        Case("guesthouse", "Can I charge my electric car while I'm staying?", None),
        Case("guesthouse", "Does any of the rooms have a bath rather than just a shower?", None),
    ),
)


# --- DEV 2: a plumbing company (text + docx-outline) ----------------------------------------

_KESTREL_SERVICES = _lines(
    "Kestrel Plumbing and Heating",
    "",
    "Family-run plumbers serving Norbridge and the villages within 15 miles since 1998. "
    "All our engineers are Gas Safe registered and carry photo ID.",
    "",
    "What we do",
    "",
    "We repair and replace boilers, radiators, taps, toilets, showers and hot water cylinders. "
    "We fit complete bathrooms, from the first design visit to the last tile. "
    "We also carry out annual boiler services and landlord gas safety certificates.",
    "",
    "We do not install or repair oil-fired or solid-fuel heating systems. "
    "Drainage work such as clearing blocked sewers is not something we take on, but we are "
    "happy to recommend a local drainage specialist.",
    "",
    "Opening hours",
    "",
    "The office is open Monday to Friday from 8 am to 5:30 pm and on Saturday from 9 am to 1 pm. "
    "Outside these hours our emergency line is staffed 24 hours a day, every day of the year.",
    "",
    "Prices",
    "",
    "Our standard labour rate is £68 for the first hour and £34 for each half hour after that. "
    "Parts are charged at the price we pay for them plus 10 percent. "
    "A standard annual boiler service costs £85. "
    "A landlord gas safety certificate costs £70, or £130 together with a boiler service.",
    "",
    "Emergency call-outs between 6 pm and 8 am, or at weekends and on bank holidays, "
    "cost £120 for the first hour. "
    "We give free written quotes for bathrooms and boiler replacements, and every quote is "
    "valid for 30 days.",
    "",
    "Payment",
    "",
    "Payment is due when the job is finished, by debit or credit card, bank transfer or cash. "
    "We do not accept cheques.",
    "",
    "Lead times",
    "",
    "Most repairs can be booked within two working days. "
    "For a new boiler the usual wait is one to two weeks from accepting the quote. "
    "A full bathroom refit normally starts four to six weeks after you accept the quote and "
    "takes about eight working days.",
    "",
    "Our guarantee",
    "",
    "All our workmanship is guaranteed for 12 months. "
    "New boilers also come with the manufacturer's warranty of up to ten years.",
)

_KESTREL_TERMS = _lines(
    "# Terms of Business",
    "Kestrel Plumbing and Heating Ltd, Unit 4, Millfield Trading Estate, Norbridge NB3 7QT.",
    "## Appointments",
    "- We give a two-hour arrival window for every appointment.",
    "- If your engineer is running late, we will phone you before the window ends.",
    "- An adult aged 18 or over must be at the property for the whole visit.",
    "## Cancelling an appointment",
    "If you need to cancel or rearrange, please give us at least 24 hours' notice.",
    "Appointments cancelled with less notice, or where nobody is home when the engineer "
    "arrives, are charged a £45 call-out fee.",
    "## Deposits and payment",
    "- Bathroom installations require a deposit of 25 percent when the quote is accepted.",
    "- Invoices for commercial customers are payable within 14 days.",
    "- Late payments are charged interest at 4 percent above the Bank of England base rate.",
    "## Complaints",
    "If you are not happy with our work, please call the office within 7 days.",
    "We will send an engineer back at no cost to put right any fault in our workmanship.",
    "## Parking and access",
    "Our vans need to park close to the property, so please tell us when you book if parking "
    "is restricted.",
    "Where we have to pay for parking, the charge is added to your invoice at cost.",
)

PLUMBER = Business(
    "plumbing",
    "You are the phone assistant of Kestrel Plumbing and Heating, a family-run plumbing and "
    "heating company in Norbridge. Keep your answers short and practical.",
    (
        Document("kestrel-services.txt", "text", _KESTREL_SERVICES),
        Document("kestrel-terms-of-business.docx", "docx-outline", _KESTREL_TERMS),
    ),
    (
        Case(
            "plumbing",
            "Hi, my boiler's packed up, is that something you'd fix?",
            "We repair and replace boilers",
        ),
        Case("plumbing", "Do you work on oil boilers?", "oil-fired or solid-fuel heating"),
        Case(
            "plumbing",
            "The drain outside's completely blocked, could you come and clear it?",
            "Drainage work such as clearing",
        ),
        Case("plumbing", "Are you open Saturdays?", "from 9 am to 1 pm"),
        Case(
            "plumbing",
            "It's two in the morning and a pipe's burst, is there anyone I can get hold of?",
            "staffed 24 hours a day",
        ),
        Case("plumbing", "What do you charge an hour?", "£68 for the first hour"),
        Case(
            "plumbing",
            "How much would it be just to get the boiler serviced?",
            "annual boiler service costs £85",
        ),
        Case(
            "plumbing",
            "How much is it if you have to come out on a Sunday?",
            "cost £120 for the first hour",
        ),
        Case(
            "plumbing",
            "Do you charge to come and price up a new bathroom?",
            "free written quotes",
        ),
        Case(
            "plumbing",
            "If I went ahead with a new boiler, how soon could you put it in?",
            "one to two weeks",
        ),
        Case(
            "plumbing",
            "Um, how long is your work guaranteed for?",
            "guaranteed for 12 months",
        ),
        Case(
            "plumbing",
            "Will you give me a time for the plumber, or do I have to wait in all day?",
            "two-hour arrival window",
        ),
        Case(
            "plumbing",
            "How much notice do I have to give if I want to cancel?",
            "at least 24 hours' notice",
        ),
        Case(
            "plumbing",
            "Do I have to pay anything up front for the bathroom?",
            "deposit of 25 percent",
        ),
        Case(
            "plumbing",
            "Can I just pay you by bank transfer?",
            "card, bank transfer or cash",
        ),
        Case(
            "plumbing",
            "The tap you fitted last week is dripping again, what should I do?",
            "call the office within 7 days",
        ),
        Case("plumbing", "Do you fit air source heat pumps?", None),
        Case("plumbing", "Is there any discount for pensioners?", None),
        Case("plumbing", "Do you fit kitchens as well, like the units and worktops?", None),
        Case("plumbing", "Do your engineers put covers on their shoes in the house?", None),
        Case("plumbing", "Can you install a water softener?", None),
    ),
)


# --- DEV 3 (held out until 2026-12-07): a dog groomer (html + text) ---------------------------

_MUDDY_PAWS_PRICES = """\
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Prices - Muddy Paws Grooming Studio, Ashcombe</title>
  <link rel="icon" href="/favicon.png">
  <style>table.prices td { padding: 4px 12px; }</style>
</head>
<body>
<header>
  <nav id="menu">
    <a href="/">Home</a>
    <a href="/services">Services</a>
    <a href="/prices" class="active">Prices</a>
    <a href="/gallery">Gallery</a>
    <a href="/book">Book online</a>
    <a href="/contact">Find us</a>
  </nav>
</header>
<main>
  <h1>Grooming prices</h1>
  <p>Every full groom includes a bath, blow-dry, haircut, nail clip and ear clean, finished
  with a bandana or bow.</p>
  <table class="prices">
    <tr><th>Dog size</th><th>Example breeds</th><th>Full groom</th><th>Bath and tidy</th></tr>
    <tr><td>Small</td><td>Yorkshire Terrier, Shih Tzu, Westie</td><td>from £38</td>
      <td>from £28</td></tr>
    <tr><td>Medium</td><td>Cocker Spaniel, Cockapoo, Border Terrier</td><td>from £46</td>
      <td>from £34</td></tr>
    <tr><td>Large</td><td>Labradoodle, Golden Retriever</td><td>from £58</td>
      <td>from £42</td></tr>
    <tr><td>Giant</td><td>Newfoundland, Bernese Mountain Dog</td><td>from £75</td>
      <td>from £55</td></tr>
  </table>
  <p>Prices for matted coats are higher, because de-matting has to be done slowly and
  gently. We charge £12 for every extra 15 minutes this takes.</p>
  <h2>Extras</h2>
  <ul>
    <li>Nail trim on its own: £10</li>
    <li>Teeth cleaning with enzyme paste: £8</li>
    <li>De-shedding treatment for double coats: £15</li>
  </ul>
  <h2>Puppies</h2>
  <p>Puppies under six months can come for a gentle introductory session for £25, so they
  get used to the noise of the dryer and being handled.</p>
</main>
<footer>
  <p>Muddy Paws Grooming Studio | Ashcombe | Follow us on Instagram @muddypawsashcombe</p>
  <p>&copy; 2025 Muddy Paws. Website by Fernlight Web.</p>
</footer>
<script src="/js/booking.js"></script>
<script>
  var cookieBanner = document.getElementById('cookie-banner');
  if (localStorage.getItem('cookies-ok')) { cookieBanner.style.display = 'none'; }
  initGallery({autoplay: true, delay: 4000});
</script>
</body>
</html>
"""

_MUDDY_PAWS_INFO = _lines(
    "Muddy Paws Grooming Studio",
    "",
    "Opening hours",
    "",
    "We are open Tuesday to Saturday, 8:30 am to 5 pm. "
    "We are closed on Sundays, Mondays and bank holidays.",
    "",
    "Booking",
    "",
    "Appointments can be booked by phone or on our booking page. "
    "Our regular customers usually book four to six weeks ahead, so for Saturdays please book "
    "as early as you can.",
    "",
    "A groom takes between two and four hours depending on the size of your dog and its coat. "
    "We will send you a text when your dog is ready to be picked up.",
    "",
    "Cancellations",
    "",
    "Please give us 48 hours' notice if you need to cancel or move an appointment. "
    "Late cancellations and missed appointments are charged at half the price of the groom.",
    "",
    "Health and vaccinations",
    "",
    "All dogs must be up to date with their vaccinations, and we may ask to see the card on "
    "the first visit. "
    "We cannot groom a dog that is in season or has been unwell in the last two days. "
    "Older dogs and nervous dogs are very welcome, and we book them in at quiet times with "
    "plenty of breaks.",
    "",
    "What we do not do",
    "",
    "We only groom dogs, so we are sorry that we cannot take cats, rabbits or other pets. "
    "We never sedate dogs. "
    "We do not offer a collection or drop-off service.",
    "",
    "Payment and parking",
    "",
    "We take card and contactless payments as well as cash, and payment is made when you "
    "collect your dog. "
    "There is a small customer car park in front of the studio, and dogs must be kept on a "
    "lead between the car and the door.",
    "",
    "Where to find us",
    "",
    "Muddy Paws is at Unit 2, Orchard Barns, Ashcombe, just off the B3316 behind the farm shop.",
)

DOG_GROOMER = Business(
    "groomer",
    "You are the phone assistant of Muddy Paws Grooming Studio, a dog grooming salon at "
    "Orchard Barns near Ashcombe. Be friendly and keep answers short.",
    (
        Document("muddy-paws-prices.html", "html", _MUDDY_PAWS_PRICES),
        Document("muddy-paws-info.txt", "text", _MUDDY_PAWS_INFO),
    ),
    (
        Case("groomer", "Hi, how much would a full groom be for a cockapoo?", "from £46"),
        Case(
            "groomer",
            "What do you actually do in a full groom?",
            "a bath, blow-dry, haircut",
        ),
        Case(
            "groomer",
            "Could I just bring her in to get her claws done?",
            "Nail trim on its own",
        ),
        Case(
            "groomer",
            "His coat's got really knotty, um, is that going to cost more?",
            "Prices for matted coats are higher",
        ),
        Case(
            "groomer",
            "We've just got a puppy, how much is it for her first time?",
            "introductory session for £25",
        ),
        Case("groomer", "Are you open on Mondays?", "closed on Sundays, Mondays"),
        Case(
            "groomer",
            "How long will I be without him, roughly?",
            "between two and four hours",
        ),
        Case(
            "groomer",
            "How far ahead do I need to book?",
            "four to six weeks ahead",
        ),
        Case(
            "groomer",
            "If something comes up and I can't make it, how much notice do you need?",
            "48 hours' notice",
        ),
        Case(
            "groomer",
            "Does she need to have had all her jabs?",
            "up to date with their vaccinations",
        ),
        Case(
            "groomer",
            "He's fourteen and gets really anxious, would you still be able to do him?",
            "book them in at quiet times",
        ),
        Case("groomer", "Do you do cats as well?", "cannot take cats, rabbits"),
        Case(
            "groomer",
            "I don't drive, could you come and fetch the dog from my house?",
            "collection or drop-off service",
        ),
        Case("groomer", "Can I pay by tapping my phone?", "card and contactless payments"),
        Case("groomer", "Is there somewhere to leave the car?", "small customer car park"),
        Case(
            "groomer",
            "Where are you exactly? I can't find you on the map.",
            "behind the farm shop",
        ),
        Case("groomer", "Do you sell dog shampoo or treats?", None),
        Case("groomer", "Is it cheaper if I bring both my dogs together?", None),
        Case("groomer", "Do you do hand stripping for wire-haired terriers?", None),
        Case("groomer", "Are you insured in case anything happens to my dog?", None),
        Case("groomer", "Do you do doggy daycare as well?", None),
    ),
)


# --- DEV 4 (held out until 2026-12-07): a language school (docx-outline + markdown) -----------

_LINDEN_GUIDE = _lines(
    "# Linden Language School: Course Guide 2025-26",
    "Linden Language School teaches English, Spanish, French and Italian to adults in small "
    "groups in the centre of Brackwell.",
    "## Group courses",
    "- Classes have a maximum of eight students.",
    "- Evening courses run for 10 weeks, one evening a week from 6:30 to 8:30 pm.",
    "- A 10-week evening course costs £245, including the course book.",
    "- Saturday intensive courses run from 10 am to 3 pm and cost £89 per day.",
    "## Private lessons",
    "Private lessons are available in all four languages, in person or online.",
    "A one-hour private lesson costs £42, and a block of ten lessons costs £380.",
    "Private lessons must be booked at least 48 hours in advance.",
    "## Levels and placement",
    "Every new student takes a free 20-minute placement test before joining, either at the "
    "school or by video call.",
    "We teach from complete beginner up to upper intermediate level.",
    "We do not currently run exam preparation courses such as IELTS or DELE.",
    "## Term dates",
    "The autumn term starts on 15 September and the spring term starts on 12 January.",
    "There are no classes in the two weeks over Christmas or on bank holidays.",
)

_LINDEN_FAQ = """\
# Frequently asked questions

**Can't see your question?** Email hello@lindenlanguages.example or call 01632 448 210.

## How do I enrol?

You can enrol online, by phone or at reception. Your place is confirmed once we receive a
deposit of £50, and the rest of the fee is due before the first class.

## Can I get a refund if I change my mind?

- Cancel more than 14 days before the course starts: full refund, including the deposit.
- Cancel within 14 days of the start: we keep the £50 deposit and refund the rest.
- Once the course has started we cannot give refunds, but you can move to a later course
  once.

## How can I pay?

You can pay by debit or credit card or by bank transfer. Courses over £200 can be paid in
three monthly instalments.

## What happens if I miss a class?

Your teacher will email you the notes and homework. Missed group classes cannot be made up
or refunded.

## Do you offer any discounts?

Students and over-65s get 10 percent off group courses on showing valid ID.

## Where are you, and can I park?

We are on the first floor of 22 Bridge Street, above the Corner Bookshop.
There is no parking at the school, but the Riverside multi-storey is three minutes' walk away.
The building has a lift and an accessible toilet.

## When is reception open?

Reception is open **Monday to Thursday** from 9 am to 8:30 pm, on Friday from 9 am to 5 pm
and on Saturday from 9:30 am to 3 pm.
"""

LANGUAGE_SCHOOL = Business(
    "language",
    "You are the phone assistant of Linden Language School, a small school teaching languages "
    "to adults in Brackwell. Answer callers clearly and briefly.",
    (
        Document("linden-course-guide.docx", "docx-outline", _LINDEN_GUIDE),
        Document("linden-faq.md", "markdown", _LINDEN_FAQ),
    ),
    (
        Case(
            "language",
            "Hi, I was wondering, do you do German classes?",
            "English, Spanish, French and Italian",
        ),
        Case("language", "How many people are there in a class?", "maximum of eight students"),
        Case(
            "language",
            "What time do the evening classes finish?",
            "from 6:30 to 8:30 pm",
        ),
        Case(
            "language",
            "How much is the ten-week course in the evenings?",
            "course costs £245",
        ),
        Case(
            "language",
            "I work during the week, do you have anything at weekends?",
            "Saturday intensive courses",
        ),
        Case(
            "language",
            "What would one-to-one lessons cost me?",
            "private lesson costs £42",
        ),
        Case(
            "language",
            "Could I do my lessons over Zoom from home?",
            "in person or online",
        ),
        Case(
            "language",
            "I did a bit of Spanish at school, how do I know which level to go in?",
            "free 20-minute placement test",
        ),
        Case(
            "language",
            "Um, I need to pass IELTS for my university, can you get me ready for it?",
            "exam preparation courses",
        ),
        Case(
            "language",
            "When does the new term start after Christmas?",
            "spring term starts on 12 January",
        ),
        Case(
            "language",
            "How much do I have to put down to hold a place?",
            "deposit of £50",
        ),
        Case(
            "language",
            "If I drop out a week before the start, do I get anything back?",
            "we keep the £50 deposit",
        ),
        Case(
            "language",
            "Is it possible to spread the cost over a few months?",
            "three monthly instalments",
        ),
        Case(
            "language",
            "I'm a student at the college, do I get money off?",
            "10 percent off group courses",
        ),
        Case(
            "language",
            "Can I park at the school?",
            "no parking at the school",
        ),
        Case(
            "language",
            "I use a wheelchair, can I get up to the classrooms?",
            "a lift and an accessible toilet",
        ),
        Case("language", "Do you arrange accommodation or host families?", None),
        Case("language", "Are all your teachers native speakers?", None),
        Case("language", "Could I come along to a free trial lesson first?", None),
        Case("language", "Do you run classes for companies, like at our office?", None),
        Case("language", "Is there a cafe or somewhere to get a coffee before class?", None),
    ),
)


DEV: tuple[Business, ...] = (GUEST_HOUSE, PLUMBER, DOG_GROOMER, LANGUAGE_SCHOOL)


def counts() -> dict[str, dict[str, tuple[int, int]]]:
    """(answerable, unanswerable) case counts per business, per set."""
    from .document_heldout import HELD_OUT

    return {
        label: {
            b.key: (
                sum(c.expect is not None for c in b.cases),
                sum(c.expect is None for c in b.cases),
            )
            for b in businesses
        }
        for label, businesses in (("DEV", DEV), ("HELD_OUT", HELD_OUT))
    }


def check() -> None:
    """Assert that each expected passage occurs exactly once in its business's documents."""
    from .document_dev2 import DEV2
    from .document_heldout import HELD_OUT

    keys = [b.key for b in (*DEV, *DEV2, *HELD_OUT)]
    assert len(keys) == len(set(keys)), keys
    for business in (*DEV, *DEV2, *HELD_OUT):
        text = "\n".join(d.body for d in business.documents)
        assert all(
            d.format in ("markdown", "html", "text", "docx-outline") for d in business.documents
        )
        for case in business.cases:
            assert case.document == business.key, case
            if case.expect is not None:
                n = text.count(case.expect)
                assert n == 1, f"{business.key}: {case.expect!r} occurs {n} times"
                assert 2 <= len(case.expect.split()) <= 6, case.expect


if __name__ == "__main__":
    check()
    print(counts())
