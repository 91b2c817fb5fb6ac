"""Stumbles found by running the walkthrough by hand in tmux (docs/walkthrough.md),
each driven here through the real app against the real broker."""

from __future__ import annotations

import pytest
from nats.js.errors import NotFoundError

from natslab.tui.demos import run_demo
from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard

from .conftest import answer, connected, screen_text, settle, show_tab, wait_for



async def orders_with_rdl(outside, ack_wait: float) -> None:
    """ORDERS with one order in it and RDL, an explicit-ack pull consumer."""
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"order-1 payload")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=ack_wait)

async def test_the_pull_hand_keys_work_after_it_changes_consumer_with_a_card_in_hand(make_app, outside):
    """A card in hand of one consumer, then palette → Demo: redelivery (the hand
    moves to DEMO_ORDERS › RDL): the old card went but kept the focus, so
    every key went to a removed widget — f, the digits, ?, ctrl+p: the app
    looked frozen."""
    js = outside.jetstream()
    await js.add_stream(name="JOBS", subjects=["jobs.>"])
    await js.publish("jobs.a", b"job a")
    await js.add_consumer("JOBS", durable_name="W", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("JOBS", "W")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "W" and hand.consumer_config is not None, what="hand on W")
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.focused, HandCard), what="W's card in hand, focused")

        run_demo(app, "redelivery")
        await answer(app, pilot)  # a server natslab did not start: it asks first
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="hand on RDL")
        await wait_for(pilot, lambda: not hand.query(HandCard), what="W's card gone")
        assert app.focused is None or app.focused.is_attached
        await pilot.press("f")
        await wait_for(pilot, lambda: [c.fm.consumer for c in hand.query(HandCard)] == ["RDL"],
                       what="f fetched RDL's first message")
        await pilot.press("2")
        await wait_for(pilot, lambda: app.screen.query_one("#panes").current == "consumers", what="2 shows Consumers")


async def test_ctrl_s_on_a_key_picked_in_the_table_does_not_put_an_empty_value(make_app, outside):
    """KV at 80x24: a key picked in the table, ctrl+s (the footer's "Put key"):
    it put the empty editor over the key's value ("us" became ""). Now the value
    field takes the focus; what is typed there is put, and the Revision field
    follows the key's latest revision (it kept the old one, and Update failed)."""
    from textual.widgets import Input, TextArea

    js = outside.jetstream()
    kv = await js.create_key_value(bucket="CONFIG", history=5)
    await kv.put("region", b"us")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.jump_to_bucket("CONFIG")
        await wait_for(pilot, lambda: app.screen.query_one("KvPane").key == "region", what="region picked")
        pane = app.screen.query_one("KvPane")
        app.screen.query_one("#kv-keys").focus()
        await pilot.press("ctrl+s")
        editor = app.screen.query_one("#kv-edit", TextArea)
        await wait_for(pilot, lambda: app.focused is editor, what="the value field focused")
        assert "Type the new value of region" in str(app.screen.query_one("#kv-result").render())
        assert (await kv.get("region")).value == b"us"
        assert (await kv.get("region")).revision == 1
        await pilot.press(*"eu", "ctrl+s")
        await wait_for(pilot, lambda: pane.entries["region"].revision == 2, what="the put seen by the watch")
        assert (await kv.get("region")).value == b"eu"
        assert app.screen.query_one("#kv-rev", Input).value == "2"


async def test_the_time_axis_holds_the_three_deliveries_of_step_8_at_160x48_with_the_tour(make_app, outside):
    """Tour step 8 at 160x48 ("acked three deliveries deep", 25 s after the
    first delivery): the cards' column took three fifths of the pane, the
    axis 31 cells at 1 s per cell, so delivery #1 had already scrolled off
    its left edge. The cards get what a card needs; the axis the rest."""
    from natslab.tui.panes.pull.card import HandCard
    from natslab.tui.widgets.timeline import LABEL_W, TimeAxis, window_start

    await orders_with_rdl(outside, ack_wait=4)
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await connected(app, pilot)
        app.action_tour()
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer_config is not None, what="hand on RDL")
        hand.action_fetch()  # (f goes to the tour panel, which has the focus)
        await wait_for(pilot, lambda: hand.query(HandCard), what="a card")
        axis = hand.query_one(TimeAxis)
        await wait_for(pilot, lambda: app.screen.query_one("#tour").region.width > 0
                       and axis.content_region.width > 0, what="the tour panel and the axis laid out")
        await pilot.pause()  # (the layout with both in place)
        cells = axis.content_region.width - LABEL_W
        # the story of step 8: deliveries at 0 s, ~13 s and ~24 s, all in sight at 1 s per cell,
        # and stay so for the ten seconds after the ack at ~25 s the step gives to look at it
        assert window_start(0.0, 35.0, cells, 1.0) == 0.0, f"{cells} cells"
        card = hand.query(HandCard).first()
        await wait_for(pilot, lambda: card.query_one(".card-buttons").region.height > 0, what="the card laid out")
        assert card.query_one(".card-head").region.height == 1  # "tries 1 · orders.new · str seq 1 · cons seq 1"
        assert card.query_one(".card-buttons").region.height == 1  # the five buttons on one line


async def test_an_empty_streams_first_and_last_times_are_none_not_the_year_1(make_app, outside):
    """Tour step 1 (a new, empty DEMO_ORDERS) and step 11 (an interest stream
    that dropped all it got): the state read first_ts 0001-01-01 00:00:00,
    Go's zero time as nats-server sends it; natscli shows no time there."""
    from .conftest import screen_text

    await outside.jetstream().add_stream(name="EMPTY", subjects=["empty.>"])
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.jump_to_stream("EMPTY")
        await wait_for(pilot, lambda: "first_ts" in screen_text(app), what="EMPTY's state shown")
        line = next(row for row in screen_text(app).splitlines() if "first_ts" in row)
        assert line.split("first_ts")[1].strip() == "-", line
        assert "0001-01-01" not in screen_text(app)


async def test_p_puts_a_file_into_the_object_store_without_tabbing(make_app, outside, tmp_path):
    """Objects at 80x24: after creating a store, the way to the Local file
    field was four Tabs past Create and Delete store; typing a path with the
    focus on a button ran keys instead ("6" of the path switched to KV).
    p takes the user there and Enter puts the file."""
    from textual.widgets import Input

    from .conftest import screen_text, show_tab

    await outside.jetstream().create_object_store("FILES")
    src = tmp_path / "report.txt"
    src.write_bytes(b"quarterly figures\n" * 100)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "objects")
        pane = app.screen.query_one("ObjectsPane")
        await wait_for(pilot, lambda: pane.store == "FILES", what="FILES selected")
        await pilot.press("escape", "p")
        await wait_for(pilot, lambda: app.focused is app.screen.query_one("#obj-path", Input), what="Local file focused")
        await pilot.press(*str(src), "enter")
        await wait_for(pilot, lambda: "report.txt" in pane.objects, timeout=8, what="the file put")
        await pilot.press("escape")  # out of the field: the footer shows the pane's keys, p among them
        await wait_for(pilot, lambda: "p Put file" in screen_text(app).splitlines()[-1], what="p in the footer")
        obs = await outside.jetstream().object_store("FILES")
        assert (await obs.get("report.txt")).data == src.read_bytes()


async def test_in_a_text_field_the_footer_says_esc_gives_the_keys_back(make_app):
    """4 (Publish, the subject field focused) then 5 typed "5" into the subject,
    and nothing on screen said how to get the digit keys back. The footer shows
    esc beside Help and Quit; esc then 5 shows Request."""
    from .conftest import screen_text, show_tab

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        subject = app.screen.query_one("#pub-subject")
        await wait_for(pilot, lambda: app.focused is subject, what="the subject focused")
        await wait_for(pilot, lambda: "esc Leave field" in screen_text(app).splitlines()[-1], what="esc in the footer")
        await pilot.press("5")
        assert subject.value == "5"  # a text field types the digit: that stays so
        await pilot.press("backspace", "escape", "5")
        await wait_for(pilot, lambda: app.screen.query_one("#panes").current == "request", what="5 shows Request")


async def test_the_esc_key_costs_no_footer_recompose_on_a_tab_switch(make_app):
    """The footer's keys are rewritten in place on a tab switch (a recompose
    mounts them anew, ~15-35 ms on the busy machine): esc is always among the
    pinned keys, shown only in a text field, so Publish (its subject focused)
    and Streams (the table) keep the same pinned keys."""
    from natslab.tui.widgets.footer import KeysFooter

    from .conftest import screen_text, show_tab

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        await show_tab(app, pilot, "streams")
        footer = app.screen.query_one(KeysFooter)
        composed = []
        original = footer.recompose

        async def counting():
            composed.append(1)
            await original()

        footer.recompose = counting
        for tab, shown in (("publish", True), ("streams", False), ("publish", True), ("streams", False)):
            app.action_tab(tab)
            await wait_for(pilot, lambda: ("esc Leave field" in screen_text(app).splitlines()[-1]) == shown
                           and ("? Help" in screen_text(app).splitlines()[-1]) != shown, what=f"{tab}'s footer")
        assert composed == []


async def test_a_card_beside_the_tour_at_80_columns_shows_all_five_buttons(make_app, outside):
    """Tour step 5 at 80x24: the card beside the tour panel is 29 columns and
    its buttons read "Ack Nak Nak… Pr" (Progress cut, Term gone). A narrow
    card puts them two by two; beside the tour at 80 the hand now stacks the
    time axis under the cards, and the card has the hand's width."""
    from textual.widgets import Button

    await orders_with_rdl(outside, ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.action_tour()
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer_config is not None, what="hand on RDL")
        hand.action_fetch()
        await wait_for(pilot, lambda: hand.query(HandCard), what="a card")
        card = hand.query(HandCard).first()
        await wait_for(pilot, lambda: app.screen.query_one("#tour").region.width > 0
                       and 0 < card.region.width < 50 and hand.region.width < 50,
                       what="the tour open and the card beside it")
        await pilot.pause()

        def inside() -> bool:
            box = card.content_region
            buttons = list(card.query(Button))
            return len(buttons) == 5 and all(
                b.region.width >= len(str(b.label)) + 2 and box.x <= b.region.x and b.region.right <= box.right
                for b in buttons)
        await wait_for(pilot, inside, what="all five buttons whole inside the card")


async def test_the_countdown_and_the_time_axis_tick_without_laying_out_the_screen(make_app, outside):
    """The pull hand ticks 4 times a second, shown or hidden: each card's
    countdown ("2.1s left" -> "2.0s left") and the time axis were updated with
    a layout of the whole screen each time. A step that keeps their size is
    drawn without one."""
    from textual.widgets import Label

    from natslab.tui.widgets.timeline import TimeAxis

    await orders_with_rdl(outside, ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer_config is not None, what="hand on RDL")
        await pilot.press("f")
        await wait_for(pilot, lambda: hand.query(HandCard), what="a card")
        card = hand.query(HandCard).first()
        countdown = card.query_one(".card-countdown", Label)
        axis = hand.query_one(TimeAxis)
        await wait_for(pilot, lambda: "left to ack" in str(countdown.render()), what="the countdown running")
        layouts = []
        for widget in (countdown, axis):
            def spy(*regions, _refresh=widget.refresh, _who=widget, **kw):
                layouts.append((_who, kw.get("layout", False)))
                return _refresh(*regions, **kw)
            widget.refresh = spy
        # the axis may rightly lay out when a step changes its size (the first
        # ticks while the card settles, a new line): each of its redraws is
        # judged by its own shape before and after
        axis_steps = []

        def redraw(_redraw=axis.redraw):
            before, at = axis._shape, len(layouts)
            _redraw()
            axis_steps.append((before == axis._shape, [layout for who, layout in layouts[at:] if who is axis]))
        axis.redraw = redraw
        seen = set()
        await wait_for(pilot, lambda: (seen.add(str(countdown.render())) or len(seen) >= 4)
                       and sum(same for same, _ in axis_steps) >= 3,
                       what="four steps of the countdown and three of the axis at one size")
        assert countdown in {who for who, _ in layouts}  # it was redrawn
        assert not [layout for who, layout in layouts if who is countdown and layout], layouts
        assert not [flags for same, flags in axis_steps if same and any(flags)], axis_steps


async def test_the_fetch_button_is_whole_beside_the_tour_at_80_columns(make_app, outside):
    """Tour step 17 at 80x24 (DEMO_CRASH › CRASHER): the fetch bar beside
    the tour panel cut its button to "Fetc"."""
    from textual.widgets import Button

    js = outside.jetstream()
    await js.add_stream(name="JOB_CRASH", subjects=["jobcrash.>"])
    await js.add_consumer("JOB_CRASH", durable_name="CRASHER", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.action_tour()
        app.open_pull_hand("JOB_CRASH", "CRASHER")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer_config is not None, what="hand on CRASHER")
        bar, button = hand.query_one("#pull-bar"), hand.query_one("#pull-fetch", Button)
        await wait_for(pilot, lambda: app.screen.query_one("#tour").region.width > 0
                       and "JOB_CRASH › CRASHER" in str(hand.query_one("#pull-target").render())
                       and button.region.width > 0, what="the tour and the bar laid out")
        await pilot.pause()
        await wait_for(pilot, lambda: button.region.right <= bar.content_region.right
                       and button.content_region.width >= len("Fetch"), what="the whole Fetch button in the bar")


async def test_replicas_is_three_tabs_from_name_next_to_storage_at_80x24(make_app, outside):
    """The R3 stream of the walkthrough: Replicas was the form's 11th field, ten
    Tabs from Name; counting Tabs, the 3 went into Sources and the stream sourced
    a stream named "3". Now it follows Storage, as `nats stream add` asks it, in
    sight when the form opens at 80x24: Name, Subjects, Storage, Replicas. A single
    node refuses R3 with the server's words, which shows the form sent the 3."""
    from textual.widgets import Input

    from natslab.tui.widgets.form import FormField

    from .conftest import screen_text

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.focused is app.screen.query_one("#name"), what="the form, Name focused")
        labels = [f.label.split(" (")[0] for f in app.screen.query(FormField)]
        assert labels[:4] == ["Name", "Subjects", "Storage", "Replicas"], labels
        await pilot.press(*"ORDERS", "tab", *"orders.>", "tab", "tab")
        replicas = app.screen.query_one("#num_replicas", Input)
        await wait_for(pilot, lambda: app.focused is replicas, what="Replicas focused after Name, Subjects, Storage")
        # where the eye finds it: in sight, not under the docked buttons (the fields
        # ran 11 rows under them at 80x24, and a field focused there stayed hidden)
        assert "Replicas (1-5" in screen_text(app)
        buttons = app.screen.query_one("#form-buttons")
        await wait_for(pilot, lambda: replicas.region.bottom <= buttons.region.y
                       and replicas.region.bottom <= app.screen.query_one("#form-fields").region.bottom,
                       what="the Replicas input above the buttons")
        await pilot.press("3", "enter")  # the "1" was selected on focus: typing replaces it
        field = app.screen.query_one("#field-num_replicas", FormField)
        await wait_for(pilot, lambda: field.error_text, what="the server's refusal next to Replicas")
        assert field.error_text == "server: replicas > 1 not supported in non-clustered mode"
        await wait_for(pilot, lambda: "server: replicas > 1 not supported in non-clustered mode" in screen_text(app),
                       what="the refusal in sight")
        assert replicas.value == "3"
        assert app.screen.query_one("#sources", Input).value == ""
        with pytest.raises(NotFoundError):  # nothing created, R1 or sourcing "3"
            await outside.jetstream().stream_info("ORDERS")


async def test_the_request_panes_labels_are_whole_beside_the_tour_at_80x24(make_app):
    """Beside the tour at 80 columns the Request pane is 48 wide and read
    "Headers (Key:", "… ctrl+y copy as", "… then request its" and "… fixe".
    Narrow, each label says it in fewer words (the headers' format goes into
    the empty field); without the tour the long ones are as they were."""
    from textual.widgets import Label, Static, TextArea

    from .conftest import screen_text, show_tab

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "request")
        pane = app.screen.query_one("RequestPane")
        headers = pane.query_one("#req-headers", TextArea)

        def labels() -> list[str]:
            return [str(w.render()) for w in pane.query(Static)
                    if isinstance(w, Label) or type(w).__name__ == "FitLabel"]

        def whole() -> bool:
            shown = screen_text(app)
            return all(text in shown for text in labels() if text)

        await wait_for(pilot, lambda: "Headers (Key: value)" in screen_text(app), what="the long labels, 80 wide")
        await wait_for(pilot, whole, what="every label whole without the tour")
        assert "ctrl+s send · ctrl+y copy as code" in screen_text(app)
        assert "kinds: echo, fixed, delay, error, silence" in screen_text(app)
        assert headers.placeholder == ""

        app.action_tour()
        await wait_for(pilot, lambda: app.screen.query_one("#tour").region.width > 0
                       and pane.region.width < 50, what="the tour open, the pane beside it")
        await wait_for(pilot, whole, what="every label whole beside the tour")
        shown = screen_text(app)
        assert "Headers (Key:" not in shown
        assert headers.placeholder == "Key: value" and "Key: value" in shown  # what the label left out
        assert "^s send · ^y copy as code" in shown
        assert "then request its subject" in shown
        assert "echo: echo the request back" in shown


async def test_the_publish_panes_labels_are_whole_beside_the_tour_at_80x24(make_app):
    """Beside the tour at 80 columns Publish read "Expected last s", "Nats-Msg",
    "Rate msg/", "Headers (Key:", "Payload — {{n}} and {{time}} a", the Mode
    "JetStream / (PubAck)" on two lines and a "Tra" button. Narrow, each label
    says it in fewer words in every mode (the placeholders follow); without
    the tour the long ones are as they were."""
    from textual.widgets import Button, Input, Label, Static, TextArea

    from .conftest import screen_text, show_tab

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        pane = app.screen.query_one("PublishPane")

        def labels() -> list[str]:
            return [str(w.render()) for w in pane.query(Static)
                    if (isinstance(w, Label) or type(w).__name__ == "FitLabel") and w.region.width]

        def whole() -> bool:
            shown = screen_text(app)
            return bool(labels()) and all(text in shown for text in labels() if text)

        await wait_for(pilot, lambda: "Headers (Key: value)" in screen_text(app), what="the long labels, 80 wide")
        await wait_for(pilot, whole, what="every label whole without the tour")
        shown = screen_text(app)
        assert "Nats-Msg-Id" in shown and "Rate msg/s" in shown and "Clear payload" in shown
        assert "Payload — {{n}} and {{time}} are filled per message" in shown

        app.action_tour()
        await wait_for(pilot, lambda: app.screen.query_one("#tour").region.width > 0
                       and pane.region.width < 50, what="the tour open, the pane beside it")
        for mode in ("js", "core", "batch", "counter", "schedule"):
            pane.mode = mode
            await wait_for(pilot, whole, what=f"every label whole beside the tour in mode {mode}")
            shown = screen_text(app)
            assert "JetStream (PubAck)" in shown or mode != "js"  # the Mode on one line
            buttons = [b for b in pane.query(Button) if b.display and b.region.width]
            assert all(str(b.label) in shown for b in buttons), [str(b.label) for b in buttons]
        pane.mode = "js"
        await wait_for(pilot, lambda: "Msg-Id" in screen_text(app), what="the js fields again")
        shown = screen_text(app)
        assert "Headers (Key:" not in shown and "Nats-Msg" not in shown
        assert pane.query_one("#pub-headers", TextArea).placeholder == "Key: value"
        assert pane.query_one("#pub-lastseq", Input).placeholder == "41"  # the short hint under "Last seq"
        assert "Recent publishes (enter to recall)" in shown

        app.screen.query_one("#tour").action_close()  # closed: the long labels and hints again
        await wait_for(pilot, lambda: "Nats-Msg-Id" in screen_text(app), what="the long labels after the tour")
        assert pane.query_one("#pub-lastseq", Input).placeholder == "e.g. 41"


async def test_the_headers_consumer_count_is_the_users_not_the_apps_own_watchers(make_app, outside):
    """The user made one consumer; opening KV and Objects made the header say
    "3 cons": the panes' watches are ordered consumers of the app's own (nats-py
    names them, on an inbox of the app's connection). The server's count has
    them, the header counts them out."""
    import io

    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit")
    kv = await js.create_key_value(bucket="CONFIG")
    await kv.put("region", b"us")
    obs = await js.create_object_store("FILES")
    await obs.put("a.txt", io.BytesIO(b"hello"))

    async def server_count_reaches(n: int, pilot) -> None:
        for _ in range(300):  # bounded: 300 x 0.05 s
            if (await js.account_info()).consumers >= n:
                return
            await pilot.pause(0.05)
        raise AssertionError(f"the server never had {n} consumers")

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await wait_for(pilot, lambda: app.header_info.usage is not None
                       and app.header_info.usage.consumers == 1, what="the header's 1 consumer")
        await show_tab(app, pilot, "kv")
        app.jump_to_bucket("CONFIG")
        await server_count_reaches(2, pilot)  # WORKER and the KV pane's watch
        await show_tab(app, pilot, "objects")
        await server_count_reaches(3, pilot)  # ... and the Objects pane's
        mine = [c.name for c in await js.consumers_info("KV_CONFIG")] + [c.name for c in await js.consumers_info("OBJ_FILES")]
        assert len(mine) >= 2  # what `nats consumer ls` says: the app's own are there
        for _ in range(2):  # two polls of the header after the server had all three
            seen = app.header_info.usage
            await wait_for(pilot, lambda: app.header_info.usage is not seen, what="the header's next poll")
        assert app.header_info.usage.consumers == 1
        assert " 1 cons" in screen_text(app).splitlines()[1]


async def test_the_streams_and_consumers_panes_leave_out_the_apps_own_watchers(make_app, outside):
    """The KV pane's watch is a consumer of the app's own on KV_CONFIG: the
    header counted it out, but the Streams table said "1" in its Consumers
    column and the Consumers pane listed it (a name nobody chose). Both show
    the user's consumers: here one, WORKER, beside the app's watch."""
    js = outside.jetstream()
    kv = await js.create_key_value(bucket="CONFIG")
    await kv.put("region", b"us")
    await js.add_consumer("KV_CONFIG", durable_name="WORKER", ack_policy="explicit")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "kv")
        app.jump_to_bucket("CONFIG")
        for _ in range(300):  # bounded: 300 x 0.05 s; the KV pane's watch is the second
            if len(await js.consumers_info("KV_CONFIG")) >= 2:
                break
            await pilot.pause(0.05)
        assert len(await js.consumers_info("KV_CONFIG")) == 2  # what `nats consumer ls` says
        app.jump_to_stream("KV_CONFIG")
        streams = app.screen.query_one("StreamsPane")
        seen = streams.streams.get("KV_CONFIG")
        await wait_for(pilot, lambda: streams.streams.get("KV_CONFIG") is not seen, what="the streams' next poll")
        seen = streams.streams.get("KV_CONFIG")
        await wait_for(pilot, lambda: streams.streams.get("KV_CONFIG") is not seen, what="one more poll")
        assert streams.streams["KV_CONFIG"].consumer_count == 1
        app.jump_to_consumer("KV_CONFIG", "WORKER")
        consumers = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: "WORKER" in consumers.consumers, what="WORKER listed")
        assert list(consumers.consumers) == ["WORKER"]


def type_at_once(app, text: str) -> None:
    """Keys as a terminal sends them when typed quickly or pasted: all in the
    queue before the app has handled the first (Pilot.press waits for the app
    to go idle after each key, which no typist does)."""
    from textual import events

    for ch in text:
        key = {" ": "space", "\r": "enter"}.get(ch, ch)
        event = events.Key(key, ch)
        event.set_sender(app)
        app._driver.send_message(event)


@pytest.mark.parametrize("typed, shown", [("go to kv\r", "kv"), ("go to tail\r", "tail")])
async def test_enter_typed_with_the_search_runs_what_the_search_finds(make_app, outside, typed, shown):
    """ctrl+p, then the words and Enter in one go (as a quick typist does): Enter
    came before the search had answered and ran the first entry of the list
    the palette showed before ("Keys", the tour). Enter runs the search's best hit."""
    from textual.command import CommandPalette

    js = outside.jetstream()  # what the palette's search asks the server for each time
    for i in range(5):
        await js.add_stream(name=f"S{i}", subjects=[f"s{i}.>"])
        await js.add_consumer(f"S{i}", durable_name="C")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await settle(pilot)  # the palette's unfiltered list shown
        type_at_once(app, typed)
        await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette), what="the palette closed")
        await wait_for(pilot, lambda: app.main_screen.active_area == shown, what=f"the {shown} pane shown")
        assert app.screen is app.main_screen  # no help screen, no other dialog
        assert not app.main_screen.query("#tour") or not app.main_screen.query_one("#tour").display
        await wait_for(pilot, lambda: app.screen.query_one(f"#{shown}-pane").is_mounted, what="the pane mounted")
        await settle(pilot)


async def test_the_time_axis_beside_the_tour_has_the_width_under_the_cards(make_app, outside):
    """Beside the tour at 80 columns the pull hand is 48 wide; side by side with
    the cards the time axis had ~8 cells and two ticks ("|0s  |5s"). Narrow, the
    axis goes under the cards and has the hand's width: the whole ack wait of
    30 s, its ticks labelled, in sight."""
    import re

    from natslab.tui.widgets.timeline import TimeAxis

    await orders_with_rdl(outside, ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.action_tour()
        await wait_for(pilot, lambda: app.screen.query_one("#tour").region.width > 0, what="the tour open")
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "RDL" and hand.consumer_config is not None, what="hand on RDL")
        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="the card in hand")
        axis = hand.query_one(TimeAxis)

        def ticks() -> list[str]:
            lines = [line for line in screen_text(app).splitlines() if "|0s" in line]
            return re.findall(r"\|(\d+s)", lines[0]) if lines else []

        await wait_for(pilot, lambda: "30s" in ticks(), what="the ack wait's 30 s on the axis, in sight")
        assert len(ticks()) >= 6, ticks()
        assert axis.region.width >= 40 and hand.region.width < 50
        # seq 1's row under the ticks: its delivery and the ack wait's bar
        assert any(line.startswith(" seq 1    1") and "░" in line for line in screen_text(app).splitlines())


@pytest.mark.parametrize("tab", ["tail", "kv", "objects"])
async def test_the_tail_kv_and_objects_labels_are_whole_beside_the_tour_at_80x24(make_app, outside, tab):
    """Beside the tour at 80 columns: Tail's fields read "Subjec Fil Kee" beside
    its three buttons, and the status lines of Tail, KV and Objects and Objects'
    "Local f" / "Obje" were cut. Narrow, Tail's buttons go under its fields and
    the labels say it shorter; without the tour the long ones are as they were."""
    from textual.widgets import Button, Label, Static

    from natslab.tui.widgets.fit_label import FitLabel

    js = outside.jetstream()
    kv = await js.create_key_value(bucket="CONFIG")
    await kv.put("region", b"us")
    await js.create_object_store("FILES")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, tab)
        pane = app.screen.query_one(f"#{tab}-pane")
        fitted = [w for w in pane.query(FitLabel)]
        long_forms = [w.texts[0] for w in fitted]
        await wait_for(pilot, lambda: all(t in screen_text(app) for t in long_forms if len(t) <= 78),
                       what="the long labels, 80 wide")

        def whole() -> bool:
            shown = screen_text(app)
            # (KV's key editor beside its tables is 8 columns beside the tour: only its status line here;
            # Objects' "Delete store" in its 16-column store column is still cut, see docs/walkthrough.md)
            labels = ([str(pane.query_one("#kv-status").render())] if tab == "kv" else
                      [str(w.render()) for w in pane.query(Static) if isinstance(w, (Label, FitLabel)) and w.region.width])
            buttons = [str(b.label) for b in pane.query(Button)
                       if b.region.width and tab != "kv" and b.id != "obj-drop"]
            return all(t in shown for t in labels + buttons if t and "\n" not in t)

        app.action_tour()
        await wait_for(pilot, lambda: app.screen.query_one("#tour").region.width > 0
                       and pane.region.width < 50, what="the tour open, the pane beside it")
        await wait_for(pilot, whole, what=f"every label of {tab} whole beside the tour")
        if tab == "tail":
            assert app.screen.query_one("#tail-bar").has_class("-stacked")
            assert "Keep lines" in screen_text(app)
