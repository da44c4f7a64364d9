"""The dashboard's unread-message count, for the side navigation."""

from django.http import HttpRequest

from sessions.selectors import caller_message_unread_count
from voiceapp.tenants.middleware import current_membership


def unread_messages(request: HttpRequest) -> dict[str, object]:
    membership = current_membership(request)
    if membership is None:
        return {}
    return {"unread_messages": caller_message_unread_count(org=membership.org)}
