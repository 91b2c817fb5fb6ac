"""Wire constants of the NATS client protocol, exactly as nats-server sends them.

The parse loop itself lives in ``client.py`` (it runs once per socket read and
is the hottest code in the broker); this module holds the byte strings and the
small builders both sides share.
"""

from __future__ import annotations

import json

CRLF = b"\r\n"
PING = b"PING\r\n"
PONG = b"PONG\r\n"
OK = b"+OK\r\n"

# the default max_control_line: what nats-server holds a control line to is
# its arguments, without the operation's name, the blanks after it and the
# CR before its LF (ServerOptions.max_control_line; Parser._control)
MAX_CONTROL_LINE = 4096
DEFAULT_HOST = "127.0.0.1"  # (nats-server's is 0.0.0.0: natslab listens on loopback unless told)
DEFAULT_PORT = 4222
DEFAULT_MAX_PAYLOAD = 1024 * 1024
DEFAULT_MAX_PENDING = 64 * 1024 * 1024
DEFAULT_PING_INTERVAL = 120.0
DEFAULT_PING_MAX = 2
AUTH_TIMEOUT = 2.0


def parse_size(d: bytes) -> int:
    """A size as nats-server's parseSize reads it: 1 to 9 ASCII digits
    (leading zeros allowed), else -1 (no sign, no underscore, no blanks:
    int() would take those)."""
    if 0 < len(d) <= 9 and d.isdigit():
        return int(d)
    return -1


def err(text: str) -> bytes:
    return b"-ERR '" + text.encode() + b"'\r\n"


# -ERR strings of the real server (text and whether the connection closes)
ERR_UNKNOWN_OP = err("Unknown Protocol Operation")  # closes
ERR_MAX_PAYLOAD = err("Maximum Payload Violation")  # closes
ERR_MAX_CONTROL_LINE = err("maximum control line exceeded")  # closes
ERR_INVALID_SUBJECT = err("Invalid Subject")  # keeps
ERR_INVALID_PUB_SUBJECT = err("Invalid Publish Subject")  # keeps
ERR_AUTH_VIOLATION = err("Authorization Violation")  # closes
ERR_AUTH_TIMEOUT = err("Authentication Timeout")  # closes
ERR_STALE = err("Stale Connection")  # closes
ERR_BAD_PROTOCOL = err("invalid client protocol")  # closes
ERR_NO_RESPONDERS_HEADERS = err("no responders requires headers support")  # closes
ERR_MAX_CONNECTIONS = err("maximum connections exceeded")  # closes
ERR_MAX_SUBS = err("maximum subscriptions exceeded")  # keeps

HDR_LINE = b"NATS/1.0\r\n"


def status_header(code: int, description: str = "", headers: dict[str, str] | None = None) -> bytes:
    """A header block carrying a status, e.g. ``NATS/1.0 503\\r\\n...\\r\\n\\r\\n``."""
    first = f"NATS/1.0 {code}" + (f" {description}" if description else "")
    lines = [first]
    if headers:
        lines.extend(f"{k}: {v}" for k, v in headers.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def info_line(info: dict) -> bytes:
    # the real server puts a space before the CRLF
    return b"INFO " + json.dumps(info, separators=(",", ":")).encode() + b" \r\n"
