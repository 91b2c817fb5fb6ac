"""The values of cluster {}, gateway {}, leafnodes {} and mqtt {}: a single
node uses none of them, but a file nats-server refuses is refused by both,
with the same words at the same file:line:col (nats-server's parseCluster,
parseGateway(s), parseLeafNodes, parseRemoteLeafNodes, parseMQTT). Each
case runs ``-t`` on natslab and on nats-server with the same assertions;
valid full blocks are in the corpus (tests/configs/good/*_full.conf,
leafnode_remotes.conf). nats-server reads a block's keys in Go's map order
and stops a block at a value of the wrong type (its panic), so each case
has at most one such value in a block, and lines are compared as a set."""

from __future__ import annotations

import json
import subprocess

import pytest

from test_cli import binary


def check(kind: str, tmp_path, text: str, *flags: str) -> tuple[int, list[str]]:
    """``kind`` run on c.conf holding ``text`` (after ``port: -1``): its
    exit status and its lines, without the program's prefix."""
    (tmp_path / "c.conf").write_text(f"port: -1\n{text}\n")
    r = subprocess.run(binary(kind) + [*flags, "-c", "c.conf", "-sd", str(tmp_path / "store")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=20)
    prefix = "natslab server: " if kind == "natslab" else "nats-server: "
    return r.returncode, [ln.removeprefix(prefix) for ln in r.stderr.splitlines() if ln]


BAD = [
    # (the block, on the file's second line; what both say)
    ('cluster { routes: ["nats://bad host:x"] }',
     ['c.conf:2:21: error parsing route url ["nats://bad host:x"]']),
    ('cluster { routes: ["nats://a:1", "://nohost", "nats://[::1", "nats://h%41:1"] }',
     ['c.conf:2:35: error parsing route url ["://nohost"]', 'c.conf:2:48: error parsing route url ["nats://[::1"]', 'c.conf:2:63: error parsing route url ["nats://h%41:1"]']),
    ('cluster { routes: "nats://a:1" }',
     ['c.conf:2:11: interface conversion: interface {} is string, not []interface {}']),
    ('cluster { routes: ["nats://a:1", 5 ] }',
     ['c.conf:2:34: interface conversion: interface {} is int64, not string']),
    ('cluster { port: "abc" }',
     ['c.conf:2:11: interface conversion: interface {} is string, not int64']),
    ('cluster { listen: "127.0.0.1:x" }',
     ['c.conf:2:11: could not parse port "x"']),
    ('cluster { listen: "nocolon" }',
     ['c.conf:2:11: could not parse address string "nocolon"']),
    ('cluster { listen: true }',
     ['c.conf:2:11: expected port or host:port, got bool']),
    ('cluster { name: "my cluster" }',
     ['c.conf:2:11: cluster name cannot contain spaces']),
    ('cluster { no_advertise: "yes" }',
     ['c.conf:2:11: interface conversion: interface {} is string, not bool']),
    ('cluster { authorization { users: [ {user: a, password: b} ] } }',
     ['c.conf:2:11: Cluster authorization does not allow multiple users']),
    ('cluster { authorization { token: "t" } }',
     ['c.conf:2:11: Cluster authorization does not support tokens']),
    ('cluster { authorization { user: 5 } }',
     ['c.conf:2:11: runtime error: invalid memory address or nil pointer dereference', 'c.conf:2:27: interface conversion: interface {} is int64, not string']),
    ('cluster { authorization { user: a, password: b, timeout: "1x" } }',
     ['c.conf:2:49: error parsing authorization config, \'timeout\' time: unknown unit "x" in duration "1x"']),
    ('cluster { authorization { user: a, password: b, bogus: 1 } }',
     ['c.conf:2:49: unknown field "bogus"']),
    ('cluster { permissions { import: { allow: ["a", "b c"] }, bogus: 1 } }',
     ['c.conf:2:35: subject "b c" is not a valid subject', 'c.conf:2:58: Unknown field "bogus" parsing permissions']),
    ('cluster { permissions { import: "a", allow_responses: true } }',
     ['c.conf:2:11: Cluster permissions do not support dynamic responses']),
    ('cluster { tls { cert_file: "/nonexistent/c.pem", key_file: "/nonexistent/k.pem" } }',
     ['c.conf:2:11: error parsing X509 certificate/key pair: open /nonexistent/c.pem: no such file or directory']),
    ('cluster { tls { verify: "yes" } }',
     ["c.conf:2:17: error parsing tls config, expected 'verify' to be a boolean"]),
    ('cluster { compression: 5 }',
     ['c.conf:2:11: field "compression" should be a boolean or a structure, got int64']),
    ('cluster { compression { mode: s2_fast, rtt: ["10ms", "1x"] } }',
     ['c.conf:2:40: time: unknown unit "x" in duration "1x"']),
    ('cluster { accounts: ["a", 1 ] }',
     ['c.conf:2:27: error parsing accounts: unsupported type in array int64']),
    ('cluster { write_timeout: "sometimes" }',
     ["c.conf:2:11: write_timeout must be 'default', 'close' or 'retry'"]),
    ('cluster { write_deadline: "5x" }',
     ['c.conf:2:11: error parsing write_deadline: time: unknown unit "x" in duration "5x"']),
    ('cluster { connect_retries: 1.5 }',
     ['c.conf:2:11: interface conversion: interface {} is float64, not int64']),
    ('cluster { bogus: 1, pool_size: 3, ping_max: 2 }',
     ['c.conf:2:11: unknown field "bogus"']),
    ('gateway { name: "g w", reject_unknown: yes }',
     ['c.conf:2:11: gateway name cannot contain spaces']),
    ('gateway { gateways: [ {name: a, url: "nats://x y:1"} ] }',
     ['c.conf:2:33: error parsing gateway url ["nats://x y:1"]']),
    ('gateway { gateways: [ {name: a, urls: ["nats://h:1", "nats://h:1", "nats://[1.2.3.4]:1"]} ] }',
     ['c.conf:2:55: invalid use of field "nats://h:1": Duplicate gateway entry detected', 'c.conf:2:69: error parsing gateway url ["nats://[1.2.3.4]:1"]']),
    ('gateway { gateways: [ "a", {name: b, bogus: 1} ] }',
     ['c.conf:2:24: Expected gateway entry to be a map/struct, got a', 'c.conf:2:38: unknown field "bogus"']),
    ('gateway { gateways: "a" }',
     ['Expected gateways field to be an array, got string']),
    ('gateway { gateways: [ {name: 5} ] }',
     ['c.conf:2:24: interface conversion: interface {} is int64, not string']),
    ('gateway { authorization { users: [] } }',
     ['c.conf:2:11: Gateway authorization does not allow multiple users']),
    ('gateway { authorization { token: "t" } }',
     ['c.conf:2:11: Gateway authorization does not support tokens']),
    ('gateway { advertise: 5 }',
     ['c.conf:2:11: interface conversion: interface {} is int64, not string']),
    ('leafnodes { remotes: [ {url: "nats://a b:1"} ] }',
     ['c.conf:2:25: error parsing leafnode url ["nats://a b:1"]']),
    ('leafnodes { remotes: [ {urls: ["nats://a:1", "nats:// x"], bogus: 1} ] }',
     ['c.conf:2:47: error parsing leafnode url ["nats:// x"]', 'c.conf:2:60: unknown field "bogus"']),
    ('leafnodes { remotes: [ {url: 5} ] }',
     ['c.conf:2:25: Expected remote leafnode url to be an array or string, got 5']),
    ('leafnodes { remotes: [ "nats://a:1" ] }',
     ['c.conf:2:25: Expected remote leafnode entry to be a map/struct, got nats://a:1']),
    ('leafnodes { remotes: "nats://a:1" }',
     ['c.conf:2:13: Expected remotes field to be an array, got string']),
    ('leafnodes { remotes: [ {url: "nats://a:1", hub: "yes"}, {url: "nats://b b:1"} ] }',
     ['c.conf:2:44: interface conversion: interface {} is string, not bool']),
    ('leafnodes { remotes: [ {url: "nats://a:1", seed: "SUNOTASEED"} ] }',
     ['c.conf:2:44: Remote leafnode nkey is not a valid seed: "SUNOTASEED"']),
    ('leafnodes { remotes: [ {url: "nats://a:1", deny_imports: ["a", "b c"]} ] }',
     ['c.conf:2:44: subject "b c" is not a valid subject']),
    ('leafnodes { remotes: [ {url: "nats://a:1", deny_exports: 5} ] }',
     ['c.conf:2:44: Expected subject permissions to be a subject, or array of subjects, got int64']),
    ('leafnodes { remotes: [ {url: "nats://a:1", tls: { bogus: 1 }} ] }',
     ['c.conf:2:51: error parsing tls config, unknown field "bogus"']),
    ('leafnodes { remotes: [ {url: "nats://a:1", proxy: { bogus: 1 }} ] }',
     ['c.conf:2:53: unknown field "bogus"']),
    ('leafnodes { remotes: [ {url: "nats://a:1", first_info_timeout: "1y"} ] }',
     ['c.conf:2:44: error parsing first_info_timeout: time: unknown unit "y" in duration "1y"']),
    ('leafnodes { remotes: [ {url: "nats://a:1"}, {url: "nats://a:1"} ] }',
     ['c.conf:2:46: duplicate remote urls=["nats://a:1"], account="$G"']),
    ('leafnodes { authorization { user: a, password: b, users: [ {user: c, password: d} ] } }',
     ['c.conf:2:13: can not have a single user/pass and a users array']),
    ('leafnodes { authorization { users: [ {user: c, password: d}, {user: c, password: e} ] } }',
     ['c.conf:2:13: duplicate user "c" detected in leafnode authorization']),
    ('leafnodes { authorization { users: [ {user: c, bogus: d} ] } }',
     ['c.conf:2:48: unknown field "bogus"']),
    ('leafnodes { authorization { nkey: "UNOTAKEY" } }',
     ['c.conf:2:29: Not a valid public nkey for leafnode authorization']),
    ('leafnodes { authorization { timeout: true } }',
     ["c.conf:2:29: error parsing leafnode authorization config, 'timeout' wrong type"]),
    ('leafnodes { authorization: "x" }',
     ['c.conf:2:13: interface conversion: interface {} is string, not map[string]interface {}', 'c.conf:2:13: runtime error: invalid memory address or nil pointer dereference']),
    ('leafnodes { tls { cert_file: 5 } }',
     ["c.conf:2:19: error parsing tls config, expected 'cert_file' to be filename"]),
    ('leafnodes { min_version: "2.7.9" }',
     ['c.conf:2:13: the minimum version should be at least 2.8.0']),
    ('leafnodes { min_version: "two" }',
     ["c.conf:2:13: invalid leafnode's minimum version: invalid semver"]),
    ('leafnodes { reconnect: "5x" }',
     ['c.conf:2:13: error parsing reconnect: time: unknown unit "x" in duration "5x"']),
    ('leafnodes { listen: "a:b:c" }',
     ['c.conf:2:13: could not parse address string "a:b:c"']),
    ('leafnodes { bogus: 1 }',
     ['c.conf:2:13: unknown field "bogus"']),
    ('mqtt { ack_wait: "30x" }',
     ['c.conf:2:8: error parsing ack_wait: time: unknown unit "x" in duration "30x"']),
    ('mqtt { max_ack_pending: 70000 }',
     ['c.conf:2:8: invalid value 70000, should in [0..65535] range']),
    ('mqtt { max_ack_pending: "many" }',
     ['c.conf:2:8: interface conversion: interface {} is string, not int64']),
    ('mqtt { authorization { user: a, password: b, weird: 1 } }',
     ['c.conf:2:46: unknown field "weird"']),
    ('mqtt { authorization { user: 5 } }',
     ['c.conf:2:24: interface conversion: interface {} is int64, not string', 'c.conf:2:8: runtime error: invalid memory address or nil pointer dereference']),
    ('mqtt { tls: 5 }',
     ['c.conf:2:8: interface conversion: interface {} is int64, not map[string]interface {}']),
    ('mqtt { listen: "127.0.0.1:-" }',
     ['c.conf:2:8: could not parse port "-"']),
    ('mqtt { js_api_timeout: "1y", consumer_inactive_threshold: "z" }',
     ['c.conf:2:30: error parsing consumer_inactive_threshold: time: invalid duration "z"', 'c.conf:2:8: error parsing js_api_timeout: time: unknown unit "y" in duration "1y"']),
    ('mqtt { stream_replicas: "3" }',
     ['c.conf:2:8: interface conversion: interface {} is string, not int64']),
    ('mqtt { bogus: 1 }',
     ['c.conf:2:8: unknown field "bogus"']),
    ('cluster { permissions: 5 }',  # (nats-server hands the value on without its place)
     ['Expected permissions to be a map/struct, got 5']),
    ('cluster { authorization { users: [ {user: a, password: b, bogus: 1} ] } }',
     ['c.conf:2:11: Cluster authorization does not allow multiple users', 'c.conf:2:59: unknown field "bogus"']),
    ('cluster { ping_interval: true }',
     ['c.conf:2:11: invalid use of field "ping_interval": ping_interval should be converted to a duration',
      'c.conf:2:11: interface conversion: interface {} is bool, not int64']),
    ('gateway { tls { cert_file: "a.pem" } }',
     ["c.conf:2:11: missing 'key_file' in TLS configuration"]),
    ('gateway { gateways: [ {name: a, urls: "nats://a:1"} ] }',
     ['c.conf:2:33: interface conversion: interface {} is string, not []interface {}']),
    ('leafnodes { remotes: [ {url: "nats://a:1", js_cluster_migrate: { leader_migrate_delay: "5x" }} ] }',
     ['c.conf:2:66: error parsing leader_migrate_delay: time: unknown unit "x" in duration "5x"']),
    ('leafnodes { authorization { users: [ "x", {user: 5} ] } }',
     ['c.conf:2:39: Expected user entry to be a map/struct, got x',
      'c.conf:2:44: interface conversion: interface {} is int64, not string']),
    ('cluster { permissions { export: { deny: "foo bar" } } }',  # (a route's subjects name no queue)
     ['c.conf:2:11: cluster export deny: subject "foo bar" is not a valid subject']),
    ('cluster { authorization { user: a, password: b, permissions { subscribe: ["a", "x q"] } } }',
     ['c.conf:2:11: cluster export allow: subject "x q" is not a valid subject']),
    ('cluster { authorization { permissions: { url: "http://p:1" } } }',  # (parsed, with its error: the warning)
     ['c.conf:2:11: invalid use of field "authorization": setting "permissions" within cluster authorization block '
      'is deprecated', 'c.conf:2:42: Unknown field "url" parsing permissions']),
    ('cluster { permissions: { bogus: 1, allow_responses: true } }',
     ['c.conf:2:26: Unknown field "bogus" parsing permissions',
      'c.conf:2:11: Cluster permissions do not support dynamic responses']),
    ('cluster: 5',
     ['c.conf:2:1: Expected map to define cluster, got int64']),
    ('gateway: "x"',
     ['c.conf:2:1: Expected gateway to be a map, got string']),
    ('leafnodes: [1, 2 ]',
     ['c.conf:2:1: Expected map to define a leafnode, got []interface {}']),
    ('mqtt: true',
     ['c.conf:2:1: Expected mqtt to be a map, got bool']),
]


@pytest.mark.parametrize("text,want", BAD, ids=[f"{i + 1}-{t.split()[0]}" for i, (t, _) in enumerate(BAD)])
def test_bad_value_is_refused_as_nats_server_refuses_it(server_kind, tmp_path, text, want):
    rc, lines = check(server_kind, tmp_path, text, "-t")
    assert (rc, sorted(lines)) == (1, sorted(want)), lines


MANY = """cluster {
  name: "my cluster"
  listen: "127.0.0.1:x"
  routes: ["nats://bad host:x", "nats://ok:1", true ]
  bogus: 1
  authorization { user: a, password: b, users: [] }
  write_timeout: "sometimes"
  accounts: ["a", 1 ]
  compression: 5
  permissions: { import: { allow: "a b" }, bogus: 1 }
}
gateway {
  name: "g w"
  gateways: [ {name: a, url: "nats://x y:1", bogus: 2}, "five" ]
  reject_unknown: yes
}
leafnodes {
  listen: "nohostport"
  remotes: [ {url: "nats://h:1", bogus: 1}, {urls: ["nats://a:1", "nats://a:1"]}, "x", {seed: "SUXX"} ]
  authorization { user: a, password: b, users: [ {user: x, password: y} ] }
  min_version: "2.7.0"
  reconnect: "5x"
  tls { bogus: 1 }
}
mqtt {
  max_ack_pending: 70000
  authorization: { user: a, weird: 1 }
}"""


@pytest.mark.parametrize("flags", [(), ("-t",)])
def test_every_problem_of_the_four_blocks_at_once(server_kind, tmp_path, flags):
    """Every bad value of every block, each at its place, reported together
    (with the warning first) by -t and by a start alike."""
    rc, lines = check(server_kind, tmp_path, MANY, *flags)
    assert rc == 1
    assert lines[0] == 'c.conf:20:68: invalid use of field "nats://a:1": Duplicate leafnode entry detected'
    assert set(lines[1:]) == {
        "c.conf:3:3: cluster name cannot contain spaces",
        'c.conf:4:3: could not parse port "x"',
        'c.conf:5:13: error parsing route url ["nats://bad host:x"]',
        "c.conf:5:48: interface conversion: interface {} is bool, not string",
        'c.conf:6:3: unknown field "bogus"',
        "c.conf:7:3: Cluster authorization does not allow multiple users",
        "c.conf:8:3: write_timeout must be 'default', 'close' or 'retry'",
        "c.conf:9:19: error parsing accounts: unsupported type in array int64",
        'c.conf:10:3: field "compression" should be a boolean or a structure, got int64',
        'c.conf:11:28: subject "a b" is not a valid subject',
        'c.conf:11:44: Unknown field "bogus" parsing permissions',
        "c.conf:14:3: gateway name cannot contain spaces",
        'c.conf:15:25: error parsing gateway url ["nats://x y:1"]',
        'c.conf:15:46: unknown field "bogus"',
        "c.conf:15:58: Expected gateway entry to be a map/struct, got five",
        'c.conf:19:3: could not parse address string "nohostport"',
        'c.conf:20:34: unknown field "bogus"',
        "c.conf:20:84: Expected remote leafnode entry to be a map/struct, got x",
        'c.conf:20:89: Remote leafnode nkey is not a valid seed: "SUXX"',
        "c.conf:21:3: can not have a single user/pass and a users array",
        "c.conf:22:3: the minimum version should be at least 2.8.0",
        'c.conf:23:3: error parsing reconnect: time: unknown unit "x" in duration "5x"',
        'c.conf:24:9: error parsing tls config, unknown field "bogus"',
        "c.conf:27:3: invalid value 70000, should in [0..65535] range",
        'c.conf:28:29: unknown field "weird"',
    }, lines
    assert len(lines) == 26


WARNINGS = """cluster {
  ping_interval: "1m"
  routes: ["nats://127.0.0.2:7244", "nats://127.0.0.2:7244"]
  authorization { user: a, password: b, timeout: 90, permissions { import: "a.>" } }
}
leafnodes { reconnect: 2 }
mqtt { ack_wait: 30, consumer_replicas: 3 }"""

WARNED = {
    "c.conf:3:3: Cluster 'ping_interval' will reset to 30s which is the max for routes",
    'c.conf:4:38: invalid use of field "nats://127.0.0.2:7244": Duplicate route entry detected',
    'c.conf:5:3: invalid use of field "authorization": setting "permissions" within cluster authorization block is '
    "deprecated",
    'c.conf:5:41: invalid use of field "timeout": timeout of 90 (90.000000 seconds) is high, consider keeping it under '
    "60 seconds. possibly caused by unquoted duration; use '1m' instead of 1m, for example",
    'c.conf:7:13: invalid use of field "reconnect": reconnect should be converted to a duration',
    'c.conf:8:8: invalid use of field "ack_wait": ack_wait should be converted to a duration',
    'c.conf:8:22: invalid use of field "consumer_replicas": consumer replicas setting ignored in this server version',
}


async def test_warnings_of_the_four_blocks_fail_the_check_only(server_kind, tmp_path):
    """nats-server's warnings about these blocks: -t fails on them; a start
    prints them and serves."""
    from conftest import RawClient
    from test_config_file import started

    rc, lines = check(server_kind, tmp_path, WARNINGS, "-t")
    assert (rc, set(lines), len(lines)) == (1, WARNED, len(WARNED))
    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\n" + WARNINGS)
    try:
        c = await RawClient.open(srv)
        c.close()
    finally:
        srv.stop()
    log = srv.log()
    for line in WARNED:  # (the same places: the file named by its whole path)
        assert f"/{line}\n" in log, line


EXPORT_BOTH = 'accounts { A { exports: [ {stream: "a", service: "b"}, {service: "c", stream: "d"} ] } }'


def test_export_with_both_stream_and_service(server_kind, tmp_path):
    """An export naming a stream and a service: nats-server refuses the one
    its map order reads second (so either, run to run; the one written
    second about four runs in five); natslab always the one written second."""
    rc, lines = check(server_kind, tmp_path, EXPORT_BOTH, "-t")
    assert rc == 1 and len(lines) == 2, lines
    written_second = ['c.conf:2:41: Detected service "b" but already saw a stream',
                      'c.conf:2:71: Detected stream "d" but already saw a service']
    read_second_first = ['c.conf:2:28: Detected stream "a" but already saw a service',
                         'c.conf:2:57: Detected service "c" but already saw a stream']
    for line, choices in zip(sorted(lines, key=lambda ln: int(ln.split(":")[2]) > 50),
                             zip(written_second, read_second_first)):
        assert line in choices, lines
    if server_kind == "natslab":
        assert lines == written_second


# (a URL, whether Go's url.Parse takes it): nats-server's error names the URL, never why
ROUTE_URLS = [
    ('nats://a:1', True),
    ('nats://bad host:x', False),
    ('nats://h:x', False),
    ('nats://h:', True),
    ('nats://h', True),
    ('nats://[::1]:4222', True),
    ('nats://[::1', False),
    ('nats://[1.2.3.4]:1', False),
    ('nats://a]b:1', True),
    ('nats://[fe80::1%25en0]:1', True),
    ('nats://[fe80::1%en0]:1', False),
    ('nats://u:p@h:1', True),
    ('nats://u:p w@h:1', False),
    ('nats://u@h@x:1', True),
    ('nats://h:1/path', True),
    ('nats://h:1/pa th', True),
    ('nats://h:1/%zz', False),
    ('nats://h:1#frag', True),
    ('nats://h:1#%zz', False),
    ('nats://h:1?x=%zz', True),
    ('://h:1', False),
    ('1nats://h:1', False),
    ('h:1', True),
    ('nats:h:1', True),
    ('nats://h%41:1', False),
    ('nats://h%C3%A9:1', True),
    ('nats://h:1:2', True),
    ('nats://a,b:1', True),
    ('nats://h|x:1', False),
    ('nats://h^:1', False),
    ('nats://héllo:1', True),
    ('nats://h{}:1', False),
    ('nats://[::1]x', False),
    ('nats://x[::1]:1', False),
    ('  nats://trim:1  ', True),
    ('nats://h:1\\x', False),
    ('nats://h\\:1', False),
    ('', True),
    ('nats://', True),
    ('nats://:1', True),
    ('nats://h:-1', False),
    ('nats://h:+1', False),
    ('nats://u%zz@h:1', False),
    ('nats://ü@h:1', False),
    ('nats://u:p%41@h:1', True),
    ('nats-route://ruser:T0pS3cr3t@127.0.0.1:7246', True),
    ('foo', True),
    ('foo:bar/x', True),
    ('/abs:x', True),
    ('a:b', True),
    ('*', True),
    ('nats://h:1/a:b', True),
    ('nats://[::ffff:1.2.3.4]:1', True),
    ('nats://[zz]:1', False),
    ('nats://<h>:1', True),
    ('nats://"h":1', True),
    ('nats://h%20:1', False),
    ('nats://h%25:1', True),
    ('nats://%:1', False),
]


def test_route_urls_as_go_parses_them(server_kind, tmp_path):
    """Route URLs: the ones Go's url.Parse refuses (bad ports, characters a
    host may not have, bad escapes, brackets not around an IPv6 address, a
    scheme or a first path segment that is not one...) are errors at their
    element, the others are taken (a duplicate with a warning)."""
    text = "cluster {\n  routes: [\n" + "".join(f"    {json.dumps(u, ensure_ascii=False)}\n" for u, _ in ROUTE_URLS) \
        + "  ]\n}"
    rc, lines = check(server_kind, tmp_path, text, "-t")
    assert rc == 1
    want = {(4 + i, f"error parsing route url [{json.dumps(u.strip(), ensure_ascii=False)}]")
            for i, (u, ok) in enumerate(ROUTE_URLS) if not ok}
    assert {(int(ln.split(":")[1]), ln.split(": ", 1)[1]) for ln in lines} == want, lines
    assert len(lines) == len(want) == 25


PROXIES = """leafnodes { remotes: [
  {url: "nats://a:1", proxy: { url: "ftp://p:3128" }}
  {url: "nats://b:1", proxy: { url: "http://" }}
  {url: "nats://c:1", proxy: { url: "http://p:1", username: u }}
  {url: "nats://d:1", proxy: { url: "http://p:1", timeout: "-5s" }}
  {url: "nats://e:1", proxy: { url: "http://p:1" }}
  {urls: ["ws://f:1", "nats://f:2"], proxy: { url: "http://p:1" }}
  {url: "wss://g:1", proxy: { url: "http://p:1" }}
  {url: "wss://h:1", tls: {}, proxy: { url: "http://p:1" }}
  {url: "nats://i:1", proxy: { url: "http://p:1%zz" }}
  {url: "nats://j:1", proxy: { url: "::" }}
] }"""


def test_leafnode_remote_proxies(server_kind, tmp_path):
    """A remote's proxy (validateLeafNodeProxyOptions, as nats-server reads
    the file): an http(s) URL with a host, a timeout not negative, a
    username with a password, TLS for a wss:// remote; each error at the
    remote's proxy key, Go's url.Parse error in its own words."""
    rc, lines = check(server_kind, tmp_path, PROXIES, "-t")
    assert rc == 1
    assert set(lines) == {
        "c.conf:3:23: proxy URL scheme must be http or https, got: ftp",
        "c.conf:4:23: proxy URL must specify a host",
        "c.conf:5:23: proxy username and password must both be specified or both be empty",
        "c.conf:6:23: proxy timeout must be >= 0",
        "c.conf:9:22: proxy is configured but remote URL wss://g:1 requires TLS and no TLS configuration is provided. "
        "When using proxy with TLS endpoints, ensure TLS is properly configured for the leafnode remote",
        'c.conf:11:23: invalid proxy URL: parse "http://p:1%zz": invalid port ":1%zz" after host',
        'c.conf:12:23: invalid proxy URL: parse "::": missing protocol scheme',
    }, lines
    assert len(lines) == 7


def test_tls_of_the_four_blocks(server_kind, tmp_path):
    """tls {} in each block read as nats-server reads it: certificates that
    load (with keys natslab refuses on its own ports, which these blocks
    may have) pass -t; a key of another certificate, a CA file that is not
    there or not a certificate, and a TLS version below 1.2 are each refused
    at their place, in nats-server's words."""
    from pki import make_pki

    p = make_pki(tmp_path / "pki")
    _, other_key = p.server("other")
    pair = f'cert_file: "{p.server_cert}", key_file: "{p.server_key}"'
    good = (f'cluster {{ tls {{ {pair}, ca_file: "{p.ca}", verify_cert_and_check_known_urls: true, timeout: 2 }} }}\n'
            f'gateway {{ name: g, tls {{ {pair} }}, gateways: [ {{name: h, url: "nats://127.0.0.2:1", '
            f'tls: {{ ca_file: "{p.ca}" }}}} ] }}\n'
            f'leafnodes {{ tls {{ {pair}, verify: true, ca_file: "{p.ca}", ocsp_peer: false }}, '
            f'remotes: [ {{url: "tls://127.0.0.2:1", tls: {{ ca_file: "{p.ca}", handshake_first: true }}}} ] }}\n'
            f"mqtt {{ tls {{ {pair} }} }}")
    rc, lines = check(server_kind, tmp_path, good, "-t")
    assert rc == 0 and len(lines) == 1 and "c.conf is valid" in lines[0], lines
    bad = (f'cluster {{ tls {{ cert_file: "{p.server_cert}", key_file: "{other_key}" }} }}\n'
           f'gateway {{ tls {{ {pair}, ca_file: "/nonexistent/ca.pem" }} }}\n'
           f'leafnodes {{ remotes: [ {{url: "tls://127.0.0.2:1", tls: {{ ca_file: "{p.server_key}" }}}} ] }}\n'
           'mqtt { tls { min_version: "1.1" } }')
    rc, lines = check(server_kind, tmp_path, bad, "-t")
    assert rc == 1
    assert set(lines) == {
        "c.conf:2:11: error parsing X509 certificate/key pair: tls: private key does not match public key",
        "c.conf:3:11: open /nonexistent/ca.pem: no such file or directory",
        "c.conf:4:51: failed to parse root ca certificate",
        "c.conf:5:14: error parsing tls config: unsupported TLS version: TLS 1.1",
    }, lines


def test_included_keys_and_variables_in_a_block(server_kind, tmp_path):
    """A block's keys from an include are placed in the included file; a
    key only a $variable names is no unknown field."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "cl.conf").write_text('bogus_in_inc: 1\nroutes: ["nats://a b:1"]\n')
    rc, lines = check(server_kind, tmp_path, 'cluster {\n  P: 7244\n  port: $P\n  include "inc/cl.conf"\n}', "-t")
    assert (rc, sorted(lines)) == (1, ['inc/cl.conf:1:0: unknown field "bogus_in_inc"',
                                       'inc/cl.conf:2:11: error parsing route url ["nats://a b:1"]'])
