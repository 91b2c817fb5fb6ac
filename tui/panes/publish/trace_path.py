"""A message trace in plain words and as a drawn path.

``verdict`` says in a few sentences who got the message (or would have, for a
trace-only publish), which stream stored it at which sequence, which
consumers will deliver it, or why nobody did; ``path_tree`` draws the same as
a tree: the message at the root, then per server the subject mapping, the
streams with their consumers, the subscriptions by connection name, cid and
queue group, and the routes to the next servers with their own branches.
Pure functions of a ``MessageTrace``: the screen only shows them.
"""

from __future__ import annotations

from rich.text import Text
from rich.tree import Tree

from ...client.trace import Egress, MessageTrace, ServerHop, StreamHit

OK, NO, ARROW = "✓", "✗", "→"


def server_label(hop: ServerHop) -> str:
    """nats-server is named after its id unless configured: show a short id then."""
    name = hop.server or hop.server_id
    return name[:8] + "…" if len(name) > 20 and name == hop.server_id else name


def connection_label(name: str, cid: int) -> str:
    return f"{name or 'unnamed connection'} (cid {cid})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _limits(trace: MessageTrace, stream: str) -> str:
    """The stream's limits and discard policy, to say which one dropped the message."""
    info = trace.streams.get(stream)
    if info is None:
        return ""
    cfg = info.config or {}
    parts = [f"{key} {cfg[key]}" for key in ("max_msgs", "max_bytes", "max_msgs_per_subject", "max_msg_size")
             if isinstance(cfg.get(key), int) and cfg[key] > 0]
    discard = cfg.get("discard", "old")
    return f" (limits: {', '.join(parts)}; discard {discard})" if parts else f" (discard {discard})"


def _stream_words(trace: MessageTrace, hit: StreamHit) -> str:
    would = trace.trace_only
    if hit.error:
        return f"Stream {hit.stream} refused it: {hit.error}{_limits(trace, hit.stream)}."
    if hit.no_interest:
        retention = getattr(trace.streams.get(hit.stream), "retention", "interest")
        return (f"Stream {hit.stream} ({retention} retention) {'would drop' if would else 'dropped'} it: "
                f"no consumer is interested in {hit.subject or trace.subject}.")
    subject = hit.subject or trace.subject
    if would:
        stored = f"Stream {hit.stream} would store it as {subject}."
    elif trace.pub_ack is not None and trace.pub_ack.stream == hit.stream:
        ack = trace.pub_ack
        stored = (f"Stream {hit.stream} already had it (a duplicate of seq {ack.seq}): not stored again."
                  if ack.duplicate else f"Stream {hit.stream} stored it at seq {ack.seq} (PubAck).")
    elif trace.last_on_subject.get(hit.stream):
        stored = (f"Stream {hit.stream} stored it (no PubAck for a core publish: its last message "
                  f"on {subject} is now seq {trace.last_on_subject[hit.stream]}).")
    else:
        stored = f"Stream {hit.stream} stored it."
    consumers = trace.consumers.get(hit.stream)
    if consumers is None:
        return stored
    covering = [c.name for c in consumers if c.covers]
    if covering:
        verb = "would deliver" if would else "will deliver"
        return f"{stored} {_plural(len(covering), 'consumer')} {verb} it: {', '.join(covering)}."
    if consumers:
        return f"{stored} No consumer's filter covers {subject}: it waits in the stream."
    return f"{stored} The stream has no consumers yet."


def verdict(trace: MessageTrace) -> Text:
    """What became of the message, in a few plain sentences."""
    out = Text()
    mode = "Trace only: nothing was delivered or stored. " if trace.trace_only else "Published and traced. "
    out.append(mode, style="bold")
    if trace.refused:
        out.append(f"Refused: the server did not accept this publish ({trace.refused}). Nobody got it.", style="bold")
        return out
    if not trace.hops:
        out.append(f"No trace event came back in {trace.elapsed:.1f}s: the server may not let this "
                   "connection publish to its trace inbox.")
        if trace.publish_error is not None:
            out.append(f" The publish said: {trace.publish_error}.")
        for error in trace.server_errors:
            out.append(f" The server said: {error}.")
        return out
    sentences: list[str] = []
    delivered = [(h, e) for h, e in trace.all_deliveries() if not e.error]
    failed = [(h, e) for h, e in trace.all_deliveries() if e.error]
    if delivered:
        conns = {(h.server_id, e.cid) for h, e in delivered}
        queues = sorted({e.queue for _, e in delivered if e.queue})
        verb = "It would reach" if trace.trace_only else "It reached"
        groups = (f" (queue groups {', '.join(queues)}: one member each)" if len(queues) > 1
                  else f" (queue group {queues[0]}: one of its members)" if queues else "")
        sentences.append(f"{verb} {_plural(len(delivered), 'subscription')} on {_plural(len(conns), 'connection')}{groups}.")
    for _, egress in failed:
        sentences.append(f"{connection_label(egress.name, egress.cid)} did not get it: {egress.error}.")
    streams = trace.all_streams()
    sentences += [_stream_words(trace, hit) for _, hit in streams]
    if not delivered and not streams:
        who = "Nobody would get it" if trace.trace_only else "Nobody got it"
        sentences.append(f"{who}: no subscription and no stream has interest in {trace.subject}"
                         + (", so a core publish to it is simply gone." if not trace.jetstream else "."))
    if trace.publish_error is not None and not any(hit.error for _, hit in streams):
        sentences.append(f"The JetStream publish got no PubAck: {trace.publish_error}.")
    if not trace.complete:
        sentences.append(f"Only {len(trace.hops)} of {trace.expected} servers answered "
                         f"in {trace.elapsed:.1f}s: the path may go on.")
    sentences += [f"(Not looked up: {err}.)" for err in trace.lookup_errors]
    out.append(" ".join(sentences))
    return out


def _egress_label(trace: MessageTrace, e: Egress) -> Text:
    line = Text()
    if e.to_server:
        line.append(f"⇢ {e.kind_name} {connection_label(e.name, e.cid)}", style="bold")
        line.append(f"  hop {e.hop}" if e.hop else "")
    else:
        line.append(f"{ARROW} ")
        line.append(e.name or "unnamed connection", style="bold")
        line.append(f"  cid {e.cid}  sub {e.subscription}")
        if e.queue:
            line.append(f"  queue {e.queue}", style="italic")
    if e.error:
        line.append(f"  {NO} {e.error}", style="bold")
    elif not e.to_server:
        line.append(f"  {OK} {'would get it' if trace.trace_only else 'got it'}")
    return line


def _stream_branch(trace: MessageTrace, parent: Tree, hit: StreamHit) -> None:
    label = Text("■ stream ", style="bold")
    label.append(hit.stream, style="bold")
    if hit.error:
        label.append(f"  {NO} {hit.error}")
    elif hit.no_interest:
        label.append(f"  {NO} no interest: {'would be ' if trace.trace_only else ''}dropped")
    elif trace.trace_only:
        label.append(f"  {OK} would store {hit.subject or trace.subject}")
    elif trace.pub_ack is not None and trace.pub_ack.stream == hit.stream:
        label.append(f"  {OK} {'duplicate of' if trace.pub_ack.duplicate else 'stored at'} seq {trace.pub_ack.seq}")
    elif trace.last_on_subject.get(hit.stream):
        label.append(f"  {OK} stored (last on subject: seq {trace.last_on_subject[hit.stream]})")
    else:
        label.append(f"  {OK} stored")
    node = parent.add(label)
    if hit.error or hit.no_interest:
        return
    for c in trace.consumers.get(hit.stream, []):
        line = Text(f"◆ consumer {c.name}  ")
        line.append(", ".join(c.filters) if c.filters else "all subjects", style="italic")
        if not c.covers:
            line.append(f"  {NO} not its subject", style="dim")
        else:
            how = "when fetched" if c.pull else f"pushes to {c.deliver_subject}"
            if c.paused:
                how = "once resumed (paused)"
            line.append(f"  {OK} {'would deliver' if trace.trace_only else 'will deliver'} {how}")
        node.add(line)


def _hop_branch(trace: MessageTrace, parent: Tree, hop: ServerHop, seen: set[int]) -> None:
    seen.add(id(hop))
    if hop.mapped_to:
        parent.add(Text(f"↪ subject mapped to {hop.mapped_to}"))
    for account, to in hop.exports:
        parent.add(Text(f"↪ stream export to account {account} as {to}"))
    for account, frm, to in hop.imports:
        parent.add(Text(f"↪ service import in account {account}: {frm} → {to}"))
    for hit in hop.streams:
        _stream_branch(trace, parent, hit)
    for e in hop.egress:
        node = parent.add(_egress_label(trace, e))
        for nxt in trace.next_hops(e):
            if id(nxt) not in seen:
                nxt_node = node.add(Text(f"server {server_label(nxt)}", style="bold"))
                _hop_branch(trace, nxt_node, nxt, seen)
    if not hop.streams and not hop.egress and not hop.refused and hop.hop_id == "":
        parent.add(Text(f"{NO} no interest: nothing subscribes to {hop.mapped_to or hop.subject or trace.subject}", style="bold"))


def path_tree(trace: MessageTrace) -> Tree:
    origin = trace.origin
    title = Text("● ", style="bold")
    title.append(trace.subject, style="bold")
    if origin is not None:
        title.append(f"  from {connection_label(origin.from_name, origin.from_cid)} on server {server_label(origin)}")
    tree = Tree(title, guide_style="dim")
    if trace.refused:
        tree.add(Text(f"{NO} refused: {trace.refused}", style="bold"))
    if origin is None:
        if not trace.refused:
            tree.add(Text(f"{NO} no trace event came back"))
        return tree
    seen: set[int] = set()
    _hop_branch(trace, tree, origin, seen)
    # events whose hop no egress named (an older server on the way, say)
    for hop in trace.hops:
        if id(hop) not in seen:
            node = tree.add(Text(f"server {server_label(hop)} (hop {hop.hop_id or '?'})", style="bold"))
            _hop_branch(trace, node, hop, seen)
    return tree
