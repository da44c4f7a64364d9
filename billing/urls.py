from django.urls import path

from billing import views

app_name = "billing"
urlpatterns = [
    path("", views.billing_home, name="home"),
    path("usage.csv", views.usage_csv, name="usage_csv"),
    path("invoices/<int:pk>/", views.invoice_view, name="invoice"),
    path("invoices/<int:pk>/pdf/", views.invoice_pdf_view, name="invoice_pdf"),
]
