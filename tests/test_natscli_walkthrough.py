"""The walkthrough (../shared/seed/000_*.txt), replayed with the real nats CLI
v0.5.0 against natslab's broker and nats-server side by side.

Every command of the seed that touches the broker runs with the same
arguments on both servers at once (two threads, so the seed's waits are
paid once, and the TTL stream's 12 s run while RDL's ack waits do); the
outputs are compared line by line after masking only what must differ
(clock times, ages, round-trip times, server names, ids and versions). The seed's own figures (222 B, 98 B, tries 2,
num_redelivered 1, First Sequence 3 with Last Sequence 2, ...) are asserted
on each server's transcript.

The seed does not show every command it ran: the max-msgs stream, the
interest stream EVENTS and the workqueue stream JOBS appear only by what
they did. The commands here are the ones that give the seed's figures
(the account's 361 B of file storage and 46 B of memory at the end,
6 streams and 4 consumers).
"""

from __future__ import annotations

import re

import pytest

from conftest import SERVER_KINDS, ServerProcess
from natscli import Bg, Mark, Sleep, Until, differences, field, nats_cli, outputs, replay_both  # noqa: F401 (a fixture)

# A tuple is one `nats --server URL ...` command (see natscli.replay).
ORDERS = [
    ("stream", "add", "ORDERS", "--subjects", "orders.>", "--storage", "file", "--retention", "limits",
     "--discard", "old", "--max-msgs", "1000", "--max-age", "24h", "--max-msgs-per-subject", "100",
     "--dupe-window", "2m", "--defaults"),
    ("pub", "orders.new", "order-1 payload"),
    ("pub", "orders.new", "order-2 payload"),
    ("pub", "orders.new", "order-3 payload"),
    ("pub", "orders.eu", "order-eu-1 payload"),
    ("stream", "info", "ORDERS"),
    ("pub", "core.plain", "this subject has no stream and no subscriber"),
    ("stream", "ls"),
    ("stream", "info", "ORDERS"),
    ("consumer", "add", "ORDERS", "WORKER", "--pull", "--ack", "explicit", "--deliver", "all", "--wait", "60s", "--defaults"),
    ("consumer", "next", "ORDERS", "WORKER", "--count", "2", "--ack"),
    ("consumer", "info", "ORDERS", "WORKER"),
    # RDL: the seed's consumer had seen one acked delivery before (cons seq 2
    # on the first pull); the first `next` here does that.
    ("consumer", "add", "ORDERS", "RDL", "--pull", "--ack", "explicit", "--deliver", "all", "--wait", "4s", "--defaults"),
    ("consumer", "next", "ORDERS", "RDL", "--count", "1", "--ack"),
    ("consumer", "next", "ORDERS", "RDL", "--count", "1", "--no-ack"),
]
STEPS: list = ORDERS + [
    # limits: max-age (its 12 s run while RDL's ack waits do)
    ("stream", "add", "TTL", "--subjects", "ttl.>", "--storage", "file", "--retention", "limits",
     "--discard", "old", "--max-age", "8s", "--max-msgs", "100", "--defaults"),
    ("pub", "ttl.a", "m1"),
    ("pub", "ttl.b", "m2"),
    ("pub", "ttl.c", "m3"),
    ("stream", "info", "TTL"),
    Mark("ttl"),
    Sleep(6.0),  # past the 4 s ack wait
    ("consumer", "info", "ORDERS", "RDL"),
    ("consumer", "next", "ORDERS", "RDL", "--count", "1", "--no-ack"),
    ("consumer", "info", "ORDERS", "RDL"),
    ("consumer", "info", "ORDERS", "RDL", "-j"),
    Sleep(4.5),  # the second delivery's ack wait runs out too
    ("consumer", "next", "ORDERS", "RDL", "--count", "1"),
    ("consumer", "info", "ORDERS", "RDL"),
    # limits: max-msgs 2, discard old (memory: the account's 46 B)
    ("stream", "add", "LIMITED", "--subjects", "lim.>", "--storage", "memory", "--retention", "limits",
     "--discard", "old", "--max-msgs", "2", "--defaults"),
    ("pub", "lim.a", "m1"),
    ("pub", "lim.a", "m2"),
    ("pub", "lim.a", "m3"),
    ("pub", "lim.a", "m4"),
    ("stream", "info", "LIMITED"),
    # interest
    ("stream", "add", "EVENTS", "--subjects", "events.>", "--storage", "file", "--retention", "interest",
     "--discard", "old", "--defaults"),
    ("pub", "events.login", "dropped-1"),
    ("pub", "events.login", "dropped-2"),
    ("stream", "info", "EVENTS"),
    ("consumer", "add", "EVENTS", "LIVE", "--pull", "--ack", "explicit", "--filter", "events.>", "--defaults"),
    ("pub", "events.login", "kept-until-acked"),
    ("stream", "info", "EVENTS"),
    ("consumer", "next", "EVENTS", "LIVE", "--count", "1"),
    ("stream", "info", "EVENTS"),
    # workqueue
    ("stream", "add", "JOBS", "--subjects", "jobs.>", "--storage", "file", "--retention", "work",
     "--discard", "old", "--defaults"),
    ("consumer", "add", "JOBS", "WQ", "--pull", "--ack", "explicit", "--defaults"),
    ("pub", "jobs.a", "job-1"),
    ("pub", "jobs.b", "job-2"),
    ("stream", "info", "JOBS"),
    ("consumer", "next", "JOBS", "WQ", "--count", "1"),
    ("stream", "info", "JOBS"),
    # request-reply
    Bg("reply", ("reply", "svc.upper", "--command", "printenv NATS_REQUEST_BODY"), ready="Listening on"),
    ("request", "svc.upper", "shipped order 4711"),
    # KV
    ("kv", "add", "CONFIG", "--history", "5"),
    ("kv", "put", "CONFIG", "region", "eu"),
    ("kv", "put", "CONFIG", "region", "us"),
    ("kv", "get", "CONFIG", "region"),
    ("stream", "info", "KV_CONFIG"),
    Until("ttl", 12.0),  # the seed's `sleep 12` after the TTL publishes
    ("stream", "info", "TTL"),
    ("stream", "ls", "-a"),
    ("account", "info"),
]


@pytest.fixture(scope="module")
def transcripts(nats_cli, tmp_path_factory) -> dict[str, list[tuple[str, str]]]:
    tmp = tmp_path_factory.mktemp("walkthrough")
    servers = {kind: ServerProcess(kind, tmp / kind / "store") for kind in SERVER_KINDS}
    try:  # started inside: one that fails to start leaves none running
        for srv in servers.values():
            srv.start()
        return replay_both(nats_cli, servers, STEPS, tmp)
    finally:
        for srv in servers.values():
            srv.stop()


def test_walkthrough_outputs_match(transcripts):
    """Every command's output, natslab against nats-server, line by line."""
    diffs = differences(transcripts)
    assert not diffs, diffs


def deliveries(text: str) -> list[str]:
    """The `subj: ... / pending: N` part of each line `nats consumer next` prints."""
    return [m.group(1) for m in re.finditer(r"\] (subj: .*)$", text, re.M)]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_walkthrough_figures(transcripts, kind):
    """The seed's own numbers, on each server."""
    t = transcripts[kind]
    orders = outputs(t, "nats stream info ORDERS")
    for text in orders:  # before and after the publish to core.plain
        assert field(text, "Messages") == "4"
        assert field(text, "Bytes") == "222 B"
        assert field(text, "First Sequence").startswith("1 @ ")
        assert field(text, "Last Sequence").startswith("4 @ ")
        assert field(text, "Number of Subjects") == "2"
    assert "ORDERS" in outputs(t, "nats stream ls")[0] and "core" not in outputs(t, "nats stream ls")[0]
    assert 'Published 44 bytes to "core.plain"' in outputs(t, "nats pub core.plain this subject has no stream and no subscriber")[0]

    worker = outputs(t, "nats consumer add ORDERS WORKER --pull --ack explicit --deliver all --wait 60s --defaults")[0]
    assert (field(worker, "Pull Mode"), field(worker, "Deliver Policy"), field(worker, "Ack Policy")) == ("true", "All", "Explicit")
    assert (field(worker, "Ack Wait"), field(worker, "Max Ack Pending")) == ("1m0s", "1,000")
    got = outputs(t, "nats consumer next ORDERS WORKER --count 2 --ack")[0]
    assert deliveries(got) == ["subj: orders.new / tries: 1 / cons seq: 1 / str seq: 1 / pending: 3",
                               "subj: orders.new / tries: 1 / cons seq: 2 / str seq: 2 / pending: 2"]
    assert got.count("Acknowledged message") == 2 and "order-1 payload" in got and "order-2 payload" in got
    info = outputs(t, "nats consumer info ORDERS WORKER")[0]
    assert field(info, "Last Delivered Message").startswith("Consumer sequence: 2 Stream sequence: 2")
    assert field(info, "Acknowledgment Floor").startswith("Consumer sequence: 2 Stream sequence: 2")
    assert field(info, "Outstanding Acks") == "0 out of maximum 1,000"
    assert (field(info, "Redelivered Messages"), field(info, "Unprocessed Messages")) == ("0", "2")

    # RDL: no ack, the ack wait runs out, the next pull redelivers
    assert deliveries(outputs(t, "nats consumer next ORDERS RDL --count 1 --ack")[0]) == [
        "subj: orders.new / tries: 1 / cons seq: 1 / str seq: 1 / pending: 3"]
    second, third = (deliveries(x) for x in outputs(t, "nats consumer next ORDERS RDL --count 1 --no-ack"))
    assert second == ["subj: orders.new / tries: 1 / cons seq: 2 / str seq: 2 / pending: 2"]
    assert third == ["subj: orders.new / tries: 2 / cons seq: 3 / str seq: 2 / pending: 2"]
    expired, redelivered, acked = outputs(t, "nats consumer info ORDERS RDL")
    assert field(expired, "Last Delivered Message").startswith("Consumer sequence: 2 Stream sequence: 2 Last delivery: ")
    assert field(expired, "Acknowledgment Floor").startswith("Consumer sequence: 1 Stream sequence: 1")
    assert field(expired, "Outstanding Acks") == "1 out of maximum 1,000"
    assert (field(expired, "Redelivered Messages"), field(expired, "Unprocessed Messages")) == ("0", "2")
    assert field(redelivered, "Last Delivered Message").startswith("Consumer sequence: 3 Stream sequence: 2")
    assert field(redelivered, "Outstanding Acks") == "1 out of maximum 1,000"
    assert (field(redelivered, "Redelivered Messages"), field(redelivered, "Unprocessed Messages")) == ("1", "2")
    raw = outputs(t, "nats consumer info ORDERS RDL -j")[0]
    assert re.findall(r'"(num_ack_pending|num_redelivered|num_pending)": (\d+)', raw) == [
        ("num_ack_pending", "1"), ("num_redelivered", "1"), ("num_pending", "2")]
    last = outputs(t, "nats consumer next ORDERS RDL --count 1")[0]
    assert deliveries(last) == ["subj: orders.new / tries: 3 / cons seq: 4 / str seq: 2 / pending: 2"]
    assert "order-2 payload" in last and "Acknowledged message" in last
    assert field(acked, "Outstanding Acks") == "0 out of maximum 1,000"
    assert field(acked, "Acknowledgment Floor").startswith("Consumer sequence: 4 Stream sequence: 2")

    # limits: max-age 8s, then max-msgs 2
    ttl_before, ttl_after = outputs(t, "nats stream info TTL")
    assert (field(ttl_before, "Messages"), field(ttl_after, "Messages")) == ("3", "0")
    lim = outputs(t, "nats stream info LIMITED")[0]
    assert field(lim, "Messages") == "2"
    assert field(lim, "First Sequence").startswith("3 @ ") and field(lim, "Last Sequence").startswith("4 @ ")

    # interest: dropped with no consumer, kept until acked with one
    ev_none, ev_kept, ev_acked = outputs(t, "nats stream info EVENTS")
    assert field(ev_none, "Messages") == "0"
    assert field(ev_none, "First Sequence") == "3" and field(ev_none, "Last Sequence").startswith("2 @ ")
    assert (field(ev_kept, "Messages"), field(ev_acked, "Messages")) == ("1", "0")
    got = outputs(t, "nats consumer next EVENTS LIVE --count 1")[0]
    assert deliveries(got) == ["subj: events.login / tries: 1 / cons seq: 1 / str seq: 3 / pending: 0"]
    assert "kept-until-acked" in got

    # workqueue: two jobs in, one acked, one left
    jobs_in, jobs_left = outputs(t, "nats stream info JOBS")
    assert (field(jobs_in, "Messages"), field(jobs_left, "Messages")) == ("2", "1")
    assert deliveries(outputs(t, "nats consumer next JOBS WQ --count 1")[0]) == [
        "subj: jobs.a / tries: 1 / cons seq: 1 / str seq: 1 / pending: 1"]

    # request-reply through `nats reply --command`
    got = outputs(t, "nats request svc.upper shipped order 4711")[0]
    assert "Sending request on \"svc.upper\"" in got and "shipped order 4711" in got.splitlines() and "Received with rtt" in got

    # KV is a stream
    kv = outputs(t, "nats kv add CONFIG --history 5")[0]
    assert (field(kv, "Bucket Name"), field(kv, "History Kept"), field(kv, "Values Stored"), field(kv, "Compressed")) == (
        "CONFIG", "5", "0", "false")
    assert outputs(t, "nats kv put CONFIG region eu")[0].strip() == "eu"
    assert outputs(t, "nats kv put CONFIG region us")[0].strip() == "us"
    got = outputs(t, "nats kv get CONFIG region")[0].splitlines()
    assert got[0].startswith("CONFIG > region revision: 2 created @ ") and [x for x in got[1:] if x] == ["us"]
    kvs = outputs(t, "nats stream info KV_CONFIG")[0]
    assert (field(kvs, "Subjects"), field(kvs, "Storage"), field(kvs, "Retention"), field(kvs, "Messages")) == (
        "$KV.CONFIG.>", "File", "Limits", "2")
    rows = {cells[1].strip(): [c.strip() for c in cells[2:-1]]
            for cells in (line.split("│") for line in outputs(t, "nats stream ls -a")[0].splitlines()) if len(cells) > 6}
    assert rows["KV_CONFIG"][2:4] == ["2", "98 B"] and rows["ORDERS"][2:4] == ["4", "222 B"]
    assert set(rows) == {"Name", "ORDERS", "TTL", "LIMITED", "EVENTS", "JOBS", "KV_CONFIG"}

    acct = outputs(t, "nats account info")[0]
    usage = acct.split("Account Usage:")[1]
    assert (field(usage, "Storage"), field(usage, "Memory"), field(usage, "Streams"), field(usage, "Consumers")) == (
        "361 B", "46 B", "6", "4")
    assert (field(acct, "Account"), field(acct, "Connected Server Version")) == ("$G ($G)", "2.15.1")
