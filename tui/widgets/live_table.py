"""LiveTable: a DataTable that is re-synced from polls without flicker.

Rows are keyed (stream name, consumer name ...), updated in place cell by cell
so the cursor never jumps, and a cell whose value changed is highlighted for a
moment in the theme's accent colour. The guided tour can point at cells:
they stay marked (reversed accent) until it points elsewhere.

Rows stand in the order of the mapping each sync is given: the pane chooses it
(by name for streams, consumers, buckets and keys, as `$JS.API.STREAM.LIST` and
`CONSUMER.LIST` return them on both servers), and a row created while the app
runs takes its place in that order, not the bottom.

Where the cursor goes as rows come and go: until someone puts it on a row (the
user with keys or the mouse, a pane with ``select_key``), it stays on the top
row, whatever object that is, so rows arriving one by one (a KV watch) leave it
on the first in name order, not on the first that arrived; once put on a row,
it stays on that object when rows come or go above it. A table that empties
(another bucket, another stream) starts again at the top.
"""

from __future__ import annotations

from typing import Any, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey


class LiveTable(DataTable):
    HIGHLIGHT_SECONDS = 1.5

    DEFAULT_CSS = """
    LiveTable { height: 1fr; }
    /* rows that could not be refreshed (the pane says why and how old): never shown as current */
    LiveTable.-stale { color: $text-disabled; text-style: dim; }
    """

    def __init__(self, columns: Sequence[tuple[str, str]], *, repaint_on_resize: bool = False, **kw: Any):
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        self.repaint_on_resize = repaint_on_resize
        self._column_spec = list(columns)
        self._values: dict[tuple[str, str], str] = {}
        self._order: list[str] = []
        self._pointed: set[tuple[str, str]] = set()
        # the cursor was put on an object (keys, mouse, select_key): it follows
        # that object from then on; until then it keeps to the top row
        self._chosen = False
        self._syncing = False  # the cursor moves sync makes are not a choice

    def on_mount(self) -> None:
        for label, key in self._column_spec:
            self.add_column(label, key=key)

    async def _on_idle(self, event) -> None:
        # Textual's DataTable sizes columns to new cells on idle but keeps the
        # rows it rendered before at the old widths (its row cache is keyed by
        # update count, not widths): a row painted in between stayed cut to
        # the header's widths ("nats" for "natslab") until its next change.
        # Opt-in (repaint_on_resize): the other panes' status lines read the
        # table's size at their own moments, and their pictures rely on that.
        if not self.repaint_on_resize:
            return  # (DataTable's own _on_idle runs as well: Textual calls each class's handler)
        widths = [c.content_width for c in self.columns.values()]
        await super()._on_idle(event)
        if widths != [c.content_width for c in self.columns.values()]:
            self._clear_caches()
            self.refresh()

    def _highlight_style(self) -> str:
        variables = getattr(self.app, "theme_variables", None) or self.app.get_css_variables()
        return f"bold {variables.get('text-accent', variables.get('accent', ''))}"

    def _resting_style(self, cell: tuple[str, str]) -> str:
        return f"reverse {self._highlight_style()}" if cell in self._pointed else ""

    def sync(self, rows: dict[str, Sequence[Any]]) -> None:
        """Make the table show exactly ``rows`` (row key -> cell values), in their order."""
        self._syncing = True
        try:
            self._sync(rows)
        finally:
            self._syncing = False

    def _sync(self, rows: dict[str, Sequence[Any]]) -> None:
        keys = [key for _, key in self._column_spec]
        selected, at = self.selected_key, self.cursor_coordinate
        for row_key in [k for k in self._order if k not in rows]:
            self.remove_row(row_key)
            self._order.remove(row_key)
            for col in keys:
                self._values.pop((row_key, col), None)
        changed: list[tuple[str, str]] = []
        style = self._highlight_style()
        widest = dict.fromkeys(keys, 0)  # of the cells added or changed now
        for row_key, cells in rows.items():
            texts = [str(c) for c in cells]
            if row_key not in self._order:
                self.add_row(*(Text(t, style=self._resting_style((row_key, col))) for col, t in zip(keys, texts)),
                             key=row_key)
                self._order.append(row_key)
                for col, t in zip(keys, texts):
                    self._values[(row_key, col)] = t
                    widest[col] = max(widest[col], cell_len(t))
                continue
            for col, t in zip(keys, texts):
                if self._values.get((row_key, col)) != t:
                    self._values[(row_key, col)] = t
                    self.update_cell(row_key, col, Text(t, style=style), update_width=True)
                    changed.append((row_key, col))
                    widest[col] = max(widest[col], cell_len(t))
        self._widen(widest)
        if self._order != list(rows):
            self._reorder(list(rows))
        if not rows:
            self._chosen = False  # emptied: the next rows are a fresh start, cursor on top
        elif not self._chosen:
            if self.cursor_row != 0:
                self.move_cursor(row=0, animate=False)
        elif selected in rows and self.get_row_index(selected) != self.cursor_row:
            # a row came or went above it: the cursor keeps its object, not its line
            self.move_cursor(row=self.get_row_index(selected), animate=False)
        now = self.selected_key
        if selected is not None and now is not None and now != selected and self.cursor_coordinate == at:
            # another object under the cursor on the same line (one sorting
            # before it arrived, or its own row went): DataTable only says so
            # when the cursor's coordinate changes, and the panes show the
            # highlighted row's details
            self.post_message(self.RowHighlighted(self, self.cursor_row,
                                                  self.coordinate_to_cell_key(self.cursor_coordinate).row_key))
        if changed and getattr(self.app, "stable_display", False):
            self._unhighlight(changed)  # pictures and snapshots must not depend on timing
        elif changed:
            self.set_timer(self.HIGHLIGHT_SECONDS, lambda: self._unhighlight(changed))

    def _widen(self, widest: dict[str, int]) -> None:
        """Widen the columns to the cells just added or changed, before the next
        paint. DataTable widens them only on idle, and a row painted in between
        keeps the narrower widths: on a loaded machine the KV keys read "key 40
        PU" for "key-00 40 PUT" 15 s after the last key came. Narrowing (a long
        cell gone) is left to DataTable's idle pass; so is the virtual size the
        panes' "more columns" hints read."""
        for col, width in widest.items():
            column = self.columns.get(ColumnKey(col))
            if column is not None and column.auto_width and width > column.content_width:
                column.content_width = width

    def _reorder(self, order: list[str]) -> None:
        """Put the rows in ``order`` (same keys as shown) without rebuilding them:
        DataTable.sort only renumbers its row locations and repaints once."""
        # sort's key function sees a row's cells, not its key; it is called once per
        # row in the order of the table's rows (``self.rows``), so ranks are fed in
        # that order
        rank = {key: at for at, key in enumerate(order)}
        ranks = iter([rank[row_key.value] for row_key in self.rows])
        self.sort(key=lambda _cells: next(ranks))
        self._order = order

    def _unhighlight(self, cells: list[tuple[str, str]]) -> None:
        for row_key, col in cells:
            value = self._values.get((row_key, col))
            if value is not None:
                self.update_cell(row_key, col, Text(value, style=self._resting_style((row_key, col))))

    def point_at(self, row_key: str | None, cols: tuple[str, ...] = ()) -> None:
        """Mark these cells of one row (the tour's "look here"); None clears the marks.
        The row gets the cursor and the first marked column is scrolled into view."""
        before, self._pointed = self._pointed, {(row_key, col) for col in cols} if row_key else set()
        self._unhighlight(sorted(before | self._pointed))
        if row_key is None or row_key not in self._order:
            return
        self.select_key(row_key)
        if cols:
            columns = [key for _, key in self._column_spec]
            at = columns.index(cols[0]) if cols[0] in columns else 0
            x = sum(c.get_render_width(self) for c in self.ordered_columns[:at])
            width = self.ordered_columns[at].get_render_width(self) if at < len(self.ordered_columns) else 0
            if x < self.scroll_x or x + width > self.scroll_x + self.scrollable_content_region.width:
                self.scroll_to(x=x, animate=False)

    @property
    def pointed(self) -> set[tuple[str, str]]:
        return set(self._pointed)

    @property
    def selected_key(self) -> str | None:
        if not self.row_count or self.cursor_row < 0:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except CellDoesNotExist:
            return None

    def value(self, row_key: str, col: str) -> str | None:
        return self._values.get((row_key, col))

    def select_key(self, row_key: str) -> None:
        """Put the cursor on ``row_key``'s row; it follows that object from now on."""
        if row_key in self._order:
            self._chosen = True
            self.move_cursor(row=self.get_row_index(row_key))

    def watch_cursor_coordinate(self, old: Coordinate, new: Coordinate) -> None:
        super().watch_cursor_coordinate(old, new)
        if old != new and not self._syncing:
            self._chosen = True  # keys, a click, a page key: the user chose this row

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        # Enter, or a click on the row the cursor is on (row 0 before any move):
        # a choice too, though the cursor did not move. The message goes on to the pane.
        self._chosen = True
