"""Per-account JetStream limits and the JetStream domain on both servers,
through nats-py: nats.py's own AccountLimitsTest (its js-limits.conf, the
same calls and assertions), then each limit nats-server enforces with the
API error it gives (stream count, reserved memory and file bytes on create
and update, per-stream byte limits, consumer count, max_ack_pending and
its default, the account's file total on publish), and the domain's
``$JS.<domain>.API`` subjects with a KV bucket."""

from __future__ import annotations

import json

import nats.js.api
import pytest
from nats.js.errors import APIError, BadRequestError

from conftest import ServerProcess, connect

# nats.py's nats/tests/conf/js-limits.conf
JS_LIMITS = """
jetstream: {
  domain: "test-domain"
}

no_auth_user: "foo"

accounts: {
  A {
    users: [{ user: "foo" }]
    jetstream: {
      max_mem: 64MB,
      max_file: 32MB,
      max_streams: 10,
      max_consumers: 20,
      max_ack_pending: 100,
      memory_max_stream_bytes: 2048,
      store_max_stream_bytes: 4096,
      max_stream_bytes: true
    }
  }
}
"""

SMALL = """
no_auth_user: l
accounts: {
  L {
    users: [{user: l, password: l}]
    jetstream: {max_mem: 2000, max_file: 1000, max_streams: 3, max_consumers: 2, max_ack_pending: 5}
  }
}
"""


def start(kind, tmp_path, conf: str) -> ServerProcess:
    path = tmp_path / "limits.conf"
    path.write_text(conf)
    srv = ServerProcess(kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    return srv


@pytest.fixture
def limits_server(server_kind, tmp_path):
    srv = start(server_kind, tmp_path, JS_LIMITS)
    yield srv
    srv.stop()


@pytest.fixture
def small_server(server_kind, tmp_path):
    srv = start(server_kind, tmp_path, SMALL)
    yield srv
    srv.stop()


async def test_nats_py_account_limits(limits_server):
    """AccountLimitsTest.test_account_limits, as nats.py runs it (without
    its last part, which only decodes a JSON blob in the client)."""
    nc = await connect(limits_server.url)
    js = nc.jetstream()
    with pytest.raises(BadRequestError) as err:
        await js.add_stream(name="limits", subjects=["limits"])
    assert err.value.err_code == 10113
    assert err.value.description == "account requires a stream config to have max bytes set"
    with pytest.raises(BadRequestError) as err:
        await js.add_stream(name="limits", subjects=["limits"], max_bytes=65536)
    assert err.value.err_code == 10122
    assert err.value.description == "stream max bytes exceeds account limit max stream bytes"
    si = await js.add_stream(name="limits", subjects=["limits"], max_bytes=128)
    assert si.config.max_bytes == 128
    await js.publish("limits", b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    si = await js.stream_info("limits")
    assert si.state.messages == 1
    for _ in range(5):
        await js.publish("limits", b"A")
    info = await js.account_info()
    assert info.memory == 0
    assert info.storage == 111
    assert info.streams == 1
    assert info.consumers == 0
    assert info.limits == nats.js.api.AccountLimits(
        max_memory=67108864, max_storage=33554432, max_streams=10, max_consumers=20, max_ack_pending=100,
        memory_max_stream_bytes=2048, storage_max_stream_bytes=4096, max_bytes_required=True)
    assert info.api.total == 4
    assert info.api.errors == 2
    assert info.domain == "test-domain"
    assert info.tiers is None
    js = nc.jetstream(domain="test-domain")
    si = await js.stream_info("limits")
    assert si.state.messages == 3
    await nc.close()


async def test_domain_api_and_kv(limits_server):
    """jetstream { domain }: INFO names it, $JS.<domain>.API.INFO answers as
    $JS.API.INFO does, a KV bucket works through jetstream(domain=...), a
    subject outside nats-server's mapping table gets no answer."""
    nc = await connect(limits_server.url, no_echo=False)
    assert nc._server_info.get("domain") == "test-domain"
    r = json.loads((await nc.request("$JS.test-domain.API.INFO", b"", timeout=2)).data)
    assert r["type"] == "io.nats.jetstream.api.v1.account_info_response" and r["domain"] == "test-domain"
    assert list(r)[-2:] == ["domain", "api"]
    js = nc.jetstream(domain="test-domain")
    kv = await js.create_key_value(bucket="cfg", max_bytes=2048, direct=True)
    assert await kv.put("k", b"v1") == 1
    assert (await kv.get("k")).value == b"v1"
    kv2 = await nc.jetstream(domain="test-domain").key_value("cfg")
    assert await kv2.put("k", b"v2") == 2
    assert (await kv.get("k")).value == b"v2"
    si = await js.stream_info("KV_cfg")
    assert si.state.messages == 1 and si.state.last_seq == 2
    from nats.errors import NoRespondersError

    with pytest.raises(NoRespondersError):
        await nc.request("$JS.test-domain.API.BOGUS.X", b"", timeout=2)
    with pytest.raises(NoRespondersError):
        await nc.request("$JS.other.API.INFO", b"", timeout=2)
    await nc.close()


async def _err(coro) -> tuple[int, int, str]:
    with pytest.raises(APIError) as e:
        await coro
    return e.value.code, e.value.err_code, e.value.description


async def test_each_limit(small_server):
    """Every limit of the account's block, with nats-server's error and in
    its order of checks."""
    nc = await connect(small_server.url)
    js = nc.jetstream()
    mem = dict(storage=nats.js.api.StorageType.MEMORY)
    await js.add_stream(name="S1", subjects=["s1"], max_bytes=1500, **mem)
    # reserved memory: 1500 + 600 > 2000
    assert await _err(js.add_stream(name="S2", subjects=["s2"], max_bytes=600, **mem)) == (
        500, 10028, "insufficient memory resources available")
    # a stream's max_consumers above the account's
    assert await _err(js.add_stream(name="F1", subjects=["f1"], max_consumers=5)) == (
        400, 10026, "maximum consumers limit reached")
    await js.add_stream(name="F1", subjects=["f1"])
    # consumers: the account's max_ack_pending is the default and the ceiling
    ci = await js.add_consumer("F1", durable_name="c1", ack_policy="explicit")
    assert ci.config.max_ack_pending == 5
    assert await _err(js.add_consumer("F1", durable_name="c2", ack_policy="explicit", max_ack_pending=10)) == (
        400, 10121, "consumer max ack pending exceeds system limit of 5")
    await js.add_consumer("F1", durable_name="c2", ack_policy="explicit", max_ack_pending=3)
    assert await _err(js.add_consumer("F1", durable_name="c3", ack_policy="explicit")) == (
        400, 10026, "maximum consumers limit reached")
    ci = await js.add_consumer("F1", durable_name="c2", ack_policy="explicit", max_ack_pending=4)  # an update
    assert ci.config.max_ack_pending == 4
    # the account's file total on publish (each message: 22 + 2 + 100 + 8 bytes)
    for _ in range(7):
        await js.publish("f1", b"x" * 100)
    assert await _err(js.publish("f1", b"x" * 100)) == (400, 10002, "resource limits exceeded for account")
    assert (await js.stream_info("F1")).state.messages == 7
    await js.purge_stream("F1")  # room again
    assert (await js.publish("f1", b"x" * 100)).seq == 8
    await js.purge_stream("F1")
    # updates reserve only what max_bytes grows by
    assert await _err(js.update_stream(name="S1", subjects=["s1"], max_bytes=2500, **mem)) == (
        500, 10028, "insufficient memory resources available")
    si = await js.update_stream(name="S1", subjects=["s1"], max_bytes=1900, **mem)
    assert si.config.max_bytes == 1900
    # file bytes reserved by max_bytes
    assert await _err(js.add_stream(name="F2", subjects=["f2"], max_bytes=1001)) == (
        500, 10047, "insufficient storage resources available")
    await js.add_stream(name="F2", subjects=["f2"], max_bytes=1000)
    # the stream count comes first
    assert await _err(js.add_stream(name="F3", subjects=["f3"], max_bytes=1001)) == (
        400, 10027, "maximum number of streams reached")
    # the same config again is no new stream
    await js.add_stream(name="F2", subjects=["f2"], max_bytes=1000)
    raw = json.loads((await nc.request("$JS.API.INFO", b"", timeout=2)).data)
    assert (raw["streams"], raw["consumers"], raw["reserved_memory"], raw["reserved_storage"]) == (3, 2, 1900, 1000)
    info = await js.account_info()
    assert info.limits == nats.js.api.AccountLimits(
        max_memory=2000, max_storage=1000, max_streams=3, max_consumers=2, max_ack_pending=5,
        memory_max_stream_bytes=-1, storage_max_stream_bytes=-1, max_bytes_required=False)
    assert info.domain is None
    await nc.close()


@pytest.mark.parametrize("block, words", [
    ("{max_mem: 1KB, bogus: 1}", 'unknown field "bogus"'),
    ("{max_streams: \"many\"}", "Expected a parseable size"),
    ("{max_bytes_required: 1}", "Expected a parseable bool"),
    ("maybe", "Expected 'enabled' or 'disabled' for string value, got 'maybe'"),
])
def test_bad_limits(server_kind, tmp_path, block, words):
    import subprocess
    import sys

    from conftest import nats_server_binary

    path = tmp_path / "bad.conf"
    path.write_text("accounts { A { jetstream: %s } }\n" % block)
    cmd = [sys.executable, "-m", "natslab.server"] if server_kind == "natslab" else [nats_server_binary()]
    r = subprocess.run(cmd + ["-p", "-1", "-js", "-sd", str(tmp_path / "sd"), "-c", str(path)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode != 0 and words in r.stdout + r.stderr, r.stdout + r.stderr


SERVER_LIMITS = """
jetstream { max_mem: 3000, max_file: "2K" }
accounts: {
  A { users: [{user: a, password: a}], jetstream: enabled }
  B { users: [{user: b, password: b}], jetstream: enabled }
}
"""


async def test_server_limits_across_accounts(server_kind, tmp_path):
    """The server's jetstream { max_mem, max_file } (a size, or a string
    with K/M/G/T): every account's reservations and stored bytes count
    against it."""
    srv = start(server_kind, tmp_path, SERVER_LIMITS)
    try:
        a, b = [await connect(srv.url.replace("nats://", f"nats://{n}:{n}@")) for n in ("a", "b")]
        mem = dict(storage=nats.js.api.StorageType.MEMORY)
        await a.jetstream().add_stream(name="M", subjects=["m"], max_bytes=2000, **mem)
        assert await _err(b.jetstream().add_stream(name="M", subjects=["m"], max_bytes=1001, **mem)) == (
            500, 10028, "insufficient memory resources available")
        await b.jetstream().add_stream(name="M", subjects=["m"], max_bytes=1000, **mem)
        # stored bytes: refused once the server is over its file limit (each message 131 bytes)
        ja, jb = a.jetstream(), b.jetstream()
        await ja.add_stream(name="F", subjects=["f"])
        await jb.add_stream(name="F", subjects=["f"])
        for _ in range(8):
            await ja.publish("f", b"x" * 100)
            await jb.publish("f", b"x" * 100)
        assert await _err(ja.publish("f", b"x" * 100)) == (503, 10023, "insufficient resources")
        assert await _err(jb.publish("f", b"x")) == (503, 10023, "insufficient resources")
        assert (await ja.stream_info("F")).state.messages == 8
        r = json.loads((await a.request("$JS.API.INFO", b"", timeout=2)).data)
        assert (r["streams"], r["reserved_memory"], r["limits"]["max_storage"]) == (2, 2000, -1)
        await a.close()
        await b.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("conf, words", [
    ('jetstream { max_file: "12X" }', "max_file_store sizes defined as strings must end in K, M, G, T"),
    ("jetstream { max_file: 1K }\naccounts { A { jetstream: { max_file: 2K } } }",
     "Can't start JetStream: Error enabling jetstream on configured accounts: "
     "insufficient storage resources available (10047)"),
])
def test_bad_server_limits(server_kind, tmp_path, conf, words):
    import subprocess
    import sys

    from conftest import nats_server_binary

    path = tmp_path / "bad.conf"
    path.write_text(conf + "\n")
    cmd = [sys.executable, "-m", "natslab.server"] if server_kind == "natslab" else [nats_server_binary()]
    r = subprocess.run(cmd + ["-p", "-1", "-sd", str(tmp_path / "sd"), "-c", str(path)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode != 0 and words in r.stdout + r.stderr, r.stdout + r.stderr
