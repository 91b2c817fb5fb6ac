"""What a tour step works with: the app's client, its panes, the timing, and
the shapes a step hands back (readings from the broker, places to look at).

A step's numbers are read from the broker and formatted the way the pane that
shows them formats them; the walkthrough's figure sits beside each for the eye
(and for the ✓), never in its place.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

if TYPE_CHECKING:
    from ..app import NatslabApp
    from ..client import ConsumerSummary, FetchedMessage, NatsClient, StreamSummary


@dataclass(frozen=True)
class Timing:
    """The two waits of the walkthrough. The tour uses the walkthrough's own;
    the tests shorten them (and the tour's text then says what the walkthrough used)."""

    ack_wait: float = 4.0  # RDL's ack wait
    max_age: float = 8.0  # TTL's max age


WALKTHROUGH = Timing()
DEFAULT_TIMING = WALKTHROUGH  # what the panel uses; the tests shorten it


def secs(seconds: float) -> str:
    return f"{seconds:g} s"


@dataclass(frozen=True)
class Reading:
    """One number the step read from the broker, as its pane shows it."""

    label: str
    value: str
    walkthrough: str | None = None  # the seed's figure, when it has one
    exact: bool = True  # False: the walkthrough's figure is for comparison only (a round trip)
    group: str = ""  # the stream or consumer it belongs to, said once above its readings

    @property
    def name(self) -> str:
        return f"{self.group} {self.label}".strip()

    @property
    def matches(self) -> bool | None:
        if self.walkthrough is None or not self.exact:
            return None
        return self.value == self.walkthrough


@dataclass(frozen=True)
class Look:
    """A place the step changed: a pane, and there the row and the cells to look at."""

    area: str  # streams | consumers | pull | request | kv
    what: str  # said in the panel: "Streams › DEMO_ORDERS: Messages, Bytes"
    stream: str = ""
    consumer: str = ""
    cells: tuple[str, ...] = ()  # column keys of the pane's table
    bucket: str = ""


class Run:
    """Handed to a step's action while it runs."""

    def __init__(self, app: "NatslabApp", timing: Timing, progress: Callable[[str], None],
                 point: Callable[[Look], None]):
        self.app = app
        self.timing = timing
        self.progress = progress  # one line for the panel: "waiting 3.2 s …"
        self.point = point  # show a place before the step ends (to watch a wait run out there)
        self.rdl: "FetchedMessage | None" = None  # RDL's last delivery, carried from step to step
        self.crashed: "FetchedMessage | None" = None  # the crash chapter's unacked delivery

    @property
    def client(self) -> "NatsClient":
        client = self.app.client
        if client is None or not client.connected:
            from ..client import NatsError

            raise NatsError("not connected")
        return client

    async def pane(self, area: str):
        """The area's pane, mounted if it was not yet."""
        await self.app.main_screen.materialize(area)
        return self.app.main_screen.pane(area)

    async def wait(self, seconds: float, why: str) -> None:
        """Sleep, with a countdown in the panel (the walkthrough's 'six seconds later')."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.progress(f"{why}: {left:.1f} s …")
            await asyncio.sleep(min(0.1, left))
        self.progress("")

    async def until(self, check: Callable[[], Awaitable[bool]], timeout: float) -> None:
        """Poll the broker until ``check`` holds or ``timeout`` passes; the step
        then shows whatever the broker says (a broker that never gets there reads as such)."""
        deadline = time.monotonic() + timeout
        while not await check() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    async def stream(self, name: str) -> "StreamSummary":
        return await self.client.stream_info(name)

    async def consumer(self, stream: str, name: str) -> "ConsumerSummary":
        return await self.client.consumer_info(stream, name)


# ---- readings, formatted by the panes' own row functions ----------------
def stream_cells(s: "StreamSummary") -> dict[str, str]:
    from ..panes.streams.pane import COLUMNS, stream_row

    return {key: str(value) for (_, key), value in zip(COLUMNS, stream_row(s))}


def consumer_cells(c: "ConsumerSummary") -> dict[str, str]:
    from ..panes.consumers.pane import COLUMNS, consumer_row

    return {key: str(value) for (_, key), value in zip(COLUMNS, consumer_row(c, ""))}


STREAM_LABELS = {"messages": "Messages", "bytes": "Bytes", "first": "First Sequence", "last": "Last Sequence"}
CONSUMER_LABELS = {
    "ack_pending": "Outstanding Acks (Ack pend)", "redelivered": "num_redelivered (Redlv)",
    "pending": "Unprocessed (Pending)", "ack_floor": "Ack floor cons/stream",
    "delivered": "Last delivered cons/stream",
}


def stream_readings(s: "StreamSummary", **walkthrough: str) -> list[Reading]:
    cells = stream_cells(s)
    return [Reading(STREAM_LABELS[key], cells[key], want, group=s.name) for key, want in walkthrough.items()]


def consumer_readings(c: "ConsumerSummary", **walkthrough: str) -> list[Reading]:
    cells = consumer_cells(c)
    return [Reading(CONSUMER_LABELS[key], cells[key], want, group=f"{c.stream} › {c.name}")
            for key, want in walkthrough.items()]
