"""The keyboard model (as in k9s and lazygit): tab hints, digits that switch
panes unless a text field has focus, Esc leaves the field, j/k and the arrows
move between rows and cards, and the focus is visible."""

from __future__ import annotations

import re

from textual.widgets import Input

from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.widgets.live_table import LiveTable

from .conftest import connected, show_tab, wait_for


async def test_tabs_show_their_digit(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        labels = [str(t.label) for t in app.screen.query("#tabs Tab")]
        assert labels[:3] == ["1 Streams", "2 Consumers", "3 Pull hand"] and labels[-1] == "9 Connections"
    async with make_app().run_test(size=(80, 24)) as pilot:
        tabs = pilot.app.screen.query("#tabs Tab")
        assert str(tabs.last().label) == "9 Conns"
        assert sum(t.outer_size.width for t in tabs) <= 80  # every tab on screen


async def test_digits_type_into_a_text_field_and_switch_panes_after_esc(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        subject = app.screen.query_one("#pub-subject", Input)
        subject.focus()
        await pilot.pause(0.05)
        await pilot.press(*"orders.eu1")
        assert subject.value == "orders.eu1" and app.screen.active_area == "publish"
        await pilot.press("escape")
        await pilot.pause(0.05)
        assert not isinstance(app.focused, Input)
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen.active_area == "streams", what="streams shown")
        assert subject.value == "orders.eu1"


async def test_j_and_k_move_between_rows_and_cards(make_app, outside):
    js = outside.jetstream()
    for name in ("AUDIT", "ORDERS"):
        await js.add_stream(name=name, subjects=[f"{name.lower()}.>"])
    for i in range(3):
        await js.publish("orders.new", f"o{i}".encode())
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table", LiveTable)
        await wait_for(pilot, lambda: table.row_count == 2, what="two streams")
        table.focus()
        await pilot.pause(0.05)
        assert table.styles.background_tint.a > 0  # the focused table is marked
        await pilot.press("j")
        assert table.selected_key == "ORDERS"
        await pilot.press("k")
        assert table.selected_key == "AUDIT"

        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        hand.query_one("#pull-batch", Input).value = "3"
        await pilot.pause(0.1)
        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 3, what="three cards")
        cards = list(hand.query(HandCard))
        await wait_for(pilot, lambda: app.focused is cards[0], what="first card focused")
        await pilot.press("j")
        assert app.focused is cards[1]
        await pilot.press("down")
        assert app.focused is cards[2]
        await pilot.press("k", "up")
        assert app.focused is cards[0]


def footer_line(app) -> str:
    return [strip.text for strip in app.screen._compositor.render_strips()][-1]


async def test_a_panes_first_key_works_the_moment_it_is_shown(make_app, outside):
    """The footer belongs to the pane on screen as soon as it is shown, and
    the pull hand's card keys work right after `3` (the card in hand has the
    focus, drawn with its heavy border), with no other key in between."""
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(2):
        await js.publish("orders.new", f"o{i}".encode())
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table", LiveTable)
        await wait_for(pilot, lambda: table.row_count == 1, what="the stream listed")
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="pull hand target")
        hand.query_one("#pull-batch", Input).value = "2"
        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 2, what="two cards")
        await pilot.press("j")  # the second card
        cards = list(hand.query(HandCard))
        await wait_for(pilot, lambda: app.focused is cards[1], what="second card focused")

        for digit, area, key_text in (("4", "publish", "Publish"), ("7", "objects", "Delete object"),
                                      ("1", "streams", "New stream")):
            await pilot.press("escape", digit)
            await wait_for(pilot, lambda: app.screen.active_area == area, what=f"{area} shown")
            focused = app.focused
            assert focused is not None and app.screen.pane(area) in focused.ancestors_with_self
            await pilot.pause()
            assert key_text in footer_line(app) and "Fetch" not in footer_line(app), footer_line(app)

        await pilot.press("3", "a")  # no pause: the card last focused takes the ack
        assert cards[1].styles.border_top[0] == "heavy"  # the focused card is marked
        await wait_for(pilot, lambda: cards[1].state == "acked", what="a acked the focused card")
        assert app.focused is cards[1] and cards[0].state == "pending"
        await pilot.pause()
        assert cards[1].styles.border_top[0] == "heavy"  # and still, settled
        assert "a Ack" in footer_line(app)
        info = await js.consumer_info("ORDERS", "RDL")
        assert info.num_ack_pending == 1


async def type_quickly(app, pilot, *keys: str) -> None:
    """Keys as a fast typist's terminal sends them: all queued at once, none
    waiting for the one before to be handled (Pilot's press waits for each)."""
    from textual import events

    chars = {"tab": "\t", "shift+tab": None}
    for key in keys:
        app.post_message(events.Key(key, chars.get(key, key)))
    await pilot.pause()


async def test_keys_typed_quickly_after_tab_land_in_the_next_field(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        count, rate = app.screen.query_one("#pub-count", Input), app.screen.query_one("#pub-rate", Input)
        count.focus()
        await wait_for(pilot, lambda: app.focused is count, what="Repeat N focused")
        await type_quickly(app, pilot, "5", "tab", "1", "0")
        await wait_for(pilot, lambda: rate.value == "10", what="10 in Rate")
        assert count.value == "5" and app.focused is rate
        # and as Pilot presses them (each one handled before the next is sent)
        count.value, rate.value = "", ""
        count.focus()
        await wait_for(pilot, lambda: app.focused is count, what="Repeat N focused again")
        await pilot.press("7", "tab", "2", "5")
        assert (count.value, rate.value, app.focused) == ("7", "25", rate)
        count.value = "5"
        rate.value = "10"
        await type_quickly(app, pilot, "shift+tab", "0")
        # (an Input selects its text when it gets the focus: the 0 replaces the 5)
        await wait_for(pilot, lambda: count.value in ("0", "50"), what="back in Repeat N")
        assert rate.value == "10" and app.focused is count


async def test_the_footer_keeps_help_and_quit_and_the_tabs_their_digits(make_app):
    """At any size `?` and `q` stay in the footer (the pane's own keys give way
    to them), and the tab bar keeps every digit, the tour's panel beside it too."""
    from natslab.tui.panes.registry import PANES

    for size in ((64, 20), (80, 24), (120, 36)):
        app = make_app()
        async with app.run_test(size=size) as pilot:
            await connected(app, pilot)
            for area in ("streams", "consumers", "pull", "kv", "objects", "connections"):
                await show_tab(app, pilot, area)
                await pilot.press("escape")  # out of a text field, where ? and q are typed
                await wait_for(pilot, lambda: "? Help" in footer_line(app) and "q Quit" in footer_line(app),
                               what=f"? and q in the footer of {area} at {size}: {footer_line(app)!r}")
            await pilot.press("T")  # the tour's panel takes the right of the tab bar
            await wait_for(pilot, lambda: len(app.screen.query("#tour")) > 0, what="the tour's panel")
            for area in ("streams", "connections"):
                app.action_tab(area)
                tabs = lambda: [strip.text for strip in app.screen._compositor.render_strips()][2]  # noqa: E731
                digits = [str(i) for i in range(1, len(PANES) + 1)]
                await wait_for(pilot, lambda: re.findall(r"(?<!\S)(\d)(?!\S)", tabs().split("▊")[0]) == digits,
                               what=f"every digit in the tab bar at {size}: {tabs()!r}")


async def test_the_footer_follows_the_pane_without_another_repaint(make_app):
    """Textual's footer recomposed only after some later repaint, and not at
    all while the terminal reported no focus: a pane switched to (here from
    the palette's Go to, no key press in between) kept the last one's keys."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "kv")
        app.screen.query_one("#kv-buckets").focus()
        await wait_for(pilot, lambda: "New bucket" in footer_line(app), what="KV's footer")
        app.app_focus = False  # the terminal said it lost the focus (FocusOut)
        app.action_tab("streams")
        await wait_for(pilot, lambda: "New stream" in footer_line(app) and "New bucket" not in footer_line(app),
                       what=f"the streams footer: {footer_line(app)!r}")


def pinned_keys(app) -> tuple[str, str]:
    """The Help and Quit entries at the right of the footer: (help key, quit key)."""
    line = footer_line(app)
    found = re.search(r"(\S+) Help(?:, legend)?  (\S+) Quit", line.split("▏")[-1])
    assert found, f"Help and Quit not both on the footer's last line: {line!r}"
    return found.group(1), found.group(2)


async def test_help_and_quit_are_on_every_pane_form_and_modal_at_80x24(make_app, outside):
    """Walks every pane (with the focus where the tab puts it, a text field
    in Publish, Request and Tail, and out of it), every form and dialog and
    every modal screen at 80x24: the footer's last line ends with Help and
    Quit (`? Help  q Quit`, or where a field types ? and q or a modal keeps
    the app's keys the `f1`/`^q` that work there), and the key it shows for
    Help opens the help."""
    from natslab.tui.panes.registry import PANES
    from natslab.tui.screens.help import HelpScreen
    from natslab.tui.screens.main import MainScreen

    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"o1")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=30)
    await js.create_key_value(bucket="CONFIG")
    app = make_app()
    checked = []

    async def check(where: str, in_field: bool) -> None:
        await wait_for(pilot, lambda: re.search(r"Help.*Quit", footer_line(app).split("▏")[-1]) is not None,
                       what=f"Help and Quit in the footer of {where}: {footer_line(app)!r}")
        help_key, quit_key = pinned_keys(app)
        if in_field:  # ? and q would be typed: the keys that work instead
            assert (help_key, quit_key) == ("f1", "^q"), (where, footer_line(app))
        elif not app.screen.is_modal:
            assert (help_key, quit_key) == ("?", "q"), (where, footer_line(app))
        else:  # a modal screen's own ? (the trace view's), else the stand-ins
            assert help_key in ("?", "f1") and quit_key == "^q", (where, footer_line(app))
        under = app.screen
        await pilot.press({"?": "question_mark", "f1": "f1"}[help_key])
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what=f"{help_key} opened the help on {where}")
        await wait_for(pilot, lambda: footer_line(app).split("▏")[-1].strip() == "^q Quit",
                       what=f"Quit in the help's footer (? closes it): {footer_line(app)!r}")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is under, what="back from the help")
        checked.append(where)

    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        for area in (spec.area for spec in PANES):
            if area == "pull":
                app.open_pull_hand("ORDERS", "RDL")
            await show_tab(app, pilot, area)
            await check(area, in_field=isinstance(app.focused, Input))
            if isinstance(app.focused, Input):
                await pilot.press("escape")
                await wait_for(pilot, lambda: not isinstance(app.focused, Input), what="out of the field")
                await check(f"{area} out of the field", in_field=False)

        async def modal(area: str, focus: str | None, key: str, what: str) -> None:
            await show_tab(app, pilot, area)
            if focus:
                app.screen.query_one(focus).focus()
            await pilot.press(key)
            await wait_for(pilot, lambda: not isinstance(app.screen, MainScreen), what=what)
            await check(what, in_field=isinstance(app.focused, Input))
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), what=f"{what} closed")

        app.jump_to_stream("ORDERS")
        for key, what in (("n", "the stream form"), ("e", "the edit form"), ("p", "the purge dialog"),
                          ("d", "the delete confirmation"), ("g", "the topology screen")):
            await modal("streams", "#streams-table", key, what)
        app.jump_to_consumer("ORDERS", "RDL")
        await modal("consumers", "#consumers-table", "n", "the consumer form")
        await modal("kv", "#kv-buckets", "n", "the bucket form")
        app.screen.query_one("#pub-subject", Input).value = "orders.new"
        await modal("publish", "#pub-send", "ctrl+t", "the trace screen")
        app.open_pull_hand("ORDERS", "RDL")
        await show_tab(app, pilot, "pull")
        await pilot.press("f")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="a card in hand")
        await modal("pull", None, "N", "the nak delay dialog")
    assert len(checked) == len(PANES) + 3 + 9
