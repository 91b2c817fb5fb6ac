"""What a mismatched snapshot differs in, as text in the failure report.

pytest-textual-snapshot writes its comparison to an HTML page on the machine
that ran the suite; a CI log shows only ``assert False``. For a snapshot that
failed, this adds the rows that differ (the screen as text, expected ``-`` and
actual ``+``), or, when the text is the same, the rows whose colours or styles
differ with the styles named, so a failure seen once in CI can be traced.
"""

from __future__ import annotations

import difflib
import html
import pickle
import re

_TEXT = re.compile(r'<text class="([^"]*)" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>')
_STYLE = re.compile(r"\.(terminal-(?:\d+-)?r\d+) \{([^}]*)\}")
CELL_W = 12.2  # rich's export_svg: one terminal cell's width


def screen_rows(svg: str) -> tuple[list[str], list[str]]:
    """The screen's rows as text, and as runs of ``style:text``."""
    styles = {name.split("-")[-1]: css.strip() for name, css in _STYLE.findall(svg)}
    rows: dict[float, list[tuple[float, str, str]]] = {}
    for cls, x, y, text in _TEXT.findall(svg):
        rows.setdefault(float(y), []).append((float(x), cls.split("-")[-1], html.unescape(text)))
    plain, styled = [], []
    for y in sorted(rows):
        line, runs = "", []
        for x, cls, text in sorted(rows[y]):
            line = line.ljust(int(round(x / CELL_W))) + text
            if text.strip("\xa0 "):
                runs.append(f"[{styles.get(cls, cls)}]{text}")
        plain.append(line.replace("\xa0", " ").rstrip())
        styled.append(" ".join(runs).replace("\xa0", " "))
    return plain, styled


def describe(expected_svg: str, actual_svg: str) -> str:
    want, want_styled = screen_rows(expected_svg)
    got, got_styled = screen_rows(actual_svg)
    if want != got:
        diff = difflib.unified_diff(want, got, "expected", "actual", lineterm="", n=1)
        return "the screen as text differs:\n" + "\n".join(diff)
    rows = [f"row {i}:\n  - {a}\n  + {b}" for i, (a, b) in enumerate(zip(want_styled, got_styled)) if a != b]
    if rows:
        return "the text is the same; colours or styles differ:\n" + "\n".join(rows)
    return "the text and its styles are the same (the difference is elsewhere in the SVG)"


def from_report_data(path) -> str | None:
    """The description for the data pytest-textual-snapshot saved for a test, if it failed."""
    try:
        data = pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    passed, expected, actual = data[0], data[1], data[2]
    if passed or not expected:
        return None
    return describe(expected, actual)
