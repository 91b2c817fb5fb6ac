"""Client-side subject checks, so an obviously bad subject is reported next to
the field before anything is sent (the server still has the last word)."""

from __future__ import annotations


def subject_error(subject: str, *, wildcards: bool) -> str | None:
    """Return a plain-words problem with ``subject``, or None if it looks valid."""
    if not subject:
        return "subject is empty"
    if any(c.isspace() for c in subject):
        return "subject must not contain spaces"
    tokens = subject.split(".")
    for i, token in enumerate(tokens):
        if token == "":
            return "subject has an empty token (check for '..' or a leading/trailing dot)"
        if token in ("*", ">"):
            if not wildcards:
                return f"wildcard '{token}' is not allowed in a publish subject"
            if token == ">" and i != len(tokens) - 1:
                return "'>' may only be the last token"
        elif ("*" in token or ">" in token) and wildcards:
            return f"wildcards must be whole tokens, not part of '{token}'"
        elif ("*" in token or ">" in token) and not wildcards:
            return "wildcards are not allowed in a publish subject"
    return None


def name_error(name: str, what: str = "name") -> str | None:
    """Stream, consumer and bucket names: no spaces, dots, wildcards or path separators."""
    if not name:
        return f"{what} is empty"
    bad = [c for c in name if c in " .*>/\\\t\r\n"]
    if bad:
        return f"{what} must not contain {bad[0]!r}"
    return None
