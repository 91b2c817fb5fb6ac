"""Per-user publish/subscribe permissions from the ``authorization`` block.

nats-server's forms are accepted: a subject, a list of subjects, or
``{allow: [...], deny: [...]}`` for each of ``publish`` and ``subscribe``
(a subscribe entry may name a queue group: ``"subject queue"``), and
``allow_responses`` (``publish_allow_responses``): true, or
``{max, expires}``. A denied PUB is dropped and a denied SUB refused, each
with ``-ERR 'Permissions Violation for ...'``; the connection stays up.

As in nats-server (client.go ``canSubscribe``, ``checkDenySub``), a
subscribe deny does not refuse a wider wildcard subscription over it (``>``
over a denied ``secret.>``): the SUB is taken and the denied subjects are
filtered out at delivery. The filter is switched on (``filtering``) by the
first wildcard or queue subscription that could collide with a deny entry;
until then, and for a client without deny entries, delivery checks nothing.

``allow_responses`` (client.go ``replies``, ``responseAllowed``,
``pruneReplyPerms``): a client may publish to the reply subject of a
message delivered to it, ``max`` times (default 1, negative: no limit)
within ``expires`` (default 2m, negative: forever). Without a publish allow
list, allow_responses makes it an empty one: only responses may be
published.
"""

from __future__ import annotations

import time

from .subjects import is_subset, subject_matches, subjects_overlap

DEFAULT_RESPONSE_MAX = 1
DEFAULT_RESPONSE_EXPIRES = 120.0
_REPLY_PRUNE_COUNT = 4096  # nats-server's replyPermLimit
_REPLY_PRUNE_TIME = 1.0  # replyPruneTime
_DENY_CACHE_MAX = 4096  # maxDenyPermCacheSize
_KEYS = {"publish": "publish", "pub": "publish", "import": "publish",
         "subscribe": "subscribe", "sub": "subscribe", "export": "subscribe",
         "allow_responses": "responses", "publish_allow_responses": "responses"}


def _entries(v) -> list:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def _lists(spec) -> tuple[list[bytes] | None, list[bytes]]:
    """(allow or None when not given, deny) of one side."""
    if spec is None:
        return None, []
    if isinstance(spec, (str, list)):
        return [str(s).encode() for s in _entries(spec)], []
    if isinstance(spec, dict):
        low = {str(k).lower(): v for k, v in spec.items()}
        allow = low.get("allow")
        allow = None if allow is None else [str(s).encode() for s in _entries(allow)]
        return allow, [str(s).encode() for s in _entries(low.get("deny"))]
    raise ValueError(f"invalid permissions: {spec!r}")


def _split_queue(entry: bytes) -> tuple[bytes, bytes | None]:
    """A subscribe entry as nats-server's splitSubjectQueue reads it."""
    parts = entry.split()
    if len(parts) == 2:
        return parts[0], parts[1]
    return entry.strip(), None


def _duration(v) -> float:
    """An allow_responses ``expires``: a Go duration string (negative: forever)."""
    if not isinstance(v, str):
        raise ValueError("error parsing expires, not a duration string")
    from .conf import ConfigError, go_duration

    try:
        return go_duration(v)  # (Go's time.ParseDuration, as nats-server reads it)
    except ConfigError as e:
        raise ValueError(f"error parsing expires: {e}") from None


def _responses(v) -> tuple[int, float] | None:
    """(max messages, expires in seconds) of allow_responses, or None."""
    if v is None or v is False:
        return None
    if v is True:
        return DEFAULT_RESPONSE_MAX, DEFAULT_RESPONSE_EXPIRES
    if not isinstance(v, dict):
        raise ValueError("error parsing response permissions, expected a boolean or a map")
    mx, exp = DEFAULT_RESPONSE_MAX, DEFAULT_RESPONSE_EXPIRES
    for k, x in v.items():
        key = str(k).lower()
        if key in ("max", "max_msgs", "max_messages", "max_responses"):
            if not isinstance(x, int) or isinstance(x, bool):
                raise ValueError(f'error parsing response permissions: "{k}" is not an integer')
            if x != 0:
                mx = x
        elif key in ("expires", "expiration", "ttl"):
            d = _duration(x)
            if d != 0:
                exp = d
        else:
            raise ValueError(f'Unknown field "{k}" parsing permissions')
    return mx, exp


def _queue_matches(queue: bytes, qnames: list[bytes]) -> bool:
    """nats-server's queueMatches over the queue names of matched entries."""
    if not qnames:
        return True
    for q in qnames:
        if queue == q or ((b"*" in q or b">" in q) and is_subset(queue, q)):
            return True
    return False


def _match(entries: list[tuple[bytes, bytes | None]], subject: bytes) -> tuple[bool, list[bytes]]:
    """Sublist.Match of ``subject`` (its tokens taken literally, as
    nats-server matches a SUB's subject against its permission lists) over
    (subject, queue) entries: any plain entry matched, and the queue names
    of the queue entries matched."""
    plain = False
    queues = []
    for pattern, q in entries:
        if pattern == subject or subject_matches(pattern, subject):
            if q is None:
                plain = True
            else:
                queues.append(q)
    return plain, queues


class Permissions:
    def __init__(self, spec: dict):
        spec = {_KEYS.get(str(k).lower(), str(k).lower()): v for k, v in spec.items()}
        self.responses = _responses(spec.get("responses"))
        allow, self.pub_deny = _lists(spec.get("publish"))
        if allow is None and self.responses is not None:
            allow = []  # allow_responses turns off the blanket allow (nats-server's parse)
        self.pub_allow = allow or []
        self._pub_all = allow is None  # no allow list: everything not denied
        sub_allow, self.sub_deny = _lists(spec.get("subscribe"))
        self.sub_allow = sub_allow or []
        self._sub_allow = [_split_queue(s) for s in self.sub_allow] if sub_allow else None
        self._sub_deny = [_split_queue(s) for s in self.sub_deny]
        self._pub_cache: dict[bytes, bool] = {}
        # the delivery-time deny filter (nats-server's mperms), on once needed
        self.filtering = False
        self._deny_cache: dict[tuple, bool] = {}
        # reply subjects this client may answer: reply -> [time received, answers]
        self.replies: dict[bytes, list] = {}
        self._replies_since_prune = 0
        self._last_prune = time.monotonic()

    def as_config(self) -> dict:
        """The permissions as nats-server shows them ($SYS.REQ.USER.INFO):
        both sides, each {allow, deny} with empty lists left out, and
        allow_responses as {max, ttl} (ttl in nanoseconds)."""
        out = {side: {k: [s.decode() for s in v] for k, v in (("allow", allow), ("deny", deny)) if v}
               for side, allow, deny in (("publish", self.pub_allow, self.pub_deny),
                                         ("subscribe", self.sub_allow, self.sub_deny))}
        if self.responses is not None:
            mx, exp = self.responses
            out["responses"] = {"max": mx, "ttl": int(exp * 1e9) if exp > 0 else int(exp)}
        return out

    @property
    def gates_delivery(self) -> bool:
        """Must deliveries to this client pass ``admit``?"""
        return self.filtering or self.responses is not None

    def _static_publish(self, subject: bytes) -> bool:
        ok = self._pub_cache.get(subject)
        if ok is None:
            ok = (self._pub_all or any(subject_matches(a, subject) or a == subject for a in self.pub_allow)) and not any(
                subject_matches(d, subject) or d == subject for d in self.pub_deny
            )
            if len(self._pub_cache) > 4096:
                self._pub_cache.clear()
            self._pub_cache[subject] = ok
        return ok

    def can_publish(self, subject: bytes) -> bool:
        if self._static_publish(subject):
            return True
        return self.responses is not None and self._response_allowed(subject)

    def _response_allowed(self, subject: bytes) -> bool:
        """client.go responseAllowed: a reply subject received, within its
        count and time (each call is an answer and counts)."""
        r = self.replies.get(subject)
        if r is None:
            return False
        r[1] += 1
        mx, exp = self.responses
        if mx > 0 and r[1] > mx:
            del self.replies[subject]
        elif exp > 0 and time.monotonic() - r[0] > exp:
            del self.replies[subject]
        else:
            return True
        return False

    def _note_reply(self, reply: bytes) -> None:
        """deliverMsg: a delivered message's reply subject becomes publishable."""
        if self._static_publish(reply):
            return
        now = time.monotonic()
        self.replies[reply] = [now, 0]
        self._replies_since_prune += 1
        if self._replies_since_prune > _REPLY_PRUNE_COUNT or now - self._last_prune > _REPLY_PRUNE_TIME:
            mx, exp = self.responses
            for k, r in list(self.replies.items()):
                if (mx > 0 and r[1] >= mx) or (exp > 0 and now - r[0] > exp):
                    del self.replies[k]
            self._replies_since_prune = 0
            self._last_prune = now

    def can_subscribe(self, subject: bytes, queue: bytes | None = None) -> bool:
        """client.go canSubscribe: the allow list, then the deny list (its
        queue entries only for a queue subscription), and the delivery
        filter switched on when this subscription could collide with a deny
        entry."""
        allowed = True
        if self._sub_allow is not None:
            plain, queues = _match(self._sub_allow, subject)
            allowed = plain
            if queue and queues:
                allowed = _queue_matches(queue, queues)
        if allowed and self._sub_deny:
            plain, queues = _match(self._sub_deny, subject)
            allowed = not plain
            if allowed and queue and queues:
                allowed = not _queue_matches(queue, queues)
        if allowed and not self.filtering and (queue or b"*" in subject or b">" in subject):
            if any(subjects_overlap(d, subject) for d, _ in self._sub_deny):
                self.filtering = True
        return allowed

    def denies(self, subject: bytes, queue: bytes | None) -> bool:
        """checkDenySub: is a delivery of ``subject`` (to a subscription of
        ``queue``) filtered out?"""
        key = (subject, queue)
        d = self._deny_cache.get(key)
        if d is None:
            plain, queues = _match(self._sub_deny, subject)
            d = plain or bool(queue and queues and _queue_matches(queue, queues))
            if len(self._deny_cache) > _DENY_CACHE_MAX:
                self._deny_cache.clear()
            self._deny_cache[key] = d
        return d

    def admit(self, queue: bytes | None, msgs):
        """The (subject, reply, hdr, payload) messages of a delivery that
        pass the deny filter, with their replies noted for allow_responses
        (``msgs`` itself when all pass)."""
        if self.filtering:
            denies = self.denies
            if any(denies(m[0], queue) for m in msgs):
                msgs = [m for m in msgs if not denies(m[0], queue)]
        if self.responses is not None:
            for m in msgs:
                if m[1]:
                    self._note_reply(m[1])
        return msgs


def violation(kind: str, subject: bytes, queue: bytes | None = None) -> bytes:
    using = b' using queue "' + queue + b'"' if queue else b""
    return b"-ERR 'Permissions Violation for " + kind.encode() + b' to "' + subject + b'"' + using + b"'\r\n"
