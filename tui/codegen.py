"""'Copy as code': the nats CLI line and nats-py snippet equivalent to an action."""

from __future__ import annotations

import shlex


def publish_code(req) -> str:
    cli = ["nats", "pub", req.subject, req.payload]
    for k, v in req.headers.items():
        cli += ["-H", f"{k}:{v}"]
    if req.count > 1:
        cli += ["--count", str(req.count)]
    hdrs = dict(req.headers)
    if req.msg_id:
        hdrs["Nats-Msg-Id"] = req.msg_id
    if req.expected_last_seq is not None:
        hdrs["Nats-Expected-Last-Sequence"] = str(req.expected_last_seq)
    if req.expected_stream:
        hdrs["Nats-Expected-Stream"] = req.expected_stream
    if req.jetstream:
        py = f"ack = await nc.jetstream().publish({req.subject!r}, {req.payload.encode()!r}, headers={hdrs or None!r})"
        if req.msg_id:
            cli += ["-H", f"Nats-Msg-Id:{req.msg_id}"]
        cli += ["--jetstream"]
    else:
        py = f"await nc.publish({req.subject!r}, {req.payload.encode()!r}, headers={hdrs or None!r})"
    return f"$ {shlex.join(cli)}\n{py}"


def request_code(subject: str, payload: str, headers: dict, timeout: float) -> str:
    cli = ["nats", "request", subject, payload, "--timeout", f"{timeout:g}s"]
    for k, v in headers.items():
        cli += ["-H", f"{k}:{v}"]
    py = f"msg = await nc.request({subject!r}, {payload.encode()!r}, timeout={timeout:g}, headers={headers or None!r})"
    return f"$ {shlex.join(cli)}\n{py}"


def _dur(ns: int) -> str:
    from .format import fmt_duration

    return fmt_duration(ns / 1e9)


def stream_code(config: dict) -> str:
    cli = ["nats", "stream", "add", config["name"], "--subjects", ",".join(config.get("subjects") or [])]
    cli += ["--storage", config.get("storage", "file"), "--retention", {"workqueue": "work"}.get(config.get("retention", "limits"), config.get("retention", "limits"))]
    cli += ["--discard", config.get("discard", "old")]
    for key, flag in (("max_msgs", "--max-msgs"), ("max_bytes", "--max-bytes"), ("max_msgs_per_subject", "--max-msgs-per-subject")):
        if config.get(key, -1) not in (-1, None):
            cli += [flag, str(config[key])]
    if config.get("max_age"):
        cli += ["--max-age", _dur(config["max_age"])]
    if config.get("duplicate_window"):
        cli += ["--dupe-window", _dur(config["duplicate_window"])]
    if (config.get("num_replicas") or 1) > 1:
        cli += ["--replicas", str(config["num_replicas"])]
    for tag in (config.get("placement") or {}).get("tags") or []:
        cli += ["--tag", tag]
    cli.append("--defaults")
    args = [f"name={config['name']!r}", f"subjects={list(config.get('subjects') or [])!r}",
            f"storage={config.get('storage', 'file')!r}", f"retention={config.get('retention', 'limits')!r}",
            f"discard={config.get('discard', 'old')!r}"]
    for key in ("max_msgs", "max_bytes", "max_msgs_per_subject"):
        if config.get(key, -1) not in (-1, None):
            args.append(f"{key}={config[key]}")
    for key in ("max_age", "duplicate_window"):
        if config.get(key):
            args.append(f"{key}={config[key] / 1e9:g}")
    if (config.get("num_replicas") or 1) > 1:
        args.append(f"num_replicas={config['num_replicas']}")
    return f"$ {shlex.join(cli)}\nawait nc.jetstream().add_stream({', '.join(args)})"


def consumer_code(stream: str, config: dict) -> str:
    name = config.get("durable_name") or config.get("name", "")
    cli = ["nats", "consumer", "add", stream, name]
    cli += ["--push", "--target", config["deliver_subject"]] if config.get("deliver_subject") else ["--pull"]
    cli += ["--ack", config.get("ack_policy", "explicit"), "--deliver", config.get("deliver_policy", "all")]
    if config.get("ack_wait"):
        cli += ["--wait", _dur(config["ack_wait"])]
    if config.get("max_deliver", -1) not in (-1, 0, None):
        cli += ["--max-deliver", str(config["max_deliver"])]
    if config.get("filter_subject"):
        cli += ["--filter", config["filter_subject"]]
    cli.append("--defaults")
    args = [repr(stream), f"durable_name={name!r}", f"ack_policy={config.get('ack_policy', 'explicit')!r}",
            f"deliver_policy={config.get('deliver_policy', 'all')!r}"]
    if config.get("ack_wait"):
        args.append(f"ack_wait={config['ack_wait'] / 1e9:g}")
    if config.get("max_deliver", -1) not in (-1, 0, None):
        args.append(f"max_deliver={config['max_deliver']}")
    if config.get("filter_subject"):
        args.append(f"filter_subject={config['filter_subject']!r}")
    if config.get("deliver_subject"):
        args.append(f"deliver_subject={config['deliver_subject']!r}")
    return f"$ {shlex.join(cli)}\nawait nc.jetstream().add_consumer({', '.join(args)})"
