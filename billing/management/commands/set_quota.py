import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.services import subscription_set_remaining
from voiceapp.tenants.models import Organization


class Command(BaseCommand):
    help = "Set an organization's remaining included seconds for the current period."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, help="Organization slug")
        parser.add_argument("--seconds", required=True, type=int, help="Seconds left (0 or more)")
        parser.add_argument("--json", action="store_true", help="Print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        org = Organization.objects.filter(slug=options["org"]).first()
        if org is None:
            raise CommandError(f"No organization with slug “{options['org']}”.")
        if options["seconds"] < 0:
            raise CommandError("--seconds must be 0 or more.")
        sub = subscription_set_remaining(org_id=org.pk, seconds=options["seconds"])
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "org": org.slug,
                        "plan": sub.plan.slug,
                        "remaining_seconds": sub.remaining_seconds,
                        "period_start": sub.period_start.isoformat(),
                        "period_end": sub.period_end.isoformat(),
                    }
                )
            )
        else:
            self.stdout.write(
                f"{org.slug}: {sub.remaining_seconds} s left on {sub.plan.name} "
                f"until {sub.period_end:%Y-%m-%d %H:%M} UTC"
            )
