"""The broker's own CPU cost per message, without sockets: a steady number
to optimise against when the machine is too noisy for wall-clock ratios.

    python bench/bench_inproc.py [WORKLOAD|core-all|all] [-n N] [--rounds R] [--chunk C] [--sync always|SECONDS] [--profile]

Core workloads (128-byte PUBs, no JetStream work): ``core`` / ``core-1``
(one subscriber), ``core-0`` (nobody listens), ``core-10`` and ``core-100``
(that many subscribers, each its own connection), ``core-wild`` (one
subscriber each on ``core.x``, ``core.*`` and ``core.>``), ``core-queue5``
(a queue group of five; each message goes to one), ``core-req``
(request-reply: a requester with 256 requests in flight, a responder that
answers each from its MSG lines), ``core-req1`` (the same with one request
in flight, as nats-py's ``request`` waits for each: every read holds one
message, so what a read costs shows). ``core-all`` runs them all.

natslab's Server runs in this process on its event loop; clients are real
``Client`` protocol objects attached to an in-memory transport, fed protocol
bytes exactly as a socket would deliver them (chunks of a few hundred
commands), with what the server writes back parsed as a client would
(PubAcks counted, ack subjects taken from MSG lines and acked). The figure
is process CPU time per message (best of the rounds): parser, router,
JetStream and stores, but no syscalls and no client. It is not comparable
with nats-server; bench_core.py / bench_js.py give those ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import json
import os
import re
import sys
import tempfile
import time

from natslab.server import EmbeddedServer
from natslab.server.client import Client

PAYLOAD = b"x" * 128
CHUNK = 256  # commands per data_received, about what one socket read brings
PROFILE: cProfile.Profile | None = None  # --profile: the measured part only
SERVER_OPTS: dict = {}  # --sync: jetstream { sync_interval } as ServerOptions


def cpu_now() -> float:
    if PROFILE is not None:
        PROFILE.enable()
    return time.process_time()


def cpu_since(t0: float) -> float:
    if PROFILE is not None:
        PROFILE.disable()
    return time.process_time() - t0
_MSG = re.compile(rb"MSG [^ ]+ [^ ]+ ([^ ]+) (\d+)\r\n")


class MemTransport:
    """Just enough of asyncio.Transport for a Client; keeps what is written."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def take(self) -> bytes:
        data = b"".join(self.out)
        self.out.clear()
        return data

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 1) if name == "peername" else default

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    abort = close


async def attach(srv) -> tuple[Client, MemTransport]:
    c = Client(srv)
    t = MemTransport()
    c.connection_made(t)
    c.data_received(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\nPING\r\n')
    await settle()
    t.take()
    return c, t


async def settle(turns: int = 3) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


async def api(c: Client, t: MemTransport, subject: str, body: dict) -> bytes:
    data = json.dumps(body).encode()
    c.data_received(b"PUB %s _INBOX.api.1 %d\r\n%s\r\n" % (subject.encode(), len(data), data))
    await settle()
    return t.take()


async def js_publish(c: Client, t: MemTransport, subject: bytes, n: int) -> None:
    head = b"PUB " + subject + b" _INBOX.bjs.%d " + str(len(PAYLOAD)).encode() + b"\r\n" + PAYLOAD + b"\r\n"
    acked = 0
    for start in range(0, n, CHUNK):
        c.data_received(b"".join([head % j for j in range(start, min(n, start + CHUNK))]))
        await settle(1)
        acked += t.take().count(b'{"stream":')
    if acked != n:
        raise SystemExit(f"expected {n} PubAcks, got {acked}")


async def workload(name: str, n: int) -> float:
    """CPU seconds for n messages of the workload."""
    with tempfile.TemporaryDirectory() as store:
        # NATSLAB_BENCH_HISTORY_MB: the same with the history ring on (server/jetstream/journal.py)
        history_mb = float(os.environ.get("NATSLAB_BENCH_HISTORY_MB") or 0)
        async with EmbeddedServer(port=0, store_dir=store, read_budget=0, history_mb=history_mb, **SERVER_OPTS) as es:
            srv = es.server
            c, t = await attach(srv)
            c.data_received(b"SUB _INBOX.bjs.* 1\r\nSUB _INBOX.api.* 2\r\nSUB _INBOX.pull.* 3\r\n")
            if name.startswith("core"):
                return await core_workload(srv, c, t, name, n)
            if name in ("kv-put", "kv-get"):
                # a KV bucket's stream (history 1, as nats-py creates it) and
                # puts over 100 keys: each replaces the key's last revision
                await api(c, t, "$JS.API.STREAM.CREATE.KV_B", {
                    "name": "KV_B", "subjects": ["$KV.B.>"], "max_msgs_per_subject": 1, "discard": "new",
                    "allow_rollup_hdrs": True, "deny_delete": True, "allow_direct": True, "storage": "file"})
                keys = [b"$KV.B.key.%d" % i for i in range(100)]
                if name == "kv-get":
                    # direct gets of the latest revision, as nats-py, nats.go and the CLI send them
                    c.data_received(b"".join([b"PUB %s _INBOX.bjs.%d %d\r\n%s\r\n" % (k, j, len(PAYLOAD), PAYLOAD)
                                              for j, k in enumerate(keys)]))
                    await settle()
                    t.take()
                    t0 = cpu_now()
                    got = 0
                    for start in range(0, n, CHUNK):
                        c.data_received(b"".join([b"PUB $JS.API.DIRECT.GET.KV_B.%s _INBOX.bjs.%d 0\r\n\r\n" % (keys[j % 100], j)
                                                  for j in range(start, min(n, start + CHUNK))]))
                        await settle(1)
                        got += t.take().count(b"HMSG _INBOX.bjs.")
                    if got != n:
                        raise SystemExit(f"expected {n} replies, got {got}")
                    return cpu_since(t0)
                t0 = cpu_now()
                acked = 0
                for start in range(0, n, CHUNK):
                    c.data_received(b"".join([b"PUB %s _INBOX.bjs.%d %d\r\n%s\r\n" % (keys[j % 100], j, len(PAYLOAD), PAYLOAD)
                                              for j in range(start, min(n, start + CHUNK))]))
                    await settle(1)
                    acked += t.take().count(b'{"stream":')
                if acked != n:
                    raise SystemExit(f"expected {n} PubAcks, got {acked}")
                return cpu_since(t0)
            storage = "memory" if name == "pub-mem" else "file"
            await api(c, t, "$JS.API.STREAM.CREATE.P", {"name": "P", "subjects": ["p.>"], "storage": storage})
            if name.startswith("pub"):
                t0 = cpu_now()
                await js_publish(c, t, b"p.x", n)
                return cpu_since(t0)
            await js_publish(c, t, b"p.x", n)
            if name == "push":
                await api(c, t, "$JS.API.CONSUMER.CREATE.P.PUSH", {"stream_name": "P", "config": {
                    "durable_name": "PUSH", "deliver_subject": "push.in", "ack_policy": "none"}})
                t0 = cpu_now()
                c.data_received(b"SUB push.in 9\r\n")
                got = 0
                while got < n:
                    await settle(1)
                    got += t.take().count(b"MSG p.x 9 ")
                return cpu_since(t0)
            await api(c, t, "$JS.API.CONSUMER.CREATE.P.R", {"stream_name": "P", "config": {
                "durable_name": "R", "ack_policy": "explicit"}})
            req = json.dumps({"batch": 256, "expires": 30_000_000_000}).encode()
            pull = b"PUB $JS.API.CONSUMER.MSG.NEXT.P.R _INBOX.pull.%d " + str(len(req)).encode() + b"\r\n" + req + b"\r\n"
            t0 = cpu_now()
            got = 0
            reqs = 0
            c.data_received(pull % reqs)
            while got < n:
                await settle(1)
                acks = [b"PUB %s 0\r\n\r\n" % m.group(1) for m in _MSG.finditer(t.take())]
                got += len(acks)
                if not acks:
                    continue
                reqs += 1
                c.data_received(b"".join(acks) + (pull % reqs if got < n else b""))
            await settle()
            return cpu_since(t0)


CORE = ["core-0", "core-1", "core-10", "core-100", "core-wild", "core-queue5", "core-req", "core-req1"]


async def core_workload(srv, c: Client, t: MemTransport, name: str, n: int) -> float:
    """Core NATS: c publishes n messages on core.x (see the module docstring);
    every delivery is counted in what the subscribers' transports received."""
    if name == "core-req":
        return await core_request_reply(srv, c, t, n, CHUNK)
    if name == "core-req1":
        return await core_request_reply(srv, c, t, n, 1)
    subs = []
    if name == "core-wild":
        for i, subj in enumerate((b"core.x", b"core.*", b"core.>")):
            sc, st = await attach(srv)
            sc.data_received(b"SUB %s %03d\r\n" % (subj, i))
            subs.append(st)
        want = 3 * n
    elif name == "core-queue5":
        for i in range(5):
            sc, st = await attach(srv)
            sc.data_received(b"SUB core.x workers %03d\r\n" % i)
            subs.append(st)
        want = n
    else:
        k = {"core": 1, "core-0": 0, "core-1": 1, "core-10": 10, "core-100": 100}[name]
        for i in range(k):
            sc, st = await attach(srv)
            sc.data_received(b"SUB core.x %03d\r\n" % i)
            subs.append(st)
        want = k * n
    line = b"PUB core.x %d\r\n%s\r\n" % (len(PAYLOAD), PAYLOAD)
    got = 0
    t0 = cpu_now()
    for start in range(0, n, CHUNK):
        c.data_received(line * min(CHUNK, n - start))
        for st in subs:
            got += len(st.take())
    elapsed = cpu_since(t0)
    # what the subscribers got is counted in bytes (cheaper for the harness
    # than finding each MSG line, so the figure is mostly the broker's): each
    # delivery is a MSG line of its subscriber's sid (three digits) and the payload
    frame = len(b"MSG core.x 000 %d\r\n%s\r\n" % (len(PAYLOAD), PAYLOAD))
    if got != want * frame:
        raise SystemExit(f"{name}: expected {want} deliveries ({want * frame} bytes), got {got} bytes")
    return elapsed


async def core_request_reply(srv, c: Client, t: MemTransport, n: int, window: int) -> float:
    """Requests on svc.echo with a reply in c's inbox (a new one for each, as
    nats-py makes them), ``window`` of them in one read; a responder answers
    each with the payload it got, all its answers to one read in one read.

    The harness's own work is kept small and in C, so that the figure is
    mostly the broker's: each read is formatted from a template in one
    ``%``, and what each side receives is compared with what it must be,
    byte for byte (the responder's answers are what it would make of them)."""
    rc, rt = await attach(srv)
    rc.data_received(b"SUB svc.echo 1\r\n")
    c.data_received(b"SUB _INBOX.req.* 5\r\n")
    size = len(PAYLOAD)
    one = {  # what one request and its answer look like on each leg
        "req": b"PUB svc.echo _INBOX.req.%%d %d\r\n%s\r\n" % (size, PAYLOAD),
        "asked": b"MSG svc.echo 1 _INBOX.req.%%d %d\r\n%s\r\n" % (size, PAYLOAD),
        "answer": b"PUB _INBOX.req.%%d %d\r\n%s\r\n" % (size, PAYLOAD),
        "replied": b"MSG _INBOX.req.%%d 5 %d\r\n%s\r\n" % (size, PAYLOAD),
    }
    templates = {k: {key: v * k for key, v in one.items()} for k in {window, n % window} if k}
    t0 = cpu_now()
    for start in range(0, n, window):
        ids = tuple(range(start, min(n, start + window)))
        tpl = templates[len(ids)]
        c.data_received(tpl["req"] % ids)
        if rt.take() != tpl["asked"] % ids:
            raise SystemExit(f"core-req: the responder did not get requests {start}..{start + len(ids) - 1} as sent")
        rc.data_received(tpl["answer"] % ids)
        if t.take() != tpl["replied"] % ids:
            raise SystemExit(f"core-req: the requester did not get answers {start}..{start + len(ids) - 1} as sent")
    return cpu_since(t0)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", nargs="?", default="all", choices=["core", *CORE, "core-all", "pub-mem", "pub-file", "kv-put", "kv-get", "pull", "push", "all"])
    ap.add_argument("-n", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile the measured part, print the top functions")
    ap.add_argument("--chunk", type=int, default=256,
                    help="commands per data_received (default 256); 1 measures one message per read, "
                         "as a client with one request in flight sends them")
    ap.add_argument("--sync", default="", metavar="always|SECONDS",
                    help="jetstream { sync_interval }: always, or seconds (lazy fsync); default: natslab's "
                         "group commit (a PubAck after its fsync)")
    a = ap.parse_args()
    global PROFILE, CHUNK
    CHUNK = a.chunk
    if a.sync == "always":
        SERVER_OPTS["sync_always"] = True
    elif a.sync:
        SERVER_OPTS["sync_interval"] = float(a.sync)
    if a.profile:
        PROFILE = cProfile.Profile()
    js = ["pub-mem", "pub-file", "kv-put", "kv-get", "pull", "push"]
    names = {"all": CORE + js, "core-all": CORE}.get(a.workload, [a.workload])
    for name in names:
        best = min([await workload(name, a.n) for _ in range(a.rounds)])
        print(f"{name:9s} {best / a.n * 1e6:6.2f} us/msg CPU  ({a.n} msgs, best of {a.rounds})", flush=True)
    if PROFILE is not None:
        pstats.Stats(PROFILE).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
