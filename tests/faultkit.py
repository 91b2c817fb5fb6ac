"""Tools for the fault tests (``tests/test_faults_*.py``): where each broker
keeps a stream's files, a small tmpfs to fill, seeded publish rounds that
record what was acknowledged, and the checks every fault test ends with.

The quick versions of the fault tests run in the normal suite; with
``NATSLAB_FAULTS=long`` they run longer (more rounds, more messages) and print
their figures (``pytest -s tests/test_faults_*.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest

LONG = os.environ.get("NATSLAB_FAULTS", "") == "long"


def scale(quick: int, long: int) -> int:
    return long if LONG else quick


def stream_dir(srv, name: str) -> Path:
    return srv.store_dir / "jetstream" / "$G" / "streams" / name


def meta_file(srv, name: str) -> Path:
    """The stream's config file: meta.json (natslab) or meta.inf (nats-server)."""
    return stream_dir(srv, name) / ("meta.json" if srv.kind == "natslab" else "meta.inf")


def consumer_dir(srv, stream: str, name: str) -> Path:
    return stream_dir(srv, stream) / "obs" / name


def _uvarint(b: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        if c < 0x80:
            return n, i
        shift += 7


def written_ack_floor(srv, stream: str, name: str) -> int | None:
    """The ack floor (stream sequence) in the consumer's state file as the
    broker has written it so far: what a SIGKILL now would leave. natslab
    answers an ack_sync only once its state is fsynced, so its floor is not
    read here (None); nats-server writes o.dat from a goroutine of its own,
    about 100 ms later (consumerFileStore.flushLoop; encodeConsumerState:
    magic, version, then uvarints ack floor consumer, ack floor stream...)."""
    if srv.kind == "natslab":
        return None
    try:
        b = (consumer_dir(srv, stream, name) / "o.dat").read_bytes()
    except OSError:
        return 0
    if len(b) < 4:
        return 0
    _, i = _uvarint(b, 2)
    return _uvarint(b, i)[0]


async def ack_floor_written(srv, stream: str, name: str, floor: int, timeout: float = 10.0) -> None:
    """Until the consumer's acks up to ``floor`` are in its state file
    (at once on natslab: written_ack_floor)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (got := written_ack_floor(srv, stream, name)) is not None and got < floor:
        assert asyncio.get_running_loop().time() < deadline, f"{srv.kind} wrote ack floor {got}, not {floor}"
        await asyncio.sleep(0.02)


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "4m"):
    """A tmpfs of ``size`` mounted at ``path`` (needs root); the test is
    skipped, saying why, where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot mount a tmpfs to fill ({e}); run as root to test a full disk")
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill ({r.stderr.strip()}); run as root to test a full disk")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10)


def fill(path: Path, leave: int = 0) -> Path:
    """Take the free space of the file system at ``path`` (all but ``leave``
    bytes) with a ballast file; remove it to give the space back."""
    ballast = path / "ballast"
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize - leave
    with open(ballast, "ab") as f:
        chunk = b"\0" * 65536
        while free > 0:
            try:
                f.write(chunk[: min(free, len(chunk))])
                f.flush()
            except OSError:
                break
            free -= len(chunk)
    return ballast


async def publish_round(nc, subject: str, payloads: list[bytes], timeout: float = 5) -> tuple[dict, list, int]:
    """Publish all at once (pipelined); (acked seq -> payload, error bodies,
    publishes that got no reply at all)."""
    answers = await asyncio.gather(*(nc.request(subject, p, timeout=timeout) for p in payloads),
                                   return_exceptions=True)
    acked, errs, silent = {}, [], 0
    for p, a in zip(payloads, answers):
        if isinstance(a, BaseException):
            silent += 1
            continue
        body = json.loads(a.data)
        if "error" in body:
            errs.append(body["error"])
        else:
            assert body["seq"] not in acked, f"sequence {body['seq']} acknowledged twice"
            acked[body["seq"]] = p
    return acked, errs, silent


async def check_acked(js, stream: str, acked: dict) -> None:
    """Every acknowledged message is there, with its payload."""
    for seq, payload in sorted(acked.items()):
        m = await js.get_msg(stream, seq)
        assert m.data == payload, f"seq {seq}: stored {m.data[:20]!r}, acknowledged {payload[:20]!r}"
