"""The guided tour's crash chapter on the workbench's own embedded broker:
pull a message, do not ack it, crash the broker (the Faults menu's crash),
see it come back. On a server natslab did not start the chapter is not
offered (test_tour.py: 15 steps there)."""

from __future__ import annotations

import pytest

from natslab.tui.app import NatslabApp
from natslab.tui.broker import BrokerSpec
from natslab.tui.tour import run
from natslab.tui.tour.crash import CRASH_STEPS
from natslab.tui.tour.steps import STEPS

from .conftest import wait_for
from .test_tour import FAST, readings

TOTAL = len(STEPS) + len(CRASH_STEPS)


@pytest.fixture(autouse=True)
def fast_tour(monkeypatch):
    monkeypatch.setattr(run, "DEFAULT_TIMING", FAST)


async def test_the_crash_chapter_pulls_crashes_and_gets_it_back(tmp_path):
    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        await pilot.press("T")
        await wait_for(pilot, lambda: len(app.screen.query("#tour")) == 1, what="tour panel")
        panel = app.screen.query_one("#tour")
        await wait_for(pilot, lambda: panel.progress_text == f"step 1/{TOTAL}", what="the chapter offered")
        first = len(STEPS) + 1
        for _ in range(10):  # c: to the next chapter that stands alone, until the crash chapter
            if panel.progress_text == f"step {first}/{TOTAL}":
                break
            await pilot.press("c")
        assert panel.progress_text == f"step {first}/{TOTAL}"

        async def step(number: int) -> dict[str, str]:
            assert panel.progress_text == f"step {number}/{TOTAL}"
            await pilot.press("enter")
            await wait_for(pilot, lambda: number - 1 in panel.results or number - 1 in panel.failed, timeout=30,
                           what=f"step {number} done")
            assert number - 1 not in panel.failed, panel.failed
            bad = [r for r in panel.results[number - 1] if r.matches is False]
            assert not bad, bad
            return readings(panel, number - 1)

        async def next_step(number: int) -> None:
            await pilot.press("enter")
            await wait_for(pilot, lambda: panel.progress_text == f"step {number}/{TOTAL}", what=f"on step {number}")

        r = await step(first)
        assert r["DEMO_CRASH Messages"] == "3"
        await next_step(first + 1)
        r = await step(first + 1)
        assert (r["tries"], r["str seq"]) == ("1", "1")
        generation = app.client_generation
        await next_step(first + 2)
        r = await step(first + 2)
        assert app.client_generation > generation  # the broker really went down and the app came back
        assert r["the workbench reconnected"] == "yes" and r["DEMO_CRASH Messages"] == "3"
        assert r["will be redelivered (str seq)"] == "1"
        # the step shows the ruler, where the unacked one is marked
        ruler = app.main_screen.query_one("#consumers-ruler")
        await wait_for(pilot, lambda: "↻ CRASHER: 1 will be redelivered: seq 1" in str(ruler.render()),
                       what="the ruler's mark")
        await next_step(first + 3)
        r = await step(first + 3)
        assert (r["str seq"], r["payload"]) == ("1", "job-1")  # the same message came back
        assert r["tries"] in ("1", "2")
        assert r["DEMO_CRASH › CRASHER ack floor str seq"] == "1"
        assert "that was the whole walkthrough" in str(panel.query_one("#tour-status").render())
        await app.shutdown()
