"""The embedding API the workbench and other programs use."""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import connect
from natslab.server import EmbeddedServer, ServerThread


async def test_embedded_server_pub_sub_and_jetstream(tmp_path):
    async with EmbeddedServer(port=0, jetstream=True, store_dir=tmp_path) as srv:
        assert srv.port > 0
        assert srv.client_url == f"nats://127.0.0.1:{srv.port}"
        nc = await connect(srv.client_url)
        sub = await nc.subscribe("hello")
        await nc.flush()
        await nc.publish("hello", b"world")
        assert (await sub.next_msg(timeout=2)).data == b"world"
        js = nc.jetstream()
        await js.add_stream(name="EMB", subjects=["emb.>"])
        ack = await js.publish("emb.1", b"x")
        assert (ack.stream, ack.seq) == ("EMB", 1)
        await nc.close()
    assert (tmp_path / "jetstream").is_dir()


async def test_embedded_start_does_not_block_the_loop(tmp_path):
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    t = asyncio.create_task(ticker())
    started = time.perf_counter()
    srv = await EmbeddedServer(port=0, jetstream=True, store_dir=tmp_path).start()
    elapsed = time.perf_counter() - started
    nc = await connect(srv.client_url)
    await nc.close()
    await srv.stop()
    t.cancel()
    assert ticks > 0
    assert elapsed < 5  # generous bound; the benchmark measures the real figure


async def test_server_thread_serves_a_client_on_another_loop(tmp_path):
    st = ServerThread(port=0, jetstream=True, store_dir=tmp_path).start()
    try:
        nc = await connect(st.client_url)
        resp = await nc.jetstream().account_info()
        assert resp.streams == 0
        await nc.close()
    finally:
        st.stop()
    assert st._thread is None


def test_server_thread_reports_start_failure(tmp_path):
    first = ServerThread(port=0, jetstream=False).start()
    try:
        with pytest.raises(OSError):
            ServerThread(port=first.port, jetstream=False).start()
    finally:
        first.stop()
