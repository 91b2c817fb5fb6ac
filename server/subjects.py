"""Subjects: validation, matching, and the subscription index.

The index is a token trie (one level per subject token, with separate edges
for ``*`` and ``>``) plus a bounded cache of match results keyed by the
published subject. Publishing does a dict lookup on the hot path; the trie is
walked only on a cache miss. Subscribing or unsubscribing evicts just the
cached subjects the changed subscription matches.

Subjects and tokens are ``bytes`` in the index: the protocol parser hands
them over without decoding. The matchers (``subject_matches``,
``subjects_overlap``, ``is_subset``, ``is_literal``) are the server's only
ones, for bytes and for JetStream's str subjects alike.
"""

from __future__ import annotations

from functools import lru_cache

PWC = b"*"
FWC = b">"
CACHE_MAX = 4096


def valid_subject(subject: bytes, wildcards: bool = True) -> bool:
    """Subscription rules (``wildcards``) or pedantic publish rules.

    Tokens are non-empty; ``>`` only as the last token. ``*``/``>`` are
    wildcards only as whole tokens (``foo.*bar`` is a literal)."""
    if not subject:
        return False
    tokens = subject.split(b".")
    last = len(tokens) - 1
    for i, t in enumerate(tokens):
        if not t:
            return False
        if t == FWC:
            if not wildcards or i != last:
                return False
        elif t == PWC and not wildcards:
            return False
    return True


def valid_literal_subject(subject: bytes | str) -> bool:
    if isinstance(subject, str):
        subject = subject.encode()
    return valid_subject(subject, wildcards=False) and b" " not in subject and b"\t" not in subject


# The matchers below take subjects as bytes (the core: the parser's, the
# permissions') or as str (JetStream's configured subjects and filters),
# both arguments of one type; a subject's tokens are cached either way.
_KINDS = {bytes: (b".", PWC, FWC), str: (".", "*", ">")}


@lru_cache(maxsize=8192)
def _tokens(subject: bytes | str) -> tuple:
    return tuple(subject.split(_KINDS[subject.__class__][0]))


def valid_config_subject(subject: str) -> bool:
    """A subject JetStream takes in a configuration or a filter: no white
    space, no empty token, ``>`` last only."""
    if not subject or any(c in subject for c in " \t\r\n"):
        return False
    toks = subject.split(".")
    for i, t in enumerate(toks):
        if not t:
            return False
        if t == ">" and i != len(toks) - 1:
            return False
    return True


def is_literal(subject: bytes | str) -> bool:
    _, pwc, fwc = _KINDS[subject.__class__]
    if pwc not in subject and fwc not in subject:
        return True  # the common case, without splitting
    return not any(t == pwc or t == fwc for t in _tokens(subject))


def subject_matches(pattern: bytes | str, subject: bytes | str) -> bool:
    """Does a literal ``subject`` match ``pattern`` (which may hold wildcards)?"""
    if pattern == subject:
        return True
    _, pwc, fwc = _KINDS[pattern.__class__]
    if pattern == fwc:
        return True
    pt = _tokens(pattern)
    st = _tokens(subject)
    for i, p in enumerate(pt):
        if p == fwc:
            return len(st) > i
        if i >= len(st):
            return False
        if p != pwc and p != st[i]:
            return False
    return len(pt) == len(st)


def subjects_overlap(a: bytes | str, b: bytes | str) -> bool:
    """Could some literal subject match both patterns?"""
    _, pwc, fwc = _KINDS[a.__class__]
    at = _tokens(a)
    bt = _tokens(b)
    for i in range(min(len(at), len(bt))):
        x, y = at[i], bt[i]
        if x == fwc or y == fwc:
            return True
        if x != y and x != pwc and y != pwc:
            return False
    return len(at) == len(bt)


def is_subset(sub: bytes | str, sup: bytes | str) -> bool:
    """Is every subject matched by ``sub`` also matched by ``sup``?"""
    _, pwc, fwc = _KINDS[sub.__class__]
    st = _tokens(sub)
    pt = _tokens(sup)
    for i, p in enumerate(pt):
        if p == fwc:
            return len(st) > i
        if i >= len(st):
            return False
        s = st[i]
        if s == fwc:
            return False
        if p == pwc:
            continue
        if s == pwc or s != p:
            return False
    return len(st) == len(pt)


class _Node:
    __slots__ = ("nodes", "pwc", "fwc", "psubs", "qsubs")

    def __init__(self) -> None:
        self.nodes: dict[bytes, _Node] = {}
        self.pwc: _Node | None = None
        self.fwc: _Node | None = None
        self.psubs: list = []
        self.qsubs: dict[bytes, list] = {}

    def empty(self) -> bool:
        return not (self.nodes or self.pwc or self.fwc or self.psubs or self.qsubs)


EMPTY_RESULT: tuple[tuple, tuple] = ((), ())


class SubjectIndex:
    """Subscriptions by subject. A subscription is any object with ``subject``
    (bytes) and ``queue`` (bytes or None) attributes.

    ``match(subject)`` returns ``(plain_subs, queue_groups)``: a tuple of
    subscriptions and a tuple of per-group tuples. Results are immutable
    snapshots, so callers may iterate while subscriptions change."""

    def __init__(self) -> None:
        self.root = _Node()
        self.cache: dict[bytes, tuple[tuple, tuple]] = {}
        # "_INBOX.<...>" prefix -> (result for any last token, last tokens that need a walk)
        self.prefix_cache: dict[bytes, tuple[tuple[tuple, tuple], frozenset]] = {}
        # prefix -> what "<prefix>.<one or more tokens>" matches whatever the
        # tokens, or None when some subscription names them (see tail_match)
        self.tail_cache: dict[bytes, tuple[tuple, tuple] | None] = {}
        # subjects starting with a key are matched by their first n tokens
        # (see match_by_prefix) and not cached one by one
        self.by_prefix: dict[bytes, int] = {}
        self.count = 0
        self.inserts = 0
        self.removes = 0
        # changes with every insert and removal (and route_by_prefix): what
        # was derived from a match (the parser's control-line cache) holds
        # while it stays the same
        self.gen = 0
        self.misses = 0  # trie walks; hits are the router's lookups minus these
        self.lookups = lambda: self.misses  # the server points this at its routed-message count

    @property
    def matches(self) -> int:
        return max(self.lookups(), self.misses)

    @property
    def cache_hits(self) -> int:
        return self.matches - self.misses

    # -- changes -----------------------------------------------------------
    def insert(self, sub) -> None:
        node = self.root
        for t in sub.subject.split(b"."):
            if t == PWC:
                if node.pwc is None:
                    node.pwc = _Node()
                node = node.pwc
            elif t == FWC:
                if node.fwc is None:
                    node.fwc = _Node()
                node = node.fwc
            else:
                nxt = node.nodes.get(t)
                if nxt is None:
                    nxt = node.nodes[t] = _Node()
                node = nxt
        if sub.queue is None:
            node.psubs.append(sub)
        else:
            node.qsubs.setdefault(sub.queue, []).append(sub)
        self.count += 1
        self.inserts += 1
        self.gen += 1
        self._evict(sub.subject)

    def remove(self, sub) -> bool:
        path: list[tuple[_Node, bytes]] = []
        node = self.root
        for t in sub.subject.split(b"."):
            if t == PWC:
                nxt = node.pwc
            elif t == FWC:
                nxt = node.fwc
            else:
                nxt = node.nodes.get(t)
            if nxt is None:
                return False
            path.append((node, t))
            node = nxt
        try:
            if sub.queue is None:
                node.psubs.remove(sub)
            else:
                group = node.qsubs[sub.queue]
                group.remove(sub)
                if not group:
                    del node.qsubs[sub.queue]
        except (ValueError, KeyError):
            return False
        # prune empty nodes so long-running brokers do not accumulate tries
        for parent, t in reversed(path):
            if not node.empty():
                break
            if t == PWC:
                parent.pwc = None
            elif t == FWC:
                parent.fwc = None
            else:
                del parent.nodes[t]
            node = parent
        self.count -= 1
        self.removes += 1
        self.gen += 1
        self._evict(sub.subject)
        return True

    def _evict(self, pattern: bytes) -> None:
        self.prefix_cache.clear()
        self.tail_cache.clear()
        cache = self.cache
        if not cache:
            return
        if is_literal(pattern):
            cache.pop(pattern, None)
            return
        stale = [s for s in cache if subject_matches(pattern, s)]
        for s in stale:
            del cache[s]

    # -- lookups -----------------------------------------------------------
    def match(self, subject: bytes) -> tuple[tuple, tuple]:
        """Subscriptions matching a literal subject. The router reads
        ``cache`` directly first and calls this only on a miss."""
        self.misses += 1
        r = self.cache.get(subject)
        if r is not None:
            return r
        return self._match_uncached(subject)

    def match_miss(self, subject: bytes) -> tuple[tuple, tuple]:
        """``match`` for the router, which has just missed ``cache`` itself."""
        self.misses += 1
        if subject.startswith(b"_INBOX."):  # (a reply, mostly: one call less for it)
            return self._match_inbox(subject)
        return self._match_uncached(subject)

    # a reply subject (a PubAck's) is matched as the router matches a miss
    # (mostly an inbox, whose prefix is looked up)
    match_reply = match_miss

    def reply_matcher(self):
        """``match_reply`` with a memory, for the server's answers (PubAcks,
        direct gets), which mostly go to one client's inbox prefix: while the
        index stays as it is, a reply under the same prefix as the last one
        gets that prefix's entry straight away, which is what _match_inbox
        would find again."""
        cache_get = self.cache.get
        prefixes = self.prefix_cache
        pfx = generic = lit = None
        plen = gen = -2  # (rfind gives -1 at least: nothing matches before a first entry)

        def match(r: bytes) -> tuple[tuple, tuple]:
            nonlocal pfx, plen, generic, lit, gen
            dot = r.rfind(b".")
            if (dot == plen and r.startswith(pfx) and dot + 1 < len(r) and r[dot + 1 :] not in lit
                    and self.inserts + self.removes == gen):
                return generic
            m = cache_get(r)
            if m is None:
                m = self.match_reply(r)
                e = prefixes.get(r[:dot]) if r.startswith(b"_INBOX.") else None
                if e is not None:
                    pfx, plen = r[:dot], dot
                    generic, lit = e
                    gen = self.inserts + self.removes
            return m

        return match

    def _match_uncached(self, subject: bytes) -> tuple[tuple, tuple]:
        if subject.startswith(b"_INBOX."):
            # reply inboxes are mostly one-off; answer them from a cache keyed
            # by all but the last token, without churning the main cache
            return self._match_inbox(subject)
        if self.by_prefix:
            for start, ntok in self.by_prefix.items():
                if subject.startswith(start):
                    return self._match_by_prefix(subject, ntok)
        r = self._walk(subject)
        if len(self.cache) >= CACHE_MAX:
            # drop the oldest half; dicts keep insertion order
            for s in list(self.cache)[: CACHE_MAX // 2]:
                del self.cache[s]
        self.cache[subject] = r
        return r

    def _walk(self, subject: bytes) -> tuple[tuple, tuple]:
        psubs: list = []
        qgroups: dict[bytes, list] = {}
        tokens = subject.split(b".")
        if b"" not in tokens:  # a subject with an empty token matches nothing
            _collect(self.root, tokens, 0, psubs, qgroups)
        return _result(psubs, qgroups)

    def route_by_prefix(self, start: bytes, tokens: int) -> None:
        """Subjects beginning with ``start`` are one-off (a consumer's ack
        subjects carry sequence numbers: each is seen once, and caching them
        would only push useful entries out): match them by their first
        ``tokens`` tokens instead, while what follows does not matter."""
        self.by_prefix[start] = tokens
        self.cache.clear()
        self.gen += 1

    def _match_by_prefix(self, subject: bytes, tokens: int) -> tuple[tuple, tuple]:
        j = -1
        for _ in range(tokens):
            j = subject.find(b".", j + 1)
            if j < 0:
                return self._walk(subject)
        if subject.find(b"..") >= 0 or subject[-1:] == b"." or subject[j - 1 : j] == b".":
            return self._walk(subject)
        r = self.tail_match(subject[:j])
        return self._walk(subject) if r is None else r

    def tail_match(self, prefix: bytes) -> tuple[tuple, tuple] | None:
        """What ``prefix.<one or more tokens>`` matches whatever the tokens,
        or None when that depends on them; kept until the index changes."""
        cache = self.tail_cache
        if prefix in cache:
            return cache[prefix]
        r = self._tail_entry(prefix)
        if len(cache) >= CACHE_MAX:
            cache.clear()
        cache[prefix] = r
        return r

    def _tail_entry(self, prefix: bytes) -> tuple[tuple, tuple] | None:
        """What ``prefix.<one or more tokens>`` matches whatever the tokens,
        or None when that depends on them (a subscription below the prefix
        other than ``prefix.>``)."""
        psubs: list = []
        qgroups: dict[bytes, list] = {}
        frontier: list[_Node] = []
        _walk_prefix(self.root, prefix.split(b"."), 0, psubs, qgroups, frontier)
        for node in frontier:
            if node.nodes or node.pwc is not None:
                return None
            if node.fwc is not None:
                _add(node.fwc, psubs, qgroups)
        return _result(psubs, qgroups)

    def _match_inbox(self, subject: bytes) -> tuple[tuple, tuple]:
        dot = subject.rfind(b".")
        last = subject[dot + 1 :]
        if not last or subject.find(b"..") >= 0:
            return EMPTY_RESULT
        prefix = subject[:dot]
        entry = self.prefix_cache.get(prefix)
        if entry is None:
            entry = self._prefix_entry(prefix)
        generic, literal_last = entry
        if last not in literal_last:
            return generic
        # some subscription names this last token: walk the whole trie
        psubs: list = []
        qgroups: dict[bytes, list] = {}
        _collect(self.root, subject.split(b"."), 0, psubs, qgroups)
        return _result(psubs, qgroups)

    def _prefix_entry(self, prefix: bytes) -> tuple[tuple[tuple, tuple], frozenset]:
        """What ``prefix.<any token>`` matches, and the last tokens for
        which that is not the whole answer."""
        psubs: list = []
        qgroups: dict[bytes, list] = {}
        frontier: list[_Node] = []
        _walk_prefix(self.root, prefix.split(b"."), 0, psubs, qgroups, frontier)
        literal_last: set[bytes] = set()
        for node in frontier:
            if node.fwc is not None:
                _add(node.fwc, psubs, qgroups)
            if node.pwc is not None:
                _add(node.pwc, psubs, qgroups)
            literal_last.update(node.nodes)
        entry = (_result(psubs, qgroups), frozenset(literal_last))
        if len(self.prefix_cache) >= CACHE_MAX:
            self.prefix_cache.clear()
        self.prefix_cache[prefix] = entry
        return entry

    def all(self) -> list:
        out: list = []
        stack = [self.root]
        while stack:
            n = stack.pop()
            out.extend(n.psubs)
            for g in n.qsubs.values():
                out.extend(g)
            stack.extend(n.nodes.values())
            if n.pwc:
                stack.append(n.pwc)
            if n.fwc:
                stack.append(n.fwc)
        return out


def _collect(node: _Node, tokens: list[bytes], i: int, psubs: list, qgroups: dict) -> None:
    """Add the subscriptions of ``node``'s subtree that match ``tokens[i:]``.

    A loop, not a recursion, so a subject of any depth can be matched (a
    subscription of a thousand ``*`` went past Python's recursion limit).
    Where a node has both a ``*`` edge and the literal token, the ``*`` side
    is walked first and the literal one put off on a stack: the order
    subscriptions are found in is the depth-first one."""
    n = len(tokens)
    later = None  # (node, tokens consumed) put off while a '*' branch is walked
    while True:
        if node.fwc is not None:
            _add(node.fwc, psubs, qgroups)
        nxt = node.nodes.get(tokens[i])
        i += 1
        if node.pwc is not None:
            if nxt is not None:
                if later is None:
                    later = []
                later.append((nxt, i))
            node = node.pwc
        elif nxt is not None:
            node = nxt
        elif later:
            node, i = later.pop()
        else:
            return
        while i == n:  # the subject ends at node
            _add(node, psubs, qgroups)
            if not later:
                return
            node, i = later.pop()


def _walk_prefix(node: _Node, tokens: list[bytes], i: int, psubs: list, qgroups: dict, frontier: list) -> None:
    """Like ``_collect`` for a subject that has one more token after
    ``tokens``: full-wildcard matches go to psubs/qgroups, and the nodes
    reached after the last of ``tokens`` go to ``frontier`` (a loop too, in
    the same depth-first order)."""
    n = len(tokens)
    later: list[tuple[_Node, int]] = []
    while True:
        if i == n:
            frontier.append(node)
            if not later:
                return
            node, i = later.pop()
            continue
        if node.fwc is not None:
            _add(node.fwc, psubs, qgroups)
        nxt = node.nodes.get(tokens[i])
        i += 1
        if node.pwc is not None:
            if nxt is not None:
                later.append((nxt, i))
            node = node.pwc
        elif nxt is not None:
            node = nxt
        elif later:
            node, i = later.pop()
        else:
            return


def _result(psubs: list, qgroups: dict) -> tuple[tuple, tuple]:
    if qgroups:
        return (tuple(psubs), tuple(map(tuple, qgroups.values())))
    if psubs:
        return (tuple(psubs), ())
    return EMPTY_RESULT


def _add(node: _Node, psubs: list, qgroups: dict) -> None:
    if node.psubs:
        psubs.extend(node.psubs)
    if node.qsubs:
        for q, g in node.qsubs.items():
            qgroups.setdefault(q, []).extend(g)
