"""What the tenants' management commands share."""

from django.core.management.base import CommandError

from voiceapp.tenants.models import Organization


def organization_by_slug(slug: str) -> Organization:
    """The organization with `slug`, or a CommandError that names it."""
    org = Organization.objects.filter(slug=slug).first()
    if org is None:
        raise CommandError(f"No organization with slug “{slug}”.")
    return org
