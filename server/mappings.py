"""Subject mappings (the ``mappings {}`` block, at the top of a file for the
global account or in an account of ``accounts {}``), as nats-server's
``Account.AddWeightedMappings`` / ``selectMappedSubject``: a client's
publish whose subject matches a mapping's source goes on under one of its
destinations, chosen by weight (a destination is a subject transform, so
``$1``, ``{{wildcard(1)}}``, ``{{partition(...)}}``... work as in streams).
Weights below 100 in all leave the rest to the source subject itself,
unless the source is one of the destinations (then the rest is lost).
The mapped subject is what the publish permissions are checked against and
what is routed; messages the server makes itself are not mapped.
``cluster`` scoped destinations are kept apart and never chosen (a single
node is in no cluster), as nats-server falls back to the others."""

from __future__ import annotations

import random

from .conf import ConfigError, ConfMap, go_type, item_where
from .transform import MappingError, SubjectTransform, _is_subset_match, is_valid_subject


class Mapping:
    __slots__ = ("src", "wild", "dests")

    def __init__(self, src: str, wild: bool, dests: list[tuple[SubjectTransform, int]]):
        self.src, self.wild, self.dests = src, wild, dests  # dests: (transform, cumulative weight)


class Mappings:
    """An account's mappings, in the order they were given."""

    def __init__(self) -> None:
        self.mappings: list[Mapping] = []

    def add(self, src: str, dests: list[tuple[str, int, str]]) -> None:
        """AddWeightedMappings: ``dests`` are (subject, weight, cluster);
        MappingError/ValueError with nats-server's text when refused."""
        if not is_valid_subject(src):
            raise ValueError("invalid subject")
        wild = any(t in ("*", ">") for t in src.split("."))
        seen: set[str] = set()
        total: dict[str, int] = {}
        local: list[tuple[SubjectTransform, int]] = []
        for subject, weight, cluster in dests:
            if subject in seen:
                raise ValueError(f'duplicate entry for "{subject}"')
            seen.add(subject)
            if weight > 100:
                raise ValueError("individual weights need to be <= 100")
            total[cluster] = total.get(cluster, 0) + weight
            if total[cluster] > 100:
                raise ValueError("total weight needs to be <= 100")
            tr = SubjectTransform(src, subject)
            if not cluster:
                local.append((tr, weight))
        weights = sum(w for _, w in local)
        if weights != 100 and src not in seen:  # the rest goes to the subject as it was
            n = 0
            toks = []
            for t in src.split("."):
                if t == "*":
                    n += 1
                    t = f"${n}"
                toks.append(t)
            local.append((SubjectTransform(src, ".".join(toks)), 100 - weights if local else 100))
        local.sort(key=lambda d: d[1])  # (a stable sort, as Go's slices.SortFunc is not: equal weights may differ)
        cumulative, acc = [], 0
        for tr, w in local:
            acc += w
            cumulative.append((tr, acc))
        m = Mapping(src, wild, cumulative)
        for i, old in enumerate(self.mappings):
            if old.src == src:
                self.mappings[i] = m
                return
        self.mappings.append(m)

    def select(self, subject: bytes) -> bytes:
        """The subject a client's publish on ``subject`` goes on under (it
        as it is when no mapping matches; empty when the mapping's weights
        chose none: the message is lost)."""
        s = subject.decode(errors="surrogateescape")
        toks = None
        for m in self.mappings:
            if not m.wild:
                if m.src == s:
                    break
                continue
            if toks is None:
                toks = s.split(".")
            if _is_subset_match(toks, m.src.split(".")):
                break
        else:
            return subject
        dests = m.dests
        if len(dests) == 1 and dests[0][1] == 100:
            tr = dests[0][0]
        else:
            w = random.randrange(100)
            tr = next((tr for tr, cum in dests if w < cum), None)
            if tr is None:
                return b""
        return tr.transform_tokens(toks if toks is not None else s.split(".")).encode(errors="surrogateescape")


def parse(block, where=None, at: str = "") -> Mappings:
    """A ``mappings {}`` block (nats-server's parseAccountMappings and
    parseAccountMapDest); ConfigError listing every problem, each at its
    place when ``where`` (a key's ``file:line:col``) is given: a source's at
    the block's own key (``at``), a destination's at its source's key or in
    its entry."""
    if not isinstance(block, dict):
        raise ConfigError("Expected map entries for mappings")
    out = Mappings()
    problems: list[str] = []

    def problem(key: str, what: str) -> None:
        problems.append(f"{where(block, key)}: {what}" if where else what)

    for src, value in block.items():
        if not is_valid_subject(src):
            problems.append(f"{at}: Subject \"{src}\" is not a valid subject" if at else
                            f'Subject "{src}" is not a valid subject')
            continue
        if isinstance(value, str):
            try:
                out.add(src, [(value, 100, "")])
            except (MappingError, ValueError) as e:
                problem(src, f'Error adding mapping for "{src}" to "{value}" : {e}')
            continue
        entries = value if isinstance(value, list) else [value]
        dests = []
        bad = False
        for i, entry in enumerate(entries):
            try:
                dests.append(_dest(entry))
            except _EntryProblem as e:
                if where and isinstance(entry, ConfMap):  # at the entry's key, or at the entry (its end)
                    line, col = entry.pos.get(e.key, (0, 0)) if e.key else entry.end
                    problems.append(f"{entry.file or where(block, src).rsplit(':', 2)[0]}:{line}:{col}: {e}")
                elif where:  # (nats-server: at the element)
                    problems.append(f"{item_where(entries, i, where(block, src))}: {e}")
                else:
                    problems.append(str(e))
                bad = True
        if bad and not dests and not isinstance(value, list):
            continue
        try:
            out.add(src, dests)
        except (MappingError, ValueError) as e:
            problem(src, f'Error adding mapping for "{src}" : {e}')
    if problems:
        raise ConfigError("\n".join(problems))
    return out


class _EntryProblem(ValueError):
    """What is wrong with a destination entry, in nats-server's words; at
    the entry's key ``key``, or at the entry itself ("")."""

    def __init__(self, key: str, what: str):
        super().__init__(what)
        self.key = key


def _problem(key: str, what: str) -> None:
    raise _EntryProblem(key, what)


def _dest(entry) -> tuple[str, int, str]:
    """One weighted destination (subject, weight, cluster); _EntryProblem
    when nats-server refuses it."""
    if not isinstance(entry, dict):
        _problem("", "Expected an entry for the mapping destination")
    subject, weight, cluster = "", None, ""
    for k, v in entry.items():
        key = k.lower()
        if key in ("dest", "destination"):
            if not isinstance(v, str):  # (dmv.(string): nats-server's panic, at the entry)
                _problem("", f"interface conversion: interface {{}} is {go_type(v)}, not string")
            subject = v
        elif key == "weight":
            if isinstance(v, str):
                ws = v.removesuffix("%")
                try:
                    weight = int(ws, 10) if ws.lstrip("+-").isdigit() else int("x")
                except ValueError:
                    _problem(k, f'Invalid weight "{ws}" for mapping destination')
            elif isinstance(v, int) and not isinstance(v, bool):
                weight = v
            else:
                _problem(k, f"Unknown entry type for weight of {v}\n")
            if weight > 100 or weight < 0:
                _problem(k, f"Invalid weight {weight} for mapping destination")
        elif key == "cluster":
            cluster = str(v)
        else:
            _problem(k, f'Unknown field "{k}" for mapping destination')
    if weight is None:
        _problem("", f'Missing weight for mapping destination "{subject}"')
    return subject, weight, cluster
