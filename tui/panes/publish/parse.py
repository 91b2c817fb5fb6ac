"""Parsing the composer's text fields: header lines and payload templates."""

from __future__ import annotations

import re
from datetime import datetime, timezone

# an HTTP token (RFC 9110 tchar), what NATS headers take as a name
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def parse_headers(text: str) -> dict[str, str]:
    """``key: value`` lines; a repeated key keeps every value (joined with ', ').

    Raises ValueError naming the bad line.
    """
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if ":" not in line:
            raise ValueError(f"header line {number} has no ':' — write it as 'Key: value'")
        key, value = line.split(":", 1)
        key = key.strip()
        if not key or any(c.isspace() for c in key):
            raise ValueError(f"header line {number}: the key must be one word, got '{key}'")
        if not HEADER_NAME.fullmatch(key):
            # e.g. a JSON body typed here: nats-py would only say "invalid header: '{"id"'"
            shown = line.strip() if len(line.strip()) <= 30 else line.strip()[:29] + "…"
            raise ValueError(f"header line {number} is not 'Key: value' ({shown}): a header name is "
                             "letters, digits and - _ . only; a JSON body goes in Payload")
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def render_template(template: str, n: int) -> str:
    """Fill ``{{n}}`` (1-based message number) and ``{{time}}`` (UTC, ISO 8601)."""
    if "{{" not in template:
        return template
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    return template.replace("{{n}}", str(n)).replace("{{time}}", now)
