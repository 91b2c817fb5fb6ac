"""Subject transforms: nats-server's subject mapping engine
(server/subject_transform.go), used by the core's subject ``mappings``
(mappings.py) and by JetStream: a stream's ``subject_transform``, the
``subject_transforms`` of mirrors and sources, and ``republish``.

A transform maps a literal subject that matches its source (``src``, empty
means ``>``) to its destination (``dest``), token by token. A destination
token is a literal, ``$n`` / ``{{wildcard(n)}}`` (the n-th ``*`` of the
source), ``>`` (the rest of the subject), or one of the mapping functions:
``partition(buckets[, n...])`` (fnv32a of the chosen tokens, or of the whole
subject), ``split(n, delim)``, ``splitFromLeft/Right(n, pos)``,
``sliceFromLeft/Right(n, size)``, ``left/right(n, len)`` and
``random(buckets)``. Function names are matched as nats-server's regular
expressions match them (first letter either case, camel humps either case,
spaces allowed inside the braces), and its errors are reproduced word for
word, since the stream API reports them in its descriptions."""

from __future__ import annotations

import random
import re

_WS = "[\t\n\f\r ]"  # Go's \s


def _fn(name: str) -> re.Pattern:
    # "splitFromLeft" -> {{\s*[sS]plit[fF]rom[lL]eft\s*\((.*)\)\s*}}, unanchored as Go's FindStringSubmatch
    parts = re.findall("[A-Za-z][a-z]*", name)
    body = "".join(f"[{p[0].lower()}{p[0].upper()}]{p[1:]}" for p in parts)
    return re.compile("{{" + _WS + "*" + body + _WS + r"*\((.*)\)" + _WS + "*}}")


_COMMA = re.compile("," + _WS + "*")
# in the order nats-server tries them
PARTITION, WILDCARD, SPLIT_LEFT, SPLIT_RIGHT, SLICE_LEFT, SLICE_RIGHT, SPLIT, LEFT, RIGHT, RANDOM = (
    "partition", "wildcard", "splitFromLeft", "splitFromRight", "sliceFromLeft", "sliceFromRight",
    "split", "left", "right", "random")
_RE = {n: _fn(n) for n in (PARTITION, WILDCARD, SPLIT_LEFT, SPLIT_RIGHT, SLICE_LEFT, SLICE_RIGHT, SPLIT,
                           LEFT, RIGHT, RANDOM)}
_NONE = "none"

# nats-server's error texts (server/errors.go)
_INVALID = "invalid mapping destination"
ERR_BAD_SUBJECT = "invalid subject"
ERR_INVALID_DEST_SUBJECT = f"{_INVALID}: invalid transform"
ERR_NOT_ALL_WILDCARDS = f"{_INVALID}: not using all of the token wildcard(s)"
ERR_UNKNOWN_FUNCTION = f"{_INVALID}: unknown function"
ERR_INDEX_OUT_OF_RANGE = f"{_INVALID}: wildcard index out of range"
ERR_NOT_ENOUGH_ARGS = f"{_INVALID}: not enough arguments passed to the function"
ERR_INVALID_ARG = f"{_INVALID}: function argument is invalid or in the wrong format"
ERR_TOO_MANY_ARGS = f"{_INVALID}: too many arguments passed to the function"

_INT32_MAX = (1 << 31) - 1
_INT64 = (-(1 << 63), (1 << 63) - 1)
_INT32 = (-(1 << 31), _INT32_MAX)
_DIGITS = re.compile(r"[+-]?[0-9]+\Z")


class MappingError(ValueError):
    """A destination nats-server refuses; ``str()`` is its error text."""

    def __init__(self, err: str, token: str = ""):
        super().__init__(f"{err} in {token}" if token else err)


def _atoi(s: str, lim=_INT64) -> int:
    """strconv.Atoi / ParseInt(s, 10, 32) after Trim(s, " "): ValueError if Go refuses it."""
    s = s.strip(" ")
    if not _DIGITS.match(s):
        raise ValueError(s)
    v = int(s)
    if not lim[0] <= v <= lim[1]:
        raise ValueError(s)
    return v


def _args(name: str, token: str) -> list[str] | None:
    m = _RE[name].search(token)
    return _COMMA.split(m.group(1)) if m else None


def _index_int_args(token: str, args: list[str], kind: str):
    if len(args) < 2:
        raise MappingError(ERR_NOT_ENOUGH_ARGS, token)
    if len(args) > 2:
        raise MappingError(ERR_TOO_MANY_ARGS, token)
    try:
        return kind, [_atoi(args[0])], _atoi(args[1], _INT32), ""
    except ValueError:
        raise MappingError(ERR_INVALID_ARG, token) from None


def _placeholder(token: str):
    """indexPlaceHolders: (kind, wildcard indexes, int arg, string arg) of
    one destination token, or MappingError."""
    n = len(token)
    if n > 1:
        if token[0] == "$":  # the old $1 form; any other $token is a literal
            try:
                return WILDCARD, [_atoi(token[1:])], -1, ""
            except ValueError:
                return _NONE, [-1], -1, ""
        if n > 4 and token.startswith("{{") and token.endswith("}}"):
            args = _args(WILDCARD, token)
            if args is not None:
                if len(args) == 1 and args[0] == "":
                    raise MappingError(ERR_NOT_ENOUGH_ARGS, token)
                if len(args) > 1:
                    raise MappingError(ERR_TOO_MANY_ARGS, token)
                try:
                    return WILDCARD, [_atoi(args[0])], -1, ""
                except ValueError:
                    raise MappingError(ERR_INVALID_ARG, token) from None
            args = _args(PARTITION, token)
            if args is not None:
                try:
                    buckets = _atoi(args[0])
                    if buckets > _INT32_MAX:
                        raise ValueError(args[0])
                    idx = [_atoi(a) for a in args[1:]]
                except ValueError:
                    raise MappingError(ERR_INVALID_ARG, token) from None
                return PARTITION, idx, buckets, ""
            for kind in (SPLIT_LEFT, SPLIT_RIGHT, SLICE_LEFT, SLICE_RIGHT, RIGHT, LEFT):
                args = _args(kind, token)
                if args is not None:
                    return _index_int_args(token, args, kind)
            args = _args(SPLIT, token)
            if args is not None:
                if len(args) < 2:
                    raise MappingError(ERR_NOT_ENOUGH_ARGS, token)
                if len(args) > 2:
                    raise MappingError(ERR_TOO_MANY_ARGS, token)
                try:
                    i = _atoi(args[0])
                except ValueError:
                    raise MappingError(ERR_INVALID_ARG, token) from None
                if " " in args[1] or "." in args[1]:
                    raise MappingError(ERR_INVALID_ARG, token)
                return SPLIT, [i], -1, args[1]
            args = _args(RANDOM, token)
            if args is not None:
                if len(args) != 1:
                    raise MappingError(ERR_NOT_ENOUGH_ARGS, token)
                try:
                    buckets = _atoi(args[0])
                    if buckets > _INT32_MAX:
                        raise ValueError(args[0])
                except ValueError:
                    raise MappingError(ERR_INVALID_ARG, token) from None
                return RANDOM, [], buckets, ""
            raise MappingError(ERR_UNKNOWN_FUNCTION, token)
    return _NONE, [-1], -1, ""


def _subject_info(subject: str):
    """(valid, tokens, number of *, has >) as nats-server's subjectInfo."""
    if not subject:
        return False, [], 0, False
    toks = subject.split(".")
    npwc, fwc = 0, False
    for t in toks:
        if not t or fwc:
            return False, [], 0, False
        if t == ">":
            fwc = True
        elif t == "*":
            npwc += 1
    return True, toks, npwc, fwc


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _is_subset_match(tokens: list[str], test: list[str]) -> bool:
    """isSubsetMatchTokenized(tokens, test)."""
    for i, t2 in enumerate(test):
        if i >= len(tokens):
            return False
        if not t2:
            return False
        if t2 == ">":
            return True
        t1 = tokens[i]
        if not t1 or t1 == ">":
            return False
        if t1 == "*":
            if t2 != "*":
                return False
            continue
        if t2 != "*" and t1 != t2:
            return False
    return len(tokens) == len(test)


class SubjectTransform:
    """One src -> dest mapping (nats-server's subjectTransform)."""

    __slots__ = ("src", "dest", "dtoks", "stoks", "ops", "_identity")

    def __init__(self, src: str, dest: str):
        if not src:
            src = ">"
        sv, stoks, npwc, sfwc = _subject_info(src)
        dv, dtoks, dnpwc, dfwc = _subject_info(dest)
        if not sv or not dv or dnpwc > 0 or sfwc != dfwc:
            raise MappingError(ERR_BAD_SUBJECT)
        self.src, self.dest, self.stoks, self.dtoks = src, dest, stoks, dtoks
        self._identity = src == ">" and dest == ">"
        ops = []  # per destination token: (kind, source token positions, int arg, str arg)
        if npwc > 0 or sfwc:
            sti = {}  # wildcard number (1-based) -> source token position
            for i, t in enumerate(stoks):
                if t == "*":
                    sti[len(sti) + 1] = i
            for t in dtoks:
                kind, idx, iarg, sarg = _placeholder(t)
                if kind == _NONE:
                    ops.append((_NONE, (), -1, ""))
                elif kind == RANDOM:
                    ops.append((RANDOM, (), iarg, ""))
                else:
                    pos = []
                    for wi in idx:
                        if wi > npwc:
                            raise MappingError(ERR_INDEX_OUT_OF_RANGE, f"{t}: [{wi}]")
                        pos.append(sti.get(wi, 0))  # Go's map: a missing key reads 0
                    ops.append((kind, tuple(pos), iarg, sarg))
        else:
            for t in dtoks:
                kind, _idx, iarg, _ = _placeholder(t)
                if kind == _NONE:
                    ops.append((_NONE, (), -1, ""))
                elif kind in (RANDOM, PARTITION):
                    ops.append((kind, (), iarg, ""))  # a partition of the whole subject
                else:
                    raise MappingError(ERR_INDEX_OUT_OF_RANGE, t)
        self.ops = ops

    def __repr__(self) -> str:
        return f"SubjectTransform({self.src!r} -> {self.dest!r})"

    def match(self, subject: str) -> str | None:
        """The mapped subject, or None if ``subject`` is not a literal that
        the source matches (nats-server's Match)."""
        if self._identity:
            return subject
        toks = subject.split(".")
        for t in toks:
            if not t or t == "*" or t == ">":
                return None
        if self.src == ">" or _is_subset_match(toks, self.stoks):
            return self.transform_tokens(toks)
        return None

    def transform_tokens(self, toks: list[str]) -> str:
        out: list[str] = []
        w = out.append
        dtoks = self.dtoks
        last = len(self.ops) - 1
        for i, (kind, pos, iarg, sarg) in enumerate(self.ops):
            if kind == _NONE:
                if dtoks[i] == ">":
                    break
                w(dtoks[i])
            elif kind == WILDCARD:
                if pos and len(toks) > pos[0]:
                    w(toks[pos[0]])
            elif kind == PARTITION:
                key = "".join(toks[p] for p in pos) if pos else ".".join(toks)
                w(_partition(fnv32a(key.encode()), iarg))
            elif kind == RANDOM:
                w("0" if iarg == 0 else str(random.randrange(1 << 31) % iarg))
            else:
                w(_slice(kind, toks[pos[0]], iarg, sarg))
            if i < last:
                w(".")
        if dtoks[-1] == ">":
            out.append(".".join(toks[len(self.stoks) - 1:]))
        return "".join(out)


def _partition(h: int, buckets: int) -> str:
    if buckets == 0:
        return "0"
    return str(h % (buckets & 0xFFFFFFFF))  # Go: uint32(numBuckets)


def _slice(kind: str, tok: str, n: int, delim: str) -> str:
    size = len(tok)
    if kind == SPLIT:
        parts = tok.split(delim)
        out = []
        for j, part in enumerate(parts):
            out.append(part)
            if j < len(parts) - 1 and parts[j + 1] != "" and not (j == 0 and part == ""):
                out.append(".")
        return "".join(out)
    if not 0 < n < size:
        return tok  # too small to split or slice at that size: unchanged
    if kind == SPLIT_LEFT:
        return tok[:n] + "." + tok[n:]
    if kind == SPLIT_RIGHT:
        return tok[:size - n] + "." + tok[size - n:]
    if kind == SLICE_LEFT:
        return ".".join(tok[i:i + n] for i in range(0, size, n))
    if kind == SLICE_RIGHT:
        rem = size % n
        head = [tok[:rem]] if rem else []
        return ".".join(head + [tok[i:i + n] for i in range(rem, size, n)])
    if kind == LEFT:
        return tok[:n]
    return tok[size - n:]  # RIGHT


def new(src: str, dest: str) -> SubjectTransform | None:
    """NewSubjectTransform: None for an empty destination (no transform)."""
    if not dest:
        return None
    return SubjectTransform(src, dest)


def validate_mapping(src: str, dest: str) -> None:
    """ValidateMapping: MappingError if ``dest`` is not a usable mapping
    destination for ``src``."""
    if not dest:
        return
    fwc = False
    for t in dest.split("."):
        if not t or fwc:
            raise MappingError(ERR_INVALID_DEST_SUBJECT, t)
        if len(t) > 4 and t.startswith("{{") and t.endswith("}}"):
            # nats-server 2.15.1 accepts left() and right() here too (its
            # main branch's list has lost them; the binary is the reference)
            if not any(r.search(t) for r in _RE.values()):
                raise MappingError(ERR_UNKNOWN_FUNCTION, t)
            continue
        if t == ">":
            fwc = True
        elif any(c in t for c in "\t\n\f\r "):
            raise MappingError(ERR_INVALID_DEST_SUBJECT)
    SubjectTransform(src, dest)


def is_valid_subject(subject: str) -> bool:
    """IsValidSubject (no rune checks): non-empty tokens, > only last,
    no white space in a token longer than one character."""
    if not subject:
        return False
    toks = subject.split(".")
    for i, t in enumerate(toks):
        if not t:
            return False
        if len(t) > 1:
            if any(c in t for c in "\t\n\f\r "):
                return False
            continue
        if t == ">" and i != len(toks) - 1:
            return False
    return True
