"""The real `nsc` (github.com/nats-io/nsc/v2, pinned at v2.15.0) for the
tests, found or built once and reused, as tests/natscli.py does for the
nats CLI: ``$NATSLAB_NSC``, else the test cache's Go bin dir, where it is
built with ``go install github.com/nats-io/nsc/v2@v2.15.0``. No binary means
the tests that need it skip and say why.

The build asks the local module cache first (``GOPROXY=file://...,<the
user's proxy>``): ``go install`` looks up the module's deprecation in the
proxy's version list, which proxy.golang.org answered 403 for nsc's
(3 Dec 2026); a cache that has the module answers that itself, and what it
lacks comes from the proxy as usual."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from natscli import find_go, go_bin_dir, go_build

NSC_VERSION = "v2.15.0"
NSC_MODULE = "github.com/nats-io/nsc/v2"

_found: tuple[str | None, str] | None = None


def find_nsc() -> tuple[str | None, str]:
    """(path to nsc, "") or (None, why there is none). Asked once per process."""
    global _found
    if _found is not None:
        return _found
    explicit = os.environ.get("NATSLAB_NSC")
    if explicit:
        _found = (explicit, "") if os.access(explicit, os.X_OK) else (None, f"$NATSLAB_NSC={explicit} is not a program")
        return _found
    env = {"GOBIN": str(go_bin_dir())}
    go = find_go()
    if go:
        try:
            cache = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30).stdout.strip()
            proxy = subprocess.run([go, "env", "GOPROXY"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            cache = proxy = ""
        if cache and Path(cache, "cache", "download").is_dir():
            env["GOPROXY"] = f"file://{cache}/cache/download" + (f",{proxy}" if proxy else "")
    _found = go_build("nsc", ["install", f"{NSC_MODULE}@{NSC_VERSION}"], go_bin_dir() / "nsc",
                      f"{NSC_MODULE}@{NSC_VERSION}", extra_env=env,
                      timeout=240)  # (a fresh machine fetches its modules: a slow proxy skips one test, it does not hold CI)
    return _found


class Nsc:
    """nsc with every directory (config, store, keys) under ``home``, so
    nothing of the user's own is read or written."""

    def __init__(self, path: str, home: Path):
        self.path, self.home = path, home

    def __call__(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NSC_", "NKEYS_"))}
        r = subprocess.run([self.path, "-H", str(self.home), *args], capture_output=True, text=True, timeout=60,
                           env=env)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout + r.stderr


if __name__ == "__main__":  # build ahead of the tests; never fails, says why not
    path, why = find_nsc()
    print(path or f"no nsc: {why}")
