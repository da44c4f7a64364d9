"""The inbox: messages callers left with the agent (the take_message action)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from sessions import selectors, services
from voiceapp.dashboard.views import org_required
from voiceapp.tenants.models import Membership

MESSAGES_PER_PAGE = 50


@org_required()
def inbox(request: HttpRequest, membership: Membership) -> HttpResponse:
    unread_only = request.GET.get("show") == "unread"
    taken = selectors.caller_message_list(org=membership.org, unread_only=unread_only)
    page = Paginator(taken, MESSAGES_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "section": "messages",
        "page": page,
        "unread_only": unread_only,
        "unread_count": selectors.caller_message_unread_count(org=membership.org),
        # JSON lookups differ between SQLite and Postgres: the list is short, read it here.
        "takes_messages": any(
            "take_message" in (actions or [])
            for actions in membership.org.personas.values_list("actions", flat=True)
        ),
    }
    return render(request, "dashboard/messages.html", context)


@org_required()
@require_POST
def message_mark_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    taken = selectors.caller_message_get(org=membership.org, pk=pk)
    read = request.POST.get("read", "1") == "1"
    services.caller_message_mark_read(taken=taken, read=read)
    who = taken.name or "the caller"
    messages.success(request, f"Marked the message from {who} as {'read' if read else 'unread'}.")
    back = reverse("dashboard:messages")
    if request.POST.get("show") == "unread":
        back += "?show=unread"
    return redirect(back)
