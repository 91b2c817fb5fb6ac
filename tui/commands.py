"""The command palette: jump to any stream or consumer by name, themes, demos, pane actions."""

from __future__ import annotations

from functools import partial

from textual import on
from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from .client import NatsError


class NatslabCommands(Provider):
    """Commands built from what the broker has right now."""

    async def _commands(self) -> list[tuple[str, str, object]]:
        app = self.app
        from .demos import DEMOS, run_demo

        out: list[tuple[str, str, object]] = [
            ("Guided tour: the walkthrough step by step (T)",
             "core vs JetStream, limits, a durable consumer, redelivery, retention, request-reply, KV",
             app.action_tour),
            *((demo.title, demo.summary, partial(run_demo, app, key)) for key, demo in DEMOS.items()),
        ]
        from .panes.registry import PANES

        for spec in PANES:
            out.append((f"Go to: {spec.title}", f"show the {spec.title} pane", partial(app.action_tab, spec.area)))
        from .screens.topology import open_topology

        if app.broker_spec is not None:  # embedded broker only (hidden with --connect)
            out.append(("Faults: restart, crash, power cut… the embedded broker (F)",
                        "break the broker on purpose and see what survived", app.action_faults))
        out.append(("Topology", "which streams feed which: mirrors, sources, republish", partial(open_topology, app)))
        out.append(("Export the selected consumer's history as text (E)",
                    "from the moment the time slider shows ([ ] { }) to now, to a file", app.export_consumer_history))
        for name in sorted(app.available_themes):
            if name.startswith("natslab") or name in app.user_theme_names:
                out.append((f"Theme: {name}", "switch theme (remembered)", partial(setattr, app, "theme", name)))
        client = app.client
        if client is not None and client.connected:
            try:
                streams = await client.list_streams()
            except NatsError:  # the palette still offers the rest
                streams = []
            for s in streams:
                out.append((f"Stream: {s.name}", f"{', '.join(s.subjects)} · {s.messages} msgs", partial(app.jump_to_stream, s.name)))
                if s.consumer_count and len(streams) <= 50:
                    try:
                        consumers = await client.list_consumers(s.name)
                    except NatsError:
                        consumers = []
                    for c in consumers:
                        out.append((f"Consumer: {s.name} › {c.name}", "open in consumers pane", partial(app.jump_to_consumer, s.name, c.name)))
            try:
                buckets = await client.list_kv_buckets()
            except NatsError:
                buckets = []
            for b in buckets:
                out.append((f"Bucket: {b}", "open in the KV browser", partial(app.jump_to_bucket, b)))
        return out

    async def discover(self) -> Hits:
        for title, help_text, callback in await self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in await self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class NatslabPalette(CommandPalette):
    """Textual's palette, with Enter that waits for the search of what is typed.

    Each key starts a new search (a worker); the list shows the last search that
    answered. Typed quickly, "go to kv" and Enter arrived before any search had
    answered, and Textual's Enter ran the first entry of the unfiltered list
    ("Keys"). Here an Enter that comes while a search runs is kept, and acted on
    (Textual's own Enter) once that search has put its hits in the list."""

    _enter_waiting = False

    def _searching(self) -> bool:
        return any(w.node is self and w.group == self._GATHER_COMMANDS_GROUP and not w.is_finished
                   for w in self.app.workers)

    @on(Input.Submitted)
    def _enter_after_search(self, event: Input.Submitted) -> None:
        if self._searching():
            event.prevent_default()  # not Textual's handler (below in the MRO): not yet
            event.stop()
            self._enter_waiting = True

    @on(Input.Changed)
    def _typed_after_enter(self, event: Input.Changed) -> None:
        self._enter_waiting = False  # keys after Enter: the search is for something else now

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if (self._enter_waiting and event.worker.group == self._GATHER_COMMANDS_GROUP
                and event.state == WorkerState.SUCCESS and not self._searching()):
            self._enter_waiting = False
            self._select_or_command()
