"""Forms take typing at once and their hints do not read as values; views do
not go stale: the message browser follows its stream, the KV pane forgets a
deleted bucket's keys when one of the same name is made, the pull hand drops
another consumer's cards."""

from __future__ import annotations

from textual.widgets import Input

from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.widgets.form import ModalForm

from .conftest import connected, show_tab, wait_for


async def open_form(app, pilot, key: str, selector: str) -> ModalForm:
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, ModalForm) and app.screen.query(selector), what="form")
    await pilot.pause(0.1)
    return app.screen


def assert_hints_are_hints(form: ModalForm) -> None:
    for field in form.query(Input):
        if field.placeholder:
            assert field.placeholder.startswith("e.g. "), field.placeholder
            style = field.get_component_rich_style("input--placeholder")
            assert style.italic


async def test_forms_open_with_the_first_field_focused(make_app, outside):
    await outside.jetstream().add_stream(name="ORDERS", subjects=["orders.>"])
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        form = await open_form(app, pilot, "n", "#subjects")
        assert_hints_are_hints(form)
        await pilot.press(*"PAYMENTS", "tab", *"pay.*")
        assert form.query_one("#name", Input).value == "PAYMENTS"
        assert form.query_one("#subjects", Input).value == "pay.*"
        await pilot.press("escape")

        app.jump_to_consumer("ORDERS", "X")
        await wait_for(pilot, lambda: app.screen.query_one("ConsumersPane").stream == "ORDERS", what="consumers")
        await pilot.pause(0.2)
        form = await open_form(app, pilot, "n", "#ack_wait")
        assert_hints_are_hints(form)
        await pilot.press(*"WORKER")
        assert form.query_one("#name", Input).value == "WORKER"
        await pilot.press("escape")

        await show_tab(app, pilot, "kv")
        app.screen.query_one("#kv-buckets").focus()
        form = await open_form(app, pilot, "n", "#history")
        assert_hints_are_hints(form)
        await pilot.press(*"CONFIG")
        assert form.query_one("#name", Input).value == "CONFIG"


async def test_message_browser_follows_the_stream(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.jump_to_stream("ORDERS")
        await pilot.pause(0.3)
        await pilot.press("m")
        browser = app.screen.query_one("#browser-list")
        status = app.screen.query_one("#browser-status")
        await wait_for(pilot, lambda: "no messages" in str(status.render()), what="empty page")
        for i in range(4):
            await js.publish("orders.new", f"order {i}".encode())
        await wait_for(pilot, lambda: browser.row_count == 4, what="the page shows the new messages")
        await js.purge_stream("ORDERS")
        await js.publish("orders.new", b"after purge")
        await wait_for(pilot, lambda: browser.row_count == 1, what="purged messages gone from the page")


async def test_kv_pane_forgets_a_deleted_bucket_recreated_under_its_name(make_app, outside):
    js = outside.jetstream()
    kv = await js.create_key_value(bucket="CONFIG", history=5)
    await kv.put("region", b"eu")
    await kv.put("region", b"us")
    await kv.put("old.key", b"x")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        app.jump_to_bucket("CONFIG")
        await wait_for(pilot, lambda: len(app.screen.query("KvPane")) > 0, what="KV pane")
        pane = app.screen.query_one("KvPane")
        await wait_for(pilot, lambda: set(pane.entries) == {"region", "old.key"}, what="old keys")
        keys = app.screen.query_one("#kv-keys")
        keys.focus()
        keys.select_key("region")
        history = app.screen.query_one("#kv-history")
        await wait_for(pilot, lambda: history.row_count == 2, what="two revisions")

        await js.delete_key_value("CONFIG")  # both within one of the pane's polls
        kv = await js.create_key_value(bucket="CONFIG", history=5)
        await kv.put("fresh", b"new")
        await wait_for(pilot, lambda: set(pane.entries) == {"fresh"}, timeout=8, what="only the new bucket's key")
        assert keys.value("old.key", "key") is None and keys.value("region", "key") is None
        # the history shown is the new bucket's (its only key), not region's old revisions
        await wait_for(pilot, lambda: history.row_count == 1 and str(history.get_row_at(0)[3]) == "new",
                       what="the new key's history")


async def test_pull_hand_drops_cards_when_the_consumer_changes(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"o1")
    await js.add_consumer("ORDERS", durable_name="A", ack_policy="explicit", ack_wait=30)
    await js.add_consumer("ORDERS", durable_name="B", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("ORDERS", "A")
        hand = app.screen.query_one(PullHand)
        await pilot.pause(0.1)
        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="A's card")
        app.jump_to_consumer("ORDERS", "B")
        await wait_for(pilot, lambda: hand.consumer == "B", what="hand on B")
        await pilot.pause(0.2)
        assert len(hand.query(HandCard)) == 0
        assert "ORDERS › B" in str(hand.query_one("#pull-target").render())


async def test_long_form_labels_wrap_instead_of_being_cut(make_app):
    """At 160 columns (the form is 76 wide) the stream form's longest labels
    ("Mirror of stream (… a mirror has no subjects)") wrap to their end."""
    from natslab.tui.widgets.form import FormField

    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await connected(app, pilot)
        app.screen.query_one("#streams-table").focus()
        await pilot.press("n")
        await wait_for(pilot, lambda: len(app.screen.query(FormField)) > 5, what="the stream form")
        fields = list(app.screen.query(FormField))
        await wait_for(pilot, lambda: all(f.query_one(".field-label").size.width for f in fields), what="laid out")
        long = [f for f in fields if len(f.label) > f.size.width]
        assert any(f.label.startswith("Mirror of stream") for f in long)
        for field in fields:
            label = field.query_one(".field-label")
            # within its field (a wider label is cut at the field's edge) and tall enough for its text
            assert label.outer_size.width <= field.content_size.width, (field.label, label.size, field.size)
            assert label.size.width * label.size.height >= len(field.label), (field.label, label.size)
