import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from voiceapp.personas.selectors import persona_list
from voiceapp.tenants.onboarding import organization_onboard


class Command(BaseCommand):
    help = "Create an organization with its owner (created if new) and its default persona."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="Organization name")
        parser.add_argument("--owner-email", required=True)
        parser.add_argument(
            "--owner-password",
            help="Password for a new owner; without it the owner sets one by password reset.",
        )
        parser.add_argument("--json", action="store_true", help="Print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            org = organization_onboard(
                name=options["name"],
                owner_email=options["owner_email"],
                owner_password=options["owner_password"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        personas = [p.slug for p in persona_list(org=org)]
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "id": org.pk,
                        "name": org.name,
                        "slug": org.slug,
                        "owner_email": options["owner_email"].lower(),
                        "personas": personas,
                    }
                )
            )
        else:
            self.stdout.write(
                self.style.SUCCESS(f"Created organization {org.name} (slug {org.slug}) ")
                + f"owned by {options['owner_email']}, personas: {', '.join(personas)}"
            )
