"""$JS.API request bodies are decoded strictly, as nats-server 2.15 does
(Go's encoding/json with unknown fields disallowed): unknown fields anywhere,
values of the wrong type, enum spellings, times and malformed JSON are
refused with 10025 and Go's own message, before any other check. Differential:
the same assertions on natslab's broker and on nats-server."""

from __future__ import annotations

import json

import pytest

BOGUS = 'invalid JSON: json: unknown field "bogus"'


async def req(nc, subject: str, body=None, headers=None) -> dict:
    data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    msg = await nc.request("$JS.API." + subject, data, timeout=2.0, headers=headers)
    return json.loads(msg.data)


def err(resp: dict):
    e = resp.get("error")
    return None if e is None else (e["err_code"], e["description"])


@pytest.fixture
async def setup(nc):
    """Stream U (one message) with durable pull consumer C; stream R."""
    assert "error" not in await req(nc, "STREAM.CREATE.U", {"name": "U", "subjects": ["u"]})
    assert "error" not in await req(nc, "STREAM.CREATE.R", {"name": "R", "subjects": ["r"], "storage": "memory"})
    await nc.request("u", b"one", timeout=2)
    r = await req(nc, "CONSUMER.CREATE.U.C", {"stream_name": "U", "config": {"durable_name": "C", "ack_policy": "explicit"}})
    assert "error" not in r
    return nc


UNKNOWN = [
    # top level of every strictly decoded request
    ("STREAM.CREATE.U", {"name": "U", "subjects": ["u"], "bogus": 1}),
    ("STREAM.UPDATE.U", {"name": "U", "subjects": ["u"], "bogus": 1}),
    ("STREAM.INFO.U", {"bogus": 1}),
    ("STREAM.NAMES", {"bogus": 1}),
    ("STREAM.LIST", {"bogus": 1}),
    ("STREAM.PURGE.U", {"bogus": 1}),
    ("STREAM.MSG.DELETE.U", {"seq": 1, "bogus": 1}),
    ("STREAM.MSG.GET.U", {"seq": 1, "bogus": 1}),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "bogus": 2, "config": {"durable_name": "C"}}),
    ("CONSUMER.NAMES.U", {"bogus": 1}),
    ("CONSUMER.LIST.U", {"bogus": 1}),
    ("CONSUMER.PAUSE.U.C", {"bogus": 1}),
    # nested
    ("STREAM.CREATE.N", {"name": "N", "placement": {"cluster": "c", "bogus": 1}}),
    ("STREAM.CREATE.N", {"name": "N", "republish": {"src": ">", "dest": "x.>", "bogus": 1}}),
    ("STREAM.CREATE.N", {"name": "N", "consumer_limits": {"bogus": 1}}),
    ("STREAM.CREATE.N", {"name": "N", "subject_transform": {"src": "a", "dest": "b", "bogus": 1}}),
    ("STREAM.CREATE.N", {"name": "N", "sources": [{"name": "U"}, {"name": "R", "bogus": 1}]}),
    ("STREAM.CREATE.N", {"name": "N", "mirror": {"name": "U", "external": {"api": "a", "bogus": 1}}}),
    ("STREAM.CREATE.N", {"name": "N", "sources": [{"name": "U", "subject_transforms": [{"src": "u", "bogus": 1}]}]}),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"durable_name": "C", "bogus": 1}}),
    ("CONSUMER.CREATE.U.D", {"stream_name": "U", "config": {"bogus": 1}}),
    ("CONSUMER.DURABLE.CREATE.U.D", {"stream_name": "U", "config": {"durable_name": "D", "bogus": 1}}),
    # in a second JSON value of the same body
    ("STREAM.NAMES", b'{"offset":0} {"bogus":1}'),
]


async def test_unknown_fields_refused(setup):
    nc = setup
    for subject, body in UNKNOWN:
        assert err(await req(nc, subject, body)) == (10025, BOGUS), (subject, body)
    # and nothing was created or changed
    assert (await req(nc, "STREAM.NAMES"))["streams"] == ["R", "U"]
    assert (await req(nc, "CONSUMER.NAMES.U"))["consumers"] == ["C"]
    assert (await req(nc, "STREAM.INFO.U"))["state"]["messages"] == 1


async def test_unknown_fields_come_before_other_checks(setup):
    nc = setup
    cases = [
        # would be 10020 (ephemeral with a durable name)
        ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"durable_name": "C", "bogus": 1}}),
        # would be 10056 (stream name mismatch)
        ("STREAM.CREATE.X", {"name": "Y", "bogus": 1}),
        ("CONSUMER.CREATE.U", {"stream_name": "R", "bogus": 1}),
        # would be 10059 (stream not found)
        ("STREAM.INFO.NOPE", {"bogus": 1}),
        ("STREAM.UPDATE.NOPE", {"name": "NOPE", "bogus": 1}),
        ("STREAM.PURGE.NOPE", {"bogus": 1}),
        ("STREAM.MSG.DELETE.NOPE", {"seq": 1, "bogus": 1}),
        ("CONSUMER.NAMES.NOPE", {"bogus": 1}),
        ("CONSUMER.CREATE.NOPE", {"stream_name": "NOPE", "bogus": 1}),
        # would be 10014 (consumer not found)
        ("CONSUMER.PAUSE.U.NOPE", {"bogus": 1}),
        # would be 400 bad request (seq and keep together)
        ("STREAM.PURGE.U", {"seq": 1, "keep": 1, "bogus": 1}),
    ]
    for subject, body in cases:
        assert err(await req(nc, subject, body)) == (10025, BOGUS), (subject, body)
    # consumer create and pause decode before they look at Required-Api-Level;
    # the other requests check the level first
    high = {"Nats-Required-Api-Level": "99"}
    for subject, body in (("CONSUMER.CREATE.U", {"bogus": 1}), ("CONSUMER.DURABLE.CREATE.U.C", {"bogus": 1}),
                          ("CONSUMER.PAUSE.U.C", {"bogus": 1})):
        assert err(await req(nc, subject, body, headers=high)) == (10025, BOGUS), subject
    for subject in ("STREAM.CREATE.U", "STREAM.INFO.U", "STREAM.NAMES", "STREAM.MSG.GET.U"):
        assert err(await req(nc, subject, {"bogus": 1}, headers=high))[0] == 10185, subject
    assert err(await req(nc, "CONSUMER.CREATE.U", {"stream_name": "U"}, headers=high))[0] == 10185
    # the names are checked before the stream is looked up
    assert err(await req(nc, "CONSUMER.CREATE.NOPE", {"stream_name": "NOPE", "config": {"durable_name": "X"}}))[0] == 10020
    # a stream update has its config checked before its name
    assert err(await req(nc, "STREAM.UPDATE.U", {"name": "", "subjects": ["u"]}))[0] == 10052


def te(what: str, into: str, go_type: str) -> str:
    return f"invalid JSON: json: cannot unmarshal {what} into Go struct field {into} of type {go_type}"


def te_elem(what: str, into: str, go_type: str) -> str:
    return f"invalid JSON: json: cannot unmarshal {what} into {into} of type {go_type}"


SC, CC = "StreamConfigRequest", "CreateConsumerRequest"
TYPE_ERRORS = [
    # int64, int, int32, uint64 (numbers that do not fit are named with their literal)
    ("STREAM.CREATE.N", {"name": "N", "max_msgs": "x"}, te("string", f"{SC}.max_msgs", "int64")),
    ("STREAM.CREATE.N", b'{"name":"N","max_bytes":1e3}', te("number 1e3", f"{SC}.max_bytes", "int64")),
    ("STREAM.CREATE.N", {"name": "N", "max_consumers": 1.5}, te("number 1.5", f"{SC}.max_consumers", "int")),
    ("STREAM.CREATE.N", {"name": "N", "max_msg_size": 3000000000}, te("number 3000000000", f"{SC}.max_msg_size", "int32")),
    ("STREAM.CREATE.N", {"name": "N", "first_seq": -1}, te("number -1", f"{SC}.first_seq", "uint64")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"max_deliver": "x"}}, te("string", f"{CC}.config.max_deliver", "int")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"rate_limit_bps": -1}},
     te("number -1", f"{CC}.config.rate_limit_bps", "uint64")),
    ("STREAM.PURGE.U", {"seq": -1}, te("number -1", "JSApiStreamPurgeRequest.seq", "uint64")),
    ("STREAM.MSG.DELETE.U", {"seq": "1"}, te("string", "JSApiMsgDeleteRequest.seq", "uint64")),
    ("STREAM.NAMES", {"offset": "x"}, te("string", "JSApiStreamNamesRequest.offset", "int")),
    ("CONSUMER.LIST.U", {"offset": True}, te("bool", "JSApiConsumersRequest.offset", "int")),
    # time.Duration
    ("STREAM.CREATE.N", {"name": "N", "max_age": "1s"}, te("string", f"{SC}.max_age", "time.Duration")),
    ("STREAM.CREATE.N", {"name": "N", "consumer_limits": {"inactive_threshold": 1.5}},
     te("number 1.5", f"{SC}.consumer_limits.inactive_threshold", "time.Duration")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"ack_wait": "30s"}}, te("string", f"{CC}.config.ack_wait", "time.Duration")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"backoff": "1s"}}, te("string", f"{CC}.config.backoff", "[]time.Duration")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"backoff": [1, "x"]}},
     te_elem("string", f"{CC}.config.backoff.1", "time.Duration")),
    # bool
    ("STREAM.CREATE.N", {"name": "N", "no_ack": "x"}, te("string", f"{SC}.no_ack", "bool")),
    ("STREAM.CREATE.N", {"name": "N", "pedantic": 1}, te("number", f"{SC}.pedantic", "bool")),
    ("STREAM.INFO.U", {"deleted_details": "x"}, te("string", "JSApiStreamInfoRequest.deleted_details", "bool")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"flow_control": 1}}, te("number", f"{CC}.config.flow_control", "bool")),
    # string
    ("CONSUMER.CREATE.U", {"stream_name": 1}, te("number", f"{CC}.stream_name", "string")),
    ("STREAM.INFO.U", {"subjects_filter": ["u"]}, te("array", "JSApiStreamInfoRequest.subjects_filter", "string")),
    ("STREAM.CREATE.N", {"name": "N", "placement": {"cluster": 1}}, te("number", f"{SC}.placement.cluster", "string")),
    ("STREAM.CREATE.N", {"name": "N", "sources": [{"name": 1}]}, te("number", f"{SC}.sources.0.name", "string")),
    # []string (an element is named by its index, without "Go struct field")
    ("STREAM.CREATE.N", {"name": "N", "subjects": "n"}, te("string", f"{SC}.subjects", "[]string")),
    ("STREAM.CREATE.N", {"name": "N", "subjects": ["n", 1]}, te_elem("number", f"{SC}.subjects.1", "string")),
    ("STREAM.CREATE.N", {"name": "N", "placement": {"tags": [True]}}, te_elem("bool", f"{SC}.placement.tags.0", "string")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"filter_subjects": [{}]}},
     te_elem("object", f"{CC}.config.filter_subjects.0", "string")),
    # map[string]string
    ("STREAM.CREATE.N", {"name": "N", "metadata": ["a"]}, te("array", f"{SC}.metadata", "map[string]string")),
    ("STREAM.CREATE.N", {"name": "N", "metadata": {"a": 1}}, te("number", f"{SC}.metadata.a", "string")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"metadata": {"a": True}}}, te("bool", f"{CC}.config.metadata.a", "string")),
    # structs
    ("STREAM.CREATE.N", {"name": "N", "placement": 5}, te("number", f"{SC}.placement", "server.Placement")),
    ("STREAM.CREATE.N", {"name": "N", "consumer_limits": "x"}, te("string", f"{SC}.consumer_limits", "server.StreamConsumerLimits")),
    ("STREAM.CREATE.N", {"name": "N", "sources": {}}, te("object", f"{SC}.sources", "[]*server.StreamSource")),
    ("STREAM.CREATE.N", {"name": "N", "sources": [5]}, te_elem("number", f"{SC}.sources.0", "server.StreamSource")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": "x"}, te("string", f"{CC}.config", "server.ConsumerConfig")),
    ("STREAM.CREATE.N", [], "invalid JSON: json: cannot unmarshal array into Go value of type server.StreamConfigRequest"),
    ("STREAM.NAMES", [1], "invalid JSON: json: cannot unmarshal array into Go value of type server.JSApiStreamNamesRequest"),
    # times: type errors, then time.Parse's own messages
    ("CONSUMER.PAUSE.U.C", {"pause_until": 5}, te("number", "JSApiConsumerPauseRequest.pause_until", "time.Time")),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"opt_start_time": "x"}},
     'invalid JSON: parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"'),
    ("CONSUMER.PAUSE.U.C", {"pause_until": "2024-02-30T00:00:00Z"}, 'invalid JSON: parsing time "2024-02-30T00:00:00Z": day out of range'),
    ("CONSUMER.PAUSE.U.C", {"pause_until": "2024-01-01T00:00:00"},
     'invalid JSON: parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"'),
    ("STREAM.MSG.GET.U", {"start_time": "2024-01-01T00:00:00Zjunk"},
     'invalid JSON: parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk"'),
    # types with their own UnmarshalJSON: the raw JSON in their messages
    ("STREAM.CREATE.N", {"name": "N", "retention": "zz"}, 'invalid JSON: can not unmarshal "\\"zz\\""'),
    ("STREAM.CREATE.N", {"name": "N", "storage": None}, 'invalid JSON: can not unmarshal "null"'),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"deliver_policy": 5}}, 'invalid JSON: can not unmarshal "5"'),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"ack_policy": "EXPLICIT"}}, 'invalid JSON: can not unmarshal "\\"EXPLICIT\\""'),
    ("STREAM.CREATE.N", {"name": "N", "compression": "zstd"}, "invalid JSON: unknown compression algorithm"),
    ("STREAM.CREATE.N", {"name": "N", "compression": 1}, "invalid JSON: json: cannot unmarshal number into Go value of type string"),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "action": "upsert"}, 'invalid JSON: unknown consumer action: "upsert"'),
    ("CONSUMER.CREATE.U", {"stream_name": "U", "config": {"priority_policy": "x"}}, 'invalid JSON: unknown priority policy: "x"'),
    # the first problem in the body wins
    ("STREAM.CREATE.N", {"name": "N", "max_msgs": "x", "bogus": 1}, te("string", f"{SC}.max_msgs", "int64")),
    ("STREAM.CREATE.N", {"name": "N", "retention": "zz", "max_msgs": "x"}, 'invalid JSON: can not unmarshal "\\"zz\\""'),
    ("STREAM.CREATE.N", b'{"name":"N","max_msgs":"x","max_msgs":5}', te("string", f"{SC}.max_msgs", "int64")),
    # a key matched case-insensitively is named as sent
    ("STREAM.CREATE.N", {"name": "N", "Max_Msgs": "x"}, te("string", f"{SC}.Max_Msgs", "int64")),
]


async def test_wrong_types_refused_with_gos_message(setup):
    nc = setup
    for subject, body, desc in TYPE_ERRORS:
        assert err(await req(nc, subject, body)) == (10025, desc), (subject, body)
    assert (await req(nc, "STREAM.NAMES"))["streams"] == ["R", "U"]


async def test_malformed_json(setup):
    nc = setup
    cases = [
        (b'{"name":"N"} x', "invalid character 'x' looking for beginning of value at offset 14"),
        (b'{"name":"N",}', "invalid character '}' looking for beginning of object key string at offset 13"),
        (b'{"name" "N"}', "invalid character '\"' after object key at offset 9"),
        (b'{"subjects":["a" "b"]}', "invalid character '\"' after array element at offset 18"),
        (b'{"max_msgs":tru}', "invalid character '}' in literal true (expecting 'e') at offset 16"),
        (b'{"max_msgs":1.}', "invalid character '}' in numeric literal at offset 15"),
        (b'{"name":"a\\qb"}', "invalid escape sequence `\\q` in string at offset 12"),
        (b'{"name":"N","max_msgs":"x"', "unexpected EOF"),
        # the syntax of a whole value is checked before what is in it
        (b'{"bogus":1,"name":"N",}', "invalid character '}' looking for beginning of object key string at offset 23"),
    ]
    for body, desc in cases:
        assert err(await req(nc, "STREAM.CREATE.N", body)) == (10025, "invalid JSON: " + desc), body
    # CONSUMER.RESET reads its body with json.Unmarshal: one value, no offsets,
    # unknown fields ignored
    reset = "CONSUMER.RESET.U.C"
    assert err(await req(nc, reset, b'{"seq":1} x')) == (10025, "invalid JSON: invalid character 'x' after top-level value")
    assert err(await req(nc, reset, b" ")) == (10025, "invalid JSON: unexpected end of JSON input")
    assert err(await req(nc, reset, {"seq": "x"})) == (10025, te("string", "JSApiConsumerResetRequest.seq", "uint64"))
    r = await req(nc, reset, {"bogus": 1})
    assert "error" not in r and r["reset_seq"] == 1


def nested(open_: bytes, close: bytes, n: int, inner: bytes = b"") -> bytes:
    return open_ * n + inner + close * n


async def test_deeply_nested_bodies(setup):
    """Any depth is read (Python's json stops near 1,000 levels): past Go's
    10,000 it is Go's 'exceeded max depth' at the offending bracket, and
    below that whatever is wrong near the top, as Go finds it."""
    nc = setup
    depth = "invalid JSON: exceeded max depth"
    cases = [
        ("STREAM.CREATE.N", b'{"name":"N","metadata":' + nested(b"[", b"]", 20000) + b"}", f"{depth} at offset 10023"),
        ("STREAM.CREATE.N", b'{"name":"N","subjects":' + nested(b"[", b"]", 10000) + b"}", f"{depth} at offset 10023"),
        ("STREAM.CREATE.N", b'{"name":"N","bogus":' + nested(b'{"a":', b"}", 20000, b"1") + b"}", f"{depth} at offset 50016"),
        ("STREAM.NAMES", nested(b"[", b"]", 20000), f"{depth} at offset 10001"),
        ("CONSUMER.RESET.U.C", nested(b"[", b"]", 20000), depth),
        ("STREAM.CREATE.N", b'{"name":"N","metadata":' + nested(b"[", b"]", 5000) + b"}",
         te("array", f"{SC}.metadata", "map[string]string")),
        ("STREAM.CREATE.N", b'{"name":"N","subjects":' + nested(b"[", b"]", 9999) + b"}",
         te_elem("array", f"{SC}.subjects.0", "string")),
        ("STREAM.CREATE.N", b'{"name":"N","bogus":' + nested(b'{"a":', b"}", 9000, b"1") + b"}",
         'invalid JSON: json: unknown field "bogus"'),
        ("STREAM.CREATE.N", b'{"name":"N","subjects":["a",' + nested(b"[", b"]", 3000, b'"x\\"]]"') + b'],"max_msgs":"x"}',
         te_elem("array", f"{SC}.subjects.1", "string")),
        ("STREAM.CREATE.N", b'{"name":"N","placement":' + nested(b'{"tags":', b"}", 3000, b"1") + b"}",
         te("object", f"{SC}.placement.tags", "[]string")),
        ("STREAM.CREATE.N", b'{"name":"N","subjects":["n"]} ' + nested(b"[", b"]", 3000),
         "invalid JSON: json: cannot unmarshal array into Go value of type server.StreamConfigRequest"),
        ("CONSUMER.CREATE.U", b'{"stream_name":"U","config":{"durable_name":' + nested(b'{"a":', b"}", 2000, b"1") + b"}}",
         te("object", "CreateConsumerRequest.config.durable_name", "string")),
        ("CONSUMER.RESET.U.C", nested(b"[", b"]", 3000),
         "invalid JSON: json: cannot unmarshal array into Go value of type server.JSApiConsumerResetRequest"),
    ]
    for subject, body, desc in cases:
        assert err(await req(nc, subject, body)) == (10025, desc), (subject, body[:60])
    assert (await req(nc, "STREAM.NAMES"))["streams"] == ["R", "U"]


async def test_valid_bodies_still_accepted(setup):
    nc = setup
    # keys match case-insensitively; enums are canonicalized (discard is
    # case-insensitive, deliver policy "undefined" is all)
    r = await req(nc, "STREAM.CREATE.N", {"NAME": "N", "Subjects": ["n"], "MAX_MSGS": 5, "discard": "NEW",
                                          "metadata": {"k": "v"}, "consumer_limits": {"max_ack_pending": 10},
                                          "compression": "s2", "persist_mode": ""})
    assert "error" not in r, r
    cfg = r["config"]
    assert (cfg["name"], cfg["subjects"], cfg["max_msgs"], cfg["discard"], cfg["compression"]) == ("N", ["n"], 5, "new", "s2")
    assert cfg["metadata"]["k"] == "v" and cfg["consumer_limits"] == {"max_ack_pending": 10}
    # null leaves a value as it is, or clears a pointer / slice / map
    r = await req(nc, "STREAM.UPDATE.N", {"name": "N", "subjects": ["n"], "max_msgs": 5, "discard": "new", "compression": "s2",
                                          "metadata": {"k": "v"}, "consumer_limits": {"max_ack_pending": 10},
                                          "max_age": None, "placement": None, "sources": None, "description": None})
    assert "error" not in r, r
    # several JSON values in one body are decoded one after the other
    r = await req(nc, "STREAM.CREATE.M", b'{"name":"M"} {"subjects":["m.>"]}\n{"max_msgs":7}')
    assert "error" not in r, r
    assert (r["config"]["subjects"], r["config"]["max_msgs"]) == (["m.>"], 7)
    r = await req(nc, "CONSUMER.CREATE.U.E", {"stream_name": "U", "action": "create",
                                              "config": {"name": "E", "deliver_policy": "undefined", "ack_policy": "explicit",
                                                         "ack_wait": 5_000_000_000, "backoff": [5_000_000_000],
                                                         "metadata": {"a": "b"}, "priority_groups": ["g"],
                                                         "priority_policy": "overflow", "max_deliver": 3}})
    assert "error" not in r, r
    assert r["config"]["deliver_policy"] == "all" and r["config"]["priority_policy"] == "overflow"
    r = await req(nc, "CONSUMER.CREATE.U.F", {"stream_name": "U", "config": {"name": "F", "deliver_policy": "by_start_time",
                                                                              "opt_start_time": "2024-01-01T00:00:00.5+01:00"}})
    assert "error" not in r, r
    # the small requests, with every field they have
    assert (await req(nc, "STREAM.INFO.U", {"offset": 0, "deleted_details": True, "subjects_filter": ">"}))["state"]["messages"] == 1
    assert (await req(nc, "STREAM.NAMES", {"offset": 0, "subject": "u"}))["streams"] == ["U"]
    assert (await req(nc, "STREAM.LIST", {"offset": 0, "subject": "m.x"}))["total"] == 1
    assert (await req(nc, "CONSUMER.NAMES.U", {"offset": 1}))["consumers"] == ["E", "F"]
    assert (await req(nc, "CONSUMER.LIST.U", {"OFFSET": 2}))["total"] == 3
    r = await req(nc, "STREAM.MSG.GET.U", {"seq": 1, "no_hdr": True})
    assert r["message"]["seq"] == 1
    r = await req(nc, "CONSUMER.PAUSE.U.C", {"pause_until": "2099-01-01T00:00:00Z"})
    assert r["paused"] is True
    assert (await req(nc, "CONSUMER.PAUSE.U.C", {}))["paused"] is False
    assert (await req(nc, "STREAM.PURGE.R", {"filter": "r", "keep": 1}))["success"] is True
    await nc.request("r", b"x", timeout=2)
    assert (await req(nc, "STREAM.MSG.DELETE.R", {"seq": 1, "no_erase": True}))["success"] is True
    # a body that is not a JSON object or array is not read by these
    assert (await req(nc, "STREAM.NAMES", b"not json"))["total"] == 4
    assert "error" not in await req(nc, "STREAM.INFO.U", b"x")
    # an empty request to message get / delete is a bad request, before decoding
    assert err(await req(nc, "STREAM.MSG.DELETE.U", b" {} ")) == (10003, "bad request")
    assert err(await req(nc, "STREAM.MSG.GET.U", b"{}")) == (10003, "bad request")
