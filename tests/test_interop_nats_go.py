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
from natscli import go_bin_dir, go_build

SRC = Path(__file__).resolve().parent.parent / "interop" / "nats-go"


def build() -> str:
    files = sorted(p for p in SRC.iterdir() if p.suffix == ".go" or p.name in ("go.mod", "go.sum"))
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()[:16]
    target = go_bin_dir() / "nats-go-check"
    path, why = go_build("nats-go-check", ["build", "-o", str(target), "."], target, digest, cwd=SRC)
    if not path:
        pytest.skip(f"interop/nats-go not built: {why}")
    return path


def test_nats_go_transcripts_match(tmp_path):
    exe = build()
    env = {"NATS_SERVER": nats_server_binary(), "NATSLAB_SERVER": f"{shlex.quote(sys.executable)} -m natslab.server"}
    res = subprocess.run([exe, str(tmp_path / "out")], env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    lines = (tmp_path / "out" / "natslab.txt").read_text().splitlines()
    assert len(lines) > 80 and all("\t" in line for line in lines)
    assert "0 of" in res.stdout.splitlines()[-1]
