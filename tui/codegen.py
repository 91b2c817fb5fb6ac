"""'Copy as code': the nats CLI line and nats-py snippet equivalent to an action."""

from __future__ import annotations

import shlex


# the composer's payload templates and the nats CLI's Go templates for them
CLI_TEMPLATES = {"{{n}}": "{{Count}}", "{{time}}": "{{TimeStamp}}"}


def _cli_body(text: str) -> tuple[str, list[str]]:
    """The text as the CLI should get it, and the flags that keeps it so:
    our templates become the CLI's, and text with other `{{` is sent as it
    is (--no-templates), as the composer sends it."""
    if "{{" not in text:
        return text, []
    if not any(t in text for t in CLI_TEMPLATES):
        return text, ["--no-templates"]
    for ours, theirs in CLI_TEMPLATES.items():
        text = text.replace(ours, theirs)
    return text, []


def _with_n(text: str) -> str:
    """Shell words for text whose `{{n}}` is the loop variable $n."""
    return '"$n"'.join(shlex.quote(part) if part else "" for part in text.split("{{n}}")) or "''"


def _py_text(text: str, n: str | None, time: bool) -> str:
    """A Python expression for text with the composer's templates filled:
    ``{{n}}`` from the expression ``n`` (left as it is when None), ``{{time}}``
    from ``stamp()`` (left as it is when not ``time``)."""
    marks = (["{{n}}"] if n is not None else []) + (["{{time}}"] if time else [])
    parts, rest = [], text
    while True:
        found = [(rest.find(m), m) for m in marks if m in rest]
        if not found:
            break
        at, mark = min(found)
        if rest[:at]:
            parts.append(repr(rest[:at]))
        parts.append(f"str({n})" if mark == "{{n}}" else "stamp()")
        rest = rest[at + len(mark):]
    if rest or not parts:
        parts.append(repr(rest))
    return " + ".join(parts)


def _py_publish(req, hdrs: dict) -> str:
    """The nats-py snippet doing what the CLI line does: {{n}} is the message
    number (a loop for a count), {{time}} the time in the body (not in a
    header: the CLI leaves headers as they are), the rate a sleep per message,
    and a flush at the end so core messages leave before the program does."""
    loop = req.count > 1
    n = "n" if loop else "1"
    body = _py_text(req.payload, n, time=True)
    uses_time = "stamp()" in body
    items = []
    for k, v in hdrs.items():
        value = _py_text(v, n, time=False) if k == "Nats-Msg-Id" else repr(v)
        items.append(f"{k!r}: {value}")
    headers = "{" + ", ".join(items) + "}" if items else "None"
    data = repr(req.payload.encode()) if body == repr(req.payload) else f"({body}).encode()"
    if req.jetstream:
        call = f"ack = await js.publish({req.subject!r}, {data}, headers={headers})"
    else:
        call = f"await nc.publish({req.subject!r}, {data}, headers={headers})"
    lines = []
    if req.rate and loop:
        lines.append("import asyncio")
    if uses_time:
        lines += ["from datetime import datetime, timezone",
                  "stamp = lambda: datetime.now(timezone.utc).isoformat(timespec='seconds')"]
    if req.jetstream:
        lines.append("js = nc.jetstream()")
    if loop:
        lines.append(f"for n in range(1, {req.count + 1}):")
        lines.append("    " + call)
        if req.rate:
            lines.append(f"    await asyncio.sleep({1 / req.rate:g})")
    else:
        lines.append(call)
    if not req.jetstream:
        lines.append("await nc.flush()")
    return "\n".join(lines)


def publish_code(req) -> str:
    """The composer's publish as a CLI line: headers, JetStream options,
    repeat and rate; {{n}} and {{time}} in the payload become the CLI's
    {{Count}} and {{TimeStamp}} (RFC 3339 to the second, where the composer
    writes milliseconds). A message id with {{n}} repeated takes a shell
    loop; {{time}} in a message id is left as it is."""
    hdrs = dict(req.headers)
    if req.msg_id:
        hdrs["Nats-Msg-Id"] = req.msg_id
    if req.expected_last_seq is not None:
        hdrs["Nats-Expected-Last-Sequence"] = str(req.expected_last_seq)
    if req.expected_stream:
        hdrs["Nats-Expected-Stream"] = req.expected_stream
    py = _py_publish(req, hdrs)
    opts = []
    for k, v in hdrs.items():
        if k != "Nats-Msg-Id":
            opts += ["-H", f"{k}:{v}"]
    if req.jetstream:
        opts += ["--jetstream"]
    sleep = [] if not req.rate or req.count < 2 else ["--sleep", f"{1000 / req.rate:g}ms"]
    if req.msg_id and "{{" in req.msg_id and req.count > 1:
        # the CLI fills templates in the body only: one message id per
        # message (the composer's {{n}}) needs a loop
        body = req.payload.replace("{{time}}", "{{TimeStamp}}")
        words = ["nats", "pub", shlex.quote(req.subject), _with_n(body), *map(shlex.quote, opts),
                 "-H", _with_n(f"Nats-Msg-Id:{req.msg_id}")]
        if "{{" in body.replace("{{TimeStamp}}", "").replace("{{n}}", ""):
            words.append("--no-templates")
        pause = f"; sleep {1 / req.rate:g}" if req.rate else ""
        line = f"for n in $(seq 1 {req.count}); do {' '.join(words)}{pause}; done"
        return f"$ {line}\n{py}"
    body, flags = _cli_body(req.payload)
    cli = ["nats", "pub", req.subject, body, *opts, *flags]
    if req.msg_id:
        cli += ["-H", f"Nats-Msg-Id:{req.msg_id.replace('{{n}}', '1')}"]
    if req.count > 1:
        cli += ["--count", str(req.count), *sleep]
    return f"$ {shlex.join(cli)}\n{py}"


def request_code(subject: str, payload: str, headers: dict, timeout: float) -> str:
    # the request pane sends its payload as typed: no templates
    cli = ["nats", "request", subject, payload, "--timeout", f"{timeout:g}s"]
    for k, v in headers.items():
        cli += ["-H", f"{k}:{v}"]
    if "{{" in payload or any("{{" in v for v in headers.values()):
        cli.append("--no-templates")
    py = f"msg = await nc.request({subject!r}, {payload.encode()!r}, timeout={timeout:g}, headers={headers or None!r})"
    return f"$ {shlex.join(cli)}\n{py}"


def _dur(ns: int) -> str:
    from .format import fmt_duration

    return fmt_duration(ns / 1e9)


def stream_code(config: dict, edit: bool = False) -> str:
    """`nats stream add` for a new stream, `nats stream edit` for the edit
    form (every limit given, so one the form cleared is cleared)."""
    name = config["name"]
    retention = config.get("retention", "limits")
    cli = ["nats", "stream", "edit" if edit else "add", name, "--subjects", ",".join(config.get("subjects") or [])]
    if not edit:
        cli += ["--storage", config.get("storage", "file")]
    cli += ["--retention", {"workqueue": "work"}.get(retention, retention), "--discard", config.get("discard", "old")]
    for key, flag in (("max_msgs", "--max-msgs"), ("max_bytes", "--max-bytes"), ("max_msgs_per_subject", "--max-msgs-per-subject")):
        if config.get(key, -1) not in (-1, None):
            cli += [flag, str(config[key])]
        elif edit:
            cli.append(f"{flag}=-1")  # "=": the CLI would read a lone -1 as a flag
    if config.get("max_age"):
        cli += ["--max-age", _dur(config["max_age"])]
    elif edit:
        cli += ["--max-age", "0s"]
    if config.get("duplicate_window"):
        cli += ["--dupe-window", _dur(config["duplicate_window"])]
    if (config.get("num_replicas") or 1) > 1:
        cli += ["--replicas", str(config["num_replicas"])]
    for tag in (config.get("placement") or {}).get("tags") or []:
        cli += ["--tag", tag]
    # the CLI turns direct get on by default; the form's stream has what its config says
    cli.append("--allow-direct" if config.get("allow_direct") else "--no-allow-direct")
    cli.append("-f" if edit else "--defaults")
    args = [f"name={name!r}", f"subjects={list(config.get('subjects') or [])!r}",
            f"storage={config.get('storage', 'file')!r}", f"retention={retention!r}",
            f"discard={config.get('discard', 'old')!r}"]
    for key in ("max_msgs", "max_bytes", "max_msgs_per_subject"):
        if config.get(key, -1) not in (-1, None):
            args.append(f"{key}={config[key]}")
    for key in ("max_age", "duplicate_window"):
        if config.get(key):
            args.append(f"{key}={config[key] / 1e9:g}")
    if (config.get("num_replicas") or 1) > 1:
        args.append(f"num_replicas={config['num_replicas']}")
    call = "update_stream" if edit else "add_stream"
    return f"$ {shlex.join(cli)}\nawait nc.jetstream().{call}({', '.join(args)})"


def consumer_code(stream: str, config: dict, edit: bool = False) -> str:
    """`nats consumer add`, or `nats consumer edit` for the edit form (which
    changes only ack wait, max deliver, filter and max ack pending)."""
    name = config.get("durable_name") or config.get("name", "")
    deliver = {"last_per_subject": "subject"}.get(config.get("deliver_policy", "all"), config.get("deliver_policy", "all"))
    cli = ["nats", "consumer", "edit" if edit else "add", stream, name]
    if not edit:
        # a deliver subject (--target) makes a push consumer
        cli += ["--target", config["deliver_subject"]] if config.get("deliver_subject") else ["--pull"]
        cli += ["--ack", config.get("ack_policy", "explicit"), "--deliver", deliver]
    if config.get("ack_wait"):
        cli += ["--wait", _dur(config["ack_wait"])]
    if config.get("max_deliver", -1) not in (-1, 0, None):
        cli += ["--max-deliver", str(config["max_deliver"])]
    elif edit:
        cli.append("--max-deliver=-1")
    if config.get("max_ack_pending") is not None:
        cli += ["--max-pending", str(config["max_ack_pending"])]
    if config.get("filter_subject"):
        cli += ["--filter", config["filter_subject"]]
    elif edit:
        cli += ["--filter", ""]
    cli.append("-f" if edit else "--defaults")
    args = [repr(stream), f"durable_name={name!r}", f"ack_policy={config.get('ack_policy', 'explicit')!r}",
            f"deliver_policy={config.get('deliver_policy', 'all')!r}"]
    if config.get("ack_wait"):
        args.append(f"ack_wait={config['ack_wait'] / 1e9:g}")
    if config.get("max_deliver", -1) not in (-1, 0, None):
        args.append(f"max_deliver={config['max_deliver']}")
    if config.get("max_ack_pending") is not None:
        args.append(f"max_ack_pending={config['max_ack_pending']}")
    if config.get("filter_subject"):
        args.append(f"filter_subject={config['filter_subject']!r}")
    if config.get("deliver_subject"):
        args.append(f"deliver_subject={config['deliver_subject']!r}")
    # nats-py has no update_consumer: add_consumer with the durable name updates it
    return f"$ {shlex.join(cli)}\nawait nc.jetstream().add_consumer({', '.join(args)})"
