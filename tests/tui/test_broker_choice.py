"""Which broker the workbench tests run on: natslab's own, and no quiet swap.

A broken embedded broker must fail the TUI tests, not hand them to nats-server.
"""

from __future__ import annotations

import pytest

from natslab import server

from .conftest import EmbeddedThread, broker_kind


def test_natslabs_broker_is_used_even_when_it_is_broken(monkeypatch, tmp_path):
    monkeypatch.delenv("NATSLAB_TUI_BROKER", raising=False)

    def broken(self, timeout: float = 30.0):
        raise RuntimeError("embedded broker broken on purpose")

    monkeypatch.setattr(server.ServerThread, "start", broken)
    assert broker_kind() == "embedded"
    with pytest.raises(RuntimeError, match="broken on purpose"):
        EmbeddedThread(tmp_path, monitor=True)


def test_the_real_server_only_when_asked_for(monkeypatch):
    monkeypatch.setenv("NATSLAB_TUI_BROKER", "nats-server")
    assert broker_kind() == "nats-server"
    monkeypatch.setenv("NATSLAB_TUI_BROKER", "auto")
    with pytest.raises(ValueError, match="embedded, nats-server"):
        broker_kind()


def test_the_broker_fixture_is_the_one_asked_for(broker, monkeypatch):
    import os

    assert broker.kind == os.environ.get("NATSLAB_TUI_BROKER", "embedded")
    assert broker.http_port  # the Connections pane has a monitoring port on both
