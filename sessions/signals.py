"""A call recording's file leaves storage with its row: deleted on its own, with
its call (a dashboard delete, retention) or with the organization."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from sessions.models import CallRecording
from sessions.recordings import call_recording_delete_file


@receiver(post_delete, sender=CallRecording)
def _delete_recording_file(sender: type[CallRecording], instance: CallRecording, **_: Any) -> None:
    # After the commit: a rolled-back delete keeps its file.
    name = instance.file.name
    transaction.on_commit(lambda: call_recording_delete_file(name=name))
