"""The base of the API's tenant-owned resources."""

from __future__ import annotations

from typing import Any

from rest_framework import mixins, viewsets


class OrgModelViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """CRUD over one organization's objects: subclasses give `get_queryset` (a selector
    taking the org) and `perform_destroy` (a service); serializers get the org as
    `context["org"]`."""

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if getattr(self.request, "user", None) is not None and hasattr(self.request.user, "org"):
            context["org"] = self.request.user.org
        return context
