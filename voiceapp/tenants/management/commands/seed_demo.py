from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from voiceapp.tenants.models import Organization, User
from voiceapp.tenants.services import organization_create


class Command(BaseCommand):
    help = "Create the demo user, organization and persona unless they exist."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default="demo@example.com")
        parser.add_argument("--password", default="demo-voice-agents")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(email=options["email"]).first()
        if user is None:
            user = User.objects.create_user(email=options["email"], password=options["password"])
        if not Organization.objects.filter(memberships__user=user).exists():
            organization_create(name="Demo Company", owner=user)
        self.stdout.write(f"Demo login: {options['email']} / {options['password']}")
