"""The workbench on a 3-node nats-server cluster started by the test: the
header names the node, the cluster and the meta leader; an R3 stream made in
the form; its leader killed: the info shows the new leader and the old one's
lag, and the header the URL of the node the app moved to."""

from __future__ import annotations

import asyncio
import json

import nats
import nats.js.errors
import pytest
from textual.widgets import Input

from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions
from natslab.tui.panes.streams import StreamsPane

from .cluster import Cluster
from .conftest import screen_text, wait_for


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path / "cluster")
    try:
        c.wait_for_meta_leader()
        yield c
    finally:
        c.stop()


async def stream_leader(nc, name: str) -> str | None:
    info = json.loads((await nc.request(f"$JS.API.STREAM.INFO.{name}", b"", timeout=3)).data)
    return (info.get("cluster") or {}).get("leader")


async def test_r3_stream_from_the_form_survives_its_leader(cluster):
    n1 = cluster.node("n1")
    monitors = ",".join(f"http://127.0.0.1:{n.http_port}" for n in cluster.nodes)
    # the app starts on n1 only; it learns the other nodes from n1's INFO
    app = NatslabApp(connect=ConnectOptions(url=n1.url, connect_timeout=1, reconnect_time_wait=0.2),
                     monitor_url=monitors, remember_theme=False)
    outside = await nats.connect(cluster.node("n2").url, connect_timeout=2, max_reconnect_attempts=2)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="connected")
            await wait_for(pilot, lambda: app.header_info.meta_leader not in ("", "?"), timeout=8, what="meta leader")
            header = str(app.screen.query_one("#header").render())
            assert "n1 in cluster C1" in header and f"meta leader {app.header_info.meta_leader}" in header

            await pilot.press("n")
            await wait_for(pilot, lambda: app.screen.query("#num_replicas"), what="stream form")
            await pilot.press(*"ORDERS", "tab", *"orders.>")
            app.screen.query_one("#num_replicas", Input).value = "3"
            form = app.screen
            await pilot.click("#form-submit")
            await wait_for(pilot, lambda: app.screen is not form, timeout=8,
                           what=f"the form to close ({screen_text(app)[-600:]})")
            streams = app.main_screen.query_one(StreamsPane)
            await wait_for(pilot, lambda: "ORDERS" in streams.streams, timeout=8, what="ORDERS listed")
            assert streams.streams["ORDERS"].config["num_replicas"] == 3

            # make n1, the app's node, the stream's leader too, then kill it
            if await stream_leader(outside, "ORDERS") != "n1":
                await outside.request("$JS.API.STREAM.LEADER.STEPDOWN.ORDERS",
                                      json.dumps({"placement": {"preferred": "n1"}}).encode(), timeout=5)
            for _ in range(50):
                if await stream_leader(outside, "ORDERS") == "n1":
                    break
                await asyncio.sleep(0.2)
            js = outside.jetstream()
            for i in range(3):
                await js.publish("orders.new", f"order {i}".encode())
            app.jump_to_stream("ORDERS")
            await wait_for(pilot, lambda: streams.streams["ORDERS"].cluster.get("leader") == "n1",
                           timeout=8, what="n1 leads ORDERS")
            await wait_for(pilot, lambda: "replica n2" in screen_text(app), what="replicas in the info")

            # Connections: every node given to --monitor (the app on n1, the outside client on n2)
            app.action_tab("connections")
            await wait_for(pilot, lambda: app.screen.pane("connections") is not None, what="connections pane")
            table = app.screen.query_one("#conn-table")
            await wait_for(pilot, lambda: len({k.split(":")[0] for k in table._order}) >= 2
                           and any("you" in (table.value(k, "name") or "") for k in table._order),
                           timeout=8, what="connections of two nodes")
            # each row names its node (/connz gives only the server id; /varz its name)
            await wait_for(pilot, lambda: {table.value(k, "server") for k in table._order} == {"n1", "n2"},
                           timeout=8, what="the Server column names n1 and n2")
            app.jump_to_stream("ORDERS")
            await pilot.pause(0.3)

            n1.kill()
            await wait_for(pilot, lambda: app.header_info.state == "connected"
                           and app.header_info.url != n1.url and app.header_info.server_name != "n1",
                           timeout=15, what="the app moved to another node")
            assert app.header_info.url == app.client.server_summary().client_url
            assert f"{app.header_info.server_name} in cluster C1" in str(app.screen.query_one("#header").render())
            for attempt in range(60):  # the remaining nodes elect a new leader (~7 s)
                try:
                    await js.publish("orders.new", b"after failover", timeout=1)
                    break
                except (nats.errors.Error, asyncio.TimeoutError):
                    await asyncio.sleep(0.3)
            await wait_for(pilot, lambda: streams.streams["ORDERS"].cluster.get("leader") not in (None, "", "n1"),
                           timeout=20, what="a new leader")
            new_leader = streams.streams["ORDERS"].cluster["leader"]
            await wait_for(pilot, lambda: f"leader           {new_leader}" in screen_text(app)
                           or f"leader {new_leader}" in " ".join(screen_text(app).split()), what="new leader shown")
            await wait_for(pilot, lambda: "replica n1" in screen_text(app) and "lag" in screen_text(app),
                           timeout=10, what="the old leader's lag")
            # silent for several heartbeats: down, not catching up
            try:
                await wait_for(pilot, lambda: "(down?)" in screen_text(app), timeout=20, what="n1 not seen (down?)")
            except AssertionError:
                raise AssertionError([line for line in screen_text(app).splitlines() if "replica" in line]
                                     + [json.dumps(streams.streams["ORDERS"].cluster)])
            assert "catching up" not in [line for line in screen_text(app).splitlines() if "replica n1" in line][0]
            await app.shutdown()
    finally:
        await outside.close()


def test_a_stream_the_list_names_as_missing_shows_offline_not_zero_messages():
    from rich.console import Console

    from natslab.tui.client.models import StreamSummary
    from natslab.tui.panes.cluster import cluster_table
    from natslab.tui.panes.streams.pane import stream_row

    gone = StreamSummary.unreachable("R1", "no answer from its leader")
    assert stream_row(gone)[2] == "offline" and "0" not in stream_row(gone)
    console = Console(width=100, record=True)
    console.print(cluster_table({"name": "C1", "leader": "n3", "replicas": [
        {"name": "n1", "current": False, "active": 0, "lag": 8, "offline": True},
        {"name": "n2", "current": False, "active": 2_500_000_000, "lag": 3}]}))
    text = console.export_text()
    assert "replica n1 offline" in " ".join(text.split()) and "lag 3, last seen 2.5s ago" in text


def test_a_replica_silent_for_several_heartbeats_is_down_not_catching_up():
    """A killed replica: nats-server says current false, no offline, and the
    leader's last contact with it (active) keeps growing."""
    from natslab.tui.panes.cluster import replica_state

    killed = {"name": "n1", "current": False, "active": 24_400_000_000, "lag": 102}
    words, _ = replica_state(killed)
    assert words == "not seen for 24.4s (down?), lag 102" and "catching up" not in words
    assert replica_state({**killed, "active": 4_000_000_000})[0] == "catching up, lag 102, last seen 4.0s ago"
    assert replica_state({**killed, "active": 125_000_000_000})[0].startswith("not seen for 2m5s (down?)")
    assert replica_state({"name": "n2", "current": True, "active": 30_000_000_000})[0] == "current"
    # the old leader, killed: the new leader never heard from it (active 0) in the 12 s it has led
    old_leader = {"name": "n1", "current": False, "active": 0, "lag": 8}
    assert replica_state(old_leader, leader_for=12.0)[0] == "not seen for 12.0s (down?), lag 8"
    # in the seconds before that it is not heard from, not catching up (seen in the walkthrough)
    assert replica_state(old_leader, leader_for=2.0)[0] == "not heard from yet (leader for 2.0s), lag 8"
    assert replica_state(old_leader)[0] == "catching up, lag 8"


async def test_quorum_lost_the_last_known_values_are_stale_never_current(cluster):
    """Two of three nodes killed: JetStream on the last one cannot answer.
    The header says so once ("JetStream:" once) and keeps the last usage
    dimmed with its age; the streams rows stay as last listed, dimmed, and
    the status line says how old they are."""
    import re

    from natslab.tui.widgets.live_table import LiveTable

    n1 = cluster.node("n1")
    monitors = ",".join(f"http://127.0.0.1:{n.http_port}" for n in cluster.nodes)
    outside = await nats.connect(n1.url, connect_timeout=2, max_reconnect_attempts=2)
    js = outside.jetstream()
    for attempt in range(50):  # until the meta leader knows all three peers
        try:
            await js.add_stream(name="ORDERS", subjects=["orders.>"], num_replicas=3)
            break
        except nats.js.errors.BadRequestError:
            await asyncio.sleep(0.2)
    for i in range(100):
        await js.publish("orders.new", f"order {i:03d} ".encode() * 3)
    await outside.close()
    app = NatslabApp(connect=ConnectOptions(url=n1.url, connect_timeout=1, reconnect_time_wait=0.2),
                     monitor_url=monitors, remember_theme=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="connected")
        streams = app.main_screen.query_one(StreamsPane)
        table = app.screen.query_one("#streams-table", LiveTable)
        await wait_for(pilot, lambda: table.value("ORDERS", "messages") == "100", timeout=10, what="100 messages")
        await wait_for(pilot, lambda: app.header_info.usage is not None and app.header_info.usage.streams == 1,
                       what="usage read")
        await wait_for(pilot, lambda: "num_replicas" in screen_text(app), what="ORDERS' info shown")
        cluster.node("n2").kill()
        cluster.node("n3").kill()

        def header_line() -> str:
            return str(app.screen.query_one("#header").render()).splitlines()[1]

        await wait_for(pilot, lambda: app.header_info.usage_age is not None, timeout=45,
                       what="the usage could not be refreshed")
        await wait_for(pilot, lambda: "last known" in header_line(), what="the header marks the usage stale")
        assert header_line().count("JetStream:") == 1, header_line()
        # "1 streams", or "1 str" when "meta leader none" already took its room (it comes with the poll)
        assert re.search(r"last known \(\d+s ago\) 1 str(eams)? ", header_line()), header_line()
        # n1's /jsz knows no meta leader any more: the header says none (it dropped the entry, as on one server)
        await wait_for(pilot, lambda: app.header_info.meta_leader == "none", timeout=45, what="no meta leader")
        await wait_for(pilot, lambda: "meta leader none" in header_line(), what="the header says so")
        await wait_for(pilot, lambda: "could not list" in streams._status_text, timeout=45, what="the list failed")
        status = str(app.screen.query_one("#streams-status").render())
        assert re.search(r"rows as of \d+s ago \(dimmed\)", status), status
        assert table.has_class("-stale")
        # and the Info tab's config and state, replicas and all, as old as the rows
        info = app.screen.query_one("StreamInfoView")
        await wait_for(pilot, lambda: info.has_class("-stale") and "could not be refreshed" in screen_text(app),
                       what="the stream's info marked stale")
        assert re.search(r"as of \d+s ago: could not be refreshed", screen_text(app)), screen_text(app)
        await app.shutdown()


async def test_without_a_monitoring_port_the_header_says_how_to_name_the_meta_leader(cluster):
    """--connect to a cluster without --monitor: the guessed http://HOST:8222
    does not answer, and the header read "meta leader ?" with no way to learn
    why; it names the flag that fixes it."""
    from .conftest import free_port

    n1 = cluster.node("n1")
    app = NatslabApp(connect=ConnectOptions(url=n1.url, connect_timeout=1, reconnect_time_wait=0.2),
                     monitor_url=f"http://127.0.0.1:{free_port()}", remember_theme=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="connected")
        await wait_for(pilot, lambda: app.header_info.meta_leader == "?", timeout=8, what="no meta leader known")
        header = str(app.screen.query_one("#header").render())
        assert "meta leader ? (no /jsz: --monitor URL)" in header, header
        await app.shutdown()


async def test_the_meta_leader_is_not_shown_as_current_once_its_node_died(cluster):
    """The meta leader's node killed: the header kept "meta leader n2" as if
    current for up to 3 s (until the next /jsz poll), though the account info
    (the meta leader's to answer) had already failed. On the failed poll the
    name is marked at once ("n2? (not confirmed)", dimmed); a leader read
    while JetStream answers again is shown as current."""
    from natslab.tui.client.monitor import fetch_meta_leader

    monitors = ",".join(f"http://127.0.0.1:{n.http_port}" for n in cluster.nodes)
    leader = ""
    for _ in range(100):  # bounded: the nodes agree on a leader within seconds
        leader = await fetch_meta_leader(monitors)
        if leader not in ("", "none"):
            break
        await asyncio.sleep(0.1)
    assert leader.startswith("n"), leader
    home = next(n for n in cluster.nodes if n.name != leader)  # the app's node lives on
    app = NatslabApp(connect=ConnectOptions(url=home.url, connect_timeout=1, reconnect_time_wait=0.2),
                     monitor_url=monitors, remember_theme=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="connected")
        await wait_for(pilot, lambda: app.header_info.meta_leader == leader and app.header_info.usage is not None
                       and not app.header_info.meta_leader_stale, timeout=10, what=f"meta leader {leader}")

        def header_line() -> str:
            return str(app.screen.query_one("#header").render()).splitlines()[1]

        assert f"meta leader {leader} " in header_line() + " "
        cluster.node(leader).kill()
        await wait_for(pilot, lambda: app.header_info.usage_age is not None, timeout=30,
                       what="a usage poll that failed")
        info = app.header_info  # as the failed poll left it: the dead leader not as current
        assert info.meta_leader != leader or info.meta_leader_stale, info
        if info.meta_leader == leader:
            assert f"meta leader {leader}?" in header_line(), header_line()
        # the two left elect a new leader; once JetStream answers, it is current
        await wait_for(pilot, lambda: app.header_info.meta_leader not in ("", "none", "?", leader)
                       and not app.header_info.meta_leader_stale and app.header_info.usage_age is None,
                       timeout=45, what="the new meta leader, confirmed")
        assert f"meta leader {app.header_info.meta_leader}" in header_line()
        assert "?" not in header_line().split("meta leader")[1].split()[0]
        await app.shutdown()
