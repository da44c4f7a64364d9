"""A second held-out set of document businesses: a dental practice and a bike shop.

Written on 2026-12-07 from a brief, before any retrieval change, in the format of
`bench/document_cases.py`. This set must stay held out: nothing is tuned on
it, and its questions and documents are not to be read while tuning retrieval.
"""

from __future__ import annotations

from .document_cases import Business, Case, Document, _lines

# --- HELD_OUT 3: a dental practice (html + docx-outline) ------------------------------------

_WILLOWBANK_FEES = """\
<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="description" content="Private dental treatment and fees at Willowbank Dental
  Practice, Hartsford.">
  <title>Treatments &amp; Fees | Willowbank Dental Practice, Hartsford</title>
  <link rel="stylesheet" href="/static/css/willowbank.min.css?v=3.2">
  <link rel="icon" href="/static/img/tooth-icon.png">
</head>
<body class="page-fees">
<div id="cookie-notice" role="dialog">
  <p>This website uses cookies to remember your preferences.
  <button id="cookie-accept">Accept all</button> <a href="/cookies">Cookie settings</a></p>
</div>
<header class="site-header">
  <a class="logo" href="/"><img src="/static/img/willowbank-logo.svg"
    alt="Willowbank Dental Practice logo"></a>
  <nav class="main-nav" aria-label="Main menu">
    <ul>
      <li><a href="/">Home</a></li>
      <li><a href="/team">Meet the team</a></li>
      <li><a href="/treatments" aria-current="page">Treatments &amp; Fees</a></li>
      <li><a href="/new-patients">New patients</a></li>
      <li><a href="/emergencies">Dental emergencies</a></li>
      <li><a href="/contact">Contact</a></li>
      <li><a class="btn-book" href="https://bookings.example/willowbank">Book online</a></li>
    </ul>
  </nav>
</header>
<main>
  <h1>Treatments and fees</h1>
  <p>Willowbank is an independent, family-run practice and all of the treatment we provide
  is private. We are not able to accept new NHS patients, but everyone is welcome to join
  us as a private patient.</p>
  <h2>Our fees</h2>
  <table class="fee-table">
    <thead>
      <tr><th>Treatment</th><th>Fee</th></tr>
    </thead>
    <tbody>
      <tr><td>New patient consultation, including any X-rays needed</td><td>£65</td></tr>
      <tr><td>Routine check-up</td><td>£45</td></tr>
      <tr><td>Hygienist appointment (30 minutes)</td><td>£62</td></tr>
      <tr><td>Composite (tooth-coloured) filling</td><td>from £95</td></tr>
      <tr><td>Root canal treatment</td><td>from £380</td></tr>
      <tr><td>Porcelain crown</td><td>from £540</td></tr>
      <tr><td>Simple extraction</td><td>from £120</td></tr>
      <tr><td>Full or partial denture</td><td>from £450</td></tr>
      <tr><td>Take-home whitening kit with made-to-measure trays</td><td>£295</td></tr>
      <tr><td>Emergency appointment for pain relief</td><td>£80</td></tr>
    </tbody>
  </table>
  <p>You will always be given a written treatment plan with the full cost before any work
  starts.</p>
  <h2>Willowbank Care Plan</h2>
  <p>Our practice membership plan makes routine care easy to budget for. The Care Plan
  costs £16.50 a month and covers two check-ups and two hygienist visits every year.
  Members also get 10 percent off all other treatment on this page.</p>
  <p><a class="btn" href="/care-plan">Find out more about the Care Plan</a></p>
</main>
<footer class="site-footer">
  <div class="footer-cols">
    <div>
      <h3>Willowbank Dental Practice</h3>
      <p>14 Station Road<br>Hartsford<br>HF2 4LN</p>
    </div>
    <div>
      <h3>Get in touch</h3>
      <p>Tel: 01632 960 772<br>Email: hello@willowbankdental.example</p>
    </div>
    <div>
      <h3>Follow us</h3>
      <p><a href="https://facebook.example/willowbankdental">Facebook</a> |
      <a href="https://instagram.example/willowbankdental">Instagram</a></p>
    </div>
  </div>
  <p class="legal">&copy; 2026 Willowbank Dental Practice Ltd. Registered in England
  no. 08812345. <a href="/privacy">Privacy notice</a> |
  <a href="/complaints">Complaints procedure</a> | Website by Bluefinch Digital</p>
</footer>
<script src="/static/js/vendor/jquery-3.7.1.min.js"></script>
<script>
  $(function () {
    if (document.cookie.indexOf('wb_cookies=1') !== -1) { $('#cookie-notice').hide(); }
    $('#cookie-accept').on('click', function () {
      document.cookie = 'wb_cookies=1; max-age=31536000; path=/';
      $('#cookie-notice').hide();
    });
  });
</script>
</body>
</html>
"""

_WILLOWBANK_NEW_PATIENTS = _lines(
    "# Willowbank Dental Practice: Information for New Patients",
    "Welcome to Willowbank. This leaflet explains what to expect when you join us and how the "
    "practice works.",
    "## Our team",
    "Our dentists are Dr Priya Nair and Dr Owen Hale, and our hygienist is Beth Carrow.",
    "## Opening hours",
    "- Monday, Wednesday and Thursday: 8:30 am to 5:30 pm.",
    "- Tuesday: 8:30 am to 7 pm, for patients who cannot get away from work during the day.",
    "- Friday: 8 am to 1 pm.",
    "- We are closed at weekends and on bank holidays.",
    "## Your first visit",
    "Please arrive 10 minutes early so that you have time to fill in a medical history form.",
    "Bring a list of any medicines you take, and your glasses if you need them for reading.",
    "At your first visit the dentist will examine your teeth and gums, take any X-rays that "
    "are needed and talk you through your treatment plan.",
    "## Booking appointments",
    "You can book by phone, or at any time of day with the online booking link on our website.",
    "You do not need to see a dentist first to book a hygienist appointment.",
    "We send a text reminder two days before every appointment.",
    "## Cancelling or missing an appointment",
    "If you need to cancel or move an appointment, please give us two working days' notice.",
    "Appointments missed without this notice are charged a £25 fee, which must be paid before "
    "we can book you in again.",
    "## Paying for treatment",
    "Fees are paid at the end of each appointment by debit or credit card, contactless or cash.",
    "Courses of treatment over £600 can be spread over 6 or 12 months with interest-free "
    "finance, subject to a credit check.",
    "## Children",
    "Children are very welcome, and under-16s are seen free of charge for check-ups when a "
    "parent is a registered patient.",
    "## Nervous patients",
    "Many of our patients feel anxious about the dentist, and we are happy to book longer "
    "appointments with time for breaks and a chat first.",
    "## Dental emergencies",
    "If you are in pain, ring us as soon as we open and we will do our best to see you the "
    "same day.",
    "When the practice is closed, please call NHS 111 for urgent advice.",
    "## Getting here",
    "We are at 14 Station Road, opposite the library and a five-minute walk from Hartsford "
    "station.",
    "There are four free parking spaces behind the practice, one of them a disabled bay.",
    "The practice is all on the ground floor, with step-free access and an accessible toilet.",
)

DENTAL = Business(
    "dentist",
    "You are the phone assistant of Willowbank Dental Practice, a small private dental "
    "practice on Station Road in Hartsford. Be reassuring and keep your answers short.",
    (
        Document("willowbank-treatments-and-fees.html", "html", _WILLOWBANK_FEES),
        Document("willowbank-new-patient-leaflet.docx", "docx-outline", _WILLOWBANK_NEW_PATIENTS),
    ),
    (
        Case(
            "dentist",
            "Hiya, um, can I sign up with you on the NHS?",
            "accept new NHS patients",
        ),
        Case(
            "dentist",
            "I've just moved to the area, what would it cost me for my first appointment?",
            "New patient consultation, including",
        ),
        Case(
            "dentist",
            "I need a filling and I'd rather have a white one, not the metal sort. How much?",
            "from £95",
        ),
        Case(
            "dentist",
            "My mum's after some false teeth, roughly what are they gonna cost?",
            "Full or partial denture",
        ),
        Case(
            "dentist",
            "I'm getting married in June and I want my teeth a bit brighter, what can you do?",
            "Take-home whitening kit",
        ),
        Case(
            "dentist",
            "I've snapped a tooth and it's killing me, what do you charge to see me urgently?",
            "Emergency appointment for pain relief",
        ),
        Case(
            "dentist",
            "Do you do one of those schemes where you pay so much a month for your check-ups?",
            "costs £16.50 a month",
        ),
        Case(
            "dentist",
            "I work nine to five, are you open at all after work?",
            "8:30 am to 7 pm",
        ),
        Case("dentist", "Can I come in on a Saturday morning?", "closed at weekends"),
        Case(
            "dentist",
            "Can I just book in for a clean, or do I have to have a check-up first?",
            "need to see a dentist first",
        ),
        Case(
            "dentist",
            "If something comes up and I can't make it, how much warning do you need?",
            "two working days' notice",
        ),
        Case(
            "dentist",
            "The root canal and the crown come to about a grand, can I pay it off bit by bit?",
            "interest-free finance",
        ),
        Case(
            "dentist",
            "What do you charge for kids? Mine are six and nine.",
            "under-16s are seen free",
        ),
        Case(
            "dentist",
            "Honestly I haven't been in ten years cos I'm petrified, is that gonna be a problem?",
            "book longer appointments",
        ),
        Case("dentist", "Where do I leave the car when I come?", "four free parking spaces"),
        Case(
            "dentist",
            "I woke up with awful toothache, is there any chance I can be seen today?",
            "see you the same day",
        ),
        Case("dentist", "Do you do implants?", None),
        Case("dentist", "Can you straighten teeth, like with those clear braces?", None),
        Case(
            "dentist",
            "My dad's housebound, would the dentist be able to come out to him at home?",
            None,
        ),
        Case("dentist", "Could you make my son a mouthguard for rugby?", None),
        Case("dentist", "Do you sell electric toothbrushes at the practice?", None),
    ),
)


# --- HELD_OUT 4: a bike repair and hire shop (markdown + text) -----------------------------

_CHAINLINE_FAQ = """\
# Chainline Cycles FAQ

Chainline Cycles is a small repair workshop and hire centre on the canal at Wenbury Wharf.
Can't find your answer? Ring the workshop on 01632 713 550 or email
ride@chainlinecycles.example.

## When are you open?

We're open **Tuesday to Saturday, 9 am to 5:30 pm**. From Easter to the end of September we
also open on Sundays from 10 am to 4 pm for hire customers.
We're closed every Monday, including bank holiday Mondays.

## Do I need to book my bike in?

For a service, yes. Book online or give us a ring and we'll give you a drop-off date; in
spring the wait for a service slot can be up to two weeks.
For punctures and small fixes you don't need to book, just turn up.

## Should I book a hire bike in advance?

We strongly recommend booking hire bikes ahead for weekends and school holidays, when they
often all go out. You can book online up to three months ahead.

## Do you work on e-bikes?

Yes, we service most electric bikes, including those with Bosch, Shimano and Yamaha motors.
We can't open up or repair motors and batteries ourselves, but we'll send them back to the
manufacturer for you if they're under warranty.

## Can you collect my bike from home?

Yes, we collect and return bikes within 5 miles of the shop for £15 each way.

## Do you sell bikes?

We don't sell new bikes. We do have a small range of second-hand bikes that we've fully
overhauled, and each one comes with a three-month guarantee.
The shop also stocks inner tubes, tyres, lights, locks, pumps and other spares.

## How can I pay?

- Cards and contactless, including Apple Pay and Google Pay
- Cash
- Sorry, no cheques

## What if something goes wrong after a repair?

All our work is guaranteed for 90 days. If anything we fixed or adjusted isn't right, bring
the bike back and we'll sort it at no charge.

## Where can we park?

There's a pay and display car park right next to the shop at Wenbury Wharf, and you can pull
up outside the door for a few minutes to unload a bike.
Wenbury station is ten minutes' walk away along the canal towpath.

## Where can we ride?

The canal towpath is flat and traffic-free and runs for 14 miles to Oldford, which makes it
ideal for families.
We give every hire customer a free printed route map with picnic spots marked on it.
"""

_CHAINLINE_PRICES = _lines(
    "Chainline Cycles: Workshop Prices and Hire Terms",
    "",
    "Prices from 1 March 2026. All prices include VAT.",
    "",
    "Servicing",
    "",
    "Basic Service: £50. Gears and brakes adjusted, wheels trued, chain cleaned and lubricated.",
    "Full Service: £110. Everything in the Basic Service, plus stripping, cleaning and "
    "regreasing the bearings and fitting new gear and brake cables.",
    "Electric bikes are serviced at the same prices plus £20, which covers a diagnostic check "
    "of the motor and battery.",
    "Children's bikes with wheels of 20 inches or smaller: £30 for any service.",
    "Service prices cover labour only, and any parts we fit are charged at shop prices.",
    "",
    "Repairs",
    "",
    "Puncture repair: £12 per wheel, including a new inner tube.",
    "Fitting brake pads: £10 per pair, plus the pads.",
    "Fitting a new chain: £15, plus the chain.",
    "Wheel truing: from £18.",
    "Bleeding hydraulic brakes: £25 per brake.",
    "Any other work is charged at £48 an hour.",
    "If a job turns out to need more than we quoted, we always phone you first and never go "
    "over the quote without your say-so.",
    "",
    "Turnaround",
    "",
    "Most services are ready within three working days.",
    "Punctures and other small jobs can usually be done while you wait if you bring the bike "
    "in before 3 pm.",
    "We will text you when your bike is ready. "
    "Bikes left with us for more than 30 days after that text are charged storage at £3 a day.",
    "",
    "Bike hire",
    "",
    "Hybrid bike: £20 for a half day, £30 for a full day.",
    "Electric bike: £40 for a half day, £55 for a full day.",
    "Child's bike, tag-along or child trailer: £12 a day.",
    "A half day means up to four hours, and a full day means until 30 minutes before we close.",
    "Every hire comes with a helmet, a lock, lights and a puncture repair kit.",
    "",
    "Hire terms",
    "",
    "The person signing the hire form must be 18 or over and show photo ID such as a driving "
    "licence or passport.",
    "We take a refundable deposit of £100 per bike on a credit or debit card, and release it "
    "when the bike comes back undamaged.",
    "Bikes brought back late are charged £8 for each hour or part of an hour.",
    "Damage beyond normal wear is charged at the cost of parts and labour, and a bike that is "
    "lost or stolen is charged at its full replacement value.",
    "If you cancel a hire booking more than 48 hours ahead, we refund you in full; with less "
    "notice we give a credit note valid for 12 months.",
)

BIKE_SHOP = Business(
    "bikeshop",
    "You are the phone assistant of Chainline Cycles, a bicycle repair workshop and bike hire "
    "centre at Wenbury Wharf. Be cheerful and keep your answers short.",
    (
        Document("chainline-faq.md", "markdown", _CHAINLINE_FAQ),
        Document("chainline-prices-and-hire-terms.txt", "text", _CHAINLINE_PRICES),
    ),
    (
        Case(
            "bikeshop",
            "Hiya, how much to get the gears and brakes sorted, like a general tune-up?",
            "Basic Service: £50",
        ),
        Case(
            "bikeshop",
            "Mine's an electric bike, is a service the same price or more?",
            "same prices plus £20",
        ),
        Case(
            "bikeshop",
            "I've got a flat on my back wheel, how much to fix it?",
            "£12 per wheel",
        ),
        Case(
            "bikeshop",
            "My brakes are making a horrible squealing noise, what's it cost to put new pads in?",
            "£10 per pair",
        ),
        Case(
            "bikeshop",
            "How much to rent one of the electric ones for the whole day?",
            "£55 for a full day",
        ),
        Case(
            "bikeshop",
            "We're coming with our six-year-old, um, have you got something he could ride?",
            "tag-along or child trailer",
        ),
        Case(
            "bikeshop",
            "My son's sixteen, can he hire a bike on his own?",
            "must be 18 or over",
        ),
        Case(
            "bikeshop",
            "Do you hold any money on my card while we've got the bikes out?",
            "refundable deposit of £100",
        ),
        Case(
            "bikeshop",
            "If the weather's awful and we cancel the morning before, do we get our money back?",
            "credit note valid for 12 months",
        ),
        Case(
            "bikeshop",
            "Are you open this Monday? It's a bank holiday.",
            "closed every Monday",
        ),
        Case(
            "bikeshop",
            "The battery on my e-bike won't hold its charge any more, can you fix it?",
            "repair motors and batteries",
        ),
        Case(
            "bikeshop",
            "I haven't got a car, is there any way you could come and get the bike?",
            "collect and return bikes",
        ),
        Case(
            "bikeshop",
            "I'm after a cheapish used bike to get to work on, have you got any?",
            "range of second-hand bikes",
        ),
        Case(
            "bikeshop",
            "Can I just pay with my phone?",
            "including Apple Pay and Google Pay",
        ),
        Case(
            "bikeshop",
            "You did my gears last month and they're jumping again, what can I do?",
            "guaranteed for 90 days",
        ),
        Case(
            "bikeshop",
            "Is there anywhere nice and flat to go with the kids, away from the roads?",
            "flat and traffic-free",
        ),
        Case("bikeshop", "Do you do the cycle to work scheme?", None),
        Case("bikeshop", "Could you measure me up properly, like do a bike fit?", None),
        Case(
            "bikeshop",
            "There's ten of us wanting bikes for a stag do, do you do a group discount?",
            None,
        ),
        Case("bikeshop", "Do you run any classes where I could learn to fix my own bike?", None),
        Case("bikeshop", "Do you hire out those racks that go on the back of a car?", None),
    ),
)


HELD_OUT: tuple[Business, ...] = (DENTAL, BIKE_SHOP)
