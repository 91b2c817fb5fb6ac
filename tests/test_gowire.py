"""server/gowire.py against Go itself: time.Duration.String() for values
checked with Go 1.26 (hard-coded), and, where a Go toolchain is on PATH, for
many more values printed by a tiny Go program; RFC 3339 times as Go's
encoding/json writes a UTC time.Time."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from natslab.server.gowire import NS, go_duration, parse_go_duration, parse_rfc3339, rfc3339

# (ns, what Go 1.26's time.Duration(ns).String() printed)
GO_DURATIONS = [
    (0, "0s"), (1, "1ns"), (100, "100ns"), (999, "999ns"), (1000, "1µs"), (1001, "1.001µs"), (1500, "1.5µs"),
    (999_999, "999.999µs"), (1_000_000, "1ms"), (1_234_567, "1.234567ms"), (1_230_000, "1.23ms"),
    (850_000, "850µs"), (1_191_304, "1.191304ms"), (999_999_999, "999.999999ms"), (NS, "1s"),
    (NS + 1, "1.000000001s"), (60 * NS, "1m0s"), (90 * NS + 1, "1m30.000000001s"), (3723 * NS + NS // 2, "1h2m3.5s"),
    (3600 * NS, "1h0m0s"), (86400 * NS, "24h0m0s"), (-1, "-1ns"), (-1_234_567, "-1.234567ms"),
    (-(90 * NS + 1), "-1m30.000000001s"), (2**63 - 1, "2562047h47m16.854775807s"),
    (-(2**63), "-2562047h47m16.854775808s"),
]


@pytest.mark.parametrize("ns,text", GO_DURATIONS)
def test_duration_string_as_go_prints_it(ns, text):
    assert go_duration(ns) == text


@pytest.mark.parametrize("ns,text", [d for d in GO_DURATIONS if d[0] != -(2**63)])
def test_parse_duration_reads_what_go_prints(ns, text):
    if abs(ns) < 2**53:  # (ParseDuration here sums in floats: exact below 2**53 ns)
        assert parse_go_duration(text) == ns


GO_PROGRAM = """package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		n, _ := strconv.ParseInt(sc.Text(), 10, 64)
		fmt.Println(time.Duration(n).String())
	}
}
"""


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain on PATH")
def test_duration_string_against_go_for_many_values(tmp_path):
    rnd = random.Random(31)
    values = [0, 1, -1, 2**63 - 1, -(2**63)]
    for digits in range(1, 20):  # every magnitude, with and without trailing zeros
        for _ in range(20):
            n = rnd.randrange(10 ** (digits - 1), 10**digits)
            if n < 2**63:
                values += [n, -n, n - n % 10 ** rnd.randrange(digits)]
    values += [k * unit for k in (1, 7, 59, 60, 61, 3599, 3600, 86399) for unit in (1, 1000, 10**6, NS, 60 * NS)]
    (tmp_path / "main.go").write_text(GO_PROGRAM)
    run = subprocess.run(["go", "run", "main.go"], cwd=tmp_path, input="\n".join(map(str, values)) + "\n",
                         capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "GO111MODULE": "off", "GOFLAGS": ""})
    assert run.returncode == 0, run.stderr
    expected = run.stdout.splitlines()
    assert len(expected) == len(values)
    assert [go_duration(n) for n in values] == expected


def test_rfc3339_as_go_marshals_a_utc_time():
    assert rfc3339(1_700_000_000_123_000_000) == "2023-11-14T22:13:20.123Z"
    assert rfc3339(1_700_000_000 * NS) == "2023-11-14T22:13:20Z"
    assert rfc3339(1_700_000_000 * NS + 1) == "2023-11-14T22:13:20.000000001Z"
    assert rfc3339(0) == "0001-01-01T00:00:00Z"  # Go's zero time.Time
    for ns in (1_700_000_000_123_000_000, 1_700_000_000 * NS + 1, 1_234_567_890_987_654_321):
        assert parse_rfc3339(rfc3339(ns)) == ns
