"""NatslabApp: the thin App.

It owns the connection (one NatsClient), the embedded broker's lifecycle, the
themes and the global keys. Everything else lives in panes.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive

from natslab.themes import DEFAULT_THEME, load_themes

from .broker import BrokerSpec, EmbeddedBroker
from .client import ConnectOptions, NatsError
from .commands import NatslabCommands
from .config import load_settings, save_setting, user_themes_dir
from .panes.registry import style_sheets, tab_bindings
from .screens.main import MainScreen
from .widgets.status_header import HeaderInfo, StatusHeader

if TYPE_CHECKING:  # loaded on first use, after the first frame
    from .client.core import NatsClient


class NatslabApp(App):
    CSS_PATH = style_sheets()
    TITLE = "natslab"
    COMMANDS = App.COMMANDS | {NatslabCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help", key_display="?"),
        # the footer shows these where a text field types ? and q or a modal
        # form keeps the app's keys (widgets/footer.py); ctrl+q is Textual's own
        Binding("f1", "help", "Help", id="app.help_anywhere", show=False, priority=True),
        Binding("S", "export_view", "Save view as SVG + text", id="app.export", show=False),
        Binding("T", "tour", "Guided tour of the walkthrough", id="app.tour", show=False),
        Binding("F", "faults", "Faults: crash, restart, power cut the embedded broker", id="app.faults", show=False),
        *tab_bindings(),
        # Priority: the focus moves when Tab is read, before the keys typed
        # after it are handed to the focused widget. As a plain (screen)
        # binding Tab is only acted on once it has bubbled up from the focused
        # field, and keys typed quickly behind it still land in that field
        # ("Repeat 5" Tab "10" gave 510). No widget of the app takes Tab itself.
        Binding("tab", "focus_next", "Next field", id="app.focus_next", show=False, priority=True),
        Binding("shift+tab", "focus_previous", "Previous field", id="app.focus_previous", show=False, priority=True),
    ]

    # Bumped on every (re)connect so panes can re-subscribe.
    client_generation: reactive[int] = reactive(0)
    # Keys pressed and clicks made so far: a widget that took the focus for the
    # user (the tour after it pointed at a pane) keeps it until the next one.
    user_inputs = 0

    async def on_event(self, event) -> None:
        if isinstance(event, (events.Key, events.MouseDown)) and not event.is_forwarded:
            self.user_inputs += 1
        await super().on_event(event)

    def __init__(
        self,
        connect: ConnectOptions | None = None,
        broker: BrokerSpec | None = None,
        *,
        stable_display: bool = False,
        display_url: str | None = None,
        display_store: str | None = None,
        display_version: str | None = None,
        remember_theme: bool = True,
        theme_name: str | None = None,
        monitor_url: str | None = None,
        read_only: bool = False,
    ):
        super().__init__()
        if connect is None and broker is None:
            broker = BrokerSpec()
        self.connect_options = replace(connect or ConnectOptions(), read_only=read_only)
        # browse everything, change nothing: the client refuses writes, the panes hide them
        self.read_only = read_only
        self.broker_spec = broker
        self.embedded: EmbeddedBroker | None = None
        # the last fault's marks per stream (what it lost, what will be redelivered):
        # the Faults report sets them, the stream ruler draws them
        self.fault_marks: dict = {}
        self.client: NatsClient | None = None
        self.stable_display = stable_display
        self.display_url = display_url
        self.display_store = display_store
        self.display_version = display_version
        self.remember_theme = remember_theme
        self.requested_theme = theme_name
        self.monitor_url = monitor_url
        self.system_user = False  # system-account credentials (identify): Connections asks every server over NATS
        self.account = "$G"  # the account the connection is in (identify): the embedded history's streams are its
        self.pending_bucket: str | None = None
        self.user_theme_names: set[str] = set()
        self.header_info = HeaderInfo(mode="embedded" if broker else "remote", read_only=read_only)
        # the time slider's history: the embedded broker's own ring, or, on a
        # remote server, what the app observes from now on (tui/history.py)
        from .history import Observed

        self.observed = Observed() if broker is None else None
        self._shut_down = False
        self._started = False
        self.main_screen: MainScreen | None = None
        self.gc_paused_until_paint = False  # set by the CLI, which pauses the cyclic GC for start-up
        self._theme_problems = self._load_themes()

    # ---- startup ----------------------------------------------------------
    # Launch to first paint is a measured target (docs/benchmarks.md). What the first frame
    # does not need waits until it is on screen: the embedded broker, nats-py and
    # the connection, the panes hidden behind the first tab, the tool panes' code.
    def on_mount(self) -> None:
        for problem in self._theme_problems:
            self.notify(f"Theme file skipped — {problem}", severity="warning", timeout=8)
        if self._initial_theme is not None:
            self.theme = self._initial_theme  # the slow path, see _load_themes
        if self.remember_theme:
            self.theme_changed_signal.subscribe(self, lambda theme: save_setting("theme", theme.name))
        self.main_screen = MainScreen()
        self.push_screen(self.main_screen)
        self.set_header(url=self.display_url or ("" if self.broker_spec else self.connect_options.url))

    def on_ready(self) -> None:
        # Textual lays out the first screen inside its start-up batch and drops
        # that frame; the updates after it repaint only the regions that changed
        # since (the tabs' underline first), so the whole screen reached the
        # terminal a few frames later. Repaint all of it in the next one.
        for widget in self.screen.children:
            widget.refresh()
        # That frame is written within a few screen updates; call_after_refresh
        # fires once the screen is idle, which Textual's start-up animations can
        # delay by a few tenths of a second: whichever comes first.
        self.call_after_refresh(self.first_frame_painted)
        self.set_timer(0.1, self.first_frame_painted)

    def first_frame_painted(self) -> None:
        if self._started:
            return
        self._started = True
        # What start-up built (Textual, the screen, the modules) lives as long
        # as the app: freezing it keeps the cyclic collector's full passes
        # from walking it again, which otherwise stalled a key press for
        # ~0.2 s now and then (scripts/bench_tui.py flood)
        gc.freeze()
        self._start_gc_schedule()
        if not self._shut_down:  # q pressed before the first frame: start nothing
            self._after_first_paint()

    # The cyclic collector's full passes walk every object the app holds and
    # took 90-115 ms each, every few seconds (Textual makes ~900 short-lived
    # cyclic objects a second while styling), stalling key presses past the
    # 100 ms target. While the app runs the collector is driven from here:
    # the young generations every second (a few ms), a full pass once a minute.
    GC_YOUNG_EVERY = 1.0
    GC_FULL_EVERY = 60.0

    def _start_gc_schedule(self) -> None:
        self._gc_was_enabled = gc.isenabled() or self.gc_paused_until_paint
        gc.disable()
        self.set_interval(self.GC_YOUNG_EVERY, self._gc_young, name="gc young")
        self.set_interval(self.GC_FULL_EVERY, self._gc_full, name="gc full")

    # (Textual's timers want Python callables: a builtin such as gc.collect
    # given directly fails when the timer fires)
    def _gc_young(self) -> None:
        gc.collect(1)

    def _gc_full(self) -> None:
        gc.collect()

    def on_unmount(self) -> None:
        # leave the process's collector as it was found (tests run many apps)
        if getattr(self, "_gc_was_enabled", False):
            gc.enable()

    @work(group="startup", exit_on_error=False)
    async def _after_first_paint(self) -> None:
        """Mount the panes hidden behind the first tab, then start the broker and
        connect. Both would otherwise compete with the first paint for the one
        event loop and the GIL; the panes are there before any data arrives."""
        try:
            if self.main_screen is not None:
                await self.main_screen.mount_hidden_areas()
                gc.freeze()  # the hidden panes too
        finally:
            self.start_connection()

    def _load_themes(self) -> list[str]:
        """Register the theme files and pick the theme; returns the problems found."""
        themes, problems = load_themes(user_themes_dir())
        builtin = {t.name for t in load_themes()[0]}
        for theme in themes:
            self.register_theme(theme)
            if theme.name not in builtin:
                self.user_theme_names.add(theme.name)
        wanted = self.requested_theme or (load_settings().get("theme") if self.remember_theme else None)
        name = wanted if wanted in self.available_themes else DEFAULT_THEME
        # Setting App.theme runs Textual's theme watcher, which re-parses every
        # style sheet and drops the parse cache, so the start-up CSS would be
        # parsed three times. Nothing is styled yet here: take the theme's
        # variables directly. A theme whose dark/light differs from Textual's
        # default also changes the ANSI colour mapping, so it takes the
        # watcher's path in on_mount.
        self._initial_theme: str | None = None
        theme = self.get_theme(name)
        if theme is None or theme.dark != self.current_theme.dark:
            self._initial_theme = name
            return problems
        self.set_reactive(NatslabApp.theme, name)
        self.set_class(True, f"-theme-{name}", update=False)
        self.stylesheet.set_variables(self.get_css_variables())
        return problems

    @property
    def publish_history_path(self):
        """The Publish pane's history file for this store; None for a throwaway (--memory) one."""
        from .config import data_dir, publish_history_file

        if self.broker_spec is not None:
            if self.broker_spec.memory:
                return None
            return publish_history_file(str(self.broker_spec.store_dir or data_dir()))
        return publish_history_file(self.connect_options.url)

    def set_header(self, **changes) -> None:
        self.header_info = replace(self.header_info, **changes)
        if self.main_screen is not None and self.main_screen.is_mounted:
            self.main_screen.query_one(StatusHeader).info = self.header_info
        # (before that, the header takes header_info when it mounts)

    def show_banner(self, message: str | None) -> None:
        if self.main_screen is not None and self.main_screen.is_mounted:
            self.main_screen.show_banner(message)

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def start_connection(self) -> None:
        options = self.connect_options
        if self.broker_spec is not None:
            self.set_header(state="starting", detail="starting the embedded broker…")
            self.embedded = EmbeddedBroker(self.broker_spec)
            store = self.display_store or str(self.embedded.store_dir)
            self.set_header(store_dir=store + (" (temporary)" if self.broker_spec.memory else ""))
            try:
                url = await asyncio.to_thread(self.embedded.start)
            except Exception as exc:  # ImportError while the broker is unfinished, bind errors…
                self.embedded = None
                self.set_header(state="failed", detail=f"embedded broker did not start: {exc}")
                self.show_banner(f"The embedded broker did not start: {exc}. Try --connect URL.")
                return
            options = replace(options, url=url)
            self.monitor_url = self.monitor_url or self.embedded.monitor_url
            self.set_header(url=self.display_url or url)
        while not self._shut_down:
            try:
                from .client.core import NatsClient

                self.client = await NatsClient.connect(
                    options,
                    on_disconnect=self._on_disconnect,
                    on_reconnect=self._on_reconnect,
                )
                break
            except NatsError as exc:
                self.set_header(state="failed", detail=str(exc))
                self.show_banner(f"Not connected: {exc} — retrying every 2 s")
                await asyncio.sleep(2)
        if self.client is None:
            return
        from .client.monitor import default_monitor_url, monitor_urls

        if self.monitor_url is not None:  # the embedded broker's, or --monitor
            urls = monitor_urls(self.monitor_url)
            shown = urls[0] + (f" +{len(urls) - 1}" if len(urls) > 1 else "") if urls else ""
            self.set_header(monitor="http://127.0.0.1:8222" if self.stable_display else shown)
        else:
            self.monitor_url = default_monitor_url(options.url)
        self.set_header(state="connected", detail="", **self._server_header())
        self.show_banner(None)
        self.client_generation += 1
        self.identify()
        self.poll_usage()

    def _server_header(self) -> dict:
        """What the header says about the server the client is on right now
        (after a reconnect that may be another node of the cluster)."""
        summary = self.client.server_summary()
        return dict(version=self.display_version or summary.version,
                    url=self.display_url or summary.client_url,
                    server_name=summary.server_name if summary.cluster else "",
                    cluster=summary.cluster, domain=summary.domain)

    async def _on_disconnect(self) -> None:
        if not self._shut_down:
            self.set_header(state="disconnected")
            self.show_banner("Connection lost — reconnecting… (the panes resume by themselves)")

    async def _on_reconnect(self) -> None:
        self.set_header(state="connected", detail="", **self._server_header())
        self.show_banner(None)
        self.client_generation += 1
        self.identify()

    @work(exclusive=True, group="identify", exit_on_error=False)
    async def identify(self) -> None:
        """The header's TLS version and account (tui/client/system.py)."""
        from .client.system import is_system_user, tls_version, user_info

        client = self.client
        if client is None:
            return
        try:
            info = await user_info(client)
            self.system_user = await is_system_user(client)
        except NatsError:
            info = {}  # the connection went: the reconnect asks again
        if info.get("account"):
            self.account = info["account"]  # (the key the broker names it by; the header shows the JWT name)
        # (account_name: an operator-mode account's JWT name, not its 56-character key)
        account = info.get("account_name") or info.get("account", "")
        self.set_header(tls=tls_version(client), account=f"{account} (system)" if account and self.system_user else account)

    @work(exclusive=True, group="usage", exit_on_error=False)
    async def poll_usage(self) -> None:
        from .client.monitor import MonitorUnreachable, fetch_meta_leader

        rounds = 0
        usage_at = 0.0  # when the usage shown was read
        while not self._shut_down:
            client = self.client
            if client is not None and client.connected:
                try:
                    usage = await client.account_usage()
                except NatsError as exc:
                    # the last usage stays, marked stale with its age, never as current; and the
                    # meta leader with it at once (its node may be the one that died: the account
                    # info is the meta leader's to answer), not only at the next /jsz poll
                    age = time.monotonic() - usage_at if self.header_info.usage is not None else None
                    self.set_header(detail=f"JetStream: {exc}", usage_age=None if age is None else int(age),
                                    meta_leader_stale=self.header_info.meta_leader not in ("", "?", "none"))
                    confirmed = False
                else:
                    usage_at = time.monotonic()
                    self.set_header(usage=usage, detail="", usage_age=None)
                    confirmed = True
                # the meta leader is only in the monitoring port's /jsz: every 3 s on a cluster,
                # and each round while the one shown is not confirmed
                if self.header_info.cluster and self.monitor_url and (rounds % 3 == 0 or self.header_info.meta_leader_stale):
                    try:
                        leader = await fetch_meta_leader(self.monitor_url)
                    except MonitorUnreachable:
                        self.set_header(meta_leader="?", meta_leader_stale=False)
                    else:  # current only when JetStream answered this round too
                        self.set_header(meta_leader=leader, meta_leader_stale=not confirmed and leader not in ("", "none"))
            elif self.header_info.meta_leader not in ("", "?", "none") and not self.header_info.meta_leader_stale:
                self.set_header(meta_leader_stale=True)  # not connected: nothing confirms it
            rounds += 1
            await asyncio.sleep(1.0)

    # ---- global actions ---------------------------------------------------
    def action_tab(self, tab: str) -> None:
        if self.main_screen is not None:
            self.main_screen.show_area(tab)

    def action_command_palette(self) -> None:
        """Textual's palette whose Enter waits for the search of what was typed (commands.py)."""
        from textual.command import CommandPalette

        from .commands import NatslabPalette

        if self.use_command_palette and not CommandPalette.is_open(self):
            self.push_screen(NatslabPalette(id="--command-palette"))

    def get_system_commands(self, screen):
        """Textual's own, without its "Theme" picker: the palette's Theme:
        entries (natslab's themes and the user's, remembered) are the one
        way to switch theme, so there are not two Theme entries."""
        for command in super().get_system_commands(screen):
            if command.title != "Theme":
                yield command

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        self.push_screen(HelpScreen.for_bindings(self.screen.active_bindings))

    # Where the palette, the demos and the panes send the user: the main
    # screen knows the panes (from the registry) and mounts one if it must.
    def jump_to_stream(self, name: str, show: bool = True) -> None:
        self.main_screen.jump_to_stream(name, show)

    def history(self, stream: str, since: int | None = None, until: int | None = None):
        """The events of ``stream`` (its consumers', its publishes) from the
        history the app has, oldest first (tui/history.py's Event)."""
        from .history import as_events

        if self.embedded is not None:
            return as_events(self.embedded.history(since, until, stream=stream, account=self.account))
        if self.observed is not None:
            return self.observed.history(since, until, stream=stream)
        return []

    def export_consumer_history(self) -> None:
        """The palette's export: the Consumers pane's ``E``."""
        self.action_tab("consumers")
        pane = self.screen.query("ConsumersPane")
        if pane:
            pane.first().action_export_history()

    def jump_to_consumer(self, stream: str, consumer: str, show: bool = True) -> None:
        self.main_screen.jump_to_consumer(stream, consumer, show)

    def open_pull_hand(self, stream: str, consumer: str) -> None:
        self.main_screen.open_pull_hand(stream, consumer)

    def jump_to_bucket(self, bucket: str) -> None:
        self.main_screen.jump_to_bucket(bucket)

    def action_export_view(self) -> None:
        from .export import export_view

        try:
            svg, txt = export_view(self)
        except OSError as exc:
            self.notify(f"Could not save the view: {exc}", severity="error", timeout=8)
            return
        self.notify(f"Saved {svg.name} and {txt.name} in {svg.parent}", title="View saved", timeout=8)

    def action_tour(self) -> None:
        from .tour import open_tour

        open_tour(self)

    def action_faults(self) -> None:
        from .screens.faults import open_faults

        open_faults(self)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "faults":  # embedded broker only: hidden (not greyed) on --connect
            return self.broker_spec is not None
        return True

    def action_demo_redelivery(self) -> None:
        from .demos import run_demo

        run_demo(self, "redelivery")

    async def action_quit(self) -> None:
        await self.shutdown()
        self.exit()

    async def shutdown(self) -> None:
        """Close the connection, then stop the embedded broker (stores flushed)."""
        if self._shut_down:
            return
        self._shut_down = True
        self.workers.cancel_group(self, "usage")
        if self.client is not None:
            await self.client.close()
        if self.embedded is not None:
            embedded, self.embedded = self.embedded, None
            await asyncio.to_thread(embedded.stop)

    def stop_embedded_now(self) -> None:
        """Safety net for the CLI if the app ended without ``shutdown``."""
        if self.embedded is not None:
            self.embedded.stop()
            self.embedded = None
