"""Run `-t` of nats-server and of natslab on every .conf of a nats-server
checkout (its conf/, server/configs/ and test/configs/, each from the
directory its Go tests run in) and list the files nats-server takes and
natslab does not. Nothing of the checkout is copied here.

    python scripts/upstream_configs.py /path/to/nats-server-checkout
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def check(argv: list[str], cwd: Path, rel: str) -> tuple[bool, str]:
    try:
        r = subprocess.run(argv + ["-c", rel, "-t"], cwd=cwd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False, "timeout"
    return r.returncode == 0, " ".join(r.stderr.split())[:300]


def main() -> int:
    root = Path(sys.argv[1])
    natslab = [sys.executable, "-m", "natslab", "server"]
    taken = refused = 0
    for conf in sorted(root.glob("*/**/*.conf")):
        top = root / conf.relative_to(root).parts[0]
        rel = str(conf.relative_to(top))
        ok, _ = check(["nats-server"], top, rel)
        if not ok:
            continue
        taken += 1
        ok, why = check(natslab, top, rel)
        if not ok:
            refused += 1
            print(f"{conf.relative_to(root)}: {why}")
    print(f"{taken - refused} of the {taken} files nats-server takes, natslab takes too")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
