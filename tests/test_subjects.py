"""The subject index against a brute-force matcher, with its caches in play."""

from __future__ import annotations

import random

from natslab.server.subjects import SubjectIndex, subject_matches, valid_subject


class Sub:
    def __init__(self, subject: bytes, queue: bytes | None):
        self.subject = subject
        self.queue = queue


def brute(subs: list[Sub], subject: bytes):
    if b"" in subject.split(b"."):
        return set(), set()
    hit = [s for s in subs if subject_matches(s.subject, subject) or s.subject == subject]
    return {id(s) for s in hit if s.queue is None}, {id(s) for s in hit if s.queue is not None}


def test_index_matches_brute_force_with_churn():
    rng = random.Random(5)
    firsts = [b"_INBOX", b"orders", b"$JS", b"*"]
    tokens = [b"a", b"b", b"new", b"*", b">"]
    ix = SubjectIndex()
    live: list[Sub] = []
    for _ in range(6000):
        r = rng.random()
        if r < 0.25 or not live:
            t = [rng.choice(firsts)] + [rng.choice(tokens) for _ in range(rng.randint(0, 3))]
            subj = b".".join(t)
            if valid_subject(subj):
                s = Sub(subj, rng.choice([None, None, b"q1", b"q2"]))
                ix.insert(s)
                live.append(s)
        elif r < 0.4:
            ix.remove(live.pop(rng.randrange(len(live))))
        subject = b".".join([rng.choice(firsts[:3])] + [rng.choice([b"a", b"b", b"new", b"x"]) for _ in range(rng.randint(0, 3))])
        psubs, qgroups = ix.match(subject)
        want_p, want_q = brute(live, subject)
        assert {id(s) for s in psubs} == want_p, subject
        assert {id(s) for g in qgroups for s in g} == want_q, subject
        for g in qgroups:  # one group per queue name
            assert len({s.queue for s in g}) == 1


def test_empty_tokens_match_nothing():
    ix = SubjectIndex()
    ix.insert(Sub(b">", None))
    ix.insert(Sub(b"_INBOX.>", None))
    for subject in (b"a..b", b"_INBOX..x", b"_INBOX.x.", b"a."):
        assert ix.match(subject) == ((), ())


def test_ack_subjects_match_brute_force_with_churn():
    # ack subjects are answered per "$JS.ACK.<stream>.<consumer>" prefix;
    # subscriptions on the tail tokens must still be honoured
    rng = random.Random(9)
    level = [[b"$JS", b"*", b">"], [b"ACK", b"*", b">"], [b"S", b"T", b"*", b">"], [b"C", b"D", b"*", b">"],
             [b"1", b"2", b"*", b">"], [b"5", b"*", b">"], [b"7", b"*", b">"]]
    ix = SubjectIndex()
    live: list[Sub] = []
    for _ in range(4000):
        r = rng.random()
        if r < 0.2 or not live:
            t = [rng.choice(level[i]) for i in range(rng.randint(1, len(level)))]
            subj = b".".join(t)
            if valid_subject(subj):
                s = Sub(subj, rng.choice([None, None, b"q1"]))
                ix.insert(s)
                live.append(s)
        elif r < 0.3:
            ix.remove(live.pop(rng.randrange(len(live))))
        tail = [rng.choice([b"1", b"2", b"5", b"7", b"9", b""]) for _ in range(rng.randint(0, 6))]
        subject = b".".join([b"$JS", b"ACK", rng.choice([b"S", b"T"]), rng.choice([b"C", b"D"])] + tail)
        psubs, qgroups = ix.match(subject)
        want_p, want_q = brute(live, subject)
        assert {id(s) for s in psubs} == want_p, subject
        assert {id(s) for g in qgroups for s in g} == want_q, subject
