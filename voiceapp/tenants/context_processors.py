from django.http import HttpRequest

from voiceapp.tenants.middleware import current_membership
from voiceapp.tenants.selectors import membership_list_for_user


def current_organization(request: HttpRequest) -> dict[str, object]:
    membership = current_membership(request)
    if membership is None:
        return {}
    return {
        "current_membership": membership,
        "current_org": membership.org,
        "all_memberships": membership_list_for_user(user=request.user),
    }
