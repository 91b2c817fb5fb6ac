"""Stream creation and power cuts, simulated (``powercut.py``): a stream whose
CREATE was answered survives a power cut (issue #16), with its config and
without a damage warning, and creating one costs as few syncs as the ordering
needs (nats.py's ``test_jsm_stream_management_with_offset`` makes 300 file
streams in 5 s). The store is imaged after every sync of the creates, so
each state a power cut could leave between two steps is opened once.

natslab only: nats-server cannot run in this process."""

from __future__ import annotations

import itertools
import logging

from conftest import connect
from powercut import PowerCut

# the streams made, in order: (name, config), and a message published to A
# after it is made (its first block: the store's other files must be
# durable before that message's PubAck)
STREAMS = [
    ("A", {"subjects": ["a.>"]}),
    ("B", {"subjects": ["b.>"], "first_seq": 100}),
    ("M", {"subjects": ["m.>"], "storage": "memory"}),
    ("D", {"subjects": ["d.>"], "max_msgs": 5, "first_seq": 7}),
]


async def test_stream_create_survives_a_power_cut_at_every_step(tmp_path, monkeypatch, caplog):
    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    answered: list[str] = []
    published: list[bytes] = []
    images = []
    taken = itertools.count()
    synced = cut._synced

    def image_after(fd):  # every durable state a power cut can leave
        synced(fd)
        images.append((cut.image(tmp_path / f"cut{next(taken)}"), list(answered), list(published)))

    monkeypatch.setattr(cut, "_synced", image_after)
    async with EmbeddedServer(port=0, store_dir=store) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        images.clear()  # (start-up)
        for name, cfg in STREAMS:
            await js.add_stream(name=name, **cfg)
            answered.append(name)
            images.append((cut.image(tmp_path / f"cut{next(taken)}"), list(answered), list(published)))
            if name == "A":
                await js.publish("a.1", b"first")
                published.append(b"first")
        await nc.close()
    monkeypatch.setattr(cut, "_synced", synced)
    monkeypatch.undo()
    assert len(images) >= len(STREAMS)
    configs = dict(STREAMS)
    for image, names, msgs in images:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="natslab"):
            async with EmbeddedServer(port=0, store_dir=image) as srv:
                nc = await connect(srv.client_url)
                js = nc.jetstream()
                for name in names:
                    cfg = configs[name]
                    if cfg.get("storage") == "memory":
                        continue  # (memory streams do not survive a restart, as on nats-server)
                    info = await js.stream_info(name)
                    assert info.config.subjects == cfg["subjects"], (image, name)
                    assert info.config.max_msgs == cfg.get("max_msgs", -1), (image, name)
                    # (A's message may be durable before its PubAck arrived)
                    held = info.state.messages
                    assert (len(msgs) if name == "A" else 0) <= held <= (name == "A"), (image, name)
                    first = cfg.get("first_seq") or (1 if held else 0)  # (empty: 0, as on nats-server)
                    assert info.state.first_seq == first, (image, name)
                    assert info.state.last_seq == max(first - 1, 0) + held, (image, name)
                if msgs:
                    assert (await js.get_msg("A", 1)).data == msgs[0]
                await nc.close()
        noisy = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert not noisy, (image, noisy)


async def test_stream_create_syncs(tmp_path, monkeypatch):
    """A file stream's CREATE costs three syncs: meta.json's bytes, its
    directory's entries (meta.json, msgs/), the streams directory's entry
    for it (see ``JetStream.create_stream``); a store's own files are made
    durable with its first block."""
    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    n = 20
    async with EmbeddedServer(port=0, store_dir=store) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="WARM", subjects=["warm"])
        before = cut.syncs
        for i in range(n):
            await js.add_stream(name=f"S{i}", subjects=[f"s{i}.>"])
        per_create = (cut.syncs - before) / n
        await nc.close()
    monkeypatch.undo()
    print(f"\n{per_create:.2f} syncs per stream create")
    assert per_create <= 3
