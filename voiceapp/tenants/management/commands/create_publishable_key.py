import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from voiceapp.tenants.management.lookup import organization_by_slug
from voiceapp.tenants.services import publishable_key_create


class Command(BaseCommand):
    help = "Create a publishable key for the call widget, for the origins given."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, help="Organization slug")
        parser.add_argument("--name", default="Command line", help="What the key is for")
        parser.add_argument(
            "--origin",
            action="append",
            required=True,
            help="An origin the widget may be used from, e.g. https://shop.example (repeatable)",
        )
        parser.add_argument("--json", action="store_true", help="Print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org"])
        try:
            key = publishable_key_create(
                org=org, name=options["name"], allowed_origins=options["origin"]
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "id": key.pk,
                        "org": org.slug,
                        "name": key.name,
                        "key": key.key,
                        "allowed_origins": key.allowed_origins,
                    }
                )
            )
        else:
            self.stdout.write(key.key)
