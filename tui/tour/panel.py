"""The guided tour's side panel: one step of the walkthrough at a time.

It says what the step will do, runs it on the connected broker (after the
demos' own questions: a server natslab did not start, a DEMO_ stream that
exists already), shows the numbers the broker answered beside the
walkthrough's, and switches to the pane and cells that changed.
"""

from __future__ import annotations


from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.markup import escape
from textual.widgets import Label, Static

from ..client import NatsError
from ..demos import ask_before, confirm, is_remote, may_write, stream_exists
from .run import Look, Reading, Run, Timing
from .crash import steps_for
from .steps import ALL_CREATES, step_text

TABLES = {"streams": ("streams", "#streams-table"), "consumers": ("consumers", "#consumers-table")}


class TourPanel(Vertical):
    BINDINGS = [
        Binding("enter", "go", "Run step / next", id="tour.go"),
        Binding("right,n", "move(1)", "Next step", id="tour.next"),
        Binding("left,p", "move(-1)", "Previous step", id="tour.back"),
        Binding("l", "look", "Look at the next place", id="tour.look"),
        Binding("r", "again", "Run this part again", id="tour.again", show=False),
        Binding("c", "chapter", "Next chapter that stands alone", id="tour.chapter", show=False),
        Binding("escape", "close", "Close the tour", id="tour.close"),
    ]
    can_focus = True

    def __init__(self, timing: Timing, **kw):
        super().__init__(**kw)
        self.timing = timing
        self.index = 0
        self.results: dict[int, list[Reading]] = {}
        self.failed: dict[int, str] = {}
        self.running: int | None = None
        self.remote_ok = False  # the user agreed to work on a server natslab did not start
        self.look_at = 0
        self.run_ctx: Run | None = None
        self.steps = ()  # the app's (steps_for: the crash chapter on the embedded broker)

    def compose(self) -> ComposeResult:
        yield Label("", id="tour-progress")
        with VerticalScroll(id="tour-body"):
            # what happened (once run) above what the step does: at 80x24 the numbers stay in sight
            yield Static("", id="tour-title")
            yield Static("", id="tour-status")
            yield Static("", id="tour-readings")
            yield Static("", id="tour-look")
            yield Static("", id="tour-says")
        yield Label("", id="tour-keys")


    def on_mount(self) -> None:
        self.steps = steps_for(self.app)
        self.run_ctx = Run(self.app, self.timing, self._progress, self.show_place)
        self._hold_focus_at: int | None = None  # the user's input count when a look took the focus
        self.watch(self.screen, "focused", self._focus_moved, init=False)
        self.show_step()

    def _focus_moved(self, focused) -> None:
        # A tab shown by the tour focuses its pane (MainScreen.tab_activated);
        # the tour's keys stay with the panel after it pointed somewhere, until
        # the user presses a key or clicks (however long the pane takes to mount
        # and focus itself: on a busy machine that was more than a second).
        if (focused is not self and self.display and self._hold_focus_at is not None
                and self._hold_focus_at == getattr(self.app, "user_inputs", 0)):
            self.call_later(self.focus)
        self._show_keys(focused is self)

    def _show_keys(self, mine: bool) -> None:
        self.query_one("#tour-keys", Label).update(
            "⏎ run  ←→ step  l look  esc" if mine else "[b]T[/b]: the tour's keys again")

    # ---- what the panel shows --------------------------------------------
    @property
    def progress_text(self) -> str:
        return f"step {self.index + 1}/{len(self.steps)}"

    def show_step(self) -> None:
        step = self.steps[self.index]
        self.query_one("#tour-progress", Label).update(f"Guided tour · {self.progress_text}")
        self.query_one("#tour-title", Static).update(f"[b]{escape(step.chapter)}[/b]\n[$text-accent]{escape(step.title)}[/]")
        readings = self.results.get(self.index)
        says = self.query_one("#tour-says", Static)
        says.update(escape(step_text(step, self.timing)))
        says.set_class(readings is not None, "-done")
        status = self.query_one("#tour-status", Static)
        if self.running == self.index:
            status.update("[$text-warning]running…[/]")
        elif self.index in self.failed:
            status.update(f"[$text-error]failed: {escape(self.failed[self.index])}[/] — enter tries again")
        elif readings is None:
            status.update("[b]enter[/b] runs this step")
        else:
            status.update("[$text-success]done[/] — [b]enter[/b] next step · [b]r[/b] again" if self.index + 1 < len(self.steps)
                          else "[$text-success]done[/] — that was the whole walkthrough. [b]esc[/b] closes")
        self.query_one("#tour-readings", Static).update(self._readings_markup(readings or []))
        self.query_one("#tour-readings").display = bool(readings)
        looks = step.looks if readings is not None else ()
        look = self.query_one("#tour-look", Static)
        if looks:
            where = looks[self.look_at % len(looks)]
            more = f" ([b]l[/b]: {len(looks) - 1} more)" if len(looks) > 1 else ""
            look.update(f"[b]Look at[/b]{more}: {escape(where.what)}")
        look.display = bool(looks)
        self._show_keys(self.screen.focused is self)

    @staticmethod
    def _readings_markup(readings: list[Reading]) -> str:
        """Grouped by stream / consumer; ✓ where the broker's figure is the
        walkthrough's, ✗ and the walkthrough's where it is not."""
        lines, group = [], None
        for r in readings:
            if r.group != group:
                group = r.group
                if group:
                    lines.append(f"[b]{escape(group)}[/b]")
            if r.matches:
                lines.append(f"[$text-success]✓[/] {escape(r.label)}: [b]{escape(r.value)}[/b]")
                continue
            mark = "[$text-error]✗[/]" if r.matches is False else "·"
            seed = f" [dim]walkthrough: {escape(r.walkthrough)}[/dim]" if r.walkthrough is not None else ""
            lines.append(f"{mark} {escape(r.label)}: [b]{escape(r.value)}[/b]{seed}")
        if any(r.matches for r in readings):
            lines.append("[dim]✓ the walkthrough's figure, read from this broker[/dim]")
        return "\n".join(lines)

    def _progress(self, text: str) -> None:
        if self.running == self.index:
            self.query_one("#tour-status", Static).update(f"[$text-warning]{escape(text or 'running…')}[/]")

    # ---- keys ----------------------------------------------------------------
    def action_go(self) -> None:
        if self.running is not None:
            return
        if self.index in self.results:
            self.action_move(1)
        else:
            self.run_step(self.index)

    def action_again(self) -> None:
        """Run this part of the walkthrough again: from the nearest step that needs
        no earlier one (it makes its own streams). The steps after it built on the
        old run, so they are to run again too."""
        if self.running is not None or self.index not in self.results:
            return
        start = max(i for i in range(self.index + 1) if self.steps[i].starts_over or i == 0)
        for later in [i for i in self.results if i >= start]:
            del self.results[later]
        self.index, self.look_at = start, 0
        self.run_step(start)

    def action_move(self, by: int) -> None:
        to = self.index + by
        if not 0 <= to < len(self.steps) or self.running is not None:
            return
        if by > 0 and self.index not in self.results:
            self.query_one("#tour-status", Static).update(
                "[b]enter[/b] runs this step first: the next one builds on it")
            return
        self.index, self.look_at = to, 0
        self.show_step()
        if to in self.results:
            self.look()

    def action_chapter(self) -> None:
        """To the first step of the next chapter that needs nothing before it
        (the crash chapter makes its own stream): no earlier step to run first."""
        if self.running is not None:
            return
        here = self.steps[self.index].chapter
        for to in range(self.index + 1, len(self.steps)):
            step = self.steps[to]
            if step.chapter != here and step.starts_over and step.chapter != self.steps[to - 1].chapter:
                self.index, self.look_at = to, 0
                self.show_step()
                if to in self.results:
                    self.look()
                return
        self.query_one("#tour-status", Static).update("no chapter after this one stands alone")

    def action_look(self) -> None:
        if self.index in self.results:
            self.look_at += 1
            self.show_step()
            self.look()

    def action_close(self) -> None:
        self._point_nowhere()
        self.display = False
        screen = self.app.main_screen
        screen.fit_tabs(screen.size.width)  # the whole width again: the tabs' long or short titles
        pane = screen.pane(screen.active_area) if screen.active_area else None
        if pane is not None:
            screen.focus_pane(pane)

    # ---- running a step ------------------------------------------------------
    @work(exclusive=True, group="tour", exit_on_error=False)
    async def run_step(self, index: int) -> None:
        app, step = self.app, self.steps[index]
        if not may_write(app, "the tour's steps"):
            return
        self.running = index
        self.failed.pop(index, None)
        self.show_step()
        try:
            found = [name for name in step.creates if await stream_exists(app.client, name)]
            remote = is_remote(app) and not self.remote_ok
            ask = ask_before(app, "The guided tour", list(ALL_CREATES if remote else step.creates), found,
                             remote=remote)
            if ask is not None and not await confirm(app, ask, "Replace and run" if found else "Run the tour"):
                self.running = None
                self.show_step()
                self.query_one("#tour-status", Static).update("nothing was changed — [b]enter[/b] asks again")
                return
            self.remote_ok = self.remote_ok or remote
            for name in found:
                await app.client.delete_stream(name)
            readings = await step.action(self.run_ctx)
        except NatsError as exc:
            self.failed[index] = str(exc)
            self.running = None
            self.show_step()
            return
        except Exception as exc:  # a bug must not leave the panel "running…" for ever: it says what broke
            self.failed[index] = f"{type(exc).__name__}: {exc}"
            self.running = None
            self.show_step()
            raise
        finally:
            self.focus()
        self.results[index] = readings
        self.running = None
        self.look_at = 0
        if self.index == index:
            self.show_step()
            self.look()

    # ---- pointing at the panes -----------------------------------------------
    def look(self) -> None:
        looks = self.steps[self.index].looks
        if looks:
            self.show_place(looks[self.look_at % len(looks)])

    def show_place(self, where: Look) -> None:
        """Switch to the pane of ``where``, select its row and mark its cells."""
        self._point_nowhere()
        app = self.app
        if where.area == "streams":
            app.jump_to_stream(where.stream)
        elif where.area == "consumers":
            app.jump_to_consumer(where.stream, where.consumer)
        elif where.area == "pull":
            app.jump_to_consumer(where.stream, where.consumer, show=False)
            app.open_pull_hand(where.stream, where.consumer)
        elif where.area == "kv":
            app.jump_to_bucket(where.bucket)
        else:
            app.action_tab(where.area)
        if where.area in TABLES and where.cells:
            self._point(where)
        self._hold_focus_at = getattr(self.app, "user_inputs", 0)
        self.focus()

    def _point(self, where: Look) -> None:
        area, selector = TABLES[where.area]

        def mark(pane) -> None:
            pane.query_one(selector).point_at(where.consumer or where.stream, where.cells)
            if hasattr(pane, "schedule_poll"):
                pane.schedule_poll(0.01)  # the new numbers now, not at the next tick

        self.app.main_screen.with_pane(area, mark)

    def _point_nowhere(self) -> None:
        for area, selector in TABLES.values():
            pane = self.app.main_screen.pane(area)
            if pane is not None:
                pane.query_one(selector).point_at(None)
