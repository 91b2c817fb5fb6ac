"""Object stores and their objects (size, chunks, digest, modification time);
put a local file and get an object into a file with a progress bar (the digest
is checked on get), delete, and live updates when other programs change a store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, ProgressBar, Static

from ...client import NatsError, name_error
from ...client.objects import CountingReader, CountingWriter, ObjectSummary, StoreSummary
from ...format import fmt_bytes
from ...widgets.confirm import ConfirmDialog
from ...widgets.live_table import LiveTable
from ...widgets.fit_label import FitLabel
from ..base import LivePane


class ObjectsPane(LivePane):
    POLL_SECONDS = 2.0
    WRITE_ACTIONS = frozenset({"delete_object", "new_store", "put_file"})
    WRITE_BUTTONS = ("obj-create", "obj-drop", "obj-put")
    BINDINGS = [
        Binding("n", "new_store", "New store", id="objects.new"),
        Binding("p", "put_file", "Put file", id="objects.put"),
        Binding("ctrl+d", "delete_object", "Delete object", id="objects.delete"),
    ]

    @dataclass
    class Stores(Message):
        stores: list[StoreSummary]
        error: str = ""

    @dataclass
    class Objects(Message):
        store: str
        objects: list[ObjectSummary]

    @dataclass
    class Changed(Message):
        store: str

    @dataclass
    class Done(Message):
        text: str
        error: bool = False

    def __init__(self, **kw):
        super().__init__(**kw)
        self.stores: dict[str, StoreSummary] = {}
        self.store: str | None = None
        self.objects: dict[str, ObjectSummary] = {}
        self._transfer: CountingReader | CountingWriter | None = None

    def compose(self) -> ComposeResult:
        # beside the tour at 80 columns the pane is ~48 wide: its labels say it shorter there
        if self.read_only:
            yield FitLabel("Object stores — get an object into a file (digest checked) · read-only",
                           "Objects — get one into a file · read-only", classes="pane-status", id="obj-status")
        else:
            yield FitLabel("Object stores — n new store · p put a file · get it back (digest checked)",
                           "Objects — n new store · p put a file · get it", classes="pane-status", id="obj-status")
        with Horizontal(id="obj-body"):
            with Vertical(id="obj-left"):
                yield LiveTable([("Store", "name"), ("Size", "bytes"), ("Storage", "storage")], id="obj-stores")
                # the buttons under the name: beside it, they squeezed it to nothing at 80 columns
                with Vertical(classes="form-row", id="obj-store-form"):
                    yield Label("New store")
                    yield Input(placeholder="e.g. FILES", id="obj-new")
                    with Horizontal(id="obj-store-buttons"):
                        yield Button("Create", id="obj-create")
                        yield Button("Delete store", id="obj-drop")
            with Vertical(id="obj-right"):
                yield LiveTable([("Object", "name"), ("Size", "size"), ("Chunks", "chunks"), ("Digest", "digest"), ("Modified", "mtime")], id="obj-list")
                with Horizontal(classes="form-row"):
                    with Vertical(classes="cell wide"):
                        yield FitLabel("Local file (put/get)", "File (put/get)", "File")
                        yield Input(placeholder="e.g. ./report.pdf", id="obj-path")
                    with Vertical(classes="cell"):
                        yield FitLabel("Object name", "Name")
                        yield Input(id="obj-name")
                    yield Button("Put", id="obj-put")
                    yield Button("Get", id="obj-get")
                yield ProgressBar(id="obj-progress", show_eta=False)
                yield Static("", id="obj-result")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#obj-progress", ProgressBar).display = False
        self.set_interval(0.1, self._progress)

    async def fetch(self, client) -> None:
        self.post_message(self.Stores(await client.list_object_stores()))

    def poll_failed(self, error: NatsError) -> None:
        self.post_message(self.Stores([], str(error)))

    @on(Stores)
    def show_stores(self, event: Stores) -> None:
        if event.error:
            self._done(event.error, True)
            return
        self.stores = {s.name: s for s in sorted(event.stores, key=lambda s: s.name)}
        self.query_one("#obj-stores", LiveTable).sync(
            {s.name: (s.name, fmt_bytes(s.bytes), s.storage) for s in self.stores.values()}
        )
        self._store_changed()

    @on(LiveTable.RowHighlighted, "#obj-stores")
    def _on_store_row(self, event) -> None:
        event.stop()
        self._store_changed()

    def _store_changed(self) -> None:
        name = self.query_one("#obj-stores", LiveTable).selected_key
        if name != self.store:
            self.store = name
            self.objects.clear()
            self.query_one("#obj-list", LiveTable).sync({})
            if name:
                self.load_objects(name)
                self.watch_store(name)

    @work(exclusive=True, group="obj-list", exit_on_error=False)
    async def load_objects(self, store: str) -> None:
        try:
            objects = await self.app.client.list_objects(store)
        except (NatsError, AttributeError) as exc:
            self.post_message(self.Done(f"list {store}: {exc}", True))
            return
        self.post_message(self.Objects(store, objects))

    @work(exclusive=True, group="obj-watch", exit_on_error=False)
    async def watch_store(self, store: str) -> None:
        try:
            async for _ in self.app.client.watch_objects(store):
                self.post_message(self.Changed(store))
        except (NatsError, AttributeError):
            return

    @on(Changed)
    def on_changed(self, event: Changed) -> None:
        if event.store == self.store:
            self.load_objects(event.store)

    @on(Objects)
    def show_objects(self, event: Objects) -> None:
        if event.store != self.store:
            return
        self.objects = {o.name: o for o in event.objects if not o.deleted}
        stable = getattr(self.app, "stable_display", False)
        self.query_one("#obj-list", LiveTable).sync({
            o.name: (o.name, fmt_bytes(o.size), o.chunks, o.digest.removeprefix("SHA-256=")[:16] + "…",
                     "--" if stable else o.mtime[:19].replace("T", " "))
            for o in sorted(self.objects.values(), key=lambda o: o.name)
        })

    @on(LiveTable.RowHighlighted, "#obj-list")
    def _on_object_row(self, event) -> None:
        event.stop()
        key = self.query_one("#obj-list", LiveTable).selected_key
        if key:
            self.query_one("#obj-name", Input).value = key

    # ---- actions -----------------------------------------------------------
    def action_new_store(self) -> None:
        """n: to the New store field; Enter there creates it."""
        self.screen.set_focus(self.query_one("#obj-new", Input))

    @on(Button.Pressed, "#obj-create")
    @on(Input.Submitted, "#obj-new")  # a one-field form: Enter submits it
    def create_store(self) -> None:
        name = self.query_one("#obj-new", Input).value.strip()
        if err := name_error(name, "store name"):
            self._done(err, True)
            return
        self._create(name)

    @work(group="obj-action", exit_on_error=False)
    async def _create(self, name: str) -> None:
        try:
            await self.app.client.create_object_store(name)
        except NatsError as exc:
            self.post_message(self.Done(f"create {name}: {exc}", True))
            return
        self.post_message(self.Done(f"store {name} created"))
        self.schedule_poll(0.01)

    @on(Button.Pressed, "#obj-drop")
    def drop_store(self) -> None:
        name = self.store
        if name:
            self.app.push_screen(ConfirmDialog(f"Delete object store {name} and every object in it?"),
                                 lambda yes: yes and self._drop(name))

    @work(group="obj-action", exit_on_error=False)
    async def _drop(self, name: str) -> None:
        try:
            await self.app.client.delete_object_store(name)
        except NatsError as exc:
            self.post_message(self.Done(f"delete {name}: {exc}", True))
            return
        self.post_message(self.Done(f"store {name} deleted"))
        self.schedule_poll(0.01)

    def action_put_file(self) -> None:
        """p: to the Local file field; Enter there (or in Object name) puts the
        file (it took four Tabs, past Create and Delete store, to get there)."""
        self.screen.set_focus(self.query_one("#obj-path", Input))
        self._done(f"Type a file's path, Enter puts it into {self.store}" if self.store
                   else "Select or create a store first (n), then the file's path here")

    @on(Button.Pressed, "#obj-put")
    @on(Input.Submitted, "#obj-path, #obj-name")
    def put(self) -> None:
        if not self.store:
            self._done("select or create a store first", True)
            return
        path = Path(self.query_one("#obj-path", Input).value.strip()).expanduser()
        if not path.is_file():
            self._done(f"no such file: {path}", True)
            return
        name = self.query_one("#obj-name", Input).value.strip() or path.name
        self._put(self.store, name, path)

    @work(exclusive=True, group="obj-transfer", exit_on_error=False)
    async def _put(self, store: str, name: str, path: Path) -> None:
        size = path.stat().st_size
        self._start_progress(size)
        try:
            with path.open("rb") as f:
                reader = CountingReader(f)
                self._transfer = reader
                info = await self.app.client.put_object(store, name, reader)
        except (NatsError, OSError) as exc:
            self.post_message(self.Done(f"put {name}: {exc}", True))
            return
        finally:
            self._transfer = None
        self.post_message(self.Done(f"put {name}: {fmt_bytes(info.size)} in {info.chunks} chunks, {info.digest}"))

    @on(Button.Pressed, "#obj-get")
    def get(self) -> None:
        name = self.query_one("#obj-name", Input).value.strip()
        if not self.store or name not in self.objects:
            self._done("pick an object to get", True)
            return
        dest = Path(self.query_one("#obj-path", Input).value.strip() or name).expanduser()
        if dest.is_dir():
            dest = dest / name
        self._get(self.store, name, dest, self.objects[name].size)

    @work(exclusive=True, group="obj-transfer", exit_on_error=False)
    async def _get(self, store: str, name: str, dest: Path, size: int) -> None:
        self._start_progress(size)
        tmp = dest.with_name(dest.name + ".part")
        try:
            with tmp.open("wb") as f:
                writer = CountingWriter(f)
                self._transfer = writer
                info = await self.app.client.get_object(store, name, writer)
            tmp.replace(dest)
        except (NatsError, OSError) as exc:
            tmp.unlink(missing_ok=True)
            self.post_message(self.Done(f"get {name}: {exc}", True))
            return
        finally:
            self._transfer = None
        self.post_message(self.Done(f"got {name} → {dest} ({fmt_bytes(info.size)}, digest checked)"))

    def action_delete_object(self) -> None:
        name = self.query_one("#obj-list", LiveTable).selected_key
        store = self.store
        if store and name:
            self.app.push_screen(ConfirmDialog(f"Delete object {name} from {store}?"),
                                 lambda yes: yes and self._delete(store, name))

    @work(group="obj-action", exit_on_error=False)
    async def _delete(self, store: str, name: str) -> None:
        try:
            await self.app.client.delete_object(store, name)
        except NatsError as exc:
            self.post_message(self.Done(f"delete {name}: {exc}", True))
            return
        self.post_message(self.Done(f"deleted {name}"))

    def _start_progress(self, total: int) -> None:
        bar = self.query_one("#obj-progress", ProgressBar)
        bar.update(total=max(total, 1), progress=0)
        bar.display = True

    def _progress(self) -> None:
        if self._transfer is not None:
            self.query_one("#obj-progress", ProgressBar).update(progress=self._transfer.done)

    @on(Done)
    def _on_done(self, event: Done) -> None:
        self._done(event.text, event.error)
        if not event.error:
            bar = self.query_one("#obj-progress", ProgressBar)
            if bar.total:
                bar.update(progress=bar.total)

    def _done(self, text: str, error: bool = False) -> None:
        result = self.query_one("#obj-result", Static)
        result.set_class(error, "-error")
        result.update(Text(text))
