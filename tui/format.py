"""Small formatting and parsing helpers shared by the panes (durations, sizes, payloads)."""

from __future__ import annotations

import json
import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|ns|s|m|h|d)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'4s', '2m', '1h30m', '24h', '1d' or a bare number of seconds -> seconds.

    Raises ValueError with a message fit to show next to the field.
    """
    text = text.strip().replace(" ", "")
    if not text:
        return 0.0
    try:
        return float(text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or pos == 0:
        raise ValueError(f"'{text}' is not a duration (try 4s, 2m, 24h, 1h30m)")
    return total


def fmt_duration(seconds: float) -> str:
    if seconds <= 0:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            n = int(seconds // size)
            parts.append(f"{n}{unit}")
            seconds -= n * size
    if seconds >= 0.001 or not parts:
        parts.append(f"{seconds:g}s" if seconds != int(seconds) else f"{int(seconds)}s")
    return "".join(parts)


def fmt_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def fmt_count(n: int) -> str:
    return f"{n:,}"


def parse_int(text: str, what: str, *, minimum: int | None = None, allow_empty: bool = True) -> int | None:
    text = text.strip().replace(",", "").replace("_", "")
    if not text:
        if allow_empty:
            return None
        raise ValueError(f"{what} is required")
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, not '{text}'") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be at least {minimum}")
    return value


def render_payload(data: bytes, mode: str) -> str:
    """Payload as 'text', 'json' (pretty, falls back to text) or 'hex' dump."""
    if mode == "hex":
        lines = []
        for off in range(0, len(data), 16):
            chunk = data[off : off + 16]
            hexes = " ".join(f"{b:02x}" for b in chunk)
            text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
            lines.append(f"{off:08x}  {hexes:<47}  {text}")
        return "\n".join(lines) or "(empty)"
    text = data.decode("utf-8", errors="replace")
    if mode == "json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text + "\n(not valid JSON — shown as text)"
    return text or "(empty)"


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 12) -> str:
    values = values[-width:]
    if not values:
        return ""
    top = max(values)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))] for v in values)
