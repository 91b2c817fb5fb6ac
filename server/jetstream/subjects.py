"""Subject helpers JetStream needs on configured subjects and filters:
matching, overlap ("collide") and subset tests, with NATS wildcards
(``*`` one token, ``>`` one or more trailing tokens)."""

from __future__ import annotations

from functools import lru_cache


def is_valid(subject: str) -> bool:
    if not subject or any(c in subject for c in " \t\r\n"):
        return False
    toks = subject.split(".")
    for i, t in enumerate(toks):
        if not t:
            return False
        if t == ">" and i != len(toks) - 1:
            return False
    return True


def is_literal(subject: str) -> bool:
    if "*" not in subject and ">" not in subject:
        return True  # the common case, without splitting
    return not any(t in ("*", ">") for t in subject.split("."))


@lru_cache(maxsize=8192)
def _toks(s: str) -> tuple[str, ...]:
    return tuple(s.split("."))


def match(pattern: str, subject: str) -> bool:
    """Does literal ``subject`` match ``pattern`` (which may hold wildcards)?"""
    if pattern == subject or pattern == ">":
        return True
    p = _toks(pattern)
    s = _toks(subject)
    for i, t in enumerate(p):
        if t == ">":
            return len(s) > i
        if i >= len(s):
            return False
        if t != "*" and t != s[i]:
            return False
    return len(p) == len(s)


def collide(a: str, b: str) -> bool:
    """Could some literal subject match both patterns?"""
    ta, tb = _toks(a), _toks(b)
    n = min(len(ta), len(tb))
    for i in range(n):
        x, y = ta[i], tb[i]
        if x == ">" or y == ">":
            return True
        if x != "*" and y != "*" and x != y:
            return False
    return len(ta) == len(tb)


def is_subset(sub: str, of: str) -> bool:
    """Is every subject matched by ``sub`` also matched by ``of``?"""
    ts, to = _toks(sub), _toks(of)
    for i, t in enumerate(to):
        if t == ">":
            return len(ts) > i
        if i >= len(ts):
            return False
        s = ts[i]
        if s == ">":
            return False
        if t == "*":
            continue
        if s == "*" or s != t:
            return False
    return len(ts) == len(to)
