"""Core NATS protocol, byte for byte, against natslab and nats-server."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import connect, eventually

NOVERBOSE = '{"verbose":false,"pedantic":false,"headers":true,"protocol":1}'


async def test_info_fields(raw):
    c = await raw(connect=None)
    assert c.info.startswith("INFO {") and c.info.endswith("} ")
    info = json.loads(c.info[5:])
    major, minor, _ = (int(x) for x in info["version"].split("."))
    assert (major, minor) >= (2, 10)
    assert info["headers"] is True
    assert info["proto"] == 1
    assert info["max_payload"] == 1048576
    assert info["jetstream"] is True
    assert isinstance(info["client_id"], int)
    assert info["client_ip"] == "127.0.0.1"
    assert info["api_lvl"] == 5  # the JetStream API level, with -js


async def test_verbose_before_connect_and_ping_case_insensitive(raw):
    c = await raw(connect=None)
    await c.send("ping\r\n")
    assert await c.readline() == "PONG"
    # before CONNECT the server treats the client as verbose
    await c.send("SUB foo 1\r\n")
    assert await c.readline() == "+OK"


async def test_verbose_connect_acks_every_op(raw):
    c = await raw(connect=None)
    await c.send('CONNECT {"verbose":true}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\n')
    lines = await c.read_until_pong()
    assert lines[:3] == ["+OK", "+OK", "+OK"]
    assert lines[3:5] == ["MSG foo 1 2", "hi"]
    assert lines[5:] == ["+OK"]


async def test_pub_sub_wildcards_and_reply(raw):
    c = await raw()
    await c.send("SUB foo.* 1\r\nSUB foo.> 2\r\nSUB > 3\r\nSUB bar 4\r\n")
    await c.send("PUB foo.bar reply.x 5\r\nhello\r\n")
    lines = await c.read_until_pong()
    msgs = sorted(lines[i] for i in range(0, len(lines), 2))
    assert msgs == ["MSG foo.bar 1 reply.x 5", "MSG foo.bar 2 reply.x 5", "MSG foo.bar 3 reply.x 5"]
    assert all(lines[i] == "hello" for i in range(1, len(lines), 2))


async def test_tolerates_extra_whitespace_like_nats_py(raw):
    c = await raw()
    await c.send("SUB  foo \t 7\r\nPUB foo  5\r\nhello\r\nUNSUB 7 \r\nPUB foo 1\r\nx\r\n")
    assert await c.read_until_pong() == ["MSG foo 7 5", "hello"]


async def test_star_inside_token_is_literal(raw):
    c = await raw()
    await c.send("SUB foo.*bar 1\r\nPUB foo.*bar 1\r\nx\r\nPUB foo.xbar 1\r\ny\r\n")
    assert await c.read_until_pong() == ["MSG foo.*bar 1 1", "x"]


async def test_headers_hpub_hmsg(raw):
    c = await raw()
    hdr = "NATS/1.0\r\nA: b\r\n\r\n"
    await c.send(f"SUB h 1\r\nHPUB h r {len(hdr)} {len(hdr) + 2}\r\n{hdr}hi\r\n")
    lines = await c.read_until_pong()
    assert lines[0] == f"HMSG h 1 r {len(hdr)} {len(hdr) + 2}"
    assert lines[1:] == ["NATS/1.0", "A: b", "", "hi"]


async def test_hpub_without_headers_support_closes(raw):
    c = await raw(connect='{"verbose":false}')
    await c.send("HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n")
    assert await c.closed()


async def test_unsub_max(raw):
    c = await raw()
    await c.send("SUB foo 1\r\nUNSUB 1 2\r\n" + "PUB foo 1\r\nx\r\n" * 3)
    assert await c.read_until_pong() == ["MSG foo 1 1", "x", "MSG foo 1 1", "x"]


async def test_unsub_max_counts_already_delivered(raw):
    c = await raw()
    await c.send("SUB foo 1\r\nPUB foo 1\r\na\r\nPUB foo 1\r\nb\r\nUNSUB 1 2\r\nPUB foo 1\r\nc\r\n")
    assert await c.read_until_pong() == ["MSG foo 1 1", "a", "MSG foo 1 1", "b"]


async def test_duplicate_sid_keeps_one_subscription(raw):
    c = await raw()
    await c.send("SUB foo 1\r\nSUB foo 1\r\nPUB foo 1\r\nx\r\n")
    assert await c.read_until_pong() == ["MSG foo 1 1", "x"]


async def test_echo_off(raw):
    c = await raw(connect='{"verbose":false,"echo":false}')
    other = await raw()
    await c.send("SUB foo 1\r\nPUB foo 1\r\nx\r\n")
    await c.read_until_pong()
    await other.send("PUB foo 1\r\ny\r\n")
    await other.read_until_pong()
    assert await c.read_until_pong() == ["MSG foo 1 1", "y"]


async def test_no_responders_status_bytes(raw):
    c = await raw(connect='{"verbose":false,"headers":true,"no_responders":true}')
    await c.send("SUB r.> 1\r\nPUB nobody.home r.1 2\r\nhi\r\n")
    lines = await c.read_until_pong()
    hdr = "NATS/1.0 503\r\nNats-Subject: nobody.home\r\n\r\n"
    assert lines[0] == f"HMSG r.1 1 {len(hdr)} {len(hdr)}"
    assert lines[1:] == ["NATS/1.0 503", "Nats-Subject: nobody.home", "", ""]


async def test_no_responders_not_sent_without_option(raw):
    c = await raw()
    await c.send("SUB r.> 1\r\nPUB nobody r.1 2\r\nhi\r\n")
    assert await c.read_until_pong() == []


# -- errors ---------------------------------------------------------------------

@pytest.mark.parametrize("subject", ["foo..bar", "foo.>.bar", ">.x", ".foo", "foo."])
async def test_invalid_subscribe_subject_keeps_connection(raw, subject):
    c = await raw()
    await c.send(f"SUB {subject} 1\r\n")
    assert await c.read_until_pong() == ["-ERR 'Invalid Subject'"]
    await c.send("SUB ok 2\r\nPUB ok 1\r\nx\r\n")
    assert await c.read_until_pong() == ["MSG ok 2 1", "x"]


async def test_pedantic_reports_invalid_publish_subject(raw):
    # nats-server reports the error but still routes a wildcard subject;
    # a subject with an empty token matches no subscription at all
    c = await raw(connect='{"verbose":false,"pedantic":true}')
    await c.send("SUB > 1\r\nPUB foo.* 1\r\na\r\nPUB foo..x 1\r\na\r\nPUB ok 1\r\nb\r\n")
    assert await c.read_until_pong() == [
        "-ERR 'Invalid Publish Subject'",
        "MSG foo.* 1 1",
        "a",
        "-ERR 'Invalid Publish Subject'",
        "MSG ok 1 1",
        "b",
    ]


async def test_non_pedantic_accepts_wildcard_publish_subject(raw):
    c = await raw()
    await c.send("SUB foo.> 1\r\nSUB > 2\r\nPUB foo.> 1\r\na\r\nPUB foo..bar 1\r\nb\r\n")
    assert sorted(await c.read_until_pong()) == sorted(["MSG foo.> 1 1", "a", "MSG foo.> 2 1", "a"])


@pytest.mark.parametrize(
    "data,expect",
    ids=["unknown-op", "payload-size-mismatch", "bare-unsub", "max-payload", "control-line", "client-sends-msg"],
    argvalues=[
        ("FOO bar\r\n", "-ERR 'Unknown Protocol Operation'"),
        ("PUB foo 2\r\nabcd\r\n", "-ERR 'Unknown Protocol Operation'"),
        ("UNSUB\r\n", "-ERR 'Unknown Protocol Operation'"),
        ("PUB foo 2000000\r\n", "-ERR 'Maximum Payload Violation'"),
        ("PUB " + "a" * 5000 + " 1\r\nx\r\n", "-ERR 'maximum control line exceeded'"),
        ("MSG foo 1 1\r\nx\r\n", "-ERR 'Unknown Protocol Operation'"),
    ],
)
async def test_protocol_errors_close(raw, data, expect):
    c = await raw()
    await c.send(data)
    assert await c.readline() == expect
    assert await c.closed()


@pytest.mark.parametrize("data", ids=["pub-no-size", "pub-bad-size", "sub-no-sid", "connect-bad-json"], argvalues=["PUB foo\r\n", "PUB foo x\r\n", "SUB foo\r\n", "CONNECT {bad json\r\n"])
async def test_malformed_lines_close_silently(raw, data):
    c = await raw(connect=None) if data.startswith("CONNECT") else await raw()
    await c.send(data)
    assert await c.closed()


@pytest.mark.parametrize(
    "connect,expect",
    [
        ('{"verbose":false,"protocol":2}', "-ERR 'invalid client protocol'"),
        ('{"verbose":false,"no_responders":true}', "-ERR 'no responders requires headers support'"),
    ],
)
async def test_bad_connect_options(raw, connect, expect):
    c = await raw(connect=None)
    await c.send(f"CONNECT {connect}\r\nPING\r\n")
    assert await c.readline() == expect
    assert await c.closed()


@pytest.mark.parametrize("connect", [
    '{"verbose":"yes"}', '{"verbose":false,"pedantic":1}', '{"verbose":false,"name":5}',
    '{"verbose":false,"protocol":"1"}', '{"verbose":false,"protocol":1.5}', '{"verbose":false,"protocol":1.0}',
    '{"verbose":false,"headers":"true"}', '{"verbose":false,"user":1}', '{"verbose":false,"lang":["a"]}',
    '{"verbose":false,"no_responders":1}', '{"verbose":0}', '{"verbose":false,"Verbose":"x"}',
])
async def test_connect_with_a_wrong_json_type_closes_without_a_word(raw, connect):
    # nats-server's json.Unmarshal into its ClientOpts fails: the connection
    # is closed and nothing is sent (no -ERR, no PONG)
    c = await raw(connect=None)
    await c.send(f"CONNECT {connect}\r\nPING\r\n")
    got = b""
    while True:
        data = await asyncio.wait_for(c.reader.read(65536), 3)
        if not data:
            break
        got += data
    assert got == b""


@pytest.mark.parametrize("connect", ['{"verbose":false,"echo":null}', '{"verbose":false,"name":null,"protocol":null}',
                                     '{"verbose":false,"unknown":[1]}', '{"VERBOSE":false,"Pedantic":false}'])
async def test_connect_nulls_unknown_fields_and_any_case_are_taken(raw, connect):
    c = await raw(connect=None)
    await c.send(f"CONNECT {connect}\r\nPING\r\n")
    assert await c.readline() == "PONG"  # (no +OK: verbose false, whatever its name's case)


async def test_bad_client_does_not_disturb_others(server, raw):
    good = await connect(server.url)
    got = []

    async def cb(m):
        got.append(m.data)

    sub = await good.subscribe("keep.going", cb=cb)
    await good.flush()
    bad = await raw()
    await bad.send("PUB foo 2000000\r\n")
    assert await bad.closed()
    await good.publish("keep.going", b"still here")
    await good.flush()
    await eventually(lambda: got)
    assert got == [b"still here"]
    await sub.unsubscribe()
    await good.close()


async def test_payload_split_across_reads(raw):
    c = await raw()
    # pacing, not waits: a pause between writes so the server reads each part
    # on its own (coalesced, the test still holds; it just tests less)
    await c.send("SUB foo 1\r\nPUB foo 10\r\n01234")
    await asyncio.sleep(0.05)
    await c.send("56789\r")
    await asyncio.sleep(0.05)
    await c.send("\nPU")
    await asyncio.sleep(0.05)
    await c.send("B foo 1\r\nx\r\n")
    assert await c.read_until_pong() == ["MSG foo 1 10", "0123456789", "MSG foo 1 1", "x"]


async def test_a_big_write_of_many_commands_arrives_whole(raw):
    """One write of about 600 KB: thousands of PUBs and HPUBs of every small
    size, a 200 KB payload and a ping among them, so commands and payloads
    straddle wherever a server cuts its reads (natslab parses a big read in
    32 KB slices, sending replies in between). Every message arrives, intact
    and in order."""
    import random

    rnd = random.Random(5)
    sub = await raw()
    await sub.send("SUB big.> 1\r\n")
    await sub.read_until_pong()
    pub = await raw()
    cmds, want = [], []
    for i in range(6000):
        body = bytes(rnd.randrange(97, 123) for _ in range(rnd.randrange(0, 120)))
        if i == 3000:
            body = b"B" * 200_000
        if i % 5 == 0:
            hdr = b"NATS/1.0\r\nX: %d\r\n\r\n" % i
            cmds.append(b"HPUB big.%d %d %d\r\n%s%s\r\n" % (i, len(hdr), len(hdr) + len(body), hdr, body))
        else:
            cmds.append(b"PUB big.%d %d\r\n%s\r\n" % (i, len(body), body))
        want.append((b"big.%d" % i, body))
        if i == 4000:
            cmds.append(b"PING\r\nPUB nobody 0\r\n\r\n")
    await pub.send(b"".join(cmds))
    got = []

    async def read_all():
        while len(got) < len(want):
            line = await sub.reader.readline()
            t = line.split()
            if t[0] == b"MSG":
                got.append((t[1], (await sub.reader.readexactly(int(t[3]) + 2))[:-2]))
            elif t[0] == b"HMSG":
                data = (await sub.reader.readexactly(int(t[4]) + 2))[:-2]
                assert data[: int(t[3])] == b"NATS/1.0\r\nX: %s\r\n\r\n" % t[1][4:]
                got.append((t[1], data[int(t[3]) :]))
    await asyncio.wait_for(read_all(), 20)
    assert got == want
    assert await pub.read_until_pong() == []  # (the PONG for the ping inside came first)


async def test_a_second_connect_changes_only_what_it_names(raw):
    """nats-server reads a later CONNECT into the options it already has:
    verbose goes off, headers (not named) stay on."""
    c = await raw(connect=None)
    await c.send('CONNECT {"verbose":true,"headers":true,"protocol":1}\r\n')
    assert await c.read_until_pong() == ["+OK"]
    await c.send('CONNECT {"verbose":false}\r\n')
    assert await c.read_until_pong() == []
    await c.send("HPUB bar 12 14\r\nNATS/1.0\r\n\r\nab\r\n")
    assert await c.read_until_pong() == []  # accepted: no +OK, no error
    assert not await c.closed(timeout=0.3)


def test_the_fast_pub_pattern_takes_what_clients_write():
    """natslab's parser routes plain PUBs in a fast loop and leaves anything
    unusual to its general parser (the differential tests check both give
    nats-server's answers). What the official clients write must take the
    fast loop: nats-py puts two spaces before the size when there is no reply."""
    from natslab.server.parser import _PUB_RE

    assert _PUB_RE.match(b"PUB a.b  0\r\n").groups() == (b"a.b", None, b"0")  # nats-py, no reply
    assert _PUB_RE.match(b"PUB a.b _INBOX.x.1 12\r\n").groups() == (b"a.b", b"_INBOX.x.1", b"12")
    assert _PUB_RE.match(b"PUB a.b 3\r\n").groups() == (b"a.b", None, b"3")  # nats.go, nats.js
    for odd in (b"PUB a\t3\r\n", b"PUB a 3 \r\n", b"PUB a\x0bb 3\r\n", b"PUB a b c 3\r\n"):
        assert _PUB_RE.match(odd) is None


def _deliveries(lines: list[str]) -> dict[str, list[str]]:
    """Payloads by sid from the lines of MSGs (a payload may hold CRLF)."""
    got: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        parts = lines[i].split()
        assert parts[0] == "MSG", lines[i]
        size = int(parts[-1])
        payload = lines[i + 1]
        i += 2
        while len(payload) < size:
            payload += "\r\n" + lines[i]
            i += 1
        got.setdefault(parts[2], []).append(payload)
    return got


async def test_a_run_of_identical_pubs_is_routed_as_single_ones_are(raw):
    # one write of identical PUB lines (the shape natslab routes as a run),
    # broken once by a payload holding CRLF: auto-unsubscribe stops at its
    # count, each message goes to one member of a queue group, a wildcard
    # gets all, and a publisher without echo gets none of its own
    sub = await raw()
    await sub.send("SUB run.x 1\r\nUNSUB 1 5\r\nSUB run.x q 2\r\nSUB run.x q 5\r\nSUB run.* 3\r\n")
    assert await sub.read_until_pong() == []
    pub = await raw(connect='{"verbose":false,"pedantic":false,"headers":true,"protocol":1,"echo":false}')
    await pub.send("SUB run.x 9\r\n")
    assert await pub.read_until_pong() == []
    first = [f"m{i:02d}" for i in range(10)]
    then = [f"n{i:02d}" for i in range(10)]
    await pub.send("".join(f"PUB run.x 3\r\n{m}\r\n" for m in first) + "PUB run.x 4\r\na\r\nb\r\n"
                   + "".join(f"PUB run.x 3\r\n{m}\r\n" for m in then))
    assert await pub.read_until_pong() == []
    everything = first + ["a\r\nb"] + then
    # (the publisher's PONG came after its messages were routed; the
    # subscriber's comes after their delivery)
    got = _deliveries(await sub.read_until_pong())
    assert got["1"] == first[:5]
    assert got["3"] == everything
    q2, q5 = got.get("2", []), got.get("5", [])
    assert sorted(q2 + q5) == sorted(everything)
    assert q2 == [m for m in everything if m in q2] and q5 == [m for m in everything if m in q5]


async def test_a_run_to_two_members_on_one_connection_keeps_its_order(raw):
    # one connection holds two members of a queue group (and a third member
    # is elsewhere): a run of identical PUB lines is shared out message by
    # message, and that connection gets its messages in the order they were
    # published, whichever of its members each went to
    sub = await raw()
    await sub.send("SUB ord.x q 1\r\nSUB ord.x q 2\r\n")
    other = await raw()
    await other.send("SUB ord.x q 3\r\n")
    for c in (sub, other):
        assert await c.read_until_pong() == []
    pub = await raw()
    sent = [f"m{i:03d}" for i in range(300)]
    await pub.send("".join(f"PUB ord.x 4\r\n{m}\r\n" for m in sent))
    assert await pub.read_until_pong() == []
    lines = await sub.read_until_pong()
    mine = [lines[k + 1] for k in range(0, len(lines), 2)]
    assert {lines[k].split()[2] for k in range(0, len(lines), 2)} <= {"1", "2"}
    theirs = _deliveries(await other.read_until_pong()).get("3", [])
    assert sorted(mine + theirs) == sent
    assert mine == [m for m in sent if m in mine]
    assert mine and theirs  # (each side gets about its share of 300: never none)


async def test_long_runs_cut_anywhere_are_framed_by_their_sizes(raw):
    # thousands of identical PUB lines in writes cut at odd places (inside a
    # control line, inside a payload, between CR and LF): natslab takes such
    # runs with one pattern per line and big reads in slices. Payloads that
    # hold the control line itself, and CRLF where the next message would
    # start, must be taken by their size, as nats-server does; a run to
    # nobody is dropped and the next message still routed.
    sub = await raw()
    await sub.send("SUB t.a 1\r\n")
    assert await sub.read_until_pong() == []
    pub = await raw()
    tricky = "abcd\r\nPUB t.a 20\r\ncd"  # 20 bytes, a PUB line inside
    payloads = [tricky if i % 7 == 3 else f"p{i:05d}-{'x' * 13}" for i in range(3000)]
    assert {len(x) for x in payloads} == {20}
    data = ("".join(f"PUB t.nobody 20\r\n{x}\r\n" for x in payloads[:500])
            + "".join(f"PUB t.a 20\r\n{x}\r\n" for x in payloads)).encode()
    cuts = [0, 5, 1000, 1003, 20011, 20012, 47777, len(data)]
    for a, b in zip(cuts, cuts[1:]):
        await pub.send(data[a:b])
        await asyncio.sleep(0.02)  # pacing, not a wait: so the server reads the parts apart
    assert await pub.read_until_pong() == []
    want = b"".join(b"MSG t.a 1 20\r\n%s\r\n" % x.encode() for x in payloads)
    assert await sub.read_exactly(len(want), timeout=10) == want
    assert await sub.read_until_pong() == []


async def test_count_set_after_requests_ends_the_run_with_no_responders(raw):
    # the service's subscription takes requests first without a count, then
    # UNSUB 1 2 gives it one more: of two requests read together the first
    # reaches it and the second nobody, so the requester gets a 503 for it
    # (natslab keeps its routing decisions for the last match: a count must
    # not leave one behind)
    svc = await raw()
    await svc.send("SUB svc.c 1\r\n")
    pub = await raw(connect='{"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}')
    await pub.send("SUB _INBOX.c.* 5\r\n")
    for c in (svc, pub):
        assert await c.read_until_pong() == []
    await pub.send("PUB svc.c _INBOX.c.1 2\r\nr1\r\n")
    assert await pub.read_until_pong() == []
    assert await svc.read_until_pong() == ["MSG svc.c 1 _INBOX.c.1 2", "r1"]
    await svc.send("UNSUB 1 2\r\n")
    assert await svc.read_until_pong() == []
    await pub.send("PUB svc.c _INBOX.c.2 2\r\nr2\r\nPUB svc.c _INBOX.c.3 2\r\nr3\r\n")
    assert await pub.read_until_pong() == [
        "HMSG _INBOX.c.3 5 37 37", "NATS/1.0 503", "Nats-Subject: svc.c", "", ""]
    assert await svc.read_until_pong() == ["MSG svc.c 1 _INBOX.c.2 2", "r2"]


async def test_requests_and_replies_read_together_are_routed_in_order(raw):
    # requests to one service and replies to one requester's inbox prefix,
    # each batch in one write (natslab hands consecutive PUBs that matched
    # the same subscriptions over as a run): every subscriber gets them in
    # order, a queue group one copy each, and the requests nothing takes get
    # the no-responders status, between the others as sent
    svc = await raw()
    await svc.send("SUB svc.a 1\r\n")
    qa, qb = await raw(), await raw()
    await qa.send("SUB svc.a grp 7\r\n")
    await qb.send("SUB svc.a grp 8\r\n")
    pub = await raw(connect='{"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}')
    await pub.send("SUB _INBOX.p.* 5\r\n")
    for c in (svc, qa, qb, pub):
        assert await c.read_until_pong() == []
    reqs = "".join(f"PUB svc.a _INBOX.p.{i} 2\r\nr{i}\r\n" for i in range(10))
    await pub.send(reqs + "PUB svc.none _INBOX.p.50 0\r\n\r\nPUB svc.none _INBOX.p.51 0\r\n\r\n" + reqs.replace("r", "s"))
    assert await pub.read_until_pong() == [
        "HMSG _INBOX.p.50 5 40 40", "NATS/1.0 503", "Nats-Subject: svc.none", "", "",
        "HMSG _INBOX.p.51 5 40 40", "NATS/1.0 503", "Nats-Subject: svc.none", "", ""]
    want = [(f"_INBOX.p.{i}", f"{x}{i}") for x in "rs" for i in range(10)]
    lines = await svc.read_until_pong()
    got = [(lines[k].split()[3], lines[k + 1]) for k in range(0, len(lines), 2)]
    assert got == want and all(lines[k].startswith("MSG svc.a 1 ") for k in range(0, len(lines), 2))
    shares = []
    for c in (qa, qb):
        lines = await c.read_until_pong()
        shares.append([(lines[k].split()[3], lines[k + 1]) for k in range(0, len(lines), 2)])
    assert sorted(shares[0] + shares[1]) == sorted(want)
    assert all(s == [w for w in want if w in s] for s in shares)
    await svc.send("".join(f"PUB _INBOX.p.{i} 3\r\nok{i}\r\n" for i in range(10)))
    assert await svc.read_until_pong() == []
    lines = await pub.read_until_pong()
    assert lines == [x for i in range(10) for x in (f"MSG _INBOX.p.{i} 5 3", f"ok{i}")]
