"""A second development set of business documents and caller questions, written on 2026-12-07.

Two more made-up businesses, an independent car garage (html + docx-outline) and a wedding and
events venue in a country house (markdown + text), written to find where document retrieval
fails on documents and wording it has not seen. The format is that of document_cases.py: each
answerable question comes with the exact words of the one sentence, table row or list item
that answers it, and the others with None.
"""

from __future__ import annotations

from .document_cases import Business, Case, Document, _lines

# --- An independent car garage: MOT, servicing and repairs (html + docx-outline) -------------

_FENWICK_PRICES = """\
<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="description" content="Independent MOT, servicing and repairs in Hartwell.
  Fixed-price MOTs, manufacturer-schedule servicing and honest advice.">
  <title>Servicing &amp; MOT Prices | Fenwick Road Garage, Hartwell</title>
  <link rel="stylesheet" href="/css/main.min.css?v=3.2">
  <script async src="https://www.googletagmanager.com/gtag/js?id=G-R4T8WQ2M1C"></script>
</head>
<body class="page-prices">
<div class="topbar">
  <span>Call us on 01632 771 520</span> <span class="sep">|</span>
  <a href="/book">Book your MOT online</a>
</div>
<header class="site-header">
  <a class="logo" href="/"><img src="/img/fenwick-logo.svg" alt="Fenwick Road Garage"></a>
  <nav class="main-nav" aria-label="Main menu">
    <ul>
      <li><a href="/">Home</a></li>
      <li><a href="/mot">MOT Testing</a></li>
      <li class="current"><a href="/servicing">Servicing &amp; Prices</a></li>
      <li><a href="/repairs">Repairs</a></li>
      <li><a href="/about">About Us</a></li>
      <li><a href="/reviews">Reviews</a></li>
      <li><a href="/contact">Contact</a></li>
    </ul>
  </nav>
</header>
<main>
  <section class="intro">
    <h1>MOT, servicing and repairs in Hartwell</h1>
    <p>Fenwick Road Garage is an independent, family-owned garage that has looked after
    cars in Hartwell since 1987.</p>
    <p>We are a DVSA-approved MOT test centre, and we service and repair all makes of car
    as well as light vans up to 3.5 tonnes.</p>
  </section>
  <section class="prices">
    <h2>Our prices</h2>
    <p>All prices include VAT. Service prices depend on the size of the engine, so please
    ask for an exact quote for your car.</p>
    <table class="price-table">
      <thead>
        <tr><th>Service</th><th>What's included</th><th>Price</th></tr>
      </thead>
      <tbody>
        <tr><td>MOT test</td><td>Cars, motorhomes and small vans (class 4)</td>
          <td>£45 fixed price</td></tr>
        <tr><td>Interim service</td><td>Oil and oil filter change, 30-point safety check</td>
          <td>from £129</td></tr>
        <tr><td>Full service</td><td>Oil, air, fuel and pollen filters, 60-point check</td>
          <td>from £229</td></tr>
        <tr><td>MOT and full service</td><td>Both done on the same visit</td>
          <td>from £259</td></tr>
        <tr><td>Brake inspection</td><td>Wheels off, pads, discs and brake lines checked</td>
          <td>£25, refunded if we do the work</td></tr>
        <tr><td>Diagnostic check</td><td>Fault code reading and road test, up to one hour</td>
          <td>£60</td></tr>
        <tr><td>Air conditioning</td><td>Re-gas and leak test</td><td>£69</td></tr>
        <tr><td>Timing belt</td><td>Belt, tensioner and water pump where fitted</td>
          <td>price on request</td></tr>
      </tbody>
    </table>
    <p>Other repairs are charged at our labour rate of £72 an hour, plus parts.</p>
    <p>We service petrol, diesel and hybrid cars. We are not set up to work on the
    high-voltage systems of fully electric vehicles.</p>
  </section>
  <section class="why-us">
    <h2>Why choose us?</h2>
    <ul>
      <li>Servicing to the manufacturer's schedule, so your new car warranty stays valid</li>
      <li>A written estimate before any work starts, with no hidden extras</li>
      <li>Free courtesy car for services and repairs, subject to availability</li>
      <li>Free collection and delivery for customers within 5 miles of the garage</li>
      <li>Comfortable waiting room with free Wi-Fi, tea and coffee</li>
      <li>Parts and labour guaranteed for 12 months or 12,000 miles</li>
      <li>Rated 4.9 out of 5 from over 600 reviews</li>
    </ul>
  </section>
  <section class="opening-hours">
    <h2>Opening hours</h2>
    <p>Monday to Friday: 8 am to 6 pm<br>
    Saturday: 8:30 am to 12:30 pm (MOTs only)<br>
    Sunday and bank holidays: closed</p>
    <p>The last MOT of the day is booked in at 4:30 pm.</p>
    <p>Early drop-off: you can leave your car and keys in the secure key box from 7 am.</p>
  </section>
</main>
<footer class="site-footer">
  <div class="footer-contact">
    <p>Fenwick Road Garage, 14 Fenwick Road, Hartwell HW4 2PL</p>
    <p>Tel: 01632 771 520 | Email: bookings@fenwickroadgarage.example</p>
  </div>
  <p class="legal">&copy; 2025 Fenwick Road Garage Ltd. Registered in England No. 04417729.
  VAT No. GB 812 4471 09.</p>
  <p><a href="/privacy">Privacy</a> | <a href="/terms">Terms</a> |
  <a href="#" id="cookie-settings">Cookie settings</a></p>
</footer>
<script>
  window.dataLayer = window.dataLayer || [];
  function gtag(){dataLayer.push(arguments);}
  gtag('js', new Date());
  gtag('config', 'G-R4T8WQ2M1C');
  document.getElementById('cookie-settings').addEventListener('click', function (e) {
    e.preventDefault();
    showCookieBanner({necessary: true, analytics: false});
  });
</script>
</body>
</html>
"""

_FENWICK_TERMS = _lines(
    "# Terms and Conditions of Business",
    'These terms apply to all work carried out by Fenwick Road Garage Ltd ("the garage") '
    "and form part of every booking. Please read them before leaving your vehicle with us.",
    "## 1. Estimates and quotations",
    "1.1 Prices given over the phone are a guide only, because the final cost depends on what "
    "we find once the vehicle is in the workshop.",
    "1.2 A written quotation is valid for 28 days from the date it is issued.",
    "## 2. Authorising additional work",
    "2.1 If we find further faults while working on your vehicle, we will contact you for "
    "your authorisation before doing any work that is not on the job card.",
    "2.2 If we cannot reach you, we will finish only the work you have agreed to and hold the "
    "vehicle until we hear from you.",
    "## 3. Parts",
    "- We fit new parts of original equipment quality unless you ask otherwise.",
    "- You may supply your own parts, but we cannot give any warranty on parts supplied by "
    "the customer, and labour to refit them is charged in full.",
    "- Old parts that we replace are kept for you to inspect if you ask for this when you book.",
    "## 4. MOT tests",
    "4.1 If your vehicle fails its MOT and is left with us for repair, or comes back to us "
    "within 10 working days, the partial retest is free.",
    "4.2 If your vehicle fails with a dangerous defect, we strongly advise that it is not "
    "driven away, and we can arrange recovery to your home at cost.",
    "4.3 You can be booked in for your MOT up to one month (minus a day) before your current "
    "certificate runs out and keep the same renewal date.",
    "## 5. Collecting your vehicle",
    "5.1 We will phone or text you when your vehicle is ready.",
    "5.2 Vehicles not collected within 3 working days of our message are charged storage at "
    "£15 per day.",
    "5.3 Keys left in the key box outside opening hours are left at the owner's risk.",
    "## 6. Payment",
    "- Payment is due in full when you collect the vehicle, before the keys are released.",
    "- We accept debit and credit cards, Apple Pay and cash.",
    "- We do not accept cheques or American Express.",
    "- Business customers with an approved account may pay within 30 days of invoice.",
    "## 7. Our guarantee",
    "7.1 The guarantee does not cover parts that wear in normal use, such as brake pads, "
    "wiper blades and tyres, unless they were faulty when fitted.",
    "7.2 If something goes wrong with work we have done, please bring the vehicle back to us "
    "first, because we cannot pay for repairs carried out by another garage.",
    "## 8. Courtesy cars",
    "- Drivers of our courtesy cars must be aged 25 or over and have held a full UK licence "
    "for at least three years.",
    "- You pay for the fuel you use and for any parking or speeding fines during the loan.",
    "- An insurance excess of £250 applies to any damage while the car is with you.",
    "## 9. Cancellations",
    "Please give us at least 24 hours' notice if you need to cancel or move a booking.",
    "MOT appointments missed without notice may be charged a £20 fee.",
)

GARAGE = Business(
    "cargarage",
    "You are the phone assistant of Fenwick Road Garage, an independent family-owned garage "
    "in Hartwell doing MOTs, servicing and repairs. Keep answers short and helpful.",
    (
        Document("fenwick-road-garage-prices.html", "html", _FENWICK_PRICES),
        Document("fenwick-terms-and-conditions.docx", "docx-outline", _FENWICK_TERMS),
    ),
    (
        Case(
            "cargarage", "Hiya, what are you charging for an MOT at the moment?", "£45 fixed price"
        ),
        Case(
            "cargarage",
            "Roughly what would a full service cost me on a 1.6 Focus?",
            "from £229",
        ),
        Case(
            "cargarage",
            "My car's making a grinding noise when I brake, could you have a look at it and "
            "what would that cost?",
            "refunded if we do the work",
        ),
        Case(
            "cargarage",
            "The little engine light's come on on my dashboard, can you find out what it is?",
            "Fault code reading and road test",
        ),
        Case(
            "cargarage",
            "I've got a Nissan Leaf, is that something you'd be able to service?",
            "fully electric vehicles",
        ),
        Case(
            "cargarage",
            "It's only two years old and still under the dealer warranty, will it mess that "
            "up if I bring it to you?",
            "new car warranty stays valid",
        ),
        Case(
            "cargarage",
            "I need my car for work, is there any chance of something to drive while it's "
            "with you?",
            "Free courtesy car",
        ),
        Case(
            "cargarage",
            "Can I just sit and wait while you do it?",
            "waiting room with free Wi-Fi",
        ),
        Case("cargarage", "Do you do MOTs on a Saturday?", "8:30 am to 12:30 pm"),
        Case(
            "cargarage",
            "I don't finish work till four, what's the latest I can get it booked in for its MOT?",
            "booked in at 4:30 pm",
        ),
        Case(
            "cargarage",
            "Um, if you find something else wrong with it, are you just gonna go ahead and fix it?",
            "contact you for your authorisation",
        ),
        Case(
            "cargarage",
            "I've bought some brake pads online, could I bring those in for you to fit?",
            "parts supplied by the customer",
        ),
        Case(
            "cargarage",
            "If it fails, do I have to pay again when you test it the second time?",
            "the partial retest is free",
        ),
        Case(
            "cargarage",
            "I'm away for a fortnight, can I leave the car with you until I'm back?",
            "charged storage at",
        ),
        Case(
            "cargarage",
            "My son's nineteen, would he be allowed to drive your loan car?",
            "aged 25 or over",
        ),
        Case(
            "cargarage",
            "Can I pay on my Amex card?",
            "cheques or American Express",
        ),
        Case("cargarage", "Do you do valeting, like a wash and hoover while it's in?", None),
        Case("cargarage", "Could you fit a tow bar so I can pull a caravan?", None),
        Case("cargarage", "My steering pulls to the left, do you do wheel alignment?", None),
        Case("cargarage", "Is there any discount for NHS workers?", None),
        Case("cargarage", "I've got a stone chip in the windscreen, can you repair that?", None),
    ),
)


# --- A wedding and events venue in a country house (markdown + text) ------------------------

_HOLLINS_FAQ = """\
# Weddings at Hollins Court: Your Questions Answered

Planning a wedding brings a lot of questions, and we have tried to answer the ones we hear
most often below. If yours isn't here, our events team would love to hear from you on
01632 905 330.

## How many guests can we invite?

The Orangery seats up to 120 guests for the wedding breakfast. In the evening, with the
dance floor in place, it can take up to 180 guests in total.

## Can we actually get married at Hollins Court?

Yes! Hollins Court is licensed for civil ceremonies and civil partnerships in the Orangery
and the Library. From May to September, ceremonies can also be held outdoors in the walled
garden pavilion.

You will need to book your registrars yourself, through the Wensleigh Register Office. We
are also happy to host humanist ceremonies and blessings.

## What packages do you offer?

| Package | What's included | Price |
|---|---|---|
| Intimate | Exclusive use of the Library for up to 40 guests, ceremony and dinner | £6,500 |
| Classic | Up to 80 day guests, three-course wedding breakfast, evening buffet | from £11,900 |
| Grand | Up to 120 day and 180 evening guests, drinks reception, evening buffet | from £16,500 |
| Evening Only | Evening reception for up to 150 guests with bar and hot buffet | from £5,200 |

Every package includes a dedicated wedding coordinator and the bridal suite for your
wedding night.

## Is there a minimum number of guests?

On Saturdays from April to October, we ask for at least 70 paying day guests. There is no
minimum on other days of the week.

## Can we bring in our own caterer?

All food is prepared by our own kitchen team, so we do not allow outside caterers. You are
welcome to bring your own wine and fizz, with corkage charged at £15 per bottle.

## Can our guests stay overnight?

The house has 14 bedrooms, sleeping up to 32 guests. Rooms are held for your wedding party
until eight weeks before the day, after which any unbooked rooms are released for general
sale.

## Are there any rules about music and the evening?

- Live bands and DJs are welcome in the Orangery.
- Amplified music must finish by 11:30 pm, and the bar closes at midnight.
- Fireworks and sky lanterns are not permitted, because of the horses in the neighbouring
  fields.
- Only biodegradable petal confetti may be thrown, and only outdoors.

## How do we secure our date?

- A non-refundable booking fee of £2,000 secures your date.
- Half of the remaining balance is due six months before the wedding.
- The final balance is due six weeks before the wedding, along with your final numbers.

## Can we come and look around?

Of course. Private show rounds are available Tuesday to Saturday by appointment, and we hold
a wedding open day on the first Sunday of every month.

## Is the venue accessible?

The Orangery, the Library and the gardens are all step-free, and there is an accessible
toilet on the ground floor. The house has no lift, but one of our bedrooms is on the ground
floor and has a wet room.

## Can our dog be part of the day?

Well-behaved dogs are welcome at the ceremony and drinks reception, as long as someone is
named to look after them. Dogs cannot stay overnight in the house.
"""

_HOLLINS_BROCHURE = _lines(
    "HOLLINS COURT",
    "Weddings, celebrations and events in the Wensleigh countryside",
    "",
    "Welcome",
    "",
    "Hollins Court is a Georgian country house built in 1782, set in 40 acres of parkland with "
    "views across the Ashby valley. "
    "For over two hundred years it was a family home, and since 2009 we have opened its doors "
    "for weddings, parties and business events. "
    "When you book Hollins Court for your wedding, you have the house and grounds to "
    "yourselves: we only ever host one wedding a day.",
    "",
    "The Rooms",
    "",
    "The Orangery is a light-filled room of glass and stone that opens onto the south lawn. "
    "The Library, with its open fire and oak panelling, is ideal for smaller ceremonies and "
    "winter dinners. "
    "The walled garden, with its pavilion and rose beds, is at its best from late May.",
    "",
    "Food and Drink",
    "",
    "Our head chef, Daniel Moreau, builds every menu around the seasons, using vegetables and "
    "herbs from our own kitchen garden. "
    "We cater for all dietary needs, including vegan, halal and gluten-free menus, at no extra "
    "charge. "
    "Children under 12 can choose from our children's menu, which is charged at half price. "
    "Every couple is invited to a menu tasting for two about four months before the wedding.",
    "",
    "Corporate and Private Events",
    "",
    "From Monday to Thursday, Hollins Court hosts conferences, team away days, product "
    "launches and private dining. "
    "Our day delegate rate is £55 per person, including room hire, projector and screen, "
    "morning coffee, a two-course lunch and afternoon tea. "
    "We also host birthday parties, anniversaries and christening lunches for 20 to 120 "
    "guests.",
    "",
    "Getting Here",
    "",
    "Address: Hollins Court, Ashby Wold, Wensleigh WN7 4HR",
    "Nearest station: Ashby Wold, 2.5 miles away",
    "Taxis: Valley Cars, 01632 960 772 (please book ahead for late evenings)",
    "Parking: free on site for up to 90 cars",
    "Overnight parking: cars can be left until 11 am the next day",
    "",
    "Contact the Events Team",
    "",
    "Phone: 01632 905 330",
    "Email: events@hollinscourt.example",
    "Office hours: Tuesday to Saturday, 10 am to 5 pm",
)

VENUE = Business(
    "venue",
    "You are the phone assistant of Hollins Court, a Georgian country house near Ashby Wold "
    "that hosts weddings and events. Be warm and keep answers brief.",
    (
        Document("hollins-court-wedding-faq.md", "markdown", _HOLLINS_FAQ),
        Document("hollins-court-brochure.txt", "text", _HOLLINS_BROCHURE),
    ),
    (
        Case(
            "venue",
            "Hi, we're looking at about a hundred and ten for the sit-down meal, would you "
            "have room for that many?",
            "seats up to 120 guests",
        ),
        Case(
            "venue",
            "Can you actually do the legal bit there, or do we have to go to a registry office "
            "first?",
            "licensed for civil ceremonies",
        ),
        Case(
            "venue",
            "We'd love to say our vows outside if the weather's nice, is that possible?",
            "held outdoors in the walled",
        ),
        Case(
            "venue",
            "It's only going to be close family, maybe thirty of us, have you got something "
            "for a small wedding?",
            "Library for up to 40 guests",
        ),
        Case(
            "venue",
            "We're getting married at the town hall in the afternoon, could we just have the "
            "party at yours in the evening?",
            "Evening reception for up to 150",
        ),
        Case(
            "venue",
            "Do we need a certain number of people to book a Saturday in July?",
            "at least 70 paying day guests",
        ),
        Case(
            "venue",
            "My auntie's a caterer and she's offered to do the food, would that be alright?",
            "do not allow outside caterers",
        ),
        Case(
            "venue",
            "We brought a load of champagne back from France, can we use that on the day?",
            "corkage charged at £15",
        ),
        Case(
            "venue",
            "Is there anywhere for people to sleep there after the party?",
            "The house has 14 bedrooms",
        ),
        Case(
            "venue",
            "What time does the band have to stop playing?",
            "must finish by 11:30 pm",
        ),
        Case(
            "venue",
            "We wanted to finish the night with fireworks, is that okay?",
            "sky lanterns are not permitted",
        ),
        Case(
            "venue",
            "What do we have to pay to hold the date?",
            "booking fee of £2,000",
        ),
        Case(
            "venue",
            "My grandad's in a wheelchair, will he be able to get around alright?",
            "gardens are all step-free",
        ),
        Case(
            "venue",
            "Do the kids have to pay full price for their meals?",
            "charged at half price",
        ),
        Case(
            "venue",
            "Um, how much is it per person if we wanted to do a work away day there?",
            "day delegate rate is £55",
        ),
        Case(
            "venue",
            "Is there a station nearby? A lot of our guests will come by train.",
            "Ashby Wold, 2.5 miles away",
        ),
        Case("venue", "Do you have a list of photographers you recommend?", None),
        Case("venue", "Do you make the wedding cake or do we need to get our own?", None),
        Case("venue", "Is it cheaper if we get married midweek in January?", None),
        Case("venue", "Could we put a marquee up on the lawn for extra guests?", None),
        Case("venue", "Is there decent phone signal and Wi-Fi for the guests?", None),
    ),
)


DEV2: tuple[Business, ...] = (GARAGE, VENUE)
