from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.webhook_receiver import Receiver, webhook_receiver


@pytest.fixture
def allow_private(settings) -> None:
    """Webhooks may go to loopback, where the test receiver listens."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True


@pytest.fixture
def receiver(allow_private: None) -> Iterator[Receiver]:
    with webhook_receiver() as running:
        yield running
