"""Draw a Topology as a text tree: each stream fed by nothing is a root, the
streams it feeds hang below it, one line per link with its lag and error."""

from __future__ import annotations

from rich.text import Text

from ...client.topology import Link, Topology
from ...format import fmt_duration

KIND_LABEL = {"mirror": "mirror", "source": "source", "republish": "republish"}


def link_state(link: Link, stable: bool = False, lag: bool = True) -> str:
    """``lag 3 · 0.2s ago``: what a link's state says, in words."""
    if link.kind == "republish":
        return link.detail
    parts = [f"lag {link.lag}" if link.lag is not None else "lag ?"] if lag else []
    if link.active is None:
        parts.append("never active")
    elif not stable:
        parts.append(f"{fmt_duration(round(link.active, 1))} ago")
    if link.detail:
        parts.append(link.detail)
    return " · ".join(parts)


def draw_topology(topo: Topology, styles: dict[str, str], stable: bool = False) -> Text:
    """``styles``: rich styles for "stream", "kind", "error", "muted" (from the theme)."""
    out = Text()
    if not topo.links:
        out.append("No stream feeds another yet: no mirrors, sources or republish.\n", style=styles["muted"])
    seen: set[str] = set()

    def node(name: str) -> None:
        n = topo.nodes.get(name)
        out.append(n.label if n else name, style=styles["stream"])

    def below(name: str, prefix: str) -> None:
        links = sorted(topo.downstream(name), key=lambda l: (l.target, l.kind))
        for i, link in enumerate(links):
            last = i == len(links) - 1
            out.append(prefix + ("└─" if last else "├─"), style=styles["muted"])
            out.append(f"{KIND_LABEL[link.kind]:─<9}▶ ", style=styles["kind"])
            if link.target_is_stream:
                node(link.target)
            else:
                out.append(f"subject {link.target}", style=styles["muted"])
            out.append("  " + link_state(link, stable), style=styles["muted"])
            if link.error:
                out.append(f"  ✗ {link.error}", style=styles["error"])
            out.append("\n")
            if link.target_is_stream and link.target not in seen:
                seen.add(link.target)
                below(link.target, prefix + ("   " if last else "│  "))
            elif link.target_is_stream:
                pass  # drawn already (a stream fed twice, or a cycle): once is enough

    roots = topo.roots()
    # a cycle has no root: start it from its first stream
    rest = sorted({l.origin for l in topo.links} - set(roots))
    for root in roots + rest:
        if root in seen:
            continue
        seen.add(root)
        node(root)
        out.append("\n")
        below(root, "")
    if topo.unlinked():
        out.append("Not linked: " + ", ".join(topo.unlinked()) + "\n", style=styles["muted"])
    return out
