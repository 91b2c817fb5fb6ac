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

import difflib
import fcntl
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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


# a failed build is not tried again for this long (a machine without the
# module proxy would otherwise pay the build's timeout in every test run)
RETRY_FAILED_BUILD_S = 1800
BUILD_TIMEOUT_S = 600


def go_build(label: str, args: list[str], target: Path, key: str, cwd: Path | None = None,
             extra_env: dict[str, str] | None = None, timeout: float = BUILD_TIMEOUT_S) -> tuple[str | None, str]:
    """Run `go args...` to make `target` unless it is there for this `key`
    already; (path, "") or (None, why not). Serialised by a file lock so two
    test processes do not build at once; a failure is remembered for a while
    (`.<label>.failed` next to the target)."""
    go = find_go()
    bindir = target.parent
    try:
        bindir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return None, f"cannot make {bindir}: {e}"
    with open(bindir.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp, failed = bindir / f".{label}.version", bindir / f".{label}.failed"
        if target.exists() and stamp.exists() and stamp.read_text().strip() == key:
            return str(target), ""
        if not go:
            return None, f"no Go toolchain: {GO_HINT}"
        try:
            age = time.time() - failed.stat().st_mtime
            old_key, old_why = failed.read_text().split("\n", 1)
            if old_key == key and age < RETRY_FAILED_BUILD_S:
                return None, f"{old_why.strip()} (an attempt {age / 60:.0f} min ago; delete {failed} to try again now)"
        except (OSError, ValueError):
            pass
        env = {**go_env(go), **(extra_env or {})}
        cmd = f"go {' '.join(args)}"
        try:
            out = subprocess.run([go, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
            ok = out.returncode == 0 and target.exists()
            why = "" if ok else f"`{cmd}` failed: {' / '.join((out.stderr or out.stdout).strip().splitlines()[-3:])}; {GO_HINT}"
        except (OSError, subprocess.TimeoutExpired) as e:
            ok, why = False, f"`{cmd}` failed ({e}); {GO_HINT}"
        if not ok:
            failed.write_text(f"{key}\n{why}\n")
            return None, why
        failed.unlink(missing_ok=True)
        stamp.write_text(key + "\n")
        return str(target), ""


def go_install(module: str, version: str, binary: str) -> tuple[str | None, str]:
    """`go install module@version` into go_bin_dir(), once."""
    return go_build(binary, ["install", f"{module}@{version}"], go_bin_dir() / binary, f"{module}@{version}",
                    extra_env={"GOBIN": str(go_bin_dir())})


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

    def run_tty(self, url: str | None, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """run() on a pseudo-terminal, for commands that refuse to work
        without one (`nats stream view` pages). Output has plain newlines."""
        master, slave = pty.openpty()
        try:
            proc = subprocess.Popen(self.argv(url, *args), env=self.env(), stdin=slave, stdout=slave, stderr=slave)
        finally:
            os.close(slave)
        out = b""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.1)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:  # EIO: the child closed the terminal
                        break
                    if not chunk:
                        break
                    out += chunk
                elif proc.poll() is not None:
                    break
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
            proc.wait(5)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(errors="replace").replace("\r\n", "\n"), "")

    def popen(self, url: str | None, *args: str, **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.STDOUT)
        return subprocess.Popen(self.argv(url, *args), env=self.env(), **kw)


# -- replaying a script of commands on both servers ---------------------------
@dataclass
class Sleep:
    seconds: float


@dataclass
class Mark:
    """Remember when this point was passed (for Until)."""
    name: str


@dataclass
class Until:
    """Wait until `seconds` after Mark(name)."""
    name: str
    seconds: float


@dataclass
class Bg:
    """Start `nats args` in the background; with `ready`, wait for a line
    containing it (a subscription is made) before going on."""
    name: str
    args: tuple
    ready: str | None = None


@dataclass
class Tty:
    """A command run on a pseudo-terminal (NatsCli.run_tty)."""
    args: tuple


@dataclass
class Collect:
    """Wait for background `name` to exit (it was given --count), or stop it
    after `timeout`; its output joins the transcript as `bg <name>`."""
    name: str
    timeout: float = 10.0


def replay(cli: "NatsCli", url: str, steps: list, workdir: Path) -> list[tuple[str, str]]:
    """Run steps against one server: [(command line, output)]. A command is
    a tuple of arguments; `{dir}` in one is this server's own `workdir` and
    `{url}` its URL (both written back so in outputs, so they compare). A
    command starting with `context` or `--context` runs without --server."""
    out: list[tuple[str, str]] = []
    marks: dict[str, float] = {}
    bg: dict[str, subprocess.Popen] = {}
    workdir.mkdir(parents=True, exist_ok=True)
    wd = str(workdir)

    def sub(args: tuple) -> list[str]:
        return [a.replace("{dir}", wd).replace("{url}", url) for a in args]

    def unsub(text: str) -> str:
        return text.replace(wd, "{dir}").replace(url, "{url}")

    try:
        for step in steps:
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
            elif isinstance(step, Mark):
                marks[step.name] = time.monotonic()
            elif isinstance(step, Until):
                time.sleep(max(0.0, marks[step.name] + step.seconds - time.monotonic()))
            elif isinstance(step, Bg):
                proc = cli.popen(url, *sub(step.args))
                bg[step.name] = proc
                if step.ready:
                    seen = _read_until(proc, step.ready, 10.0)
                    assert step.ready in seen, f"nats {' '.join(step.args)} never said {step.ready!r}: {seen!r}"
                    proc.seen = seen
            elif isinstance(step, Collect):
                proc = bg.pop(step.name)
                try:
                    rest, _ = proc.communicate(timeout=step.timeout)
                except subprocess.TimeoutExpired:
                    proc.terminate()
                    rest, _ = proc.communicate(timeout=5)
                text = getattr(proc, "seen", "") + rest.decode(errors="replace")
                out.append((f"bg {step.name}", unsub(text)))
            elif isinstance(step, Tty):
                res = cli.run_tty(url, *sub(step.args))
                out.append(("nats " + " ".join(step.args), unsub(res.stdout + (f"[exit {res.returncode}]\n" if res.returncode else ""))))
            else:
                # `nats context ...` has its own --server flag; `--context X`
                # names the server through the context
                res = cli.run(None if step[0] in ("--context", "context") else url, *sub(step))
                text = res.stdout + res.stderr + (f"[exit {res.returncode}]\n" if res.returncode else "")
                out.append(("nats " + " ".join(step), unsub(text)))
    finally:
        for proc in bg.values():
            proc.terminate()
            proc.wait(5)
    return out


def _read_until(proc: subprocess.Popen, needle: str, timeout: float) -> str:
    """What proc wrote up to a line containing needle (or the timeout)."""
    deadline = time.monotonic() + timeout
    seen = b""
    fd = proc.stdout.fileno()
    while needle.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        seen += chunk
    return seen.decode(errors="replace")


def replay_both(cli: "NatsCli", servers: dict, steps: list, tmp: Path) -> dict[str, list[tuple[str, str]]]:
    """replay() on each server at once, so waits are paid once."""
    with ThreadPoolExecutor(len(servers)) as pool:
        # each with its own config dir: `nats context` steps do not meet
        futs = {kind: pool.submit(replay, NatsCli(cli.path, tmp / f"work-{kind}" / "config"), srv.url, steps, tmp / f"work-{kind}")
                for kind, srv in servers.items()}
        return {kind: f.result() for kind, f in futs.items()}


# What must differ between two servers and two runs: clock times and dates,
# ages and round trips, server ids (the default server name is the id),
# ports, client ids (nats-server also spends ids on its internal clients,
# three per stream and two per consumer; docs/compatibility.md), nuids.
MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"), "<ts>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "<date>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<time>"),
    (re.compile(r"\bN[A-Z2-7]{55}\b"), "<server-id>"),
    (re.compile(r"_INBOX\.[A-Za-z0-9]+(\.[A-Za-z0-9]+)*"), "_INBOX.<nuid>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"(Client ID:) \d+"), r"\1 <cid>"),
    (re.compile(r"(rtt|RTT:?|rtt time) [\d.]+[µnm]?s"), r"\1 <dur>"),
    (re.compile(r"\b[\d.hms]+[µnm]?s ago\b"), "<dur> ago"),
]
# a table's cells are compared stripped (column widths follow the longest
# value); the columns that hold ages are masked
AGE_COLUMNS = {"Last Message", "Last Delivery", "Last Update", "Last Activity"}


def mask(text: str, extra: list | None = None) -> list[str]:
    lines = []
    ages: set[int] = set()
    # go-cmp (the diffs `stream edit` and `consumer edit` print) picks at
    # random between spaces and no-break spaces, so its output cannot be parsed
    text = text.replace("\u00a0", " ")
    for line in text.splitlines():
        for rx, repl in MASKS + list(extra or []):
            line = rx.sub(repl, line)
        if "│" in line:
            cells = [c.strip() for c in line.split("│")]
            if AGE_COLUMNS & set(cells):
                ages = {i for i, c in enumerate(cells) if c in AGE_COLUMNS}
            else:
                cells = ["<age>" if i in ages else c for i, c in enumerate(cells)]
            line = "│".join(cells)
        elif line and set(line) <= set("╭╮╰╯├┤┬┴┼─"):
            line = re.sub("─+", "─", line)
        lines.append(line)
    return lines


def differences(transcripts: dict, extra: list | None = None) -> str:
    """The masked outputs that differ, natslab against nats-server, as a
    unified diff per command ('' when none)."""
    ref, ours = transcripts["nats-server"], transcripts["natslab"]
    if [c for c, _ in ours] != [c for c, _ in ref]:
        return f"different commands: {[c for c, _ in ref]} != {[c for c, _ in ours]}"
    diffs = []
    for (cmd, a), (_, b) in zip(ref, ours):
        ma, mb = mask(a, extra), mask(b, extra)
        if ma != mb:
            diffs.append(f"$ {cmd}\n" + "\n".join(difflib.unified_diff(ma, mb, "nats-server", "natslab", lineterm="", n=1)))
    return "\n\n".join(diffs)


def outputs(t: list[tuple[str, str]], cmd: str) -> list[str]:
    """Every output of `cmd` in a transcript, in order."""
    found = [text for c, text in t if c == cmd]
    assert found, f"no `{cmd}` in the transcript"
    return found


def field(text: str, label: str) -> str:
    """The value after `label:` on the line that starts with it."""
    for line in text.splitlines():
        if line.strip().startswith(label + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {label!r} in:\n{text}")


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
