"""The OpenAI Realtime protocol for one call (see docs/ARCHITECTURE.md, "The sessions layer").

protocol   client events as typed models; one `ClientError` for anything malformed
settings   `SessionSettings`, `Policy` and `parse_session_update`
events     server event builders
translator engine frames -> server events
codecs     audio formats on the wire
recorder   the `Recorder` protocol and its per-call caps
limits     every bound, as named constants (docs/LIMITS.md)
session    `RealtimeSession`: dispatch and lifecycle
"""

from sessions.realtime.errors import ClientError
from sessions.realtime.events import new_id
from sessions.realtime.recorder import Recorder
from sessions.realtime.session import Limits, RealtimeSession, Transport

__all__ = ["ClientError", "Limits", "RealtimeSession", "Recorder", "Transport", "new_id"]
