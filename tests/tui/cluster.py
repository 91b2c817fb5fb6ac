"""A 3-node nats-server cluster with JetStream on 127.0.0.1, for the workbench's
cluster tests: routes between the nodes, a monitoring port each, and a way to
kill one node (SIGKILL) and start it again."""

from __future__ import annotations

import asyncio
import json
import shutil
import urllib.request
import signal
import subprocess
import time
from pathlib import Path

import nats
import nats.errors

from .conftest import _wait_for_info, free_port, stop_process


class Node:
    def __init__(self, name: str, store: Path, cluster_port: int, routes: list[int], conf: str = ""):
        self.name = name
        self.conf = conf  # extra config file text (accounts, a system account), "" for none
        self.store = store
        self.port = free_port()
        self.http_port = free_port()
        self.cluster_port = cluster_port
        self.routes = routes
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        routes = ",".join(f"nats://127.0.0.1:{p}" for p in self.routes)
        cmd = [shutil.which("nats-server") or "nats-server", "-a", "127.0.0.1", "-p", str(self.port),
               "-m", str(self.http_port), "-js", "-sd", str(self.store), "-n", self.name,
               "--cluster_name", "C1", "--cluster", f"nats://127.0.0.1:{self.cluster_port}", "--routes", routes]
        if self.conf:
            path = self.store.parent / f"{self.name}.conf"
            path.write_text(self.conf)
            cmd += ["-c", str(path)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_info(self.port, self.proc)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.proc = None


class Cluster:
    def __init__(self, root: Path, size: int = 3, conf: str = "", probe: dict | None = None):
        self.probe = probe or {}  # credentials of the meta leader probe (with accounts in conf)
        cluster_ports = [free_port() for _ in range(size)]
        self.nodes = []
        for i in range(size):
            store = root / f"n{i + 1}"
            store.mkdir(parents=True)
            others = [p for j, p in enumerate(cluster_ports) if j != i]
            self.nodes.append(Node(f"n{i + 1}", store, cluster_ports[i], others, conf))
        for node in self.nodes:
            node.start()

    @property
    def urls(self) -> str:
        return ",".join(n.url for n in self.nodes if n.proc is not None)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def wait_for_meta_leader(self, timeout: float = 20.0) -> None:
        """JetStream answers once the nodes elected a meta leader."""
        async def probe() -> bool:
            nc = await nats.connect(self.urls.split(","), connect_timeout=1, max_reconnect_attempts=1, **self.probe)
            try:
                await nc.jetstream().account_info()
                return True
            except (nats.errors.Error, asyncio.TimeoutError):  # no meta leader yet: try again
                return False
            finally:
                await nc.close()

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if asyncio.run(probe()) and self._meta_group_whole():
                return
            time.sleep(0.2)
        raise RuntimeError("the cluster elected no JetStream meta leader with every node current in its group")

    def _meta_group_whole(self) -> bool:
        """The leader's /jsz counts every other running node as a current
        replica: a node killed before it joined the meta group would leave the
        rest without a quorum (a stressed run: no new leader within 45 s)."""
        running = [n for n in self.nodes if n.proc is not None]
        for node in running:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{node.http_port}/jsz", timeout=2) as r:
                    meta = json.load(r).get("meta_cluster") or {}
            except OSError:
                continue
            if meta.get("leader") == node.name:
                replicas = meta.get("replicas") or []
                return (meta.get("cluster_size") == len(self.nodes)
                        and sum(1 for p in replicas if p.get("current")) >= len(running) - 1)
        return False

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
