"""Stream and consumer names and descriptions, checked as nats-server 2.15
checks them: lengths in bytes (not characters), NUL, white space, wildcards,
path separators and ``..``, each with the real server's API error; a name the
file system refuses is the real server's store-creation error; nothing is
ever written outside the store directory; a broker holding odd names stops
cleanly on SIGTERM and has them back after a restart. Differential: the same
assertions on natslab's broker and on nats-server (the expected answers were
read off nats-server 2.15.1)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from conftest import connect

E_ACUTE = "\u00e9"  # two bytes in UTF-8
NAME_256_BYTES = E_ACUTE * 128  # 128 characters
NAME_255_BYTES = E_ACUTE * 127 + "x"
BAD_NAME = (500, 10052, "stream name is required and can not contain '.', '*', '>', '\\', '/'")
BAD_CONSUMER_NAME = (500, 10052, "consumer name can not contain '.', '*', '>', '\\', '/'")
BAD_DURABLE_NAME = (500, 10052, "consumer durable name can not contain '.', '*', '>', '\\', '/'")
STREAM_TOO_LONG = (500, 10052, "stream name is too long, maximum allowed is 255")
CONSUMER_TOO_LONG = (400, 10102, "consumer name is too long, maximum allowed is 255")
STREAM_STORE = (500, 10049, "error creating store for stream")
CONSUMER_STORE = (500, 10012, "error creating store for consumer")
STREAM_SEPARATORS = (400, 10128, "Stream name can not contain path separators")
CONSUMER_SEPARATORS = (400, 10127, "Consumer name can not contain path separators")
STREAM_DESC = (500, 10052, "stream description is too long, maximum allowed is 4096")
CONSUMER_DESC = (400, 10107, "consumer description is too long, maximum allowed is 4096")
OK = "ok"


async def answer(nc, subject: str, body) -> object:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    m = await nc.request("$JS.API." + subject, data, timeout=3.0)
    d = json.loads(m.data)
    e = d.get("error")
    return OK if e is None else (e["code"], e["err_code"], e["description"])


def consumer(stream: str, token: str | None = None, **cfg) -> tuple[str, dict]:
    """A CONSUMER.CREATE request; ``token``: the name in the subject (none:
    the legacy ephemeral subject)."""
    subject = f"CONSUMER.CREATE.{stream}" + (f".{token}" if token is not None else "")
    return subject, {"stream_name": stream, "config": cfg}


def stream(name: str, **cfg) -> tuple[str, dict]:
    return f"STREAM.CREATE.{name}", dict({"name": name, "subjects": [f"sub.{len(name)}.{ord(name[0])}"]}, **cfg)


CASES = [
    # stream names: bytes, not characters
    (stream(NAME_256_BYTES), STREAM_TOO_LONG),
    (stream("s" * 256), STREAM_TOO_LONG),
    (stream(NAME_255_BYTES), OK),
    # a NUL: fine in memory, refused by the file system (as the store's directory)
    (stream("a\x00b"), STREAM_STORE),
    (stream("m\x00b", storage="memory"), OK),
    (stream("a\fb"), BAD_NAME),
    (stream("a*"), BAD_NAME),
    (stream(">"), BAD_NAME),
    (stream("a/b"), STREAM_SEPARATORS),
    (stream("a\\b"), STREAM_SEPARATORS),
    (("STREAM.CREATE.x", {"name": ".."}), (400, 10056, "stream name in subject does not match request")),
    # consumer names: durable, name, or the subject's token
    (consumer("S", "d" * 256, durable_name="d" * 256), CONSUMER_TOO_LONG),
    (("CONSUMER.DURABLE.CREATE.S." + "d" * 256, {"stream_name": "S", "config": {"durable_name": "d" * 256}}),
     CONSUMER_TOO_LONG),
    (consumer("S", NAME_256_BYTES, durable_name=NAME_256_BYTES), CONSUMER_TOO_LONG),
    (consumer("M", "d" * 256, durable_name="d" * 256), CONSUMER_TOO_LONG),
    (consumer("S", NAME_255_BYTES, durable_name=NAME_255_BYTES), OK),
    # a name that is not durable has no length limit of its own: the file
    # system's (255 bytes a directory name) decides, and memory has none
    (consumer("S", name="n" * 256), CONSUMER_STORE),
    (consumer("S", "n" * 256, name="n" * 256), CONSUMER_STORE),
    (consumer("S", NAME_256_BYTES, name=NAME_256_BYTES), CONSUMER_STORE),
    (consumer("M", "n" * 256, name="n" * 256), OK),
    (consumer("S", "m" * 256, name="m" * 256, mem_storage=True), OK),
    (consumer("S", "a\x00b", durable_name="a\x00b"), CONSUMER_STORE),
    (consumer("S", "a\x00b", name="a\x00b"), CONSUMER_STORE),
    (("CONSUMER.DURABLE.CREATE.S.a\x00b", {"stream_name": "S", "config": {"durable_name": "a\x00b"}}), CONSUMER_STORE),
    (consumer("S", name="a\x00b"), CONSUMER_STORE),
    (consumer("M", "a\x00b", durable_name="a\x00b"), OK),
    (consumer("S", "a\x00c", durable_name="a\x00c", mem_storage=True), OK),
    (consumer("S", "a\fb"), BAD_CONSUMER_NAME),
    (consumer("S", "a*"), BAD_CONSUMER_NAME),
    (consumer("S", ">"), BAD_CONSUMER_NAME),
    (("CONSUMER.DURABLE.CREATE.S.a*", {"stream_name": "S", "config": {"durable_name": "a*"}}), BAD_CONSUMER_NAME),
    (consumer("S", name=".."), BAD_CONSUMER_NAME),
    (consumer("S", "x5", durable_name="x5", name="x5"), OK),
    (consumer("S", "x6", durable_name="x6", name="a b"), OK),  # the subject's name wins over the config's
    (consumer("S", "a/b"), CONSUMER_SEPARATORS),
    (consumer("S", "a\\b"), CONSUMER_SEPARATORS),
    (consumer("S", name="a/b"), CONSUMER_SEPARATORS),  # the legacy ephemeral subject: the config's name
    (consumer("S", name="..\\x"), CONSUMER_SEPARATORS),
    (consumer("S", "x7", durable_name="x7\\"), (400, 10017, "consumer name in subject does not match durable name in request")),
    # descriptions: 4096 bytes at most
    (stream("T", description="d" * 4097), STREAM_DESC),
    (stream("T", description=E_ACUTE * 2049), STREAM_DESC),
    (stream("T", description="d" * 4096), OK),
    (("STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"], "description": "d" * 4097}), STREAM_DESC),
    (consumer("S", "x", durable_name="x", description="d" * 4097), CONSUMER_DESC),
    (consumer("S", "x", name="x", description=E_ACUTE * 2049), CONSUMER_DESC),
    (consumer("S", description="e" * 4097), CONSUMER_DESC),
    (consumer("S", "x", durable_name="x", description="d" * 4096), OK),
]


async def make_streams(nc) -> None:
    assert await answer(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]}) == OK
    assert await answer(nc, "STREAM.CREATE.M", {"name": "M", "subjects": ["m.>"], "storage": "memory"}) == OK


async def test_names_and_descriptions_get_the_real_servers_answers(server):
    nc = await connect(server.url)
    await make_streams(nc)
    got = [(subject[:60], await answer(nc, subject, body)) for (subject, body), _ in CASES]
    await nc.close()
    want = [(subject[:60], expected) for (subject, _), expected in CASES]
    assert got == want


def files_outside(root: Path, store: Path) -> set[str]:
    """Every path under ``root`` except the store dir's contents and the logs."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            if p == store or store in p.parents or p.suffix == ".log":
                continue
            out.add(str(p))
    return out


HOSTILE = ["..", "../x", "a/../../b", "..\\..\\b", "/tmp/x", "\\x", "a\x00/b", "x\x00", "./x", "~", "%2e%2e",
           "-", " ", "a b", "\t", "a\nb", "*", ">", "a.b", "....", "\u202e", NAME_256_BYTES + "/x"]


async def test_hostile_names_write_nothing_outside_the_store(server, tmp_path):
    """Names built to escape the store directory, as stream names, consumer
    names in the config and (where a subject can carry them) in the subject:
    each is refused or kept inside the store, on both servers alike."""
    nc = await connect(server.url)
    await make_streams(nc)
    before = files_outside(tmp_path, server.store_dir)
    answers = []
    for i, name in enumerate(HOSTILE):
        subject_ok = not any(c in name for c in " \t\r\n.") and name not in ("*", ">")
        sname = name if subject_ok else f"h{i}"
        answers.append(await answer(nc, f"STREAM.CREATE.{sname}", {"name": name, "subjects": [f"h.{i}"]}))
        answers.append(await answer(nc, "CONSUMER.CREATE.S", {"stream_name": "S", "config": {"name": name}}))
        if subject_ok:  # (a durable name must also be the subject's)
            durable = {"stream_name": "S", "config": {"durable_name": name}}
            answers.append(await answer(nc, f"CONSUMER.CREATE.S.{name}", durable))
            answers.append(await answer(nc, f"CONSUMER.DURABLE.CREATE.S.{name}", durable))
            answers.append(await answer(nc, f"CONSUMER.CREATE.S.{name}", {"stream_name": "S", "config": {}}))
    await nc.close()
    server.stop()  # everything on disk that is going to be written
    assert files_outside(tmp_path, server.store_dir) == before
    # and inside the store, nothing but stream and consumer directories one level each
    streams = server.store_dir / "jetstream" / "$G" / "streams"
    for d in streams.iterdir():
        assert d.parent == streams
        obs = d / "obs"
        for c in obs.iterdir() if obs.exists() else ():
            assert c.parent == obs and c.is_dir()
    # the answers: no refusal goes unanswered, none differs in kind from the real server's
    codes = " ".join("ok" if a == OK else str(a[1]) for a in answers)
    assert codes == HOSTILE_ANSWERS, codes


# as nats-server 2.15.1 answers them, in order: per name the stream create,
# the legacy ephemeral with that name and, where a subject can carry it, the
# three creates with the name in the subject ("~", "%2e%2e", "-", "\u202e" are
# names like any other)
HOSTILE_ANSWERS = ("10056 10052 10056 10127 10056 10127 10056 10127 10128 10127 10127 10127 10127 10128 10127 10127 "
                   "10127 10127 10128 10127 10127 10127 10127 10049 10012 10012 10012 10012 10056 10127 ok ok ok ok "
                   "ok ok ok ok ok ok ok ok ok ok ok 10056 10052 10056 10052 10056 10052 10056 10052 10056 10052 "
                   "10056 10052 10056 10052 10056 10052 ok ok ok ok ok 10128 10127 10127 10127 10127")


async def test_sigterm_with_odd_names_exits_cleanly(server):
    """A broker holding names the file system takes only just (255 bytes,
    more than 255 characters' worth of bytes in memory, NULs where nothing is
    written) stops on SIGTERM with exit status 0, and the file-backed ones
    are there after the restart."""
    nc = await connect(server.url)
    await make_streams(nc)
    odd = [
        stream(NAME_255_BYTES),
        stream("m\x00b", storage="memory"),
        consumer("S", NAME_255_BYTES, durable_name=NAME_255_BYTES),
        consumer("S", "a\x00c", durable_name="a\x00c", mem_storage=True),
        consumer("M", "a\x00b", durable_name="a\x00b"),
        consumer("M", "n" * 300, name="n" * 300),
    ]
    for subject, body in odd:
        assert await answer(nc, subject, body) == OK, subject
    # and the ones that are refused leave nothing half-made behind
    assert await answer(nc, *consumer("S", "a\x00b", durable_name="a\x00b")) == CONSUMER_STORE
    assert await answer(nc, *stream("a\x00b")) == STREAM_STORE
    await nc.close()
    proc = server.proc
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0, server.log()
    assert "Traceback" not in server.log()
    server.proc = None
    server.start()
    nc = await connect(server.url)
    names = json.loads((await nc.request("$JS.API.STREAM.NAMES", b"", timeout=3)).data)["streams"]
    cons = json.loads((await nc.request("$JS.API.CONSUMER.NAMES.S", b"", timeout=3)).data)["consumers"]
    await nc.close()
    assert sorted(names) == sorted(["S", NAME_255_BYTES])  # memory streams do not survive a restart
    assert cons == [NAME_255_BYTES]  # nor consumers kept in memory
