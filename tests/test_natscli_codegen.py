"""The workbench's copy-as-code, run with the real nats CLI v0.5.0 on both
servers: every `nats ...` line the publish, request, stream and consumer
forms offer (tui/codegen.py) does what the form itself would have done.

The forms are the real classes with their fields' values given directly
(`value` answers from a dict), so their own validation and config building
run; the form's action is then done the way the form does it (the TUI's
NatsClient, the publish pane's own run_publish) and its effect compared with
the CLI line's: the stored stream or consumer config, the stored messages,
what a subscriber or responder received. The nats-py snippet under each
publish and request line is run too (with ``nc`` a connection of its own)
and must do what its CLI line does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shlex
import subprocess
import textwrap
from types import SimpleNamespace

import pytest

from conftest import connect, eventually
from natscli import nats_cli  # noqa: F401 (a fixture)
from natslab.tui.client.core import NatsClient
from natslab.tui.client.options import ConnectOptions
from natslab.tui.codegen import consumer_code, publish_code, request_code, stream_code
from natslab.tui.panes.consumers.form import ConsumerForm
from natslab.tui.panes.publish.pane import PublishPane, PublishRequest
from natslab.tui.panes.streams.form import StreamForm


def cli_line(code: str) -> str:
    first = code.splitlines()[0]
    assert first.startswith("$ nats ") or first.startswith("$ for n in "), first
    return first[2:]


def py_part(code: str) -> str:
    return code.split("\n", 1)[1]


async def run_snippet(server, code: str) -> bool:
    """The nats-py snippet as a user pastes it into an async function that has
    ``nc``; False if it raised (a refused JetStream publish)."""
    namespace: dict = {}
    exec("async def snippet(nc):\n" + textwrap.indent(py_part(code), "    "), namespace)
    nc = await connect(server.url)
    try:
        await namespace["snippet"](nc)
        return True
    except Exception:
        return False
    finally:
        await nc.close()


def run_line(cli, server, line: str) -> subprocess.CompletedProcess:
    """The line as a user pastes it into a shell, with `nats` meaning the
    pinned CLI pointed at this server."""
    shell_line = re.sub(r"(^|; do |; )nats ", lambda m: f"{m.group(1)}{shlex.quote(cli.path)} --server {server.url} ", line)
    return subprocess.run(["bash", "-c", shell_line], env=cli.env(), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def filled(form, values: dict):
    """The real form with these field values; its inline errors collected."""
    form.value = lambda field_id: values.get(field_id, "")
    form.errors = []
    form.show_error = lambda field_id, message: form.errors.append((field_id, message))
    config = form.build_config()
    assert config is not None and not form.errors, form.errors
    return config


async def tui_client(server) -> NatsClient:
    return NatsClient(await connect(server.url), ConnectOptions(url=server.url))


async def api(nc, subject: str, body: dict | None = None) -> dict:
    msg = await nc.request("$JS.API." + subject, json.dumps(body).encode() if body is not None else b"", timeout=3)
    return json.loads(msg.data)


def comparable(config: dict) -> dict:
    """A config without what cannot be the same: the CLI (nats.go) sends Go's
    zero time as pause_until, meaning not paused, which the server echoes."""
    return {k: v for k, v in config.items() if not (k == "pause_until" and v == "0001-01-01T00:00:00Z")}


STREAM_FORMS = {
    "plain": {"name": "ORDERS", "subjects": "orders.>", "storage": "file", "retention": "limits", "discard": "old"},
    "everything": {"name": "ALL", "subjects": "a.> b.*, c", "storage": "memory", "retention": "interest", "discard": "new",
                   "max_msgs": "10", "max_bytes": "100000", "max_msgs_per_subject": "3", "max_age": "1h30m",
                   "duplicate_window": "30s"},
    "workqueue": {"name": "JOBS", "subjects": "jobs.>", "storage": "file", "retention": "workqueue", "discard": "old",
                  "max_age": "1d", "duplicate_window": "500ms"},
}


@pytest.mark.parametrize("case", list(STREAM_FORMS))
async def test_stream_form(server, nats_cli, case):
    config = filled(StreamForm(), STREAM_FORMS[case])
    client = await tui_client(server)
    try:
        res = run_line(nats_cli, server, cli_line(stream_code(config)))
        assert res.returncode == 0, res.stdout + res.stderr
        by_cli = (await api(client.nc, f"STREAM.INFO.{config['name']}"))["config"]
        await client.delete_stream(config["name"])
        await client.create_stream(config)  # what the form's submit does
        by_form = (await api(client.nc, f"STREAM.INFO.{config['name']}"))["config"]
        assert comparable(by_cli) == comparable(by_form)
        await client.delete_stream(config["name"])
        assert await run_snippet(server, stream_code(config)), stream_code(config)  # the nats-py snippet
        by_snippet = (await api(client.nc, f"STREAM.INFO.{config['name']}"))["config"]
        assert comparable(by_snippet) == comparable(by_cli), stream_code(config)
    finally:
        await client.nc.close()


async def test_stream_edit_form(server, nats_cli):
    """The edit form's line (`nats stream edit`): every limit it shows is set,
    including one it cleared."""
    client = await tui_client(server)
    try:
        created = await client.create_stream(filled(StreamForm(), STREAM_FORMS["everything"]))
        existing = SimpleNamespace(name="ALL", config=created.config if hasattr(created, "config") else
                                   (await api(client.nc, "STREAM.INFO.ALL"))["config"])
        edit = {"name": "ALL", "subjects": "a.> d", "storage": "memory", "retention": "interest", "discard": "old",
                "max_msgs": "", "max_bytes": "200000", "max_msgs_per_subject": "", "max_age": "", "duplicate_window": "1m"}
        config = filled(StreamForm(existing), edit)
        line = cli_line(stream_code(config, edit=True))
        assert line.startswith("nats stream edit ALL ")
        res = run_line(nats_cli, server, line)
        assert res.returncode == 0, res.stdout + res.stderr
        by_cli = (await api(client.nc, "STREAM.INFO.ALL"))["config"]
        await client.delete_stream("ALL")
        await client.create_stream(filled(StreamForm(), STREAM_FORMS["everything"]))
        await client.update_stream(config)  # the edit form's submit
        by_form = (await api(client.nc, "STREAM.INFO.ALL"))["config"]
        assert comparable(by_cli) == comparable(by_form)
        await client.delete_stream("ALL")
        await client.create_stream(filled(StreamForm(), STREAM_FORMS["everything"]))
        code = stream_code(config, edit=True)
        assert await run_snippet(server, code), code  # the nats-py snippet
        by_snippet = (await api(client.nc, "STREAM.INFO.ALL"))["config"]
        assert comparable(by_snippet) == comparable(by_cli), code
        assert (by_cli["max_msgs"], by_cli["max_age"], by_cli["subjects"], by_cli["discard"]) == (-1, 0, ["a.>", "d"], "old")
    finally:
        await client.nc.close()


CONSUMER_FORMS = {
    "pull": {"name": "WORKER", "kind": "pull", "ack_policy": "explicit", "ack_wait": "4s", "deliver_policy": "all",
             "max_ack_pending": "1000"},
    "push": {"name": "PUSHER", "kind": "push", "deliver_subject": "deliver.here", "ack_policy": "all", "ack_wait": "1m30s",
             "max_deliver": "3", "filter_subject": "orders.eu", "deliver_policy": "last", "max_ack_pending": "50"},
    "per-subject": {"name": "LPS", "kind": "pull", "ack_policy": "none", "ack_wait": "30s", "deliver_policy": "last_per_subject",
                    "filter_subject": "orders.*", "max_ack_pending": "10"},
    "new": {"name": "FRESH", "kind": "pull", "ack_policy": "explicit", "ack_wait": "500ms", "deliver_policy": "new",
            "max_deliver": "5", "max_ack_pending": "1"},
}


async def make_orders(client: NatsClient) -> None:
    await client.create_stream(filled(StreamForm(), STREAM_FORMS["plain"]))
    for subject in ("orders.new", "orders.eu", "orders.eu"):
        await client.nc.request(subject, b"x", timeout=3)


@pytest.mark.parametrize("case", list(CONSUMER_FORMS))
async def test_consumer_form(server, nats_cli, case):
    client = await tui_client(server)
    try:
        await make_orders(client)
        config = filled(ConsumerForm("ORDERS"), CONSUMER_FORMS[case])
        res = run_line(nats_cli, server, cli_line(consumer_code("ORDERS", config)))
        assert res.returncode == 0, res.stdout + res.stderr
        name = config["durable_name"]
        by_cli = await api(client.nc, f"CONSUMER.INFO.ORDERS.{name}")
        await client.delete_consumer("ORDERS", name)
        await client.create_consumer("ORDERS", config, action="create")  # the form's submit
        by_form = await api(client.nc, f"CONSUMER.INFO.ORDERS.{name}")
        assert comparable(by_cli["config"]) == comparable(by_form["config"])
        await client.delete_consumer("ORDERS", name)
        code = consumer_code("ORDERS", config)
        assert await run_snippet(server, code), code  # the nats-py snippet
        by_snippet = await api(client.nc, f"CONSUMER.INFO.ORDERS.{name}")
        assert comparable(by_snippet["config"]) == comparable(by_cli["config"]), code
        assert (by_cli["num_pending"], by_cli["delivered"]) == (by_form["num_pending"], by_form["delivered"])
    finally:
        await client.nc.close()


async def test_consumer_edit_form(server, nats_cli):
    client = await tui_client(server)
    try:
        await make_orders(client)
        first = filled(ConsumerForm("ORDERS"), CONSUMER_FORMS["push"])
        await client.create_consumer("ORDERS", first, action="create")
        existing = SimpleNamespace(name="PUSHER", config=(await api(client.nc, "CONSUMER.INFO.ORDERS.PUSHER"))["config"])
        values = {"name": "PUSHER", "ack_wait": "10s", "max_deliver": "", "filter_subject": "", "max_ack_pending": "75"}
        config = filled(ConsumerForm("ORDERS", existing), values)
        line = cli_line(consumer_code("ORDERS", config, edit=True))
        assert line.startswith("nats consumer edit ORDERS PUSHER ")
        res = run_line(nats_cli, server, line)
        assert res.returncode == 0, res.stdout + res.stderr
        by_cli = (await api(client.nc, "CONSUMER.INFO.ORDERS.PUSHER"))["config"]
        await client.delete_consumer("ORDERS", "PUSHER")
        await client.create_consumer("ORDERS", first, action="create")
        await client.create_consumer("ORDERS", config, action="update")  # the edit form's submit
        by_form = (await api(client.nc, "CONSUMER.INFO.ORDERS.PUSHER"))["config"]
        assert comparable(by_cli) == comparable(by_form)
        await client.delete_consumer("ORDERS", "PUSHER")
        await client.create_consumer("ORDERS", first, action="create")
        code = consumer_code("ORDERS", config, edit=True)
        assert await run_snippet(server, code), code  # the nats-py snippet
        by_snippet = (await api(client.nc, "CONSUMER.INFO.ORDERS.PUSHER"))["config"]
        assert comparable(by_snippet) == comparable(by_cli), code
        assert (by_cli["ack_wait"], by_cli["max_deliver"], by_cli["max_ack_pending"], by_cli.get("filter_subject")) == (
            10_000_000_000, -1, 75, None)
    finally:
        await client.nc.close()


# -- publish ------------------------------------------------------------------
def _req(**kw) -> PublishRequest:
    base = dict(subject="p.x", headers={}, payload="hello", jetstream=False, count=1, rate=None, msg_id=None,
                expected_last_seq=None, expected_stream=None)
    base.update(kw)
    return PublishRequest(**base)


PUBLISHES = {
    "core": _req(),
    "core-headers-repeat": _req(headers={"A": "b", "Multi": "x, y"}, payload="n={{n}}", count=3),
    "core-rate": _req(payload="tick {{n}}", count=3, rate=20.0),
    "core-time": _req(payload="at {{time}}"),
    "core-braces": _req(payload='{"t": "{{not a template}}"}'),
    "js": _req(jetstream=True, payload="stored"),
    "js-msgid-expect": _req(jetstream=True, payload="once", msg_id="id-1", expected_last_seq=0, expected_stream="P"),
    "js-msgid-dupe": _req(jetstream=True, payload="dupe {{n}}", msg_id="same", count=3),
    "js-msgid-per-message": _req(jetstream=True, payload="job {{n}}", msg_id="job-{{n}}", count=3, headers={"K": "v"}),
    "js-wrong-expectation": _req(jetstream=True, payload="refused", expected_last_seq=7),
    "js-time-per-message": _req(jetstream=True, payload="job {{n}} at {{time}}", msg_id="t-{{n}}", count=2, rate=50.0),
    "core-n-once": _req(payload="only {{n}}", msg_id=None),
}
TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)")


async def form_publish(client: NatsClient, req: PublishRequest) -> list:
    """The publish pane's own run_publish (unwrapped from its worker), with
    the pane's messages collected."""
    posted = []
    pane = SimpleNamespace(app=SimpleNamespace(client=client), post_message=posted.append,
                           Finished=PublishPane.Finished, Progress=PublishPane.Progress)
    await PublishPane.run_publish.__wrapped__(pane, req)
    return posted


async def stored(nc, n_max: int = 10) -> list:
    out = []
    for seq in range(1, n_max + 1):
        r = await api(nc, "STREAM.MSG.GET.P", {"seq": seq})
        if "message" in r:
            m = r["message"]
            # header lines as a set: the CLI keeps them in a Go map, so their
            # order on the wire varies from run to run
            lines = base64.b64decode(m["hdrs"]).decode().split("\r\n") if m.get("hdrs") else []
            out.append((m["subject"], base64.b64decode(m.get("data") or "").decode(), sorted(x for x in lines if x)))
    return out


@pytest.mark.parametrize("case", list(PUBLISHES))
async def test_publish_form(server, nats_cli, case):
    req = PUBLISHES[case]
    client = await tui_client(server)
    watcher = await connect(server.url)
    try:
        got = []

        async def seen(m):
            got.append((m.subject, TIME.sub(b"<t>", m.data), dict(m.headers or {})))

        sub = await watcher.subscribe("p.>", cb=seen)
        await watcher.flush()
        await watcher.flush()

        async def effect(run) -> tuple:
            got.clear()
            if req.jetstream:
                await client.create_stream({"name": "P", "subjects": ["p.>"], "storage": "memory", "num_replicas": 1})
            ok = await run()
            # the CLI flushed before it exited; the form's client flushes
            # here: then the watcher's PONG comes after every message the
            # publishes routed to it, and its callbacks have run once its
            # queue is empty
            await client.nc.flush()
            await watcher.flush()
            assert await eventually(lambda: sub.pending_msgs == 0)
            msgs = [(s, TIME.sub(b"<t>", (d or "").encode()), h) for s, d, h in await stored(client.nc)] if req.jetstream else []
            if req.jetstream:
                await client.delete_stream("P")
            return ok, sorted(got, key=repr) if not req.jetstream else got, msgs

        async def by_cli():
            res = await asyncio.to_thread(run_line, nats_cli, server, cli_line(publish_code(req)))
            return res.returncode == 0

        async def by_form():
            posted = await form_publish(client, req)
            return not posted[-1].error

        async def by_snippet():
            return await run_snippet(server, publish_code(req))

        cli_effect, form_effect = await effect(by_cli), await effect(by_form)
        snippet_effect = await effect(by_snippet)
        assert snippet_effect == cli_effect, publish_code(req)
        assert "{{" not in py_part(publish_code(req)) or "{{not a template}}" in req.payload
        assert cli_effect[0] == form_effect[0] == (case != "js-wrong-expectation")
        # a subscriber sees the same messages (the CLI's JetStream publish
        # is a request too: its reply subject differs, not the message)
        assert [(s, d) for s, d, _ in cli_effect[1]] == [(s, d) for s, d, _ in form_effect[1]]
        assert [h for _, _, h in cli_effect[1]] == [h for _, _, h in form_effect[1]]
        assert cli_effect[2] == form_effect[2]
        if case == "js-msgid-per-message":
            assert len(cli_effect[2]) == 3
        if case == "js-msgid-dupe":
            assert len(cli_effect[2]) == 1
        await sub.unsubscribe()
    finally:
        await watcher.close()
        await client.nc.close()


REQUESTS = {
    "plain": ("svc.echo", "ping", {}, 2.0),
    "headers": ("svc.echo", "with headers", {"X-Trace": "abc", "Other": "1"}, 1.5),
    "braces": ("svc.echo", "{{literal}}", {}, 2.0),
    "empty": ("svc.echo", "", {}, 2.0),
}


@pytest.mark.parametrize("case", list(REQUESTS))
async def test_request_form(server, nats_cli, case):
    subject, payload, headers, timeout = REQUESTS[case]
    client = await tui_client(server)
    responder = await connect(server.url)
    try:
        seen = []

        async def answer(msg):
            seen.append((msg.data, dict(msg.headers or {})))
            await msg.respond(b"echo:" + msg.data)

        await responder.subscribe(subject, cb=answer)
        await responder.flush()
        await responder.flush()
        res = await asyncio.to_thread(run_line, nats_cli, server, cli_line(request_code(subject, payload, headers, timeout)))
        assert res.returncode == 0, res.stdout + res.stderr
        reply, _ = await client.request(subject, payload.encode(), headers, timeout)  # the request pane's send
        code = request_code(subject, payload, headers, timeout)
        assert await run_snippet(server, code)
        assert len(seen) == 3 and seen[0] == seen[1] == seen[2] == (payload.encode(), headers)
        assert f"echo:{payload}" in res.stdout.splitlines() and reply.data == f"echo:{payload}".encode()
    finally:
        await responder.close()
        await client.nc.close()
