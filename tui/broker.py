"""Starting and stopping the embedded broker. Only the App and the CLI use this;
panes never see the broker, they see a NATS URL.

The broker runs on its own thread and event loop (``ServerThread``) so that a
flood of messages from other programs cannot starve the UI's event loop.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class BrokerSpec:
    """How to run the embedded broker. ``port`` 4222 and ``monitor_port`` 8222 fall
    forward to the next free port; ``monitor_port`` 0 runs without monitoring."""

    port: int = 4222
    monitor_port: int = 8222
    store_dir: Path | None = None
    memory: bool = False
    host: str = "127.0.0.1"
    history_mb: float = 50  # the broker's history ring for the time slider (0: none)
    _temp_dir: Path | None = field(default=None, repr=False)

    def resolved_store_dir(self) -> Path:
        if self.memory:
            if self._temp_dir is None:
                self._temp_dir = Path(tempfile.mkdtemp(prefix="natslab-mem-"))
            return self._temp_dir
        if self.store_dir is None:
            from .config import data_dir

            self.store_dir = data_dir()
        self.store_dir.mkdir(parents=True, exist_ok=True)
        return self.store_dir

    def cleanup(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def choose_port(host: str, wanted: int, tries: int = 50) -> int:
    """``wanted`` if free, else the next free port after it, else 0 (any)."""
    if wanted == 0:
        return 0
    for port in range(wanted, min(wanted + tries, 65536)):
        if port_is_free(host, port):
            return port
    return 0


class EmbeddedBroker:
    """A running embedded broker: its URL, store dir and a blocking stop()."""

    def __init__(self, spec: BrokerSpec):
        self.spec = spec
        self.store_dir = spec.resolved_store_dir()
        self._thread = None
        self.client_url = ""
        self.monitor_url = ""

    def start(self) -> str:
        """Blocking: start the broker thread, return its client URL."""
        from natslab.server import ServerThread  # the only import of the broker in tui/

        port = choose_port(self.spec.host, self.spec.port)
        http_port = choose_port(self.spec.host, self.spec.monitor_port) if self.spec.monitor_port else 0
        self._thread = ServerThread(host=self.spec.host, port=port, jetstream=True,
                                    store_dir=self.store_dir, http_port=http_port,
                                    history_mb=self.spec.history_mb)
        self._thread.start()
        self.monitor_url = f"http://{self.spec.host}:{http_port}" if http_port else ""
        self.client_url = self._thread.client_url
        return self.client_url

    def history(self, since: int | None = None, until: int | None = None, *,
                stream: str | None = None, consumer: str | None = None,
                account: str = "$G") -> list[tuple]:
        """What the broker recorded (ServerThread.history): the time slider's
        source for the embedded broker. Thread-safe and quick (a copy of the
        ring under a lock): called on the UI loop."""
        if self._thread is None:
            return []
        return self._thread.history(since, until, stream=stream, consumer=consumer, account=account)

    def stop(self) -> None:
        if self._thread is not None:
            try:
                self._thread.stop()
            finally:
                self._thread = None
        self.spec.cleanup()

    # ---- faults (the Faults menu, tui/screens/faults.py) -------------------
    # Blocking calls on the broker's thread: the app runs them with
    # asyncio.to_thread, never on the UI loop.
    FAULTS = ("restart", "crash", "power_cut", "drop_client", "freeze", "thaw",
              "slow_disk", "disk_full", "release_disk")

    def arm_power_cut(self) -> None:
        """From now on record what each fsync makes durable, so a power cut can
        drop the rest. Armed when the Faults menu first opens (it costs a read
        of the store and a little per sync: not paid by who never opens it)."""
        if self._thread is not None:  # done on the broker's loop (ServerThread.arm_power_cut)
            self._thread.arm_power_cut()

    def clients(self) -> list:
        """The connected clients (``ClientConn``: cid, name, ip, port, lang), oldest first."""
        if self._thread is None:
            raise RuntimeError("the embedded broker is not running")
        return self._thread.clients()

    @property
    def frozen(self) -> bool:
        """A freeze (of the broker or one consumer) is in force."""
        return self._thread is not None and self._thread.frozen

    def fault(self, name: str, *args):
        """Run one of the fault API's calls (``FAULTS``) on the broker thread."""
        if name not in self.FAULTS:
            raise ValueError(f"no such fault: {name}")
        if self._thread is None:
            raise RuntimeError("the embedded broker is not running")
        return getattr(self._thread, name)(*args)
