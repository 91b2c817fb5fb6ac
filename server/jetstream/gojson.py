"""Request bodies decoded the way the real server decodes them: Go's
encoding/json into a typed struct, with unknown fields disallowed (JetStream
strict mode, the default), and Go's own messages for everything it refuses.

What nats-server 2.15.1 (built with Go 1.27) does, and so what this does:

- ``unmarshal_request`` is the API's decoder (``s.unmarshalRequest``): a
  ``json.Decoder`` reading one JSON value after another from the body into
  the same struct (``{"a":1} {"b":2}`` sets both; ``null`` sets nothing), so
  an empty body is an empty request. A syntax error in a value wins over
  what is wrong inside it; otherwise the first problem in document order is
  reported. Syntax errors end in `` at offset N`` (the byte after the
  offending character) or read ``unexpected EOF``.
  ``unmarshal_request(..., stream=False)`` is ``json.Unmarshal`` instead:
  exactly one value, no offsets, ``unexpected end of JSON input``.
- Keys match struct fields exactly or, failing that, ASCII case-insensitively
  (``{"NAME":"x"}`` sets ``name``); an unmatched key is
  ``json: unknown field "k"`` (strict) or ignored.
- A value of the wrong type: ``json: cannot unmarshal string into Go struct
  field StreamConfigRequest.max_msgs of type int64``, always named after the
  outermost request struct with the JSON path of the value as sent
  (``CreateConsumerRequest.config.max_deliver``,
  ``StreamConfigRequest.sources.0.name``); when the value is an array
  element the words "Go struct field" are left out
  (``StreamConfigRequest.subjects.1 of type string``). A number that does
  not fit is named with its literal: ``number 1.5``, ``number -1`` for a
  uint64, ``number 3000000000`` for an int32.
- Types with their own UnmarshalJSON keep their own wording: the policy
  enums ``can not unmarshal "\\"x\\""`` (the raw JSON, ``null`` included),
  ``unknown compression algorithm``, ``unknown consumer action: "x"``,
  ``unknown priority policy: "x"``; times are parsed by Go's
  ``time.Parse(time.RFC3339, ...)`` with its messages.
- ``null`` leaves a scalar or a struct value as it was and clears a pointer,
  slice or map; a merged struct or map (the same key twice, or two values in
  the body) is decoded into what is already there.

A struct is a ``Struct(name, {json key: type})``; types are the module-level
constants (``INT``, ``INT32``, ``INT64``, ``UINT64``, ``DURATION``,
``STRING``, ``BOOL``, ``TIME``, ``PTIME``, ``STRINGS``, ``STRING_MAP``, ...),
``Slice``, ``Ptr`` and ``Enum``. The decoded result is a plain dict keyed by
the canonical JSON names, with plain Python values, nulls dropped, enums in
their canonical spelling.
"""

from __future__ import annotations

import json
import re

_RFC3339 = "2006-01-02T15:04:05Z07:00"
_WS = " \t\n\r"


class GoJSONError(ValueError):
    """The message Go's decoder would give."""


# -- Go's quoting -----------------------------------------------------------------

_SURROGATES = re.compile("[\ud800-\udfff]")
_ESC = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v", 0x5C: "\\\\", 0x22: '\\"'}


def _runes(b: bytes):
    """(rune or None for an invalid byte, start, width) over UTF-8 bytes."""
    i, n = 0, len(b)
    while i < n:
        c = b[i]
        if c < 0x80:
            yield c, i, 1
            i += 1
            continue
        w = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
        if w:
            try:
                yield ord(b[i:i + w].decode("utf-8")), i, w
                i += w
                continue
            except UnicodeDecodeError:
                pass
        yield None, i, 1
        i += 1


def _quote_rune(r: int | None, raw: bytes) -> str:
    if r is None:
        return "\\x%02x" % raw[0]
    if r in _ESC:
        return _ESC[r]
    if r < 0x20 or r == 0x7F:
        return "\\x%02x" % r
    ch = chr(r)
    if ch.isprintable():
        return ch
    return "\\u%04x" % r if r < 0x10000 else "\\U%08x" % r


def go_quote(s: str | bytes) -> str:
    """strconv.Quote (what %q prints)."""
    if isinstance(s, str):
        if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
            return f'"{s}"'
        s = _SURROGATES.sub("\ufffd", s).encode()
    return '"' + "".join(_quote_rune(r, s[i:i + w]) for r, i, w in _runes(s)) + '"'


def _go_backquote(b: bytes) -> str:
    """%#q: backquoted when strconv.CanBackquote, else quoted."""
    try:
        s = b.decode()
    except UnicodeDecodeError:
        return go_quote(b)
    if "`" in s or "\ufeff" in s or any(c < " " and c != "\t" or c == "\x7f" for c in s):
        return go_quote(b)
    return f"`{s}`"


def _quote_char(b: bytes, i: int) -> tuple[str, int]:
    """The scanner's quoteChar for the character at b[i], and its width."""
    r, _, w = next(_runes(b[i:i + 4]))
    if r == 0x27:
        return "'\\''", 1
    if r == 0x22:
        return "'\"'", 1
    return "'" + _quote_rune(r, b[i:i + w]) + "'", w


def _time_quote(s: bytes) -> str:
    """The time package's own quote: non-ASCII and control bytes as \\xNN."""
    out = []
    for r, i, w in _runes(s):
        if r is None or r >= 0x80 or r < 0x20:
            out.extend("\\x%02x" % c for c in s[i:i + w])
        else:
            out.append("\\" + chr(r) if r in (0x22, 0x5C) else chr(r))
    return '"' + "".join(out) + '"'


# -- syntax errors, as Go's decoder words them --------------------------------------

class _Syntax(Exception):
    def __init__(self, msg: str, offset: int | None):
        super().__init__(msg)
        self.msg, self.offset = msg, offset  # offset None: input ended (unexpected EOF)


def _ws(b: bytes, i: int) -> int:
    n = len(b)
    while i < n and b[i] in b" \t\n\r":
        i += 1
    return i


def _bad(b: bytes, i: int, where: str):
    ch, w = _quote_char(b, i)
    raise _Syntax(f"invalid character {ch} {where}", i + w)


def _eof():
    raise _Syntax("unexpected EOF", None)


def _scan_string(b: bytes, i: int) -> int:
    """b[i] is the opening quote; returns the index after the closing one."""
    n = len(b)
    i += 1
    while True:
        if i >= n:
            _eof()
        c = b[i]
        if c == 0x22:
            return i + 1
        if c == 0x5C:
            if i + 1 >= n:
                _eof()
            e = b[i + 1]
            if e in b'"\\/bfnrt':
                i += 2
            elif e == 0x75:  # \u
                hexd = b[i + 2:i + 6]
                if any(h not in b"0123456789abcdefABCDEF" for h in hexd):
                    end = min(i + 6, n)
                    raise _Syntax(f"invalid escape sequence {_go_backquote(b[i:end])} in string", end)
                if len(hexd) < 4:
                    _eof()
                i += 6
            else:
                raise _Syntax(f"invalid escape sequence {_go_backquote(b[i:i + 2])} in string", i + 2)
        elif c < 0x20:
            _bad(b, i, "in string")
        else:
            i += 1


def _digits(b: bytes, i: int) -> int:
    n = len(b)
    while i < n and 0x30 <= b[i] <= 0x39:
        i += 1
    return i


def _need_digit(b: bytes, i: int) -> None:
    if i >= len(b):
        _eof()
    if not 0x30 <= b[i] <= 0x39:
        _bad(b, i, "in numeric literal")


def _scan_number(b: bytes, i: int) -> int:
    n = len(b)
    if b[i] == 0x2D:
        i += 1
        _need_digit(b, i)
    i = i + 1 if b[i] == 0x30 else _digits(b, i)
    if i < n and b[i] == 0x2E:
        _need_digit(b, i + 1)
        i = _digits(b, i + 1)
    if i < n and b[i] in b"eE":
        i += 1
        if i < n and b[i] in b"+-":
            i += 1
        _need_digit(b, i)
        i = _digits(b, i)
    return i


def _scan_literal(b: bytes, i: int) -> int:
    word = {0x74: b"true", 0x66: b"false", 0x6E: b"null"}[b[i]]
    for k in range(1, len(word)):
        if i + k >= len(b):
            _eof()
        if b[i + k] != word[k]:
            _bad(b, i + k, f"in literal {word.decode()} (expecting {_quote_char(word, k)[0]})")
    return i + len(word)


def _object_key(b: bytes, i: int) -> int:
    """An object key and its colon at b[i] (no leading white space); returns
    the index after the colon."""
    if b[i] != 0x22:
        _bad(b, i, "looking for beginning of object key string")
    i = _ws(b, _scan_string(b, i))
    if i >= len(b):
        _eof()
    if b[i] != 0x3A:
        _bad(b, i, "after object key")
    return i + 1


MAX_NESTING_DEPTH = 10000  # Go's scanner: one more open array or object is a syntax error


def _scan_value(b: bytes, i: int) -> int:
    """One JSON value starting at b[i] (no leading white space); returns the
    index after it or raises _Syntax. Iterative, so any depth is read; past
    Go's 10,000 levels it is Go's 'exceeded max depth'."""
    n = len(b)
    stack: list[int] = []
    while True:
        # a value starts at i
        i = _ws(b, i)
        if i >= n:
            _eof()
        c = b[i]
        if (c == 0x7B or c == 0x5B) and len(stack) >= MAX_NESTING_DEPTH:
            raise _Syntax("exceeded max depth", i + 1)
        if c == 0x7B:  # {
            i = _ws(b, i + 1)
            if i >= n:
                _eof()
            if b[i] == 0x7D:
                i += 1
            else:
                i = _object_key(b, i)
                stack.append(0x7B)
                continue
        elif c == 0x5B:  # [
            i = _ws(b, i + 1)
            if i >= n:
                _eof()
            if b[i] == 0x5D:
                i += 1
            else:
                stack.append(0x5B)
                continue
        elif c == 0x22:
            i = _scan_string(b, i)
        elif c == 0x2D or 0x30 <= c <= 0x39:
            i = _scan_number(b, i)
        elif c in (0x74, 0x66, 0x6E):
            i = _scan_literal(b, i)
        else:
            _bad(b, i, "looking for beginning of value")
        # after a value: close containers or move to the next element
        while True:
            if not stack:
                return i
            i = _ws(b, i)
            if i >= n:
                _eof()
            c = b[i]
            if stack[-1] == 0x7B:
                if c == 0x2C:
                    i = _ws(b, i + 1)
                    if i >= n:
                        _eof()
                    i = _object_key(b, i)
                    break
                if c == 0x7D:
                    stack.pop()
                    i += 1
                    continue
                _bad(b, i, "after object key:value pair")
            else:
                if c == 0x2C:
                    i += 1
                    break
                if c == 0x5D:
                    stack.pop()
                    i += 1
                    continue
                _bad(b, i, "after array element")


def _decoder_syntax_error(b: bytes, start: int = 0, one: bool = False) -> str | None:
    """The json.Decoder's message for the first syntax error in b from
    ``start`` (one value only if ``one``), or None."""
    i = start
    try:
        while True:
            i = _ws(b, i)
            if i >= len(b):
                return None
            i = _scan_value(b, i)
            if one:
                return None
    except _Syntax as e:
        return e.msg if e.offset is None else f"{e.msg} at offset {e.offset}"


def _unmarshal_syntax_error(b: bytes) -> str | None:
    """json.Unmarshal's message for b (checked whole before decoding)."""
    try:
        i = _ws(b, 0)
        if i >= len(b):
            return "unexpected end of JSON input"
        i = _ws(b, _scan_value(b, i))
        if i < len(b):
            _bad(b, i, "after top-level value")
    except _Syntax as e:
        return "unexpected end of JSON input" if e.offset is None else e.msg
    return None


_CONTAINER_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def _shallow(s: str, start: int, limit: int = 64) -> str:
    """``s`` with every array or object nested more than ``limit`` deep from
    ``start`` emptied (``[]`` / ``{}``), for a valid value Python's json
    cannot read. No request struct is more than a few levels deep and none
    holds an arbitrary value, so whatever Go reports of such a body (a type
    error, an unknown field) is about a value above the cut, which keeps its
    kind: the message is the same."""
    out = [s[:start]]
    last = start
    depth = 0
    cut = -1
    for m in _CONTAINER_TOKEN.finditer(s, start):
        c = s[m.start()]
        if c == "[" or c == "{":
            depth += 1
            if depth == limit + 1:
                cut = m.start()
        elif c == "]" or c == "}":
            if depth == limit + 1:
                out.append(s[last:cut])
                out.append("[]" if s[cut] == "[" else "{}")
                last = m.end()
            depth -= 1
    out.append(s[last:])
    return "".join(out)


# -- parsed values ----------------------------------------------------------------

class _Obj(list):
    """A JSON object as its (key, value) pairs in order, duplicates kept."""


class _Float(float):
    """A non-integer number literal, with its text (Go quotes it)."""

    lit: str


class _NegZero(int):
    """The literal -0 (an int64 0, but no uint64)."""

    lit = "-0"


def _parse_float(s: str) -> _Float:
    f = _Float(float(s))
    f.lit = s
    return f


def _parse_int(s: str) -> int:
    return _NegZero(0) if s == "-0" else int(s)


def _no_constant(s: str):
    raise ValueError(s)  # NaN / Infinity are not JSON


_DECODER = json.JSONDecoder(object_pairs_hook=_Obj, parse_float=_parse_float, parse_int=_parse_int,
                            parse_constant=_no_constant)


def _kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (_Obj, dict)):
        return "object"
    return "array"


def _lit(v) -> str:
    lit = getattr(v, "lit", None)
    if lit is not None:
        return lit
    return repr(v) if isinstance(v, float) else str(v)


def _pairs(v):
    return v if isinstance(v, _Obj) else v.items()


def _str(s: str) -> str:
    """Go's string for a decoded JSON string: lone surrogates (from \\ud800
    or an invalid UTF-8 byte) become U+FFFD."""
    return s if s.isascii() else _SURROGATES.sub("\ufffd", s)


def _reencode(v) -> str:
    """Compact JSON text of a parsed value (raw text when nothing better)."""
    if isinstance(v, (_Obj, dict)):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _reencode(x) for k, x in _pairs(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_reencode(x) for x in v) + "]"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _lit(v)
    return json.dumps(v, ensure_ascii=False)


# -- types ------------------------------------------------------------------------

_KEEP = object()  # null decoded into a scalar / struct value: nothing changes


class _Ctx:
    """One decode: the outermost struct's name (every type error names it),
    strictness, and the body's bytes to read raw JSON text from."""

    __slots__ = ("top", "strict", "body", "start", "escapes")

    def __init__(self, top: str, strict: bool, body: bytes | None = None, start: int = 0):
        self.top, self.strict, self.body, self.start = top, strict, body, start
        self.escapes = body is not None and b"\\" in body

    def raw(self, loc: tuple, v) -> bytes:
        """The raw JSON text of the value at ``loc`` (else re-encoded)."""
        if self.body is None:
            return ("null" if v is None else _reencode(v)).encode()
        return _locate(self.body, self.start, loc)


def _type_error(what: str, top: str, path: tuple, go: str) -> GoJSONError:
    if not path:
        return GoJSONError(f"json: cannot unmarshal {what} into Go value of type {go}")
    ref = ".".join(str(p) for p in path)
    if isinstance(path[-1], int):
        return GoJSONError(f"json: cannot unmarshal {what} into {top}.{ref} of type {go}")
    return GoJSONError(f"json: cannot unmarshal {what} into Go struct field {top}.{ref} of type {go}")


class _Type:
    go = ""
    zero = None

    def null(self, ctx: _Ctx, loc: tuple):
        """What null decodes to: _KEEP, or None (cleared)."""
        return _KEEP

    def check(self, v, ctx: _Ctx, path: tuple, loc: tuple, into=None):
        raise NotImplementedError


class _Int(_Type):
    zero = 0

    def __init__(self, go: str, bits: int = 64, unsigned: bool = False):
        self.go = go
        self.unsigned = unsigned
        self.lo, self.hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)

    def check(self, v, ctx, path, loc, into=None):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _type_error(_kind(v), ctx.top, path, self.go)
        if isinstance(v, float) or not self.lo <= v <= self.hi or (self.unsigned and isinstance(v, _NegZero)):
            raise _type_error(f"number {_lit(v)}", ctx.top, path, self.go)
        return int(v)


class _String(_Type):
    go, zero = "string", ""

    def check(self, v, ctx, path, loc, into=None):
        if not isinstance(v, str):
            raise _type_error(_kind(v), ctx.top, path, "string")
        return _str(v)


class _Bool(_Type):
    go, zero = "bool", False

    def check(self, v, ctx, path, loc, into=None):
        if not isinstance(v, bool):
            raise _type_error(_kind(v), ctx.top, path, "bool")
        return v


class _Time(_Type):
    """time.Time (``ptr``: *time.Time, which null clears). The value stays the
    string sent unless only Go's parser reads it (``2024-01-01T1:00:00Z``,
    a comma before the fraction, ...): then it is rewritten in UTC."""

    go = "time.Time"

    def __init__(self, ptr: bool):
        self.ptr = ptr

    def null(self, ctx, loc):
        return None if self.ptr else _KEEP

    def check(self, v, ctx, path, loc, into=None):
        if not isinstance(v, str):
            raise _type_error(_kind(v), ctx.top, path, "time.Time")
        v = _str(v)
        ns = parse_go_time(v)
        return v if _SIMPLE_TS.match(v) else format_utc(ns)


class Slice(_Type):
    def __init__(self, elem: _Type, go: str):
        self.elem, self.go = elem, go

    def null(self, ctx, loc):
        return None

    def check(self, v, ctx, path, loc, into=None):
        if isinstance(v, (_Obj, dict)) or not isinstance(v, list):
            raise _type_error(_kind(v), ctx.top, path, self.go)
        out = []
        el = self.elem
        for i, x in enumerate(v):
            r = el.null(ctx, loc + (i,)) if x is None else el.check(x, ctx, path + (i,), loc + (i,))
            out.append(el.zero if r is _KEEP else r)
        return out


class _Map(_Type):
    """map[string]string"""

    go = "map[string]string"

    def null(self, ctx, loc):
        return None

    def check(self, v, ctx, path, loc, into=None):
        if not isinstance(v, (_Obj, dict)):
            raise _type_error(_kind(v), ctx.top, path, self.go)
        out = dict(into) if isinstance(into, dict) else {}
        for j, (k, x) in enumerate(_pairs(v)):
            out[_str(k)] = "" if x is None else STRING.check(x, ctx, path + (k,), loc + (j,))
        return out


_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Struct(_Type):
    """A Go struct: {json key: type}. A key matches exactly or else ASCII
    case-insensitively; a struct already decoded is decoded into (merged)."""

    zero: dict

    def __init__(self, name: str, fields: dict):
        self.name, self.go = name, f"server.{name}"
        self.fields = {k: _as_type(t) for k, t in fields.items()}
        self.folded = {k.translate(_FOLD): k for k in self.fields}
        self.zero = {}

    def check(self, v, ctx, path, loc, into=None):
        if not isinstance(v, (_Obj, dict)):
            raise _type_error(_kind(v), ctx.top, path, self.go)
        out = dict(into) if isinstance(into, dict) else {}
        fields = self.fields
        for j, (k, x) in enumerate(_pairs(v)):
            key = k if k in fields else self.folded.get(k.translate(_FOLD)) if k.isascii() else None
            if key is None:
                if ctx.strict:
                    raise GoJSONError(f"json: unknown field {go_quote(k)}")
                continue
            t = fields[key]
            if x is None:
                r = t.null(ctx, loc + (j,))
            else:
                r = t.check(x, ctx, path + (k,), loc + (j,), out.get(key))
            if r is _KEEP:
                continue
            if r is None:
                out.pop(key, None)
            else:
                out[key] = r
        return out


class Ptr(_Type):
    """A pointer to a struct: null clears it; Go names the type without *."""

    def __init__(self, struct: Struct):
        self.struct, self.go = struct, struct.go

    def null(self, ctx, loc):
        return None

    def check(self, v, ctx, path, loc, into=None):
        return self.struct.check(v, ctx, path, loc, into)


class Enum(_Type):
    """A type with its own UnmarshalJSON over the raw JSON text: ``accept``
    maps the raw text (after ``fold``) to the canonical value; anything else,
    null included, fails with ``fmt`` (``{q}``: the raw text quoted with %q,
    ``{raw}``: as is)."""

    def __init__(self, accept: dict, fmt: str, fold=None):
        self.accept, self.fmt, self.fold = accept, fmt, fold

    def null(self, ctx, loc):
        return self._fail(ctx, loc, None)

    def _fail(self, ctx, loc, v):
        raw = ctx.raw(loc, v)
        raise GoJSONError(self.fmt.format(q=go_quote(raw), raw=raw.decode(errors="replace")))

    def check(self, v, ctx, path, loc, into=None):
        if isinstance(v, str):
            raw = ctx.raw(loc, v).decode(errors="replace") if ctx.escapes else json.dumps(v, ensure_ascii=False)
            got = self.accept.get(self.fold(raw) if self.fold else raw)
            if got is not None:
                return got
        return self._fail(ctx, loc, v)


class _Compression(_Type):
    """StoreCompression: decodes the value into a string first."""

    def null(self, ctx, loc):
        raise GoJSONError("unknown compression algorithm")

    def check(self, v, ctx, path, loc, into=None):
        if not isinstance(v, str):
            raise GoJSONError(f"json: cannot unmarshal {_kind(v)} into Go value of type string")
        if v not in ("s2", "none"):
            raise GoJSONError("unknown compression algorithm")
        return v


INT = _Int("int")
INT32 = _Int("int32", 32)
INT64 = _Int("int64")
UINT64 = _Int("uint64", unsigned=True)
DURATION = _Int("time.Duration")
STRING = _String()
BOOL = _Bool()
TIME = _Time(ptr=False)
PTIME = _Time(ptr=True)
STRINGS = Slice(STRING, "[]string")
DURATIONS = Slice(DURATION, "[]time.Duration")
STRING_MAP = _Map()

_LEGACY = {"int": INT, "int64": INT64, "uint64": UINT64, "string": STRING, "bool": BOOL, "[]string": STRINGS,
           "time": PTIME}


def _as_type(t) -> _Type:
    if isinstance(t, _Type):
        return t
    if isinstance(t, tuple):  # the older (Go name, fields) form
        return Ptr(Struct(t[0], t[1]))
    return _LEGACY[t]


def _enum(*names: str, fmt: str = "can not unmarshal {q}", fold=None, alias: dict | None = None) -> Enum:
    accept = {json.dumps(n): n for n in names}
    for raw, canon in (alias or {}).items():
        accept[json.dumps(raw)] = canon
    return Enum(accept, fmt, fold)


# -- decoding ---------------------------------------------------------------------

def _locate(b: bytes, start: int, loc: tuple) -> bytes:
    """The raw text of the value at ``loc`` (object pair / array element
    indexes) inside the syntactically valid value starting at b[start]."""
    i = _ws(b, start)
    for step in loc:
        is_obj = b[i] == 0x7B
        i = _ws(b, i + 1)
        for _ in range(step):
            if is_obj:
                i = _ws(b, _ws(b, _scan_string(b, i)) + 1)  # key and :
            i = _ws(b, _ws(b, _scan_value(b, i)) + 1)  # value and ,
        if is_obj:
            i = _ws(b, _ws(b, _scan_string(b, i)) + 1)
    return b[i:_scan_value(b, i)]


def unmarshal_request(body: bytes, struct: Struct, strict: bool = True, stream: bool = True) -> dict:
    """``body`` decoded into ``struct`` as the real server does; GoJSONError
    with Go's message where it cannot be. ``stream``: the API's json.Decoder
    loop (else one json.Unmarshal, as CONSUMER.RESET reads its body)."""
    ascii_body = body.isascii()
    s = body.decode("ascii") if ascii_body else body.decode("utf-8", "surrogateescape")
    if not stream:
        msg = _unmarshal_syntax_error(body)
        if msg is not None:
            raise GoJSONError(msg)
    out: dict = {}
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _WS:
            i += 1
        if i >= n:
            return out
        start = i
        try:
            v, i = _DECODER.raw_decode(s, i)
        except (ValueError, RecursionError) as e:
            msg = _decoder_syntax_error(body)
            if msg or not isinstance(e, RecursionError):
                raise GoJSONError(msg or "unexpected EOF") from None
            # valid JSON, nested deeper than Python's json reads: what is
            # wrong with it is found near the top (see _shallow)
            s = _shallow(s, start)
            body = s.encode("ascii") if ascii_body else s.encode("utf-8", "surrogateescape")
            n = len(s)
            v, i = _DECODER.raw_decode(s, start)
        if v is None:
            continue
        bstart = start if ascii_body else len(s[:start].encode("utf-8", "surrogateescape"))
        if not isinstance(v, _Obj):
            # Go reads the whole value first: a number Python ends early
            # (1. / 1e / -) is a syntax error, not a type error
            msg = _decoder_syntax_error(body, bstart, one=True) if stream else None
            if msg:
                raise GoJSONError(msg)
            raise _type_error(_kind(v), struct.name, (), struct.go)
        out = struct.check(v, _Ctx(struct.name, strict, body, bstart), (), (), out)


def decode(d, name: str, fields, strict: bool = True) -> dict:
    """``d`` (already decoded by json.loads) checked against the struct
    ``fields`` (a Struct, or a {key: type} dict); returns the decoded dict."""
    st = fields if isinstance(fields, Struct) else Struct(name, fields)
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise _type_error(_kind(d), name, (), f"server.{name}")
    return st.check(d, _Ctx(name, strict), (), ())


# -- time.Parse(time.RFC3339, s) ------------------------------------------------------

_SIMPLE_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)$")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def format_utc(ns: int) -> str:
    """RFC 3339 in UTC with trimmed nanoseconds (any year)."""
    sec, frac = divmod(ns, 1_000_000_000)
    days, rem = divmod(sec, 86400)
    y, m, d = _civil_from_days(days)
    s = f"{y:04d}-{m:02d}-{d:02d}T{rem // 3600:02d}:{rem // 60 % 60:02d}:{rem % 60:02d}"
    if frac:
        s += "." + f"{frac:09d}".rstrip("0")
    return s + "Z"


class _TimeBad(Exception):
    pass


def _isdigit(b: bytes, i: int) -> bool:
    return i < len(b) and 0x30 <= b[i] <= 0x39


def _getnum(b: bytes, fixed: bool) -> tuple[int, bytes]:
    if not _isdigit(b, 0):
        raise _TimeBad
    if not _isdigit(b, 1):
        if fixed:
            raise _TimeBad
        return b[0] - 0x30, b[1:]
    return (b[0] - 0x30) * 10 + b[1] - 0x30, b[2:]


def parse_go_time(s: str) -> int:
    """Go's time.Parse(time.RFC3339, s) as ns since the epoch, or
    GoJSONError with Go's message."""
    value = s.encode("utf-8", "surrogatepass")
    whole = _time_quote(value)

    def cannot(elem: bytes, layout_elem: str):
        return GoJSONError(f"parsing time {whole} as \"{_RFC3339}\": cannot parse {_time_quote(elem)} as \"{layout_elem}\"")

    def out_of_range(what: str):
        return GoJSONError(f"parsing time {whole}: {what} out of range")

    def skip(v: bytes, lit: bytes) -> bytes:
        if not v.startswith(lit):
            raise cannot(v, lit.decode())
        return v[len(lit):]

    v = value
    # 2006
    if len(v) < 4 or not _isdigit(v, 0) or not all(0x30 <= c <= 0x39 for c in v[:4]):
        raise cannot(v, "2006")
    year, v = int(v[:4]), v[4:]
    nums = []
    for lit, elem, fixed, lim, what in ((b"-", "01", True, None, "month"), (b"-", "02", True, None, None),
                                        (b"T", "15", False, 24, "hour"), (b":", "04", True, 60, "minute"),
                                        (b":", "05", True, 60, "second")):
        v = skip(v, lit)
        hold = v
        try:
            num, v = _getnum(v, fixed)
        except _TimeBad:
            raise cannot(hold, elem) from None
        if what == "month" and not 1 <= num <= 12:
            raise out_of_range("month")
        if lim is not None and num >= lim:
            raise out_of_range(what)
        nums.append(num)
    month, day, hour, minute, sec = nums
    nsec = 0
    if len(v) >= 2 and v[0] in b".," and _isdigit(v, 1):
        k = 2
        while _isdigit(v, k):
            k += 1
        digits = v[1:min(k, 10)]
        nsec = int(digits) * 10 ** (9 - len(digits))
        v = v[k:]
    # Z07:00
    offset = 0
    if v[:1] == b"Z":
        v = v[1:]
    else:
        hold = v
        if len(v) < 6 or v[3] != 0x3A:
            raise cannot(hold, "Z07:00")
        try:
            hr, _ = _getnum(v[1:3], True)
            mm, _ = _getnum(v[4:6], True)
        except _TimeBad:
            raise cannot(hold, "Z07:00") from None
        if hr > 24:
            raise out_of_range("time zone offset hour")
        if mm > 60:
            raise out_of_range("time zone offset minute")
        if v[0] not in b"+-":
            raise cannot(hold, "Z07:00")
        offset = (hr * 60 + mm) * 60 * (1 if v[0] == 0x2B else -1)
        v = v[6:]
    if v:
        raise GoJSONError(f"parsing time {whole}: extra text: {_time_quote(v)}")
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day < 1 or day > (29 if month == 2 and leap else _DAYS[month - 1]):
        raise out_of_range("day")
    secs = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + sec - offset
    return secs * 1_000_000_000 + nsec


# -- the request structs (nats-server 2.15.1) ------------------------------------------

_POLICY = "can not unmarshal {q}"

RETENTION = _enum("limits", "interest", "workqueue")
DISCARD = _enum("old", "new", fold=str.lower)
STORAGE = _enum("file", "memory")
PERSIST_MODE = _enum("default", "async", alias={"": ""})
DELIVER_POLICY = _enum("all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject",
                       alias={"undefined": "all"})
ACK_POLICY = _enum("none", "all", "explicit", "flow_control")
REPLAY_POLICY = _enum("instant", "original")
PRIORITY_POLICY = _enum("none", "overflow", "pinned_client", "prioritized", fmt="unknown priority policy: {raw}")
CONSUMER_ACTION = _enum("create", "update", "", fmt="unknown consumer action: {raw}")
COMPRESSION = _Compression()

# The config structs (StreamConfig, ConsumerConfig and what they hold, and the
# STREAM.CREATE / CONSUMER.CREATE requests) are built in fields.py, from the
# one table per type that the response shapes use too.

STREAM_INFO_REQUEST = Struct("JSApiStreamInfoRequest",
                             {"offset": INT, "deleted_details": BOOL, "subjects_filter": STRING})
STREAM_NAMES_REQUEST = Struct("JSApiStreamNamesRequest", {"offset": INT, "subject": STRING})
STREAM_LIST_REQUEST = Struct("JSApiStreamListRequest", {"offset": INT, "subject": STRING})
STREAM_PURGE_REQUEST = Struct("JSApiStreamPurgeRequest", {"seq": UINT64, "filter": STRING, "keep": UINT64})
MSG_DELETE_REQUEST = Struct("JSApiMsgDeleteRequest", {"seq": UINT64, "no_erase": BOOL})
CONSUMERS_REQUEST = Struct("JSApiConsumersRequest", {"offset": INT})
CONSUMER_PAUSE_REQUEST = Struct("JSApiConsumerPauseRequest", {"pause_until": TIME})
CONSUMER_UNPIN_REQUEST = Struct("JSApiConsumerUnpinRequest", {"group": STRING})
CONSUMER_RESET_REQUEST = Struct("JSApiConsumerResetRequest", {"seq": UINT64})
MSG_GET_REQUEST = Struct("JSApiMsgGetRequest", {
    "seq": UINT64, "last_by_subj": STRING, "next_by_subj": STRING, "batch": INT, "max_bytes": INT,
    "start_time": PTIME, "multi_last": STRINGS, "up_to_seq": UINT64, "up_to_time": PTIME, "no_hdr": BOOL,
})
