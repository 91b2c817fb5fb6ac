"""Which streams feed which: the topology the Topology screen draws.

Everything comes from STREAM.LIST (through ``NatsClient.list_streams``): a
mirror or source link is in the receiving stream's config, with its live lag,
last activity and error in the stream's ``mirror`` / ``sources`` state;
a republish link goes from a stream to the streams whose subjects capture its
destination. KV buckets and object stores are streams named ``KV_`` / ``OBJ_``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import NatsClient
    from .models import StreamSummary

NS = 1_000_000_000
# a mapping function in a transform destination ({{wildcard(1)}}, {{partition(3,1)}} ...)
# stands for one token of the subject it makes
_FUNCTION = re.compile(r"\{\{[^}]*\}\}|\$\d+")


@dataclass(frozen=True)
class Node:
    stream: str
    kind: str = "stream"  # stream, kv, object
    bucket: str = ""  # the bucket's name behind a KV_ / OBJ_ stream
    missing: bool = False  # named as an origin, but not on the server

    @property
    def label(self) -> str:
        if self.missing:
            return f"{self.stream} (not found)"
        if self.kind == "kv":
            return f"{self.stream} (KV {self.bucket})"
        if self.kind == "object":
            return f"{self.stream} (objects {self.bucket})"
        return self.stream


@dataclass(frozen=True)
class Link:
    """``origin`` feeds ``target``: a mirror, a source or a republish."""

    kind: str  # mirror, source, republish
    origin: str  # a stream's name
    target: str  # a stream's name, or the destination subject when no stream captures it
    target_is_stream: bool = True
    lag: int | None = None  # messages behind (mirror, source)
    active: float | None = None  # seconds since the last contact; None: never
    error: str = ""
    detail: str = ""  # filter, start sequence, republish src → dest

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.origin}>{self.target}:{self.detail}"


@dataclass
class Topology:
    nodes: dict[str, Node] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)

    def downstream(self, stream: str) -> list[Link]:
        return [link for link in self.links if link.origin == stream]

    def roots(self) -> list[str]:
        """Streams fed by nothing (where drawing starts), then any left on a cycle."""
        fed = {link.target for link in self.links if link.target_is_stream}
        joined = fed | {link.origin for link in self.links}
        return sorted(name for name in self.nodes if name in joined and name not in fed)

    def unlinked(self) -> list[str]:
        joined = {link.target for link in self.links} | {link.origin for link in self.links}
        return sorted(name for name in self.nodes if name not in joined)


def subject_matches(pattern: str, subject: str) -> bool:
    """True when ``subject`` (which may itself hold wildcards) falls inside ``pattern``."""
    p, s = pattern.split("."), subject.split(".")
    for i, token in enumerate(p):
        if token == ">":
            return len(s) > i
        if i >= len(s):
            return False
        if token != "*" and token != s[i]:
            return False
        if token == "*" and s[i] == ">":
            return False
    return len(p) == len(s)


def node_for(name: str) -> Node:
    if name.startswith("KV_"):
        return Node(name, "kv", name[3:])
    if name.startswith("OBJ_"):
        return Node(name, "object", name[4:])
    return Node(name)


def _active(value) -> float | None:
    return None if value is None or value < 0 else value / NS


def _error(state: dict) -> str:
    err = state.get("error") or {}
    return err.get("description", "") if isinstance(err, dict) else str(err)


def _source_detail(cfg: dict) -> str:
    parts = []
    if cfg.get("filter_subject"):
        parts.append(f"filter {cfg['filter_subject']}")
    for t in cfg.get("subject_transforms") or ():
        parts.append(f"{t.get('src')} → {t.get('dest')}")
    if cfg.get("opt_start_seq"):
        parts.append(f"from seq {cfg['opt_start_seq']}")
    if cfg.get("opt_start_time"):
        parts.append(f"from {cfg['opt_start_time']}")
    return ", ".join(parts)


def build_topology(streams: list[StreamSummary]) -> Topology:
    topo = Topology()
    by_name = {s.name: s for s in streams}
    for s in streams:
        topo.nodes[s.name] = node_for(s.name)
    for s in streams:
        raw, config = s.raw, s.config
        if mirror := config.get("mirror"):
            state = raw.get("mirror") or {}
            topo.links.append(Link("mirror", mirror.get("name", "?"), s.name, lag=state.get("lag"),
                                   active=_active(state.get("active")), error=_error(state),
                                   detail=_source_detail(mirror)))
        states = {(x.get("name"), x.get("filter_subject", "")): x for x in raw.get("sources") or ()}
        for src in config.get("sources") or ():
            state = states.get((src.get("name"), src.get("filter_subject", "")), {})
            topo.links.append(Link("source", src.get("name", "?"), s.name, lag=state.get("lag"),
                                   active=_active(state.get("active")), error=_error(state),
                                   detail=_source_detail(src)))
        if rp := config.get("republish"):
            dest = rp.get("dest", "")
            shape = _FUNCTION.sub("*", dest)
            detail = f"{rp.get('src', '>')} → {dest}" + (" (headers only)" if rp.get("headers_only") else "")
            targets = [t for t in by_name.values() if t.name != s.name
                       and any(subject_matches(subj, shape) or subject_matches(shape, subj) for subj in t.subjects)]
            for t in targets:
                topo.links.append(Link("republish", s.name, t.name, detail=detail))
            if not targets:
                topo.links.append(Link("republish", s.name, dest, target_is_stream=False, detail=detail))
    for link in topo.links:  # an origin that is not (or no longer) there still shows as a node
        if link.origin not in topo.nodes:
            topo.nodes[link.origin] = replace(node_for(link.origin), missing=True)
    return topo


async def read_topology(client: NatsClient) -> Topology:
    return build_topology(await client.list_streams())
