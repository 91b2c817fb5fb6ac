"""The guided tour, every step, in the real app on a real broker.

The broker holds a user's ORDERS stream (with consumers WORKER and RDL, as the
walkthrough's) and CONFIG bucket; the tour runs all its steps (opened with T,
answered "yes" on this server natslab did not start) and the walkthrough's
numbers are read where the user reads them: the panel's readings and the
panes' cells. Afterwards the user's objects are exactly as they were.
The waits are shortened (ack wait 0.3 s, max age 1 s); the tour says so. The max age
must outlast publishing three messages and reading the stream on a loaded machine
(at 0.3 s one message once expired before the reading).
Under --read-only the tour explains and changes nothing.
"""

from __future__ import annotations

import pytest
from textual.command import CommandPalette

from natslab.tui.tour import run
from natslab.tui.tour.steps import STEPS

from .conftest import answer, connected, screen_text, wait_for

FAST = run.Timing(ack_wait=0.3, max_age=1.0)


@pytest.fixture(autouse=True)
def fast_tour(monkeypatch):
    monkeypatch.setattr(run, "DEFAULT_TIMING", FAST)


def readings(panel, index: int) -> dict[str, str]:
    return {r.name: r.value for r in panel.results[index]}


def cell(app, area: str, row: str, col: str):
    return app.main_screen.pane(area).query_one(f"#{area}-table").value(row, col)


async def run_step(app, pilot, panel, number: int) -> dict[str, str]:
    """Enter on step ``number`` (1-based): it runs; the panel says done."""
    assert panel.progress_text == f"step {number}/{len(STEPS)}"
    await pilot.press("enter")
    if number == 1:  # a server natslab did not start: asked once, first
        question = await answer(app, pilot)
        assert "did not start" in question and "DEMO_ORDERS" in question and "KV_DEMO_C" in question
    await wait_for(pilot, lambda: number - 1 in panel.results or number - 1 in panel.failed, timeout=10,
                   what=f"step {number} done")
    assert number - 1 not in panel.failed, panel.failed
    bad = [r for r in panel.results[number - 1] if r.matches is False]
    assert not bad, bad  # every figure the walkthrough has, the broker gave
    return readings(panel, number - 1)


async def next_step(pilot, panel, number: int) -> None:
    await pilot.press("enter")
    await wait_for(pilot, lambda: panel.progress_text == f"step {number}/{len(STEPS)}", what=f"on step {number}")


async def test_the_tour_runs_every_step_with_the_walkthroughs_numbers(make_app, user_data):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:  # the smallest terminal it is laid out for
        await connected(app, pilot)
        await pilot.press("T")
        await wait_for(pilot, lambda: len(app.screen.query("#tour")) == 1, what="tour panel")
        panel = app.screen.query_one("#tour")
        assert "step 1/15" in screen_text(app)

        r = await run_step(app, pilot, panel, 1)
        assert r["DEMO_ORDERS Messages"] == "0"
        await next_step(pilot, panel, 2)
        r = await run_step(app, pilot, panel, 2)
        assert (r["DEMO_ORDERS Messages"], r["DEMO_ORDERS Bytes"]) == ("4", "222 B")
        # the streams pane shows it, and the tour points at those cells
        await wait_for(pilot, lambda: cell(app, "streams", "DEMO_ORDERS", "bytes") == "222 B", what="222 B in the pane")
        table = app.main_screen.pane("streams").query_one("#streams-table")
        assert ("DEMO_ORDERS", "bytes") in table.pointed and app.main_screen.active_area == "streams"

        await next_step(pilot, panel, 3)
        r = await run_step(app, pilot, panel, 3)
        assert r["streams that took it"] == "0" and r["DEMO_ORDERS Messages"] == "4"

        await next_step(pilot, panel, 4)
        r = await run_step(app, pilot, panel, 4)
        assert (r["DEMO_ORDERS › WORKER Outstanding Acks (Ack pend)"], r["DEMO_ORDERS › WORKER Ack floor cons/stream"],
                r["DEMO_ORDERS › WORKER Unprocessed (Pending)"]) == ("0", "2/2", "2")
        await wait_for(pilot, lambda: cell(app, "consumers", "WORKER", "pending") == "2", what="WORKER in the pane")

        await next_step(pilot, panel, 5)
        assert "ack wait of 0.3 s (the walkthrough used 4 s; 0.3 s here)" in str(panel.query_one("#tour-says").content)
        r = await run_step(app, pilot, panel, 5)
        assert (r["tries"], r["str seq / cons seq"]) == ("1", "2 / 2")
        hand = app.main_screen.pane("pull")
        await wait_for(pilot, lambda: app.main_screen.active_area == "pull", what="the pull hand shown")
        assert [c.fm.num_delivered for c in hand.query("HandCard")] == [1]

        await next_step(pilot, panel, 6)
        r = await run_step(app, pilot, panel, 6)
        assert (r["DEMO_ORDERS › RDL Outstanding Acks (Ack pend)"], r["DEMO_ORDERS › RDL num_redelivered (Redlv)"]) == ("1", "0")
        await wait_for(pilot, lambda: cell(app, "consumers", "RDL", "redelivered") == "0"
                       and cell(app, "consumers", "RDL", "ack_pending") == "1", what="RDL 1 outstanding, 0 redelivered")

        await next_step(pilot, panel, 7)
        r = await run_step(app, pilot, panel, 7)
        assert (r["tries"], r["DEMO_ORDERS › RDL num_redelivered (Redlv)"], r["DEMO_ORDERS › RDL Outstanding Acks (Ack pend)"],
                r["DEMO_ORDERS › RDL Unprocessed (Pending)"]) == ("2", "1", "1", "2")
        assert "tries 2" in screen_text(app)  # the pull hand's card, on screen
        await pilot.press("l")  # the next place: the consumers table
        await wait_for(pilot, lambda: cell(app, "consumers", "RDL", "redelivered") == "1", what="Redlv 1 in the pane")

        await next_step(pilot, panel, 8)
        r = await run_step(app, pilot, panel, 8)
        assert (r["tries"], r["DEMO_ORDERS › RDL Outstanding Acks (Ack pend)"], r["DEMO_ORDERS › RDL Ack floor cons/stream"]) == ("3", "0", "4/2")

        await next_step(pilot, panel, 9)
        r = await run_step(app, pilot, panel, 9)
        assert list(r.values()) == ["3", "0"]

        await next_step(pilot, panel, 10)
        r = await run_step(app, pilot, panel, 10)
        assert (r["DEMO_LIMITS Messages"], r["DEMO_LIMITS First Sequence"]) == ("2", "3")

        await next_step(pilot, panel, 11)
        r = await run_step(app, pilot, panel, 11)
        assert (r["DEMO_EVENTS First Sequence"], r["DEMO_EVENTS Last Sequence"]) == ("3", "2")
        await wait_for(pilot, lambda: (cell(app, "streams", "DEMO_EVENTS", "first"),
                                       cell(app, "streams", "DEMO_EVENTS", "last")) == ("3", "2"), what="3 / 2 in the pane")

        await next_step(pilot, panel, 12)
        r = await run_step(app, pilot, panel, 12)
        assert (r["DEMO_EVENTS Messages before the ack"], r["DEMO_EVENTS Messages"]) == ("1", "0")

        await next_step(pilot, panel, 13)
        r = await run_step(app, pilot, panel, 13)
        assert r["DEMO_JOBS Messages"] == "1"

        await next_step(pilot, panel, 14)
        r = await run_step(app, pilot, panel, 14)
        assert r["reply"] == "shipped order 4711" and r["round trip"].endswith(" ms")
        await pilot.press("r")  # it needs no earlier step: only it runs again
        await wait_for(pilot, lambda: 13 in panel.results, what="request again")
        assert panel.progress_text == "step 14/15" and readings(panel, 13)["reply"] == "shipped order 4711"
        assert len(app.main_screen.pane("request").latencies) == 2

        await next_step(pilot, panel, 15)
        r = await run_step(app, pilot, panel, 15)
        assert (r["KV_DEMO_C Messages"], r["KV_DEMO_C Bytes"], r["get region"]) == ("2", "98 B", "us (revision 2)")
        await wait_for(pilot, lambda: cell(app, "streams", "KV_DEMO_C", "bytes") == "98 B", what="98 B in the pane")

        await pilot.press("escape")
        assert not panel.display
        await pilot.press("T")  # opens again where it was
        assert panel.display and panel.progress_text == "step 15/15"

    await user_data.assert_untouched()


async def test_the_tour_asks_before_replacing_a_demo_stream(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="DEMO_ORDERS", subjects=["demo.o.>"])
    await js.publish("demo.o.new", b"left from an earlier demo")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        # from the command palette this time
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette")
        await pilot.press(*"guided")
        await wait_for(pilot, lambda: "Guided tour" in screen_text(app), what="the palette found it")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.screen.query("#tour")) == 1, what="tour panel")
        panel = app.screen.query_one("#tour")
        await wait_for(pilot, lambda: app.focused is not None and panel in app.focused.ancestors_with_self,
                       what="the tour focused")
        await pilot.press("enter")
        question = await answer(app, pilot, yes=False)
        assert "did not start" in question and "DEMO_ORDERS exists already" in question
        await wait_for(pilot, lambda: "nothing was changed" in str(panel.query_one("#tour-status").content),
                       what="declined")
        assert (await js.stream_info("DEMO_ORDERS")).state.messages == 1  # No: nothing changed
        await pilot.press("right")  # not past a step that did not run
        assert panel.progress_text == "step 1/15"
        await pilot.press("enter")
        await answer(app, pilot)
        await wait_for(pilot, lambda: 0 in panel.results, what="step 1 ran")
        assert (await js.stream_info("DEMO_ORDERS")).state.messages == 0  # replaced, as asked
        created = (await js.stream_info("DEMO_ORDERS")).created
        await pilot.press("r")  # again: its own DEMO_ORDERS is found, so it asks once more
        assert "DEMO_ORDERS exists already" in await answer(app, pilot)
        await wait_for(pilot, lambda: 0 in panel.results, what="step 1 ran again")
        assert (await js.stream_info("DEMO_ORDERS")).created != created


async def test_read_only_the_tour_explains_and_creates_nothing(make_app, outside):
    js = outside.jetstream()
    app = make_app(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await pilot.press("T")
        await wait_for(pilot, lambda: len(app.screen.query("#tour")) == 1, what="tour panel")
        panel = app.screen.query_one("#tour")
        await wait_for(pilot, lambda: app.focused is not None and panel in app.focused.ancestors_with_self,
                       what="the tour focused")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("Read-only: the tour's steps" in n.message for n in app._notifications),
                       what="says why not")
        assert not app.screen.query_one("#tour").results
    assert [s async for s in _stream_names(js)] == []


async def _stream_names(js):
    for s in await js.streams_info():
        yield s.config.name


async def test_the_tour_keeps_its_keys_until_the_user_moves_the_focus(make_app, user_data):
    """After the tour pointed at a pane, a focus the pane takes for itself (as
    a pane mounting late on a busy machine does) goes back to the tour however
    long it took: the tour's keys (enter, l) stay live. A key the user presses
    (tab) moves the focus for good."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app, pilot)
        await pilot.press("T")
        await wait_for(pilot, lambda: len(app.screen.query("#tour")) == 1, what="tour panel")
        panel = app.screen.query_one("#tour")
        await run_step(app, pilot, panel, 1)
        streams = app.main_screen.pane("streams")
        await wait_for(pilot, lambda: app.main_screen.active_area == "streams" and app.focused is panel,
                       what="the tour pointing at the streams pane, with the keys")
        ticks: list[int] = []
        poll = streams.poll

        def counted_poll():
            ticks.append(1)
            return poll()
        streams.poll = counted_poll
        # past two of the pane's polls (1 s apart): longer than a hold by the clock would last
        await wait_for(pilot, lambda: len(ticks) >= 2, what="two polls of the streams pane")
        app.main_screen.focus_pane(streams)  # the pane takes the focus, late
        await wait_for(pilot, lambda: app.focused is panel, what="the focus back on the tour")
        await pilot.press("tab")
        await wait_for(pilot, lambda: app.focused is not panel, what="the focus where the user moved it")
        seen = len(ticks)
        await wait_for(pilot, lambda: len(ticks) > seen, what="one more poll")
        assert app.focused is not panel  # it stayed where the user put it
