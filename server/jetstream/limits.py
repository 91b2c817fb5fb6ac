"""An account's JetStream limits: what an ``accounts { A { jetstream {...} } }``
block sets, and the checks nats-server makes against them.

The keys, their aliases and value types are nats-server 2.15's
(``parseJetStreamForAccount``); -1 is "no limit". The checks are its own, in
its order: a stream's config against the per-stream byte limits
(``checkStreamCfg``: 10113, 10122), a new stream against the stream count
and the account's reserved bytes (``jsNonClusteredStreamLimitsCheck``:
10027, 10026, 10028/10047), an update against the reserved bytes it adds,
a new consumer against the consumer count (10026) and ``max_ack_pending``
(its default and 10121), and each stored message against the account's
memory or file total (10002). Config files make no tiers: the limits are
the account's one flat set, shown under ``limits`` in ``$JS.API.INFO``.

The server's own ``jetstream { max_mem, max_file }``, when configured, is
checked too, across every account (``checkServer``): the streams' reserved
bytes on create and update (10028/10047), the stored bytes on publish
(10023, once over), and an account's limits when its JetStream starts
(``sufficientResources``: limits that do not fit stop the start-up).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from . import errors

if TYPE_CHECKING:
    from .jetstream import JetStream

class LimitsConfigError(ValueError):
    """A value nats-server's parser refuses (its message)."""


@dataclass
class AccountLimits:
    """nats-server's JetStreamAccountLimits, field for field (JSON order)."""

    max_memory: int = -1
    max_storage: int = -1
    max_streams: int = -1
    max_consumers: int = -1
    max_ack_pending: int = -1
    memory_max_stream_bytes: int = -1
    storage_max_stream_bytes: int = -1
    max_bytes_required: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


# the block's keys (lower case) -> field, and whether the value is a bool
_KEYS = {
    **dict.fromkeys(("max_memory", "max_mem", "mem", "memory"), "max_memory"),
    **dict.fromkeys(("max_store", "max_file", "max_disk", "store", "disk"), "max_storage"),
    **dict.fromkeys(("max_streams", "streams"), "max_streams"),
    **dict.fromkeys(("max_consumers", "consumers"), "max_consumers"),
    **dict.fromkeys(("max_bytes_required", "max_stream_bytes", "max_bytes"), "max_bytes_required"),
    **dict.fromkeys(("mem_max_stream_bytes", "memory_max_stream_bytes"), "memory_max_stream_bytes"),
    **dict.fromkeys(("disk_max_stream_bytes", "store_max_stream_bytes"), "storage_max_stream_bytes"),
    "max_ack_pending": "max_ack_pending",
}


def parse(value) -> AccountLimits | None:
    """An account's ``jetstream`` value: ``None`` (JetStream disabled) or its
    limits. Raises LimitsConfigError with nats-server's message; an unknown
    key is nats-server's ``unknown field``."""
    if isinstance(value, bool):
        return AccountLimits() if value else None
    if isinstance(value, str):
        v = value.lower()
        if v in ("enabled", "enable"):
            return AccountLimits()
        if v in ("disabled", "disable"):
            return None
        raise LimitsConfigError(f"Expected 'enabled' or 'disabled' for string value, got '{value}'")
    if not isinstance(value, dict):
        raise LimitsConfigError(f"Expected map, bool or string to define JetStream, got {type(value).__name__}")
    lim = AccountLimits()
    for key, v in value.items():
        name = _KEYS.get(key.lower())
        if name is None:
            if key.lower() == "cluster_traffic":  # where a cluster's replication runs: one node has none
                if not isinstance(v, str):
                    raise LimitsConfigError(f'Expected either \'system\' or \'owner\' string value for "{key}", got {v}')
                if v.lower() not in ("system", "", "owner"):
                    raise LimitsConfigError(f'Expected \'system\' or \'owner\' string value for "{key}", got {v}')
                continue
            raise LimitsConfigError(f'unknown field "{key}"')
        if name == "max_bytes_required":
            if not isinstance(v, bool):
                raise LimitsConfigError(f'Expected a parseable bool for "{key}", got {v}')
        elif isinstance(v, bool) or not isinstance(v, int):
            raise LimitsConfigError(f'Expected a parseable size for "{key}", got {v}')
        setattr(lim, name, v)
    return lim


def storage_size(v) -> int:
    """A server size (``max_mem: 1G``): nats-server's getStorageSize."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if not isinstance(v, str):
        raise LimitsConfigError("must be int64 or string")
    if not v:
        return 0
    num, suffix = v[:-1], v[-1:]
    if not num.lstrip("-+").isdigit():
        raise LimitsConfigError(f'strconv.ParseInt: parsing "{num}": invalid syntax')
    shift = {"K": 10, "M": 20, "G": 30, "T": 40}.get(suffix)
    if shift is None:
        raise LimitsConfigError("sizes defined as strings must end in K, M, G, T")
    return int(num) << shift


def server_caps(js: "JetStream") -> tuple[int, int]:
    """The server's configured (memory, file) limits; -1: none."""
    o = js.messaging.options
    return getattr(o, "js_max_memory", -1), getattr(o, "js_max_store", -1)


def _all(js: "JetStream") -> list:
    return list(js.messaging.jetstreams.values()) or [js]


def sufficient_resources(messaging, lim: AccountLimits) -> str | None:
    """Can the server take an account with these limits (besides the
    accounts and streams it has)? Why not, or None."""
    mem_cap, store_cap = getattr(messaging.options, "js_max_memory", -1), getattr(messaging.options, "js_max_store", -1)
    others = list(messaging.jetstreams.values())
    for cap, mine, storage, kind in ((mem_cap, lim.max_memory, "memory", "memory"),
                                     (store_cap, lim.max_storage, "file", "storage")):
        if cap < 0:
            continue
        mine = max(mine, 0)
        streams = sum(reserved(j, storage) for j in others)
        accounts = sum(max(j.limits.max_memory if storage == "memory" else j.limits.max_storage, 0) for j in others)
        if streams + mine > cap or accounts + mine > cap:
            return f"insufficient {kind} resources available ({10028 if storage == 'memory' else 10047})"
    return None


# -- the checks ----------------------------------------------------------------
def check_stream_config(lim: AccountLimits, cfg: dict) -> None:
    """checkStreamCfg's part: max_bytes required, and within the per-stream limit."""
    limit = lim.memory_max_stream_bytes if cfg["storage"] == "memory" else lim.storage_max_stream_bytes
    if lim.max_bytes_required and cfg["max_bytes"] <= 0:
        raise errors.max_bytes_required()
    if limit > 0 and cfg["max_bytes"] > limit:
        raise errors.max_stream_bytes_exceeded()


def reserved(js: "JetStream", storage: str, exclude: str | None = None) -> int:
    """The bytes the account's streams of one storage type reserve (their
    max_bytes), leaving out ``exclude`` (tieredReservation)."""
    return sum(st.config["max_bytes"] for st in js.streams.values()
               if st.name != exclude and st.config["storage"] == storage and st.config["max_bytes"] > 0)


def _check_bytes(js: "JetStream", cfg: dict, add: int, current: int) -> None:
    """checkBytesLimits: ``add`` more reserved bytes (a stream without
    max_bytes counts as 1) on top of the account's ``current``, then on top
    of what every account's streams reserve on the server."""
    lim = js.limits
    if add < 0:
        add = 1
    memory = cfg["storage"] == "memory"
    cap = lim.max_memory if memory else lim.max_storage
    exceeded = errors.memory_resources_exceeded if memory else errors.storage_resources_exceeded
    if cap >= 0 and (current > cap or add > cap - current):
        raise exceeded()
    cap = server_caps(js)[0 if memory else 1]
    if cap >= 0:
        used = sum(reserved(j, cfg["storage"]) for j in _all(js))
        if used > cap or add > cap - used:
            raise exceeded()


def _check_limits(js: "JetStream", cfg: dict, add: int, current: int) -> None:
    """checkLimits: the stream's max_consumers, then its bytes."""
    lim = js.limits
    if cfg["max_consumers"] > 0 and lim.max_consumers > 0 and cfg["max_consumers"] > lim.max_consumers:
        raise errors.max_consumers()
    _check_bytes(js, cfg, add, current)


def check_stream_create(js: "JetStream", cfg: dict) -> None:
    """A new stream (or the same config again): the stream count (itself
    not counted) and the bytes it would reserve."""
    lim = js.limits
    if lim.max_streams > 0 and sum(1 for n in js.streams if n != cfg["name"]) >= lim.max_streams:
        raise errors.max_streams()
    _check_limits(js, cfg, cfg["max_bytes"], reserved(js, cfg["storage"], cfg["name"]))


def check_stream_update(js: "JetStream", old: dict, cfg: dict) -> None:
    """An update reserves only what its max_bytes grows by: the check adds
    that difference to the other streams' reservations plus the rest of
    this one's new footprint."""
    new_max = max(cfg["max_bytes"], 0)
    diff = max(new_max - max(old["max_bytes"], 0), 0)
    base = reserved(js, cfg["storage"], cfg["name"]) + new_max - diff
    _check_limits(js, cfg, diff, base)


def consumer_limit(js: "JetStream", stream_max: int) -> int:
    """The number of consumers a stream may have: its own max_consumers,
    or the account's when that is lower or the stream sets none."""
    acc = js.limits.max_consumers
    if stream_max <= 0 or (0 < acc < stream_max):
        return acc
    return stream_max


class StoredBytes:
    """The bytes an account's streams of one storage type hold, as an upper
    bound kept without summing the stores on every message: exact when
    summed, then raised by each message a publish may store (what
    check_store admits). Removals only lower the truth, so a message the
    bound admits is admitted; only a message that would not fit under the
    bound sums the stores again. Whatever adds bytes another way (a
    snapshot restore, a stream that takes over a directory) calls
    ``forget``."""

    __slots__ = ("js", "storage", "bound")

    def __init__(self, js: "JetStream", storage: str):
        self.js, self.storage, self.bound = js, storage, -1

    def exact(self) -> int:
        self.bound = sum(st.store.totals()[1] for st in self.js.streams.values()
                         if st.config["storage"] == self.storage)
        return self.bound

    def upper(self) -> int:
        return self.bound if self.bound >= 0 else self.exact()

    def forget(self) -> None:
        self.bound = -1


def _fits(usages: list[StoredBytes], size: int, cap: int) -> bool:
    """Do the usages plus ``size`` stay within ``cap`` (summed exactly only
    when the bounds say they may not)?"""
    if sum(u.upper() for u in usages) + size <= cap:
        return True
    return sum(u.exact() for u in usages) + size <= cap


def is_limited(js: "JetStream") -> bool:
    """Does a publish have totals to check (check_store)?"""
    return js.limits.max_memory >= 0 or js.limits.max_storage >= 0 or max(server_caps(js)) >= 0


def check_store(js: "JetStream", storage: str, size: int) -> None:
    """A message of ``size`` store bytes into a stream of the account: the
    server already over its memory or file limit is 10023 (limitsExceeded),
    over the account's with this message 10002 (wouldExceedLimits)."""
    mine = js.stored_bytes[storage]
    cap = server_caps(js)[0 if storage == "memory" else 1]
    if cap >= 0 and not _fits([j.stored_bytes[storage] for j in _all(js)], 0, cap):
        raise errors.insufficient_resources()
    lim = js.limits
    cap = lim.max_memory if storage == "memory" else lim.max_storage
    if cap >= 0 and not _fits([mine], size, cap):
        raise errors.account_resources_exceeded()
    if mine.bound >= 0:
        mine.bound += size  # it may be stored now: the bound stays one

