"""$JS.API.INFO's `api.errors` after failed message deletes, on both servers:
nats-server counts the errors it answers before it reaches the store (bad
request, no such stream, sealed, deny_delete) but answers what the store
says (10043 sequence not found, 10057 delete failed) as a plain response it
does not count. nats.go's interop run showed natslab counting those too."""

from __future__ import annotations

import json

CASES = [
    ("file, beyond the last", "STREAM.MSG.DELETE.F", {"seq": 99}, 10057, 0),
    ("memory, beyond the last", "STREAM.MSG.DELETE.M", {"seq": 99}, 10043, 0),
    ("file, seq 0", "STREAM.MSG.DELETE.F", {"seq": 0}, 10057, 0),
    ("memory, seq 0", "STREAM.MSG.DELETE.M", {"seq": 0}, 10043, 0),
    ("file, deleted already", "STREAM.MSG.DELETE.F", {"seq": 1}, 10057, 0),
    ("file, no_erase, gone", "STREAM.MSG.DELETE.F", {"seq": 1, "no_erase": True}, 10057, 0),
    ("deny_delete", "STREAM.MSG.DELETE.D", {"seq": 1}, 10057, 1),
    ("sealed", "STREAM.MSG.DELETE.S", {"seq": 1}, 10109, 1),
    ("no such stream", "STREAM.MSG.DELETE.X", {"seq": 1}, 10059, 1),
    ("empty body", "STREAM.MSG.DELETE.F", b"", 10003, 1),
]


async def test_msg_delete_errors_in_api_errors(nc):
    async def api(subject, body=b""):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return json.loads((await nc.request("$JS.API." + subject, data, timeout=3)).data)

    async def errors():
        return (await api("INFO"))["api"]["errors"]

    for name, storage, extra in (("F", "file", {}), ("M", "memory", {}), ("D", "file", {"deny_delete": True}), ("S", "file", {})):
        assert "error" not in await api(f"STREAM.CREATE.{name}", {"name": name, "subjects": [name.lower()], "storage": storage, **extra})
        await nc.request(name.lower(), b"x", timeout=3)
    assert "error" not in await api("STREAM.UPDATE.S", {"name": "S", "subjects": ["s"], "sealed": True})
    assert (await api("STREAM.MSG.DELETE.F", {"seq": 1})) == {"type": "io.nats.jetstream.api.v1.stream_msg_delete_response", "success": True}
    seen = []
    for what, subject, body, code, counted in CASES:
        before = await errors()
        answer = await api(subject, body)
        seen.append((what, answer.get("error", {}).get("err_code"), await errors() - before))
    assert seen == [(what, code, counted) for what, _, _, code, counted in CASES]


async def test_a_good_delete_is_no_error(nc):
    """and is counted in api.total (the INFO before it too: it counts once answered)"""
    r = json.loads((await nc.request("$JS.API.STREAM.CREATE.G", json.dumps({"name": "G", "subjects": ["g"]}).encode(), timeout=3)).data)
    assert "error" not in r
    await nc.request("g", b"x", timeout=3)
    before = json.loads((await nc.request("$JS.API.INFO", b"", timeout=3)).data)["api"]
    r = json.loads((await nc.request("$JS.API.STREAM.MSG.DELETE.G", b'{"seq":1}', timeout=3)).data)
    after = json.loads((await nc.request("$JS.API.INFO", b"", timeout=3)).data)["api"]
    assert r.get("success") is True and after["errors"] == before["errors"] and after["total"] == before["total"] + 2
