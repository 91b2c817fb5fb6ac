"""The dialog behind `N`: nak one message with a delay the user picks."""

from __future__ import annotations

import math
from typing import Iterable

from textual.widgets import Input

from ...format import fmt_duration, parse_duration
from ...widgets.form import FormField, ModalForm

DEFAULT_NAK_DELAY = 5.0


def parse_nak_delay(text: str) -> float:
    """'500ms', '5s', '1m', '1m30s' or bare seconds ('2.5') -> seconds.

    Raises ValueError with a message fit to show under the field.
    """
    cleaned = text.strip().lower().replace("µs", "us").replace("μs", "us")
    if not cleaned:
        raise ValueError("enter a delay, e.g. 500ms, 5s, 1m or 2.5 (seconds)")
    try:
        seconds = parse_duration(cleaned)
    except ValueError:
        raise ValueError(f"'{text.strip()}' is not a delay (try 500ms, 5s, 1m or 2.5)") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError("the delay must be zero or more")
    return seconds


def show_delay(seconds: float) -> str:
    """The delay as typed back: 500ms, 5s, 1m30s; 0s for none."""
    return fmt_duration(seconds) if seconds > 0 else "0s"


class NakDelayDialog(ModalForm):
    """Returns the chosen delay in seconds, or None when cancelled."""

    SUBMIT_LABEL = "Nak"
    DEFAULT_CSS = """
    NakDelayDialog > #form-box { width: 56; }
    """

    def __init__(self, stream_seq: int, last_delay: float = DEFAULT_NAK_DELAY):
        super().__init__()
        self.TITLE_TEXT = f"Nak stream seq {stream_seq} with a delay"
        self.last_delay = last_delay

    def fields(self) -> Iterable[FormField]:
        yield FormField(
            "Redeliver after (500ms, 5s, 1m, or 2.5 for seconds)",
            Input(show_delay(self.last_delay), id="delay"),
            field_id="delay",
        )

    def submit(self) -> None:
        try:
            delay = parse_nak_delay(self.value("delay"))
        except ValueError as exc:
            self.show_error("delay", str(exc))
            return
        self.dismiss(delay)
