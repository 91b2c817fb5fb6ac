"""Where natslab keeps things, the remembered settings, and nats CLI contexts."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "natslab"


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))


def publish_history_file(store: str) -> Path:
    """Where the Publish pane keeps its recent publishes for one store: an
    embedded broker's store directory or a remote server's URL. Readable name
    plus a hash, so two stores never share a file."""
    readable = re.sub(r"[^A-Za-z0-9]+", "_", store).strip("_")[-40:]
    digest = hashlib.sha1(store.encode()).hexdigest()[:10]
    return data_dir() / "publish-history" / f"{readable}-{digest}.json"


def user_themes_dir() -> Path:
    return config_dir() / "themes"


def settings_path() -> Path:
    return config_dir() / "settings.json"


def load_settings() -> dict:
    try:
        data = json.loads(settings_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_setting(key: str, value) -> None:
    settings = load_settings()
    settings[key] = value
    try:
        settings_path().parent.mkdir(parents=True, exist_ok=True)
        settings_path().write_text(json.dumps(settings, indent=2))
    except OSError:
        pass  # remembering a preference is best effort


@dataclass
class NatsContext:
    name: str
    url: str | None = None
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds: str | None = None
    nkey: str | None = None  # the path of an nkey seed file
    cert: str | None = None  # TLS client certificate, its key, the CA to trust
    key: str | None = None
    ca: str | None = None
    tls_first: bool = False


def _nats_config_home() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "nats"


def selected_context_name() -> str | None:
    """The context the nats CLI has selected (``nats context select``), if any."""
    try:
        name = (_nats_config_home() / "context.txt").read_text().strip()
    except OSError:
        return None
    return name or None


def load_context(name: str) -> NatsContext:
    """Read ``nats/context/NAME.json``. Raises ValueError in plain words."""
    path = _nats_config_home() / "context" / f"{name}.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"no nats context named '{name}' (looked for {path})") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read nats context {path}: {exc}") from None
    return NatsContext(
        name=name,
        url=data.get("url") or None,
        user=data.get("user") or None,
        password=data.get("password") or None,
        token=data.get("token") or None,
        creds=data.get("creds") or None,
        nkey=data.get("nkey") or None,
        cert=data.get("cert") or None,
        key=data.get("key") or None,
        ca=data.get("ca") or None,
        tls_first=bool(data.get("tls_first")),
    )
