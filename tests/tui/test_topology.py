"""The topology screen against a real broker: a mirror, two sources, a
republish and a KV bucket behind a mirror; live lag and errors per link; a
jump from a link to the stream at either end."""

from __future__ import annotations

import json

from natslab.tui.client.topology import subject_matches

from .conftest import connected, screen_text, show_tab, wait_for


async def api(nc, subject: str, payload: dict) -> dict:
    msg = await nc.request(f"$JS.API.{subject}", json.dumps(payload).encode(), timeout=3)
    resp = json.loads(msg.data)
    assert "error" not in resp, resp
    return resp


async def seed_topology(nc) -> None:
    await api(nc, "STREAM.CREATE.A", {"name": "A", "subjects": ["a.*"],
                                      "republish": {"src": "a.*", "dest": "rp.{{wildcard(1)}}"}})
    await api(nc, "STREAM.CREATE.B", {"name": "B", "subjects": ["b.*"]})
    await api(nc, "STREAM.CREATE.RP", {"name": "RP", "subjects": ["rp.>"]})
    await api(nc, "STREAM.CREATE.M", {"name": "M", "mirror": {"name": "A"}})
    await api(nc, "STREAM.CREATE.S", {"name": "S", "sources": [{"name": "A", "filter_subject": "a.x"},
                                                               {"name": "B", "opt_start_seq": 2}]})
    js = nc.jetstream()
    for i in range(3):
        await js.publish("a.x", f"x{i}".encode())
        await js.publish("b.y", f"y{i}".encode())


def test_subject_matches():
    assert subject_matches("rp.>", "rp.*")
    assert subject_matches("rp.*", "rp.x")
    assert not subject_matches("rp.*", "rp.x.y")
    assert not subject_matches("a.b", "a.*")
    assert subject_matches(">", "anything.at.all")


async def test_topology_links_lag_and_jumps(make_app, outside):
    await seed_topology(outside)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "streams")
        await wait_for(pilot, lambda: len(app.screen.query_one("StreamsPane").streams) == 5, what="streams")
        await pilot.press("g")
        await wait_for(pilot, lambda: len(app.screen.query("TopologyView")) == 1, what="topology screen")
        view = app.screen.query_one("TopologyView")
        await wait_for(pilot, lambda: view.topology is not None and len(view.links) == 4, what="four links")
        kinds = sorted((link.kind, link.origin, link.target) for link in view.links.values())
        assert kinds == [("mirror", "A", "M"), ("republish", "A", "RP"),
                         ("source", "A", "S"), ("source", "B", "S")]
        # caught up: the mirror has all of A, the sourced stream its share
        await wait_for(pilot, lambda: all(l.lag == 0 for l in view.topology.links if l.kind != "republish"),
                       timeout=10, what="links caught up")
        text = screen_text(app)
        assert "mirror───▶ M" in text and "republish▶ RP" in text
        assert "filter a.x" in text and "from seq 2" in text and "a.* → rp.{{wildcard(1)}}" in text

        # a source whose origin is gone shows the server's error on its link
        await api(outside, "STREAM.CREATE.LOST", {"name": "LOST", "sources": [{"name": "GONE"}]})
        await wait_for(pilot, lambda: any(l.origin == "GONE" and l.error for l in view.links.values()),
                       timeout=10, what="error on the GONE link")
        assert "stream not found" in screen_text(app)

        # Enter on the mirror link: the streams pane, with M selected
        table = view.query_one("#topology-links")
        table.move_cursor(row=[i for i, k in enumerate(table._order) if k.startswith("mirror:")][0])
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MainScreen", what="back on the main screen")
        await wait_for(pilot, lambda: app.screen.query_one("StreamsPane").selected == "M", what="M selected")

        # o on the B → S link: its origin, B
        await pilot.press("g")
        await wait_for(pilot, lambda: len(app.screen.query("TopologyView")) == 1, what="topology again")
        view = app.screen.query_one("TopologyView")
        await wait_for(pilot, lambda: len(view.links) == 5, what="five links")
        table = view.query_one("#topology-links")
        table.move_cursor(row=[i for i, k in enumerate(table._order) if k.startswith("source:B>S")][0])
        await pilot.press("o")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MainScreen", what="main screen")
        await wait_for(pilot, lambda: app.screen.query_one("StreamsPane").selected == "B", what="B selected")


async def test_topology_shows_kv_bucket_behind_a_mirror(make_app, outside):
    js = outside.jetstream()
    await js.create_key_value(bucket="CFG")
    await api(outside, "STREAM.CREATE.CFGCOPY", {"name": "CFGCOPY", "mirror": {"name": "KV_CFG"}})
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        from natslab.tui.screens.topology import open_topology

        open_topology(app)
        # the node's label can be on screen a refresh before the mirror link under it
        await wait_for(pilot, lambda: "KV_CFG (KV CFG)" in screen_text(app) and "mirror───▶ CFGCOPY" in screen_text(app),
                       what="the bucket's node and its mirror link")


def _stream(name: str, **config):
    from natslab.tui.client.models import StreamSummary

    return StreamSummary.from_json({"config": {"name": name, **config}, "state": {}})


def test_republish_to_a_subject_no_stream_captures_and_a_cycle():
    from natslab.tui.client.topology import build_topology
    from natslab.tui.panes.topology import draw_topology

    topo = build_topology([
        _stream("A", subjects=["a"], sources=[{"name": "B"}], republish={"src": "a", "dest": "out.a"}),
        _stream("B", subjects=["b"], sources=[{"name": "A"}]),
    ])
    assert sorted((l.kind, l.origin, l.target, l.target_is_stream) for l in topo.links) == [
        ("republish", "A", "out.a", False), ("source", "A", "B", True), ("source", "B", "A", True)]
    assert topo.roots() == []  # a cycle has no stream fed by nothing
    styles = dict.fromkeys(("stream", "kind", "error", "muted"), "")
    text = draw_topology(topo, styles).plain
    # drawn from its first stream, each stream once, the subject target named as one
    assert text.splitlines()[0] == "A" and text.count("source───▶ B") == 1 and text.count("source───▶ A") == 1
    assert "republish▶ subject out.a" in text
