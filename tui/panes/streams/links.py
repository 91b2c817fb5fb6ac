"""The stream form's topology fields: mirror, sources, subject transform, republish.

Each is one line of text, parsed here into the JSON nats-server takes:
``ORDERS filter=orders.eu start=10`` for a mirror or one source (sources are
comma separated), ``src -> dest`` for a subject transform and for republish
(``headers_only`` after it sends headers only). The server judges the
mappings; its error lands next to the field it is about (``ERROR_FIELDS``).
"""

from __future__ import annotations

import json
import re
from typing import Iterable

from textual.widgets import Input

from ...client import name_error, subject_error
from ...widgets.form import FormField

# checked before the form's own patterns: "stream transform: invalid subject"
# is about the transform, not the subjects
ERROR_FIELDS = [
    (r"republish", "republish"),
    (r"mirror", "mirror"),
    (r"source", "sources"),
    (r"transform|mapping|wildcard|partition|split", "subject_transform"),
]
ARROW = re.compile(r"\s*(?:->|→)\s*")


def origin_text(origin: dict) -> str:
    """A mirror or source config as the form shows it."""
    parts = [origin.get("name", "")]
    if origin.get("filter_subject"):
        parts.append(f"filter={origin['filter_subject']}")
    if origin.get("opt_start_seq"):
        parts.append(f"start={origin['opt_start_seq']}")
    return " ".join(parts)


def parse_origin(text: str) -> dict:
    """``NAME [filter=SUBJECT] [start=SEQ]`` → a StreamSource; ValueError says what is wrong."""
    name, *options = text.split()
    if (err := name_error(name, "stream name")) is not None:
        raise ValueError(f"{name}: {err}")
    origin: dict = {"name": name}
    for option in options:
        key, _, value = option.partition("=")
        if key == "filter" and value:
            if (err := subject_error(value, wildcards=True)) is not None:
                raise ValueError(f"filter {value}: {err}")
            origin["filter_subject"] = value
        elif key == "start" and value.isdigit() and int(value) > 0:
            origin["opt_start_seq"] = int(value)
        else:
            raise ValueError(f"{option!r}: write filter=SUBJECT or start=SEQ after the stream's name")
    return origin


def parse_mapping(text: str, what: str) -> tuple[str, str, list[str]]:
    """``src -> dest [flags]`` → (src, dest, flags)."""
    parts = ARROW.split(text, maxsplit=1)
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise ValueError(f"write the {what} as: source subject -> destination")
    dest, *flags = parts[1].split()
    return parts[0], dest, flags


def link_fields(config: dict) -> Iterable[FormField]:
    mirror = config.get("mirror")
    yield FormField("Mirror of stream (NAME filter=SUBJECT start=SEQ; a mirror has no subjects)",
                    Input(origin_text(mirror) if mirror else "", placeholder="e.g. ORDERS", id="mirror"),
                    field_id="mirror")
    sources = ", ".join(origin_text(s) for s in config.get("sources") or ())
    yield FormField("Sources (comma separated, each NAME filter=SUBJECT start=SEQ)",
                    Input(sources, placeholder="e.g. ORDERS filter=orders.eu start=10, RETURNS", id="sources"),
                    field_id="sources")
    t = config.get("subject_transform") or {}
    yield FormField("Subject transform (src -> dest, e.g. orders.* -> eu.orders.{{wildcard(1)}})",
                    Input(f"{t['src']} -> {t['dest']}" if t.get("dest") else "", id="subject_transform"),
                    field_id="subject_transform")
    rp = config.get("republish") or {}
    text = f"{rp.get('src', '>')} -> {rp['dest']}" + (" headers_only" if rp.get("headers_only") else "") if rp.get("dest") else ""
    yield FormField("Republish (src -> dest, add headers_only for headers only)",
                    Input(text, placeholder="e.g. orders.> -> copy.orders.>", id="republish"),
                    field_id="republish")


def _mirror(text: str) -> dict:
    return parse_origin(text)


def _sources(text: str) -> list[dict] | None:
    entries = [e.strip() for e in text.split(",") if e.strip()]
    return [parse_origin(e) for e in entries] or None


def _transform(text: str) -> dict:
    src, dest, flags = parse_mapping(text, "subject transform")
    if flags:
        raise ValueError(f"unexpected {' '.join(flags)!r} after the destination")
    return {"src": src, "dest": dest}


def _republish(text: str) -> dict:
    src, dest, flags = parse_mapping(text, "republish")
    if flags not in ([], ["headers_only"]):
        raise ValueError(f"unexpected {' '.join(flags)!r}: only headers_only may follow")
    return {"src": src, "dest": dest, **({"headers_only": True} if flags else {})}


# each link field: its id (also the config key) and the parser of its text
_LINK_PARSERS = (("mirror", _mirror), ("sources", _sources),
                 ("subject_transform", _transform), ("republish", _republish))


def apply_links(form, config: dict) -> bool:
    """Put the four fields into ``config``; False (errors shown) when one does not parse.
    An empty field removes its key."""
    ok = True
    for key, parse in _LINK_PARSERS:
        text = form.value(key)
        try:
            value = parse(text) if text else None
        except ValueError as exc:
            form.show_error(key, str(exc))
            ok = False
            continue
        if value:
            config[key] = value
        else:
            config.pop(key, None)
    if (config.get("mirror") or config.get("sources")) and not form.value("subjects"):
        config.pop("subjects", None)  # fed by other streams only, not by publishers
    return ok


def code_note(config: dict) -> str:
    """What the copied code leaves out: the generated lines cover the common fields only."""
    left = [label for key, label in (("mirror", "mirror"), ("sources", "sources"),
                                     ("subject_transform", "subject transform"), ("republish", "republish"))
            if config.get(key)]
    if not left:
        return ""
    return (f"\n# not in the lines above: {', '.join(left)} — the form sends them in the "
            f"stream create/update request as JSON:\n"
            + json.dumps({k: config[k] for k in ("mirror", "sources", "subject_transform", "republish") if config.get(k)}))
