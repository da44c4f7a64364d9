from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from voiceapp.engine.knowledge import Fact
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_facts_replace
from voiceapp.tenants.models import Organization, User
from voiceapp.tenants.onboarding import organization_onboard

# What the demo persona knows, so a new user sees persona knowledge filled in.
DEMO_FACTS = (
    Fact(
        question="When are you open?",
        answer="Demo Company is open Monday to Friday from 9 am to 6 pm, and Saturday "
        "from 10 am to 2 pm. We are closed on Sundays and public holidays.",
    ),
    Fact(
        question="Where are you located?",
        answer="We are at 42 Harbour Street, Springfield, on the second floor, "
        "next to the central library.",
    ),
    Fact(
        question="What is your phone number?",
        answer="You can reach us at 555 0142, during opening hours.",
    ),
    Fact(
        question="How much does the basic plan cost?",
        answer="The Basic plan costs 29 dollars a month and includes 500 call minutes.",
    ),
    Fact(
        question="How much does the pro plan cost?",
        answer="The Pro plan costs 99 dollars a month, with 3000 call minutes and "
        "priority support.",
    ),
    Fact(
        question="Do you offer a free trial?",
        answer="Yes, every plan comes with a 14 day free trial; no credit card is needed.",
    ),
)


class Command(BaseCommand):
    help = "Create the demo user, organization and persona (with example facts) unless they exist."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default="demo@example.com")
        parser.add_argument("--password", default="demo-voice-agents")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(email=options["email"]).first()
        if user is None:
            user = User.objects.create_user(email=options["email"], password=options["password"])
        if not Organization.objects.filter(memberships__user=user).exists():
            with transaction.atomic():
                org = organization_onboard(name="Demo Company", owner=user)
                # Only on creation: facts the user deleted do not come back on the next run.
                persona = Persona.objects.get(org=org, slug="assistant")
                persona_facts_replace(persona=persona, facts=DEMO_FACTS)
        self.stdout.write(f"Demo login: {options['email']} / {options['password']}")
