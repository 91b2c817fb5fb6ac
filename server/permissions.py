"""Per-user publish/subscribe permissions from the ``authorization`` block.

nats-server's forms are accepted: a subject, a list of subjects, or
``{allow: [...], deny: [...]}`` for each of ``publish`` and ``subscribe``.
A denied PUB is dropped and a denied SUB refused, each with
``-ERR 'Permissions Violation for ...'``; the connection stays up.
"""

from __future__ import annotations

from .subjects import is_subset, subject_matches, subjects_overlap


def _lists(spec) -> tuple[list[bytes], list[bytes]]:
    if spec is None:
        return [], []
    if isinstance(spec, str):
        return [spec.encode()], []
    if isinstance(spec, list):
        return [str(s).encode() for s in spec], []
    if isinstance(spec, dict):
        allow = spec.get("allow", [])
        deny = spec.get("deny", [])
        allow = [allow] if isinstance(allow, str) else allow
        deny = [deny] if isinstance(deny, str) else deny
        return [str(s).encode() for s in allow], [str(s).encode() for s in deny]
    raise ValueError(f"invalid permissions: {spec!r}")


class Permissions:
    def __init__(self, spec: dict):
        self.pub_allow, self.pub_deny = _lists(spec.get("publish"))
        self.sub_allow, self.sub_deny = _lists(spec.get("subscribe"))
        self._pub_cache: dict[bytes, bool] = {}

    def as_config(self) -> dict:
        """The permissions as nats-server shows them ($SYS.REQ.USER.INFO):
        both sides, each {allow, deny} with empty lists left out."""
        return {side: {k: [s.decode() for s in v] for k, v in (("allow", allow), ("deny", deny)) if v}
                for side, allow, deny in (("publish", self.pub_allow, self.pub_deny),
                                          ("subscribe", self.sub_allow, self.sub_deny))}

    def can_publish(self, subject: bytes) -> bool:
        ok = self._pub_cache.get(subject)
        if ok is None:
            ok = (not self.pub_allow or any(subject_matches(a, subject) or a == subject for a in self.pub_allow)) and not any(
                subject_matches(d, subject) or d == subject for d in self.pub_deny
            )
            if len(self._pub_cache) > 4096:
                self._pub_cache.clear()
            self._pub_cache[subject] = ok
        return ok

    def can_subscribe(self, subject: bytes) -> bool:
        if self.sub_allow and not any(is_subset(subject, a) for a in self.sub_allow):
            return False
        return not any(subjects_overlap(subject, d) and is_subset(subject, d) for d in self.sub_deny)


def violation(kind: str, subject: bytes) -> bytes:
    return b"-ERR 'Permissions Violation for " + kind.encode() + b' to "' + subject + b"\"'\r\n"
