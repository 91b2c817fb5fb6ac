"""The real `nats` CLI (natscli, pinned at v0.5.0: the walkthrough's own
version) for the tests, found or built once and reused.

Where it comes from, first match wins:
1. ``$NATSLAB_NATS_CLI``: a path to a nats binary (it must say v0.5.0);
2. ``nats`` on PATH, if ``nats --version`` says v0.5.0;
3. the cache dir ``$NATSLAB_GO_BIN`` (default
   ``$XDG_CACHE_HOME/natslab-tests/go/bin``, i.e. ``~/.cache/...``), where
   it is built once with ``go install github.com/nats-io/natscli/nats@v0.5.0``
   when ``go`` (on PATH or /usr/local/go/bin) exists.

No binary means the tests that need it skip, with a reason saying how to get
Go; nothing else in the suite needs Go. ``python3 tests/natscli.py`` builds it
ahead of the tests (``.ci/run`` does) and never fails: it prints why not.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

NATSCLI_VERSION = "v0.5.0"
NATSCLI_MODULE = "github.com/nats-io/natscli/nats"
GO_HINT = (
    "install Go 1.26+ (natscli v0.5.0 needs it; an older Go 1.21+ fetches it through the module proxy) (https://go.dev/dl/, or your package manager's golang) so "
    f"`go install {NATSCLI_MODULE}@{NATSCLI_VERSION}` can build it, or put natscli "
    f"{NATSCLI_VERSION} on PATH / in $NATSLAB_NATS_CLI"
)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "natslab-tests"


def go_bin_dir() -> Path:
    """Where tests put (and look for) the Go tools they build."""
    return Path(os.environ.get("NATSLAB_GO_BIN") or cache_root() / "go" / "bin")


def find_go() -> str | None:
    go = shutil.which("go")
    if go:
        return go
    for cand in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go"):
        if os.access(cand, os.X_OK):
            return cand
    return None


def go_env(go: str) -> dict[str, str]:
    """An environment in which `go install` works on a fresh machine: the
    user's own GOPATH/GOCACHE when Go can name them (so a warm module cache
    is reused), else dirs under the test cache; no toolchain download; no C
    compiler needed; a module cache that `rm -rf` can delete. GOTOOLCHAIN is
    left alone, so a Go older than natscli's go.mod asks for fetches the
    newer toolchain through the module proxy."""
    env = dict(os.environ)
    env["CGO_ENABLED"] = "0"
    # -modcacherw: Go makes its module cache read-only by default, so a
    # cache under ~/.cache could not be removed with rm -rf. Any user
    # GOFLAGS such as -mod=vendor would break a module-mode install.
    env["GOFLAGS"] = "-modcacherw -buildvcs=false"
    for var, sub in (("GOPATH", "gopath"), ("GOCACHE", "gobuild")):
        if env.get(var):
            continue
        try:
            val = subprocess.run([go, "env", var], env=env, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            val = ""
        if not val or val == "off":
            env[var] = str(cache_root() / "go" / sub)
    return env


def cli_version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def go_install(module: str, version: str, binary: str) -> tuple[str | None, str]:
    """Build `module@version` into go_bin_dir() unless `binary` is already
    there; (path, "") or (None, why not). Serialised by a file lock so two
    test processes do not build at once."""
    bindir = go_bin_dir()
    target = bindir / binary
    go = find_go()
    try:
        bindir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return None, f"cannot make {bindir}: {e}"
    with open(bindir.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = bindir / f".{binary}.version"
        if target.exists() and stamp.exists() and stamp.read_text().strip() == f"{module}@{version}":
            return str(target), ""
        if not go:
            return None, f"no Go toolchain: {GO_HINT}"
        env = go_env(go)
        env["GOBIN"] = str(bindir)
        try:
            out = subprocess.run([go, "install", f"{module}@{version}"], env=env, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"`go install {module}@{version}` failed ({e}): {GO_HINT}"
        if out.returncode != 0 or not target.exists():
            tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
            return None, f"`go install {module}@{version}` failed: {' / '.join(tail)}; {GO_HINT}"
        stamp.write_text(f"{module}@{version}\n")
        return str(target), ""


_found: tuple[str | None, str] | None = None


def find_nats() -> tuple[str | None, str]:
    """(path to natscli v0.5.0, "") or (None, the reason there is none).
    Asked once per process."""
    global _found
    if _found is not None:
        return _found
    want = NATSCLI_VERSION.lstrip("v")
    explicit = os.environ.get("NATSLAB_NATS_CLI")
    if explicit:
        ver = cli_version(explicit)
        if ver is None or ver.lstrip("v") != want:
            _found = (None, f"$NATSLAB_NATS_CLI={explicit} says {ver!r}, not {NATSCLI_VERSION}")
        else:
            _found = (explicit, "")
        return _found
    on_path = shutil.which("nats")
    if on_path and (cli_version(on_path) or "").lstrip("v") == want:
        _found = (on_path, "")
        return _found
    path, why = go_install(NATSCLI_MODULE, NATSCLI_VERSION, "nats")
    if path and (cli_version(path) or "").lstrip("v") != want:
        path, why = None, f"{path} does not say {NATSCLI_VERSION}"
    _found = (path, why)
    return _found


class NatsCli:
    """Runs the nats CLI against one broker, isolated from the user's own
    contexts and NATS_* settings: its config dir is a private temp dir (so
    `nats context` commands work there too) and the server is --server."""

    def __init__(self, path: str, config_home: Path):
        self.path = path
        self.config_home = config_home
        config_home.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
        env["XDG_CONFIG_HOME"] = str(self.config_home)
        env["NO_COLOR"] = "1"
        env["TZ"] = "UTC"
        return env

    def argv(self, url: str | None, *args: str) -> list[str]:
        return [self.path, *(["--server", url] if url else []), *args]

    def run(self, url: str | None, *args: str, timeout: float = 30, input: bytes | None = None, check: bool = False) -> subprocess.CompletedProcess:
        """One command; stdout and stderr as text. `url` None: no --server
        (a context chooses the server)."""
        out = subprocess.run(self.argv(url, *args), env=self.env(), input=input, capture_output=True, timeout=timeout)
        res = subprocess.CompletedProcess(out.args, out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace"))
        if check and res.returncode != 0:
            raise AssertionError(f"nats {' '.join(args)} exited {res.returncode}: {res.stdout}{res.stderr}")
        return res

    def popen(self, url: str | None, *args: str, **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.STDOUT)
        return subprocess.Popen(self.argv(url, *args), env=self.env(), **kw)


try:
    import pytest
except ImportError:  # run as a script (`.ci/run` builds before installing the test extra)
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="session")
    def nats_cli(tmp_path_factory) -> NatsCli:
        """natscli v0.5.0, or a skip that says how to get it."""
        path, why = find_nats()
        if not path:
            pytest.skip(f"natscli {NATSCLI_VERSION} not available: {why}")
        return NatsCli(path, tmp_path_factory.mktemp("natscli-config"))


if __name__ == "__main__":
    path, why = find_nats()
    if path:
        print(f"natscli {NATSCLI_VERSION}: {path}")
    else:
        print(f"natscli {NATSCLI_VERSION} not available, its tests will skip: {why}", file=sys.stderr)
    sys.exit(0)
