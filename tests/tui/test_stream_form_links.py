"""The stream form's mirror, sources, subject transform and republish fields
against a real broker: what the form creates is what the server reports, and
the server's objection to a bad mapping lands next to its field."""

from __future__ import annotations

import json

from textual.widgets import Input

from natslab.tui.widgets.form import FormField
from natslab.tui.widgets.live_table import LiveTable

from .conftest import connected, wait_for


async def info(nc, name: str) -> dict:
    return json.loads((await nc.request(f"$JS.API.STREAM.INFO.{name}", b"", timeout=3)).data)


async def fill_and_submit(app, pilot, **values: str) -> None:
    await pilot.press("n")
    await wait_for(pilot, lambda: app.screen.query("#name"), what="form")
    for field_id, value in values.items():
        app.screen.query_one(f"#{field_id}", Input).value = value
    await pilot.click("#form-submit")


async def test_create_mirror_and_sourced_stream_from_the_form(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="A", subjects=["a.*"])
    await js.add_stream(name="B", subjects=["b.*"])
    for i in range(3):
        await js.publish("a.x", f"x{i}".encode())
        await js.publish("a.y", f"y{i}".encode())
        await js.publish("b.z", f"z{i}".encode())
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table", LiveTable)
        await fill_and_submit(app, pilot, name="M", mirror="A")
        await wait_for(pilot, lambda: table.value("M", "name") == "M", what="M row")
        await wait_for(pilot, lambda: table.value("M", "messages") == "6", timeout=10, what="M caught up")
        m = await info(outside, "M")
        assert m["config"]["mirror"]["name"] == "A" and not m["config"].get("subjects")

        await fill_and_submit(app, pilot, name="S", sources="A filter=a.x, B start=2",
                              subject_transform="b.* -> moved.b.{{wildcard(1)}}",
                              republish="a.x -> copy.x headers_only")
        await wait_for(pilot, lambda: table.value("S", "name") == "S", what="S row")
        # a.x: 3 of A; B from its sequence 2: 2 of its 3
        await wait_for(pilot, lambda: table.value("S", "messages") == "5", timeout=10, what="S caught up")
        s = (await info(outside, "S"))["config"]
        assert [(x["name"], x.get("filter_subject"), x.get("opt_start_seq")) for x in s["sources"]] == [
            ("A", "a.x", None), ("B", None, 2)]
        assert s["subject_transform"] == {"src": "b.*", "dest": "moved.b.{{wildcard(1)}}"}
        assert s["republish"]["dest"] == "copy.x" and s["republish"]["headers_only"] is True

        # the edit form shows what the stream has
        app.jump_to_stream("S")
        await wait_for(pilot, lambda: app.screen.query_one("StreamsPane").selected == "S", what="S selected")
        await pilot.press("e")
        await wait_for(pilot, lambda: app.screen.query("#sources"), what="edit form")
        assert app.screen.query_one("#sources", Input).value == "A filter=a.x, B start=2"
        assert app.screen.query_one("#republish", Input).value == "a.x -> copy.x headers_only"
        await pilot.press("escape")


async def test_bad_mapping_shows_the_servers_error_at_its_field(make_app, outside):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        await fill_and_submit(app, pilot, name="T", subjects="t.*",
                              subject_transform="t.* -> x.{{wildcard(5)}}")
        field = app.screen.query_one("#field-subject_transform", FormField)
        await wait_for(pilot, lambda: "server:" in field.error_text, what="the server's error")
        assert "transform" in field.error_text
        assert not app.screen.query_one("#field-subjects", FormField).has_class("-invalid")

        # the form's own check: no arrow
        app.screen.query_one("#subject_transform", Input).value = "t.*"
        await pilot.pause(0.2)  # let the layout settle (an error line moves the button)
        await pilot.click("#form-submit")
        await wait_for(pilot, lambda: "->" in field.error_text, what=f"the form own error {field.error_text!r}")

        # a mirror of a stream that is not there is refused by the server too
        app.screen.query_one("#subject_transform", Input).value = ""
        app.screen.query_one("#subjects", Input).value = ""
        app.screen.query_one("#mirror", Input).value = "bad.name"
        await pilot.pause(0.2)  # let the layout settle (an error line moves the button)
        await pilot.click("#form-submit")
        mirror = app.screen.query_one("#field-mirror", FormField)
        await wait_for(pilot, lambda: mirror.has_class("-invalid"), what="mirror name error")
        await pilot.press("escape")


async def test_copied_code_says_what_it_leaves_out(make_app):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen.query("#mirror"), what="form")
        app.screen.query_one("#name", Input).value = "M"
        app.screen.query_one("#mirror", Input).value = "ORDERS filter=orders.eu"
        app.screen.action_copy_code()
        await pilot.pause(0.1)
        code = str(app.screen.query_one("#form-code").render())
        assert "not in the lines above: mirror" in code
        assert '"mirror": {"name": "ORDERS", "filter_subject": "orders.eu"}' in code
        await pilot.press("escape")
