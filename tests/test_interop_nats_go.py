"""interop/nats-go: nats.go (pinned in its go.mod) drives natslab's broker and
nats-server through its own APIs and the two transcripts must not differ.
Built once into the test cache (like natscli, tests/natscli.py) and run here:
it takes a few seconds. Skips where there is no Go or the build fails."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import nats_server_binary
from natscli import GO_HINT, find_go, go_bin_dir, go_env

SRC = Path(__file__).resolve().parent.parent / "interop" / "nats-go"


def build() -> str:
    go = find_go()
    if not go:
        pytest.skip(f"no Go toolchain for interop/nats-go: {GO_HINT}")
    files = sorted(p for p in SRC.iterdir() if p.suffix == ".go" or p.name in ("go.mod", "go.sum"))
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()[:16]
    target = go_bin_dir() / f"nats-go-check-{digest}"
    if target.exists():
        return str(target)
    go_bin_dir().mkdir(parents=True, exist_ok=True)
    try:
        out = subprocess.run([go, "build", "-o", str(target), "."], cwd=SRC, env=go_env(go), capture_output=True,
                             text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"building interop/nats-go failed ({e}): {GO_HINT}")
    if out.returncode != 0:
        pytest.skip(f"building interop/nats-go failed: {' / '.join(out.stderr.strip().splitlines()[-3:])}")
    return str(target)


def test_nats_go_transcripts_match(tmp_path):
    exe = build()
    env = {"NATS_SERVER": nats_server_binary(), "NATSLAB_SERVER": f"{shlex.quote(sys.executable)} -m natslab.server"}
    res = subprocess.run([exe, str(tmp_path / "out")], env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    lines = (tmp_path / "out" / "natslab.txt").read_text().splitlines()
    assert len(lines) > 80 and all("\t" in line for line in lines)
    assert "0 of" in res.stdout.splitlines()[-1]
