"""Every bound a realtime call enforces, in one place (docs/LIMITS.md lists them).

Past each one the client gets an `error` event with the code named beside it
and the call goes on, unless the line says otherwise.
"""

from __future__ import annotations

from voiceapp import safejson

# One client message (a WebSocket text frame or a data-channel message): the
# byte bound is settings.REALTIME_MAX_MESSAGE_BYTES (1 MiB), "message_too_large".
MAX_JSON_DEPTH = safejson.MAX_DEPTH  # nesting of lists and objects, "invalid_json"
MAX_ID_CHARS = 64  # event_id, item.id, item_id, response_id: "invalid_value"

# Audio in.
MAX_APPEND_SECONDS = 15  # one input_audio_buffer.append: "invalid_audio"
MAX_MANUAL_BUFFER_SECONDS = (
    60  # appended, not yet committed (turn_detection null): "input_audio_buffer_full"
)

# Conversation items and text.
MAX_ITEM_TEXT_CHARS = 8_000  # one conversation.item.create, all parts: "invalid_value"
MAX_ITEM_CONTENT_PARTS = 16  # content parts of one item: "invalid_value"
MAX_CLIENT_ITEMS = 200  # conversation.item.create per call: "conversation_item_limit"
MAX_INSTRUCTIONS_CHARS = 16_000  # session or response instructions: "invalid_value"
MAX_HISTORY_ITEMS = 100  # kept in memory (and copied to the live store); oldest dropped, no error
MAX_RECORDED_ITEMS = 500  # transcript rows written per call; later items are not stored, no error

# Tools (session.tools).
MAX_TOOLS = 32  # functions in session.tools: "invalid_value"
MAX_TOOL_DESCRIPTION_CHARS = 1_024  # one tool's description: "invalid_value"
MAX_TOOL_SCHEMA_CHARS = 8_000  # one tool's parameters, as JSON: "invalid_value"

# Replies.
MAX_OUTPUT_TOKENS = 4096  # max_output_tokens a secret-key caller may ask for: "invalid_value"
INF_OUTPUT_TOKENS = 1024  # what "inf" means for a secret-key caller
MIN_IDLE_TIMEOUT_MS = 5_000
MAX_IDLE_TIMEOUT_MS = 30 * 60_000  # idle_timeout_ms for a secret-key caller: "invalid_value"

# WebRTC data channel (sessions/webrtc.py).
MAX_PENDING_EVENTS = 2000  # events kept until the data channel opens; oldest dropped
MAX_CHANNEL_BUFFERED_BYTES = 4 * 1024 * 1024  # unsent on an open channel: the call ends ("lost")
MAX_INBOUND_MESSAGES = 256  # client messages waiting to be handled: "rate_limit_exceeded", dropped
