from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject

from voiceapp.tenants.models import Membership
from voiceapp.tenants.selectors import membership_list_for_user

SESSION_ORG_KEY = "current_org_id"


def _current_membership(request: HttpRequest) -> Membership | None:
    user = request.user
    if not user.is_authenticated:
        return None
    memberships = list(membership_list_for_user(user=user))
    wanted = request.session.get(SESSION_ORG_KEY)
    for membership in memberships:
        if membership.org_id == wanted:
            return membership
    return memberships[0] if memberships else None


class CurrentOrganizationMiddleware:
    """Sets ``request.membership`` (lazily) to the user's membership in the org
    they act for: the one chosen in the session, else their first."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.membership = SimpleLazyObject(lambda: _current_membership(request))
        return self.get_response(request)


def current_membership(request: HttpRequest) -> Membership | None:
    membership = getattr(request, "membership", None)
    # A SimpleLazyObject wrapping None is truthy; unwrap it.
    if membership is None or not bool(getattr(membership, "pk", None)):
        return None
    return membership
