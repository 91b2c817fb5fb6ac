"""A small reader for nats-server's configuration format.

Supports what ``natslab server -c`` needs: ``key: value``, ``key = value`` and
``key value``; blocks ``{ }``; arrays ``[ ]``; quoted and bare strings;
numbers with size suffixes (``1MB``, ``64KB``); booleans; ``#`` and ``//``
comments. Durations stay strings (``"2m"``); see ``parse_duration``.
"""

from __future__ import annotations

import re


class ConfigError(ValueError):
    pass


class ConfMap(dict):
    """A block (or the whole file): a dict, plus where each key was written,
    ``pos[key] = (line, column)`` (1-based, as nats-server reports them)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.pos: dict[str, tuple[int, int]] = {}


_SIZE = {"k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3,
         "t": 1000**4, "tb": 1024**4}
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<comment>(?:\#|//)[^\n]*) |
        (?P<punct>[{}\[\],:=]) |
        (?P<str>"(?:[^"\\]|\\.)*"|'[^']*') |
        (?P<bare>[^\s{}\[\],:=#"']+)
    )""",
    re.VERBOSE,
)


def _tokens(text: str):
    """(kind, text, line, column) per token; column 1-based."""
    pos = 0
    line = 1
    line_start = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip() == "":
                return
            raise ConfigError(f"line {line}: cannot parse near {text[pos:pos + 20]!r}")
        start = m.start(m.lastgroup) if m.lastgroup else m.end()
        nl = text.rfind("\n", pos, start)
        if nl >= 0:
            line += text.count("\n", pos, start)
            line_start = nl + 1
        col = start - line_start + 1
        nl = text.rfind("\n", start, m.end())
        if nl >= 0:  # (a string or comment over several lines)
            line += text.count("\n", start, m.end())
            line_start = nl + 1
        pos = m.end()
        if m.group("comment") is not None:
            continue
        if m.group("punct") is not None:
            yield ("p", m.group("punct"), line, col)
        elif m.group("str") is not None:
            s = m.group("str")
            yield ("s", s[1:-1].encode().decode("unicode_escape") if s[0] == '"' else s[1:-1], line, col)
        elif m.group("bare") is not None:
            yield ("b", m.group("bare"), line, col)


def _scalar(v: str):
    low = v.lower()
    if low in ("true", "yes", "on", "enabled"):
        return True
    if low in ("false", "no", "off", "disabled"):
        return False
    m = re.fullmatch(r"(-?\d+)([a-zA-Z]*)", v)
    if m:
        n, suf = int(m.group(1)), m.group(2).lower()
        if not suf:
            return n
        if suf in _SIZE:
            return n * _SIZE[suf]
    try:
        return float(v)
    except ValueError:
        return v


class _Parser:
    def __init__(self, text: str):
        self.toks = list(_tokens(text))
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self):
        t = self.peek()
        if t is None:
            raise ConfigError("unexpected end of configuration")
        self.i += 1
        return t

    def parse(self) -> ConfMap:
        """The whole file. A loop with a stack of open blocks and arrays, not
        a recursion, so nesting of any depth is read (as nats-server reads
        it) rather than ending in a RecursionError."""
        root = ConfMap()
        stack: list[tuple[ConfMap | list, str | None]] = [(root, None)]
        while True:
            into, closing = stack[-1]
            t = self.peek()
            if t is None:
                if closing:
                    raise ConfigError(f"missing '{closing}'")
                return root
            if t[0] == "p" and t[1] == closing:
                self.i += 1
                stack.pop()
                continue
            if t[0] == "p" and t[1] == ",":
                self.i += 1
                continue
            if isinstance(into, ConfMap):
                kind, key, line, col = self.next()
                if kind == "p":
                    raise ConfigError(f"line {line}: unexpected '{key}'")
                t = self.peek()
                if t is not None and t[0] == "p" and t[1] in ":=":
                    self.i += 1
                value, close = self.value()
                into[key] = value
                into.pos[key] = (line, col)
            else:
                value, close = self.value()
                into.append(value)
            if close:
                stack.append((value, close))

    def value(self):
        """The value starting here: (a scalar, None), or (an empty block or
        array, its closing bracket) for ``parse`` to fill."""
        kind, v, line, _ = self.next()
        if kind == "p":
            if v == "{":
                return ConfMap(), "}"
            if v == "[":
                return [], "]"
            raise ConfigError(f"line {line}: unexpected '{v}'")
        if kind == "s":
            return v, None
        return _scalar(v), None


def parse_config(text: str) -> ConfMap:
    return _Parser(text).parse()


def parse_duration(v) -> float:
    """Seconds from a Go-style duration ('2m', '1.5s', '500ms', '1h30m') or a number of seconds."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    s = str(v).strip()
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s)
    if not parts or "".join(a + b for a, b in parts) != s:
        raise ConfigError(f"invalid duration {v!r}")
    return sum(float(a) * units[b] for a, b in parts)
