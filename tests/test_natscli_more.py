"""The nats CLI v0.5.0 beyond the walkthrough, against natslab's broker and
nats-server side by side: stream report/view/get/rmm/purge/edit and
backup/restore, consumer report/edit/pause/resume, kv watch/history/del/
purge/ls, the object store with a 10 MB file, sub, req, `server check
connection` and `nats context`. Outputs are compared line by line after the
masks of natscli.mask; figures that matter are asserted on each server.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import pytest

from conftest import SERVER_KINDS, ServerProcess
from natscli import Bg, Collect, Sleep, Tty, differences, field, nats_cli, outputs, replay_both  # noqa: F401 (a fixture)

BIG = 10 * 1024 * 1024  # the object: 10 MiB, not a multiple of the 128 KiB chunk

STREAMS = [
    ("stream", "add", "S1", "--subjects", "s1.>", "--storage", "file", "--defaults"),
    ("pub", "s1.a", "a-{{Count}}", "--count", "4"),
    ("pub", "s1.b", "b-{{Count}}", "--count", "3"),
    # one header: the CLI keeps headers in a Go map, so two go out in any order
    ("pub", "s1.c", '{"n":1}', "-H", "K1:v1"),
    ("stream", "report"),
    Tty(("stream", "view", "S1", "20")),  # it pages, so it wants a terminal
    Tty(("stream", "view", "S1", "20", "--subject", "s1.b")),
    Tty(("stream", "view", "S1", "20", "--id", "6")),
    ("stream", "get", "S1", "8"),
    ("stream", "get", "S1", "8", "-j"),
    ("stream", "get", "S1", "--last-for", "s1.a"),
    ("stream", "rmm", "S1", "2", "-f"),
    ("stream", "get", "S1", "2"),
    ("stream", "rmm", "S1", "2", "-f"),
    ("stream", "purge", "S1", "--subject", "s1.b", "-f"),
    ("stream", "info", "S1"),
    ("stream", "purge", "S1", "--keep", "2", "-f"),
    ("stream", "info", "S1"),
    ("stream", "edit", "S1", "--max-msgs", "50", "--description", "edited", "-f"),
    ("stream", "edit", "S1", "--retention", "work", "-f"),
    ("stream", "info", "S1", "-j"),
]
CONSUMERS = [
    ("consumer", "add", "S1", "C1", "--pull", "--ack", "explicit", "--defaults"),
    ("consumer", "add", "S1", "C2", "--pull", "--ack", "explicit", "--filter", "s1.c", "--defaults"),
    ("consumer", "next", "S1", "C1", "--no-ack"),
    ("consumer", "report", "S1"),
    ("consumer", "edit", "S1", "C1", "--max-deliver", "5", "--description", "edited", "-f"),
    ("consumer", "edit", "S1", "C1", "--target", "push.c1", "-f"),
    ("consumer", "pause", "S1", "C2", "10m", "-f"),
    ("consumer", "info", "S1", "C2"),
    # (no `consumer next` that is expected to find nothing: whether the CLI's
    # timeout or the pull request's 408 at the same instant comes first is a
    # race on either server)
    ("consumer", "resume", "S1", "C2", "-f"),
    ("consumer", "info", "S1", "C2"),
    ("consumer", "ls", "S1"),
]
KV = [
    ("kv", "add", "K", "--history", "5"),
    ("kv", "put", "K", "seed", "0"),
    Bg("watch", ("kv", "watch", "K"), ready="seed"),  # a watch prints the values it starts with
    ("kv", "put", "K", "a", "1"),
    ("kv", "put", "K", "a", "2"),
    ("kv", "put", "K", "b", "3"),
    ("kv", "history", "K", "a"),
    ("kv", "del", "K", "b", "-f"),
    ("kv", "purge", "K", "a", "-f"),
    ("kv", "history", "K", "a"),
    ("kv", "ls"),
    ("kv", "ls", "K"),
    ("kv", "get", "K", "b"),
    Sleep(0.5),
    Collect("watch", timeout=0.5),
]
OBJECTS = [
    ("object", "add", "O"),
    ("object", "put", "O", "{dir}/big.bin", "--name", "big.bin", "--no-progress"),
    ("object", "ls", "O"),
    ("object", "info", "O", "big.bin"),
    ("object", "get", "O", "big.bin", "-O", "{dir}/got.bin", "--no-progress"),
    ("object", "rm", "O", "big.bin", "-f"),
    ("object", "ls", "O"),
    ("object", "info", "O", "big.bin"),
]
CORE = [
    Bg("sub", ("sub", "core.>", "--count", "3"), ready="Subscribing on"),
    ("pub", "core.x", "hello"),
    ("pub", "core.y", "n{{Count}}", "--count", "2", "-H", "A:b"),
    Collect("sub"),
    Bg("echo", ("reply", "svc.echo", "pong {{Request}}"), ready="Listening on"),
    ("req", "svc.echo", "hi"),
    ("req", "svc.none", "hi", "--timeout", "500ms"),
    ("server", "check", "connection"),
    ("trace", "core.x", "traced"),  # nobody listens
    ("trace", "s1.c", "traced", "--timeout", "3s"),  # a stream takes it (trace-only: not stored)
    # --raw: the data alone (the CLI prints headers in Go map order); it
    # says nothing when subscribed, so give it a moment
    Bg("watcher", ("sub", "core.>", "--count", "1", "--raw")),
    Sleep(1.0),
    ("trace", "core.x", "delivered", "--deliver"),
    Collect("watcher"),
    ("context", "add", "lab", "--server", "{url}", "--description", "the lab"),
    ("context", "ls"),
    ("--context", "lab", "stream", "ls", "--names"),
    ("context", "select", "lab"),
    ("--context", "lab", "kv", "get", "K", "seed", "--raw"),
    ("context", "rm", "lab", "-f"),
]
# durations measured, not configured: message ages in `stream get`, how long
# a get took, what `server check connection` timed
EXTRA_MASKS = [
    (re.compile(r"<date>\.\d+ \+0000 UTC \([\d.]+[µnm]?s\)"), "<date> (<age>)"),
    (re.compile(r" in [\d.]+[µnm]?s\b"), " in <dur>"),
    (re.compile(r"took [\d.]+s\b"), "took <dur>"),
    (re.compile(r"=[\d.]+s;"), "=<dur>;"),
    (re.compile(r"cid:\d+"), "cid:<cid>"),  # `nats trace` shows client ids
]
EXTRAS = [
    ("stream", "find", "--subject", "s1.>"),
    ("stream", "state", "S1"),
    # (the table form orders subjects of equal count as a Go map iterates)
    ("stream", "subjects", "S1", "--json"),
    ("stream", "copy", "S1", "S2", "--subjects", "s2.>"),
    ("stream", "gaps", "S1", "-f", "--no-progress"),
    ("stream", "seal", "S2", "-f"),
    ("stream", "info", "S2", "-j"),
    ("stream", "rm", "S2", "-f"),
    ("consumer", "state", "S1", "C1"),
    ("consumer", "find", "S1", "--pull"),
    ("consumer", "copy", "S1", "C1", "C3", "--description", "copied"),
    ("consumer", "reset", "S1", "C3", "-f"),
    ("consumer", "rm", "S1", "C3", "-f"),
    ("kv", "create", "K", "c", "1"),
    ("kv", "create", "K", "c", "2"),
    ("kv", "update", "K", "c", "3", "7"),
    ("kv", "update", "K", "c", "4", "1"),
    ("kv", "revert", "K", "c", "7", "--force"),
    ("kv", "get", "K", "c"),
    ("kv", "info", "K"),
    ("kv", "edit", "K", "--history", "3"),
    ("kv", "compact", "K", "-f"),
    ("kv", "del", "K", "-f"),
    ("kv", "ls"),
]
STEPS: list = STREAMS + CONSUMERS + KV + OBJECTS + CORE + EXTRAS


@pytest.fixture(scope="module")
def run(nats_cli, tmp_path_factory):
    """(transcripts, the 10 MiB blob, {kind: work dir}) of one replay on both."""
    tmp = tmp_path_factory.mktemp("more")
    blob = hashlib.shake_256(b"natslab").digest(BIG - 12345)
    work = {kind: tmp / f"work-{kind}" for kind in SERVER_KINDS}
    for d in work.values():
        d.mkdir()
        (d / "big.bin").write_bytes(blob)
    servers = {kind: ServerProcess(kind, tmp / kind / "store") for kind in SERVER_KINDS}
    try:  # started inside: one that fails to start leaves none running
        for srv in servers.values():
            srv.start()
        return replay_both(nats_cli, servers, STEPS, tmp), blob, work
    finally:
        for srv in servers.values():
            srv.stop()


@pytest.fixture(scope="module")
def transcripts(run):
    return run[0]


def test_outputs_match(transcripts):
    """Every command's output, natslab against nats-server, line by line."""
    diffs = differences(transcripts, EXTRA_MASKS)
    assert not diffs, diffs


def table(text: str) -> dict[str, list[str]]:
    """A CLI table's rows by their first cell (cells stripped)."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) > 1:
            rows[cells[0]] = cells[1:]
    return rows


def viewed(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^\[(\d+)\] Subject: ", text, re.M)]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_streams(transcripts, kind):
    t = transcripts[kind]
    assert table(outputs(t, "nats stream report")[0])["S1"][:5] == ["File", "", "0", "8", "324 B"]
    every, only_b, from6 = outputs(t, "nats stream view S1 20"), outputs(t, "nats stream view S1 20 --subject s1.b"), \
        outputs(t, "nats stream view S1 20 --id 6")
    assert viewed(every[0]) == list(range(1, 9)) and "a-1" in every[0] and "K1: v1" in every[0]
    assert viewed(only_b[0]) == [5, 6, 7] and viewed(from6[0]) == [6, 7, 8]
    got = outputs(t, "nats stream get S1 8")[0]
    assert "on Subject s1.c" in got and "K1: v1" in got and '{"n":1}' in got
    raw = json.loads(outputs(t, "nats stream get S1 8 -j")[0])
    assert raw["seq"] == 8 and raw["subject"] == "s1.c"
    assert raw["hdrs"] == "TkFUUy8xLjANCksxOiB2MQ0KDQo="  # NATS/1.0\r\nK1: v1\r\n\r\n
    assert "S1#4" in outputs(t, "nats stream get S1 --last-for s1.a")[0]
    rmm_ok, rmm_again = outputs(t, "nats stream rmm S1 2 -f")
    assert rmm_ok == "" and "sequence 2 not found (10043)" in rmm_again
    assert "no message found (10037)" in outputs(t, "nats stream get S1 2")[0]
    by_subject = outputs(t, "nats stream purge S1 --subject s1.b -f")[0]
    assert "Purged 3 messages from S1" in by_subject and field(by_subject, "Messages") == "4"
    kept = outputs(t, "nats stream purge S1 --keep 2 -f")[0]
    assert "Purged 2 messages from S1" in kept and field(kept, "Messages") == "2"
    assert field(kept, "First Sequence").startswith("4 @ ")
    edited = outputs(t, "nats stream edit S1 --max-msgs 50 --description edited -f")[0]
    assert "Stream S1 was updated" in edited
    assert (field(edited, "Maximum Messages"), field(edited, "Description")) == ("50", "edited")
    assert "can not change retention policy to/from workqueue (10052)" in outputs(t, "nats stream edit S1 --retention work -f")[0]
    cfg = json.loads(outputs(t, "nats stream info S1 -j")[0])["config"]
    assert (cfg["max_msgs"], cfg["description"], cfg["retention"]) == (50, "edited", "limits")


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_consumers(transcripts, kind):
    t = transcripts[kind]
    rows = table(outputs(t, "nats consumer report S1")[0])
    assert rows["C1"][:6] == ["Pull", "Explicit", "30.00s", "1", "0", "1 / 50%"]
    assert rows["C2"][:6] == ["Pull", "Explicit", "30.00s", "0", "0", "1 / 50%"]
    edited = outputs(t, "nats consumer edit S1 C1 --max-deliver 5 --description edited -f")[0]
    assert (field(edited, "Maximum Deliveries"), field(edited, "Description")) == ("5", "edited")
    assert "can not set max waiting (10080)" in outputs(t, "nats consumer edit S1 C1 --target push.c1 -f")[0]
    assert "Paused S1 > C2 until " in outputs(t, "nats consumer pause S1 C2 10m -f")[0]
    paused, resumed = outputs(t, "nats consumer info S1 C2")
    assert "(10m0s remaining)" in field(paused, "Paused Until") or "(9m59s remaining)" in field(paused, "Paused Until")
    assert "Required API Level: 1 hosted" in paused and "Required API Level: 0 hosted" in resumed
    assert "Paused" not in resumed
    assert "was resumed while previously paused" in outputs(t, "nats consumer resume S1 C2 -f")[0]
    assert set(table(outputs(t, "nats consumer ls S1")[0])) == {"Name", "C1", "C2"}


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_kv(transcripts, kind):
    t = transcripts[kind]
    history = table(outputs(t, "nats kv history K a")[0])
    assert [r[:2] for k, r in history.items() if k == "a"] == [["3", "PUT"]]  # rows keyed by key: the last one
    first, after = outputs(t, "nats kv history K a")
    assert re.findall(r"│ a +│ +(\d+) │ (\w+) ", first) == [("2", "PUT"), ("3", "PUT")]
    assert re.findall(r"│ a +│ +(\d+) │ (\w+) ", after) == [("6", "PURGE")]
    assert table(outputs(t, "nats kv ls")[0])["K"][2:4] == ["243 B", "4"]
    assert outputs(t, "nats kv ls K")[0].split() == ["seed"]
    assert "key not found" in outputs(t, "nats kv get K b")[0]
    watched = [line.split("] ", 1)[1] for line in outputs(t, "bg watch")[0].splitlines() if line.startswith("[")]
    assert watched == ["PUT K > seed: 0", "PUT K > a: 1", "PUT K > a: 2", "PUT K > b: 3", "DELETE K > b", "PURGE K > a"]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_objects(run, kind):
    transcripts, blob, work = run
    t = transcripts[kind]
    put = outputs(t, "nats object put O {dir}/big.bin --name big.bin --no-progress")[0]
    assert (field(put, "Size"), field(put, "Chunks")) == ("10 MiB", "80")
    assert field(put, "Digest") == "SHA-256 " + hashlib.sha256(blob).hexdigest()
    assert field(outputs(t, "nats object info O big.bin")[0], "Digest") == field(put, "Digest")
    assert table(outputs(t, "nats object ls O")[0])["big.bin"][0] == "10 MiB"
    assert "Wrote: 10 MiB to {dir}/got.bin" in outputs(t, "nats object get O big.bin -O {dir}/got.bin --no-progress")[0]
    assert (work[kind] / "got.bin").read_bytes() == blob
    assert "Removed O > big.bin" in outputs(t, "nats object rm O big.bin -f")[0]
    assert "No entries found" in outputs(t, "nats object ls O")[1]
    assert "object not found" in outputs(t, "nats object info O big.bin")[1]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_core_and_context(transcripts, kind):
    t = transcripts[kind]
    sub = outputs(t, "bg sub")[0]
    assert re.findall(r'\[#(\d)\] Received on "([\w.]+)"', sub) == [("1", "core.x"), ("2", "core.y"), ("3", "core.y")]
    assert sub.count("A: b") == 2 and "hello" in sub and "n2" in sub
    assert "pong hi" in outputs(t, "nats req svc.echo hi")[0].splitlines()
    assert "No responders are available" in outputs(t, "nats req svc.none hi --timeout 500ms")[0]
    assert outputs(t, "nats server check connection")[0].startswith("OK Connection OK:connected to {url}")
    assert "Server URLs: {url}" in outputs(t, "nats context add lab --server {url} --description the lab")[0]
    assert table(outputs(t, "nats context ls")[0])["lab"] == ["the lab"]
    assert outputs(t, "nats --context lab stream ls --names")[0].split() == ["KV_K", "OBJ_O", "S1"]
    assert outputs(t, "nats --context lab kv get K seed --raw")[0].strip() == "0"
    # nats trace: nobody listening; a stream (trace-only: reported, not stored); delivered with --deliver
    assert "--X No active interest" in outputs(t, "nats trace core.x traced")[0]
    traced = outputs(t, "nats trace s1.c traced --timeout 3s")[0]
    assert '--J JetStream action:"stored" stream:"S1" subject:"s1.c"' in traced
    assert '--C Client "NATS CLI Version v0.5.0"' in outputs(t, "nats trace core.x delivered --deliver")[0]
    assert "delivered" in outputs(t, "bg watcher")[0].splitlines()
    assert outputs(t, "nats context rm lab -f")[0] == ""


def test_stream_backup_restore(server, nats_cli, tmp_path):
    """`nats stream backup` / `restore` round trip: a stream with messages and
    a consumer comes back with both."""
    run = lambda *a: nats_cli.run(server.url, *a, timeout=30)  # noqa: E731
    assert run("stream", "add", "BK", "--subjects", "bk.>", "--defaults").returncode == 0
    assert run("pub", "bk.a", "m{{Count}}", "--count", "5").returncode == 0
    assert run("consumer", "add", "BK", "C", "--pull", "--defaults").returncode == 0
    backup = run("--timeout", "2s", "stream", "backup", "BK", str(tmp_path / "bk"), "--no-progress")
    assert backup.returncode == 0, backup.stdout + backup.stderr
    assert run("stream", "rm", "BK", "-f").returncode == 0
    restore = run("stream", "restore", str(tmp_path / "bk"), "--no-progress")
    assert restore.returncode == 0, restore.stdout + restore.stderr
    info = run("stream", "info", "BK").stdout
    assert field(info, "Messages") == "5" and field(info, "Active Consumers") == "1"



@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_extras(transcripts, kind):
    """stream find/state/subjects/copy/gaps/seal, consumer state/find/copy/
    reset, kv create/update/revert/info/edit/compact/del."""
    t = transcripts[kind]
    assert set(table(outputs(t, "nats stream find --subject s1.>")[0])) == {"Name", "S1"}
    state = outputs(t, "nats stream state S1")[0]
    assert (field(state, "Messages"), field(state, "Deleted Messages"), field(state, "Active Consumers")) == ("2", "3", "2")
    assert json.loads(outputs(t, "nats stream subjects S1 --json")[0]) == {"s1.a": 1, "s1.c": 1}
    copied = outputs(t, "nats stream copy S1 S2 --subjects s2.>")[0]
    assert "Stream S2 was created" in copied and field(copied, "Subjects") == "s2.>"
    assert "[exit" not in outputs(t, "nats stream gaps S1 -f --no-progress")[0]
    sealed = json.loads(outputs(t, "nats stream info S2 -j")[0])["config"]
    assert (sealed["sealed"], sealed["deny_delete"], sealed["deny_purge"], sealed["max_msgs"]) == (True, True, True, 50)
    assert field(outputs(t, "nats consumer state S1 C1")[0], "Outstanding Acks") == "1 out of maximum 1,000"
    assert outputs(t, "nats consumer find S1 --pull")[0].split() == ["C1", "C2"]
    assert field(outputs(t, "nats consumer copy S1 C1 C3 --description copied")[0], "Description") == "copied"
    assert field(outputs(t, "nats consumer reset S1 C3 -f")[0], "Unprocessed Messages") == "2"
    assert outputs(t, "nats kv create K c 1")[0].strip() == "1"
    assert "key exists" in outputs(t, "nats kv create K c 2")[0]
    assert outputs(t, "nats kv update K c 3 7")[0].strip() == "3"
    assert "key revision mismatch" in outputs(t, "nats kv update K c 4 1")[0]
    got = outputs(t, "nats kv get K c")[0].splitlines()
    assert got[0].startswith("K > c revision: 9 ") and [x for x in got[1:] if x] == ["1"]  # reverted to revision 7
    assert field(outputs(t, "nats kv edit K --history 3")[0], "History Kept") == "3"
    assert outputs(t, "nats kv ls")[-1].strip() == "No Key-Value buckets found"



EVENTS = [
    Bg("events", ("events", "--js-advisory", "--no-srv-advisory", "--short"), ready="Listening for Advisories"),
    ("stream", "add", "EV", "--subjects", "ev.>", "--defaults"),
    ("consumer", "add", "EV", "C", "--pull", "--defaults"),
    ("consumer", "rm", "EV", "C", "-f"),
    ("stream", "rm", "EV", "-f"),
    Sleep(0.5),
    Collect("events", timeout=0.5),
]


def test_events(nats_cli, tmp_path):
    """`nats events --js-advisory`: the API audit and the stream and consumer
    advisories, line for line on both servers."""
    servers = {kind: ServerProcess(kind, tmp_path / kind / "store") for kind in SERVER_KINDS}
    try:  # started inside: one that fails to start leaves none running
        for srv in servers.values():
            srv.start()
        t = replay_both(nats_cli, servers, EVENTS, tmp_path)
    finally:
        for srv in servers.values():
            srv.stop()
    # nats-server sends an action advisory and the API audit from different
    # goroutines, so their order varies: the events are compared as a set
    for kind in SERVER_KINDS:
        t[kind] = [(c, "\n".join(sorted(x.splitlines(), key=lambda line: line.split(" ", 1)[-1])) if c == "bg events" else x)
                   for c, x in t[kind]]
    diffs = differences(t)
    assert not diffs, diffs
    for kind in SERVER_KINDS:
        lines = [line.split(" ", 1)[1] for line in outputs(t[kind], "bg events")[0].splitlines() if line[:1].isdigit()]
        assert "[Stream Create] EV" in lines and "[Consumer Create] EV > C" in lines
        assert "[Consumer Delete] EV > C" in lines and "[Stream Delete] EV" in lines
        assert "[JS API] $JS.API.STREAM.CREATE.EV $G" in lines
