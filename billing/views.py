"""The dashboard's billing pages: the usage meter, invoices, and the ledger as CSV."""

from __future__ import annotations

import csv
from datetime import UTC, datetime

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.dateparse import parse_date

from billing import selectors
from billing.invoices import invoice_html, invoice_pdf
from billing.models import Invoice
from billing.services import subscription_for
from voiceapp.dashboard.views import org_required
from voiceapp.tenants.models import Membership

CSV_COLUMNS = [
    "call_id",
    "persona_id",
    "started_at",
    "ended_at",
    "end_reason",
    "billed_seconds",
    "included_seconds",
    "overage_seconds",
    "asr_seconds",
    "llm_input_tokens",
    "llm_output_tokens",
    "tts_characters",
]


@org_required()
def billing_home(request: HttpRequest, membership: Membership) -> HttpResponse:
    meter = selectors.usage_meter(org=membership.org)
    return render(
        request,
        "billing/dashboard.html",
        {
            "section": "billing",
            "meter": meter,
            "invoices": selectors.invoice_list(org=membership.org)[:24],
        },
    )


@org_required()
def usage_csv(request: HttpRequest, membership: Membership) -> HttpResponse:
    """The ledger of one period (``?period=YYYY-MM``, default the current one)."""
    period = request.GET.get("period", "")
    if period:
        day = parse_date(f"{period}-01")
        if day is None:
            raise Http404("Use ?period=YYYY-MM.")
        start = datetime(day.year, day.month, 1, tzinfo=UTC)
    else:
        start = subscription_for(org_id=membership.org.pk).period_start
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="usage-{membership.org.slug}-{start:%Y-%m}.csv"'
    )
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for r in selectors.usage_record_list(org=membership.org, period_start=start):
        writer.writerow(
            [
                r.call_ref,
                r.persona_id or "",
                r.started_at.isoformat(),
                r.ended_at.isoformat(),
                r.end_reason,
                r.billed_seconds,
                r.included_seconds,
                r.overage_seconds,
                round(r.asr_seconds, 3),
                r.llm_input_tokens,
                r.llm_output_tokens,
                r.tts_characters,
            ]
        )
    return response


def _invoice(membership: Membership, pk: int) -> Invoice:
    try:
        return selectors.invoice_get(org=membership.org, pk=pk)
    except Invoice.DoesNotExist as exc:
        raise Http404("No such invoice.") from exc


@org_required()
def invoice_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    return HttpResponse(invoice_html(_invoice(membership, pk)))


@org_required()
def invoice_pdf_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    invoice = _invoice(membership, pk)
    response = HttpResponse(invoice_pdf(invoice), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{invoice.number}.pdf"'
    return response
