"""S saves what you see: an SVG and a text file of the same frame in the
current directory, and a message saying where."""

from __future__ import annotations

from .conftest import connected, show_tab, wait_for


async def test_s_saves_the_view_as_svg_and_text(make_app, outside, tmp_path, monkeypatch):
    await outside.jetstream().add_stream(name="ORDERS", subjects=["orders.>"])
    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table")
        await wait_for(pilot, lambda: table.row_count == 1, what="ORDERS listed")
        await show_tab(app, pilot, "streams")
        await pilot.press("S")
        await wait_for(pilot, lambda: list(tmp_path.glob("natslab-streams-*.txt")), what="files saved")
        svg = next(tmp_path.glob("natslab-streams-*.svg"))
        txt = next(tmp_path.glob("natslab-streams-*.txt"))
        assert svg.read_text().startswith("<svg") and "ORDERS" in svg.read_text()
        lines = txt.read_text().splitlines()
        assert len(lines) == 30 and any("ORDERS" in line for line in lines)
        assert "natslab" in lines[0] and "connected" in lines[1]  # the header, as on screen
        said = [n.message for n in app._notifications]
        assert any(svg.name in m and txt.name in m and str(tmp_path) in m for m in said), said
        await pilot.press("S")  # a second save in the same second keeps the first
        await wait_for(pilot, lambda: len(list(tmp_path.glob("natslab-streams-*.svg"))) == 2, what="second save")


async def test_s_saves_the_view_not_the_toasts_over_it(make_app, outside, tmp_path, monkeypatch):
    """A toast on screen (here the one the first save put up) is not in the
    next saved frame, neither SVG nor text; it is still on screen after."""
    from .conftest import screen_text

    await outside.jetstream().add_stream(name="ORDERS", subjects=["orders.>"])
    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table")
        await wait_for(pilot, lambda: table.row_count == 1, what="ORDERS listed")
        app.notify("toasted", title="Earlier", timeout=60)
        await wait_for(pilot, lambda: "toasted" in screen_text(app), what="the toast shown")
        await pilot.press("S")
        await wait_for(pilot, lambda: list(tmp_path.glob("natslab-streams-*.txt")), what="files saved")
        txt = next(tmp_path.glob("natslab-streams-*.txt")).read_text()
        svg = next(tmp_path.glob("natslab-streams-*.svg")).read_text()
        assert "ORDERS" in txt and "ORDERS" in svg
        for saved in (txt, svg.replace("&#160;", " ")):
            assert "toasted" not in saved and "Earlier" not in saved
        await wait_for(pilot, lambda: "View saved" in screen_text(app) and "toasted" in screen_text(app),
                       what="both toasts on screen after the save")
        before = set(tmp_path.glob("*.txt"))
        await pilot.press("S")  # the previous save's own "View saved" toast is not in the next
        await wait_for(pilot, lambda: len(set(tmp_path.glob("*.txt"))) == 2, what="second save")
        second = (set(tmp_path.glob("*.txt")) - before).pop().read_text()
        assert "View saved" not in second and "ORDERS" in second
