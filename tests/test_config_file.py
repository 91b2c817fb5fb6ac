"""Configuration files of nats-server 2.15, run unchanged: the format
(separators, bare host:port, size suffixes, include, variables) and the keys
issue #31 found refused. Differential: each file is given to natslab and to
nats-server, with the same assertions."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import RawClient, ServerProcess, free_port
from test_cli import binary, refusal


def started(kind: str, tmp_path, text: str, *flags: str, files: dict[str, str] | None = None) -> ServerProcess:
    """``kind`` started on a file of ``text`` (``{port}`` is the client
    port); ``files``: more files next to it (for include)."""
    conf = tmp_path / "c.conf"
    srv = ServerProcess(kind, tmp_path / "store")
    for name, body in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body.replace("{port}", str(srv.port)))
    conf.write_text(text.replace("{port}", str(srv.port)))
    srv.argv = lambda: binary(kind) + ["-sd", str(tmp_path / "store"), *flags, "-c", str(conf)]
    srv.start()
    return srv


def info(srv: ServerProcess) -> dict:
    import socket

    with socket.create_connection((srv.host, srv.port), timeout=3) as s:
        return json.loads(s.makefile("rb").readline()[5:])


async def test_bare_listen_and_every_size_suffix(server_kind, tmp_path):
    """listen: a bare host:port; 128KiB, 64MiB, 10GiB: nats-server's values
    (ki/kib/kb: 1024, k: 1000), not an error."""
    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\nmax_payload = 128KiB\n"
                  "jetstream: { max_mem_store: 64MiB, max_file_store: 10GiB }\n")
    try:
        i = info(srv)
        assert i["max_payload"] == 128 * 1024 and i["port"] == srv.port
    finally:
        srv.stop()
    for text, want in (("max_payload: 2k", 2000), ("max_payload: 2K", 2000), ("max_payload: 2kb", 2048),
                       ("max_payload: 2Ki", 2048), ("max_payload: 1m", 1000**2), ("max_payload: 1MB", 1024**2)):
        srv = started(server_kind, tmp_path, f"listen: 127.0.0.1:{{port}}\n{text}\n")
        try:
            assert info(srv)["max_payload"] == want, text
        finally:
            srv.stop()


async def test_separators_comments_arrays_and_blocks(server_kind, tmp_path):
    """Every separator, blocks without one, arrays over lines without
    commas, both comment styles, quoted and bare strings, yes/no booleans."""
    text = ("// a comment\n# another\nport {port}\nhost = 127.0.0.1 // after a value\nserver_name: 'lab-1'\n"
            "debug: no\ntrace off\n"
            "authorization {\n  users [\n    {user: a, password: \"p w\"}\n    {user = b; password = q}\n  ]\n}\n")
    srv = started(server_kind, tmp_path, text)
    try:
        assert info(srv)["server_name"] == "lab-1"
        from conftest import connect

        for user, pw in (("a", "p w"), ("b", "q")):
            nc = await connect(srv.url, user=user, password=pw)
            await nc.close()
    finally:
        srv.stop()


async def test_include_and_variables(server_kind, tmp_path, monkeypatch):
    """include is relative to the including file; $VAR is a key of this block
    or an enclosing one, else the environment; a key only used as a variable
    is not an unknown field."""
    monkeypatch.setenv("NATSLAB_TEST_PAYLOAD", "3KB")
    srv = started(server_kind, tmp_path, "include 'conf.d/net.conf'\nPASS: s3cret\nmax_payload: $NATSLAB_TEST_PAYLOAD\n"
                  "authorization { user: u, password: $PASS }\n",
                  files={"conf.d/net.conf": "port: {port}\ninclude ../name.conf\n",
                         "name.conf": "host: 127.0.0.1\nserver_name: included\n"})
    try:
        i = info(srv)
        assert (i["server_name"], i["max_payload"], i["auth_required"]) == ("included", 3072, True)
        from conftest import connect

        nc = await connect(srv.url, user="u", password="s3cret")
        await nc.close()
    finally:
        srv.stop()


BAD = {
    # (files, the complaint) — each refused by both, at the same place
    "unexpected-eof": ({"c.conf": "port: 1\nfoo { a: 1,\n"}, "Parse error on line 3: 'Unexpected EOF processing map.'"),
    "bad-escape": ({"c.conf": 'port: 1\na: "x\\q"\n'},
                   "Parse error on line 2: 'Invalid escape character 'q'. Only the following escape characters are "
                   "allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.'"),
    "array-terminator": ({"c.conf": "port: 1\na: [1 2]\n"},
                         "Parse error on line 2: 'Expected an array value terminator \",\" or an array terminator "
                         "\"]\", but got '2' instead.'"),
    "missing-variable": ({"c.conf": "port: 1\nmax_payload: $NATSLAB_NOT_SET\n"},
                         "variable reference for 'NATSLAB_NOT_SET' on line 2 can not be found"),
    "unknown-in-include": ({"c.conf": "port: 1\ninclude sub/i.conf\n", "sub/i.conf": "\n  bogus_inc: 1\n"},
                           'sub/i.conf:2:3: unknown field "bogus_inc"'),
    "key-without-value": ({"c.conf": "port: 1\nlonely"}, "config is invalid (c.conf:2:7)"),
    "first-line-column": ({"c.conf": "bogus: 1\n"}, 'c.conf:1:0: unknown field "bogus"'),
    "too-big": ({"c.conf": "max_control_line: 3GB\n"}, "c.conf:1:0: max_control_line value is too big"),
    "account-nkey": ({"c.conf": 'port: 1\naccounts { A { nkey: "OC5GRL36RQV7MJ2GT6WQSCKDKJKYTK4T2LGLWJ2SEJKRDHFOQQWGGFQL" } }\n'},
                     'c.conf:2:16: Not a valid public nkey for an account: '
                     '"OC5GRL36RQV7MJ2GT6WQSCKDKJKYTK4T2LGLWJ2SEJKRDHFOQQWGGFQL"'),
    "max-sub-tokens-big": ({"c.conf": "port: 1\nmax_sub_tokens: 300\n"}, "c.conf:2:1: max_sub_tokens value is too big"),
    "max-sub-tokens-zero": ({"c.conf": "port: 1\nmax_sub_tokens: 0\n"},
                            "c.conf:2:1: max_sub_tokens value can not be negative"),
    "write-timeout": ({"c.conf": "port: 1\nwrite_timeout: sometimes\n"},
                      "c.conf:2:1: write_timeout must be 'default', 'close' or 'retry'"),
    "max-buffered-size": ({"c.conf": "port: 1\njetstream { max_buffered_size: abc }\n"},
                          'c.conf:2:13: max_buffered_size strconv.ParseInt: parsing "ab": invalid syntax'),
    "max-buffered-msgs": ({"c.conf": "port: 1\njetstream {\n  max_buffered_msgs: 1.5\n}\n"},
                          'c.conf:3:3: Expected a parseable size for "max_buffered_msgs", got 1.5'),
    # an account's jetstream {}: at the key inside it; a value given directly has no place (nats-server's
    # parseJetStreamForAccount has no token for it)
    "account-jetstream-size": ({"c.conf": "port: 1\naccounts {\n  A {\n    jetstream {\n      max_mem: abc\n    }\n  }\n}\n"},
                               'c.conf:5:7: Expected a parseable size for "max_mem", got abc'),
    "account-jetstream-unknown": ({"c.conf": "port: 1\naccounts {\n  A {\n    jetstream { max_streams: 1, bogus: 1 }\n  }\n}\n"},
                                  'c.conf:4:33: unknown field "bogus"'),
    "account-jetstream-string": ({"c.conf": "port: 1\naccounts { A { jetstream: maybe } }\n"},
                                 "Expected 'enabled' or 'disabled' for string value, got 'maybe'"),
    "account-jetstream-int": ({"c.conf": "port: 1\naccounts { A { jetstream: 5 } }\n"},
                              "Expected map, bool or string to define JetStream, got int64"),
    "account-limits-type": ({"c.conf": "port: 1\naccounts {\n  A {\n    limits: 5\n  }\n}\n"},
                            "c.conf:4:5: Expected account limits to be a map/struct, got 5"),
    "account-not-a-map": ({"c.conf": "port: 1\naccounts {\n  A: 5\n}\n"}, "c.conf:3:3: Expected map entries for accounts"),
    "account-reserved": ({"c.conf": "port: 1\naccounts {\n  $G { }\n}\n"}, 'c.conf:3:3: "$G" is a Reserved Account'),
    # (in one account: across two, which one nats-server names depends on its map order)
    "account-duplicate-user": ({"c.conf": "port: 1\naccounts {\n  A { users [ {user: a, password: b}, "
                                          "{user: a, password: c} ] }\n}\n"},
                               'c.conf:3:7: Duplicate user "a" detected'),
    "import-without-subject": ({"c.conf": "port: 1\naccounts {\n  A { exports [ {stream: foo} ] }\n"
                                          "  B { imports [ {stream: {account: A}} ] }\n}\n"},
                               "c.conf:4:18: Expect an account name and a subject"),
    "imports-not-array": ({"c.conf": "port: 1\naccounts {\n  A { imports: 5 }\n}\n"},
                          "c.conf:3:7: Imports should be an array, got int64"),
    "export-unknown": ({"c.conf": "port: 1\naccounts {\n  A { exports [ {stream: foo, bogus: 1} ] }\n}\n"},
                       'c.conf:3:31: unknown field "bogus"'),
    "import-unknown": ({"c.conf": "port: 1\naccounts {\n  A { exports [ {stream: foo} ] }\n"
                                  "  B { imports [ {stream: {account: A, subject: foo}, bogus: 1} ] }\n}\n"},
                       'c.conf:4:54: unknown field "bogus"'),
    "lame-duck-type": ({"c.conf": "port: 1\nlame_duck_duration: 1\n"},
                       "c.conf:2:1: interface conversion: interface {} is int64, not string"),
    "lame-duck-short": ({"c.conf": 'port: 1\nlame_duck_duration: "10000ms"\n'},
                        "c.conf:2:1: invalid lame_duck_duration of 10s, minimum is 30 seconds"),
    "lame-duck-parse": ({"c.conf": 'port: 1\nlame_duck_grace_period: "10x"\n'},
                        'c.conf:2:1: error parsing lame_duck_grace_period: time: unknown unit "x" in duration "10x"'),
    "lame-duck-order": ({"c.conf": 'port: 1\nlame_duck_grace_period: "3m"\n'},
                        "lame duck grace period (3m0s) should be strictly lower than lame duck duration (2m0s)"),
    "resolver-unknown": ({"c.conf": "port: 1\nresolver: BOGUS\n"},
                         'c.conf:2:1: error parsing account resolver, should be MEM or  URL("url") or a map containing '
                         "dir and type state=[FULL|CACHE])"),
    "resolver-type": ({"c.conf": "port: 1\nresolver: 5\n"}, "c.conf:2:1: error parsing operator resolver, wrong type int64"),
    "operator-missing": ({"c.conf": "port: 1\noperator: /nonexistent/op.jwt\n"},
                         "c.conf:2:1: error parsing operator JWT: open /nonexistent/op.jwt: no such file or directory"),
    "tls-unknown": ({"c.conf": "port: 1\ntls {\n  bogus: 1\n}\n"}, 'c.conf:3:3: error parsing tls config, unknown field "bogus"'),
    "tls-missing-cert": ({"c.conf": "port: 1\ntls {\n  cert_file: /nonexistent/c.pem\n  key_file: /nonexistent/k.pem\n}\n"},
                         "c.conf:2:1: error parsing X509 certificate/key pair: open /nonexistent/c.pem: no such file or directory"),
    "tls-not-a-map": ({"c.conf": "port: 1\ntls: 5\n"},
                      "c.conf:2:1: interface conversion: interface {} is int64, not map[string]interface {}"),
    "users-not-array": ({"c.conf": "port: 1\nauthorization { users: 5 }\n"},
                        "c.conf:2:17: Expected users field to be an array, got 5"),
    "auth-timeout": ({"c.conf": "port: 1\nauthorization { user: a, password: b, timeout: abc }\n"},
                     "c.conf:2:39: error parsing authorization config, 'timeout' time: invalid duration \"abc\""),
    "connection-types": ({"c.conf": "port: 1\nauthorization { users: [ {user: a, password: b, "
                                    "allowed_connection_types: [BOGUS]} ] }\n"},
                         'c.conf:2:49: invalid connection types ["BOGUS"]'),
    "http-address": ({"c.conf": "port: 1\nhttp: abc\n"}, 'c.conf:2:1: could not parse address string "abc"'),
    "sync-interval": ({"c.conf": "port: 1\njetstream { sync_interval: abc }\n"},
                      'c.conf:2:13: error parsing sync_interval: time: invalid duration "abc"'),
    "batch-limit-type": ({"c.conf": "port: 1\njetstream { limits { batch { max_msgs: abc } } }\n"},
                         "c.conf:2:1: interface conversion: interface {} is string, not int64"),
    "no-auth-user-type": ({"c.conf": "port: 1\nno_auth_user: 5\n"},
                          "c.conf:2:1: interface conversion: interface {} is int64, not string"),
    "mappings-type": ({"c.conf": "port: 1\nmappings: 5\n"},
                      "c.conf:2:1: interface conversion: interface {} is int64, not map[string]interface {}"),
    "system-account-type": ({"c.conf": "port: 1\nsystem_account: 5\n"}, "c.conf:2:1: system account name must be a string"),
    "websocket-not-a-map": ({"c.conf": "port: 1\nwebsocket: 5\n"}, "c.conf:2:1: Expected websocket to be a map, got int64"),
    "websocket-port-type": ({"c.conf": "port: 1\nwebsocket { port: abc, no_tls: true }\n"},
                            "c.conf:2:13: interface conversion: interface {} is string, not int64"),
    "websocket-unknown": ({"c.conf": "port: 1\nwebsocket {\n  port: -1\n  bogus: 1\n}\n"}, 'c.conf:4:3: unknown field "bogus"'),
    "websocket-handshake": ({"c.conf": "port: 1\nwebsocket { port: -1, no_tls: true, handshake_timeout: abc }\n"},
                            'c.conf:2:37: time: invalid duration "abc"'),
    "websocket-tls-files": ({"c.conf": "port: 1\nwebsocket {\n  port: -1\n  tls {\n    cert_file: /nonexistent/c.pem\n"
                                       "    key_file: /nonexistent/k.pem\n  }\n}\n"},
                            "c.conf:4:3: error parsing X509 certificate/key pair: open /nonexistent/c.pem: no such file "
                            "or directory"),
    "permissions-type": ({"c.conf": "port: 1\nauthorization { users: [{user: a, password: b, permissions: 5}] }\n"},
                         "c.conf:2:48: Expected permissions to be a map/struct, got 5"),  # (was a traceback)
    "account-default-permissions-type": ({"c.conf": "port: 1\naccounts { A { default_permissions: 5 } }\n"},
                                         "c.conf:2:16: Expected permissions to be a map/struct, got 5"),
    "export-accounts-type": ({"c.conf": "port: 1\naccounts { A { exports: [{stream: foo, accounts: 5}] } }\n"},
                             "c.conf:2:40: interface conversion: interface {} is int64, not []interface {}"),
    "export-response-type": ({"c.conf": "port: 1\naccounts {\n  A {\n    exports: [\n      {stream: foo}\n"
                                        "      {service: bar, response: bogus}\n    ]\n  }\n}\n"},
                             'c.conf:6:22: Unknown response type: "bogus"'),
    "export-response-not-string": ({"c.conf": "port: 1\naccounts { A { exports: [ {service: bar, response: 5} ] } }\n"},
                                   "c.conf:2:42: Expected response type to be string, got int64"),
    "export-response-on-stream": ({"c.conf": "port: 1\naccounts { A { exports: [ {stream: foo, response: single} ] } }\n"},
                                  "c.conf:2:41: Detected response directive on non-service"),
    "export-stream-type": ({"c.conf": "port: 1\naccounts { A { exports: [ {stream: 5} ] } }\n"},
                           "c.conf:2:28: Expected stream name to be string, got int64"),
    "import-to-type": ({"c.conf": "port: 1\naccounts { A { exports [ {stream: foo} ] }\n"
                                  " B { imports: [{stream: {account: A, subject: foo}, to: 5}] } }\n"},
                       "c.conf:3:53: interface conversion: interface {} is int64, not string"),
    "jetstream-limits-type": ({"c.conf": "port: 1\njetstream { limits: 5 }\n"},
                              "c.conf:2:13: Expected a map to define JetStreamLimits, got int64"),
    # durations: one reader for every key, each with nats-server's own words
    "auth-timeout-type": ({"c.conf": "port: 1\nauthorization { user: a, password: b, timeout: true }\n"},
                          "c.conf:2:39: error parsing authorization config, 'timeout' wrong type"),
    "sync-alias": ({"c.conf": "port: 1\njetstream { sync: abc }\n"},
                   'c.conf:2:13: error parsing sync: time: invalid duration "abc"'),
    "batch-timeout": ({"c.conf": "port: 1\njetstream { limits { batch { timeout: abc } } }\n"},
                      'time: invalid duration "abc"'),
    "batch-timeout-type": ({"c.conf": "port: 1\njetstream {\n  limits {\n    batch {\n      timeout: 5\n    }\n  }\n}\n"},
                           "c.conf:2:1: interface conversion: interface {} is int64, not string"),
    "lame-duck-int": ({"c.conf": "port: 1\nlame_duck_grace_period: 5\n"},
                      "c.conf:2:1: interface conversion: interface {} is int64, not string"),
    "websocket-handshake-float": ({"c.conf": "port: 1\nwebsocket { port: -1, no_tls: true, handshake_timeout: 1.5 }\n"},
                                  "c.conf:2:37: error parsing handshake timeout: unsupported type float64"),
    "websocket-ping-interval": ({"c.conf": 'port: 1\nwebsocket { port: -1, no_tls: true, ping_interval: "1x" }\n'},
                                'c.conf:2:37: error parsing ping_interval: time: unknown unit "x" in duration "1x"'),
    "tls-timeout": ({"c.conf": 'port: 1\ntls {\n  cert_file: /nonexistent\n  key_file: /nonexistent\n  timeout: "abc"\n}\n'},
                    "c.conf:5:3: error parsing tls config, 'timeout' time: invalid duration \"abc\""),
    "tls-first-type": ({"c.conf": "port: 1\ntls {\n  cert_file: /nonexistent\n  key_file: /nonexistent\n  first: 5\n}\n"},
                       'c.conf:5:3: field "first" should be a boolean or a string, got int64'),
    "responses-expires": ({"c.conf": 'port: 1\nauthorization { users: [ {user: a, password: b, permissions: '
                                     '{allow_responses: {expires: " 1s"}}} ] }\n'},
                          'c.conf:2:81: error parsing expires: time: invalid duration " 1s"'),
    "responses-max": ({"c.conf": 'port: 1\naccounts { A { users: [ {user: a, password: b, permissions: '
                                 '{allow_responses: {max: abc}}} ] } }\n'},
                      "c.conf:2:80: interface conversion: interface {} is string, not int64"),
    "store-dir-type": ({"c.conf": "port: 1\nstore_dir: [a, b]\n"},
                       "c.conf:2:1: interface conversion: interface {} is []interface {}, not string"),
    "jetstream-store-dir-type": ({"c.conf": "port: 1\njetstream {\n  max_mem: 1G\n  store_dir: 5\n}\n"},
                                 "c.conf:2:1: interface conversion: interface {} is int64, not string"),
    "jetstream-domain-type": ({"c.conf": "port: 1\njetstream { domain: 5 }\n"},
                              "c.conf:2:1: interface conversion: interface {} is int64, not string"),
    "user-nkey": ({"c.conf": "port: 1\nauthorization { users: [{nkey: UBAD}] }\n"},
                  "c.conf:2:26: Not a valid public nkey for a user"),
    # checks of the options after the file: no place, and no prefix of natslab's own
    "domain-invalid": ({"c.conf": 'port: 1\njetstream { domain: "a.b" }\n'}, "invalid domain name: may not contain ., * or >"),
    "system-account-missing": ({"c.conf": "port: 1\nsystem_account: NOPE\n"}, "error resolving system account: account missing"),
}


# a bad value inside an array: nats-server places it at the element (a string or number at
# itself, a map at its closing brace, an array at its closing bracket), not at the array's key
BAD_ELEMENTS = {
    "user-entry-int": ("port: 1\nauthorization {\n  users: [\n    {user: a, password: b}\n    5\n  ]\n}\n",
                       {"c.conf:5:5: Expected user entry to be a map/struct, got 5"}),
    "user-entry-string": ('port: 1\nauthorization {\n  users: [\n    "abc"\n    true\n  ]\n}\n',
                          {"c.conf:4:6: Expected user entry to be a map/struct, got abc",
                           "c.conf:5:5: Expected user entry to be a map/struct, got true"}),
    "account-user-entry": ("port: 1\naccounts {\n  A {\n    users: [\n      5\n    ]\n  }\n}\n",
                           {"c.conf:5:7: Expected user entry to be a map/struct, got 5"}),
    "export-entry": ("port: 1\naccounts {\n  A {\n    exports: [\n      5\n    ]\n  }\n}\n",
                     {"c.conf:5:7: Export Items should be a map with type entry, got int64"}),
    "import-entry": ("port: 1\naccounts {\n  A { exports: [ {stream: foo} ] }\n  B {\n    imports: [\n"
                     "      {stream: {account: A, subject: foo}}\n      \"x\"\n    ]\n  }\n}\n",
                     {"c.conf:7:8: Import Items should be a map with type entry, got string"}),
    "export-accounts-element": ("port: 1\naccounts {\n  A {\n    exports: [\n      {stream: foo, accounts: [B,\n"
                                "        5 ] }\n    ]\n  }\n  B {}\n}\n",
                                {"c.conf:6:9: interface conversion: interface {} is int64, not string"}),
    "publish-element": ("port: 1\nauthorization {\n  users: [\n    {user: a, password: b, permissions: {publish: [\"a\",\n"
                        "       5 ] } }\n  ]\n}\n", {"c.conf:5:8: Subject in permissions array cannot be cast to string"}),
    "allow-element": ("port: 1\nauthorization {\n  users: [\n    {user: a, password: b, permissions: {publish: "
                      "{allow: [\"a\",\n       5 ] } } }\n  ]\n}\n",
                      {"c.conf:5:8: Subject in permissions array cannot be cast to string"}),
    "publish-element-variable": ("port: 1\nX: 5\nauthorization {\n  users: [\n    {user: a, password: b, permissions: "
                                 "{publish: [\"a\",\n       $X ] } }\n  ]\n}\n",
                                 {"c.conf:6:9: Subject in permissions array cannot be cast to string"}),
    # (a map in a list of subjects is no permission block: its keys are not checked)
    "publish-element-map": ("port: 1\nauthorization {\n  users: [\n    {user: a, password: b, permissions: {publish: "
                            "[\"a\",\n       { x: 1 } ] } }\n  ]\n}\n",
                            {"c.conf:5:16: Subject in permissions array cannot be cast to string"}),
    "default-permissions-element": ("port: 1\nauthorization {\n  default_permissions: {subscribe: [\"a\",\n       5 ] }\n"
                                    "  users: [ {user: a, password: b} ]\n}\n",
                                    {"c.conf:4:8: Subject in permissions array cannot be cast to string"}),
    "account-default-permissions-element": ("port: 1\naccounts {\n  A {\n    default_permissions: {subscribe: [\"a\",\n"
                                            "       5 ] }\n  }\n}\n",
                                            {"c.conf:5:8: Subject in permissions array cannot be cast to string"}),
    "account-user-publish-element": ("port: 1\naccounts {\n  A {\n    users: [\n      {user: a, password: b, permissions: "
                                     "{publish: [\"x\",\n         5 ] } }\n    ]\n  }\n}\n",
                                     {"c.conf:6:10: Subject in permissions array cannot be cast to string"}),
    "connection-types-element": ("port: 1\nauthorization {\n  users: [\n    {user: a, password: b, "
                                 "allowed_connection_types: [\"STANDARD\",\n       5 ] }\n  ]\n}\n",
                                 {"c.conf:5:8: error parsing allowed connection types: unsupported type in array int64"}),
    # (an unknown type is at the key, also in an account, and also with -t)
    "account-connection-types": ("port: 1\naccounts {\n  A {\n    users: [\n      {user: a, password: b, "
                                 "allowed_connection_types: [\"STANDARD\",\n         \"BOGUS\" ] }\n    ]\n  }\n}\n",
                                 {'c.conf:5:30: invalid connection types ["BOGUS"]'}),
    "cipher-suites-element": ("port: 1\ntls {\n  cert_file: /nonexistent\n  key_file: /nonexistent\n  cipher_suites: [\n"
                              "    \"TLS_AES_128_GCM_SHA256\"\n    \"BOGUS\"\n  ]\n}\n",
                              {"c.conf:7:6: unrecognized cipher BOGUS"}),
    "cipher-suites-element-type": ("port: 1\ntls {\n  cert_file: /nonexistent\n  key_file: /nonexistent\n  cipher_suites: [\n"
                                   "    \"TLS_AES_128_GCM_SHA256\"\n    5\n  ]\n}\n",
                                   {"c.conf:7:5: interface conversion: interface {} is int64, not string"}),
    "cipher-suites-string": ("port: 1\ntls {\n  cert_file: /nonexistent\n  key_file: /nonexistent\n"
                             "  cipher_suites: \"TLS_AES_128_GCM_SHA256\"\n}\n",
                             {"c.conf:5:3: interface conversion: interface {} is string, not []interface {}"}),
    "curve-preferences-element": ("port: 1\ntls {\n  cert_file: /nonexistent\n  key_file: /nonexistent\n"
                                  "  curve_preferences: [\n    \"CurveP256\"\n    \"BOGUS\"\n  ]\n}\n",
                                  {"c.conf:7:6: unrecognized curve preference BOGUS"}),
    "pinned-certs-element": ("port: 1\ntls {\n  cert_file: /nonexistent\n  key_file: /nonexistent\n  pinned_certs: [\n"
                             "    \"abc\"\n  ]\n}\n",
                             {"c.conf:6:6: error parsing tls config, 'pinned_certs' key abc does not look like "
                              "hex-encoded sha256 of DER encoded SubjectPublicKeyInfo"}),
    "websocket-cipher-suites-element": ("port: 1\nwebsocket {\n  port: -1\n  tls {\n    cert_file: /nonexistent\n"
                                        "    key_file: /nonexistent\n    cipher_suites: [\n"
                                        "      \"TLS_AES_128_GCM_SHA256\"\n      \"BOGUS\"\n    ]\n  }\n}\n",
                                        {"c.conf:9:8: unrecognized cipher BOGUS"}),
    "allowed-origins-element": ("port: 1\nwebsocket {\n  port: -1\n  no_tls: true\n  allowed_origins: [\n"
                                "    \"http://a\"\n    5\n  ]\n}\n",
                                {"c.conf:7:5: error parsing allowed origins: unsupported type in array int64"}),
    "trusted-element-type": ("port: 1\ntrusted: [\n  5\n]\n",
                             {"c.conf:3:3: error parsing trusted: unsupported type in array int64"}),
    # (each bad key at the list's last element: nats-server's token after its loop)
    "trusted-keys": ('port: 1\ntrusted: [\n  "BAD"\n  "BAD2"\n]\n',
                     {'c.conf:4:4: trust key "BAD" required to be a valid public operator nkey',
                      'c.conf:4:4: trust key "BAD2" required to be a valid public operator nkey'}),
    # (each operator-mode key's problems, all at once, as nats-server notes them)
    "operator-mode-problems": ('port: 1\ntrusted: [ "BAD" ]\noperator: /nonexistent\nresolver_preload: { A: 5, B: "x" }\n',
                               {'c.conf:2:13: trust key "BAD" required to be a valid public operator nkey',
                                "c.conf:3:1: error parsing operator JWT: open /nonexistent: no such file or directory",
                                "c.conf:4:21: preload map value should be a string JWT",
                                "c.conf:4:27: invalid account JWT"}),
    "operator-element-type": ("port: 1\noperator: [\n  5\n]\n",
                              {"c.conf:2:1: error parsing operators: unsupported type *conf.token where string is expected"}),
    "mapping-element": ("port: 1\nmappings {\n  foo: [\n    {destination: bar, weight: 50}\n    5\n  ]\n}\n",
                        {"c.conf:5:5: Expected an entry for the mapping destination"}),
    "account-mapping-element": ("port: 1\naccounts {\n  A {\n    mappings {\n      foo: [\n"
                                "        {destination: bar, weight: 50}\n        5\n      ]\n    }\n  }\n}\n",
                                {"c.conf:7:9: Expected an entry for the mapping destination"}),
    "mapping-destination-type": ("port: 1\nmappings {\n  foo: [\n    {destination: bar, weight: 50}\n"
                                 "    {destination: 5, weight: 20}\n  ]\n}\n",
                                 {"c.conf:5:33: interface conversion: interface {} is int64, not string"}),
}


@pytest.mark.parametrize("case", list(BAD_ELEMENTS))
def test_bad_array_elements_are_placed_at_the_element(server_kind, tmp_path, case):
    text, want = BAD_ELEMENTS[case]
    (tmp_path / "c.conf").write_text(text)
    assert refusal(server_kind, tmp_path / "c.conf") == (1, want)


@pytest.mark.parametrize("case", list(BAD))
def test_bad_files_fail_the_same(server_kind, tmp_path, case):
    files, want = BAD[case]
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    assert refusal(server_kind, tmp_path / "c.conf") == (1, {want})


@pytest.mark.parametrize("line", [
    "jetstream: { strict: true }", "jetstream { strict: false }",
    "jetstream { max_buffered_size: 64MB, max_buffered_msgs: 10000 }",
    "max_control_line: 8KB", "max_subscriptions: 100", "max_subs: 100", 'write_deadline: "5s"',
    "ping_interval: 30s\nping_max: 3", "max_pending: 32MB", 'lame_duck_duration: "1m"\nlame_duck_grace_period: "5s"',
    "accounts { A { jetstream: { cluster_traffic: owner } } }", "accounts { A { limits: { max_leafnodes: 1 } } }",
    "trace_verbose: true", "trace_headers: true", "disable_sublist_cache: true",
    'write_timeout: "default"', "write_timeout: close",
    "max_traced_msg_len: 100\nlogfile_size_limit: 1MB\nlogfile_max_num: 3",
    "jetstream { request_queue_limit: 100, info_queue_limit: 100, max_concurrent_io: 16, extension_hint: will_extend,"
    " limits { max_ha_assets: 2 } }",
])
async def test_keys_issue_31_found_refused_start(server_kind, tmp_path, line):
    srv = started(server_kind, tmp_path, f"listen: 127.0.0.1:{{port}}\n{line}\n")
    try:
        c = await RawClient.open(srv)
        c.close()
    finally:
        srv.stop()


async def test_max_subscriptions(server_kind, tmp_path):
    """max_subs: the subscription past the limit gets nats-server's -ERR and
    is not made; the connection stays (its other subscriptions work)."""
    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\nmax_subs: 2\n")
    try:
        c = await RawClient.open(srv)
        await c.send("SUB a 1\r\nSUB b 2\r\n")
        assert await c.read_until_pong() == []
        await c.send("SUB c 3\r\n")
        assert await c.read_until_pong() == ["-ERR 'maximum subscriptions exceeded'"]
        await c.send("PUB c 1\r\nx\r\nPUB b 1\r\ny\r\n")
        assert await c.read_until_pong() == ["MSG b 2 1", "y"]
        await c.send("UNSUB 1\r\nSUB c 3\r\nPUB c 1\r\nz\r\n")
        assert await c.read_until_pong() == ["MSG c 3 1", "z"]
        c.close()
    finally:
        srv.stop()


CLUSTER = ("listen: 127.0.0.1:{port}\n"
           "cluster { name: lab, listen: 127.0.0.1:%d, routes: [nats-route://127.0.0.1:%d] }\n"
           "gateway { name: lab, listen: 127.0.0.1:%d }\n"
           "leafnodes { listen: 127.0.0.1:%d }\n"
           "mqtt { listen: 127.0.0.1:%d }\n"
           "server_name: n1\njetstream { unique_tag: az }\n"
           "accounts { SYS { users: [{user: sys, password: sys}] }, APP { users: [{user: a, password: a}] } }\n"
           "system_account: SYS\n")


async def test_cluster_gateway_leafnode_mqtt_blocks_are_accepted(server_kind, tmp_path):
    """A production file's cluster, gateway, leafnodes and mqtt blocks (and
    the cluster flags) do not stop a single node: both start and serve;
    natslab says once for each that it does not use it."""
    ports = tuple(free_port() for _ in range(5))
    srv = started(server_kind, tmp_path, CLUSTER % ports, "-cluster_name", "lab",
                  "-cluster", f"nats://127.0.0.1:{ports[0]}", "-routes", f"nats://127.0.0.1:{ports[1]}")
    try:
        c = await RawClient.open(srv, connect='{"verbose":false,"user":"a","pass":"a","protocol":1}')
        await c.send("SUB x 1\r\nPUB x 2\r\nhi\r\n")
        assert await c.read_until_pong() == ["MSG x 1 2", "hi"]
        c.close()
    finally:
        srv.stop()
    if server_kind == "natslab":
        log = srv.log()
        for name in ("cluster", "gateway", "leafnodes", "mqtt", "jetstream.unique_tag", "-cluster_name", "-cluster",
                     "-routes"):
            assert log.count(f"[WRN] {name} is not used by natslab (a single node): ignored") == 1, (name, log)


def test_unknown_keys_in_account_users_are_refused(server_kind, tmp_path):
    """accounts { A { users: [...] } }: a user's keys, its permissions and
    their publish/subscribe blocks are checked as everywhere else (natslab's
    account reader skipped the check: a misspelled 'permisions' gave a user
    no restrictions at all)."""
    conf = tmp_path / "c.conf"
    conf.write_text("port: -1\naccounts {\n  A {\n    users: [\n"
                    "      {user: a, password: a, bogus_key: 1}\n"
                    "      {user: b, password: b, permisions: {publish: x}}\n"
                    "      {user: c, password: c, permissions: {publish: {bogus: x}}}\n"
                    "      {user: d, password: d, permissions: {publush: x}}\n"
                    "    ]\n  }\n}\n")
    assert refusal(server_kind, conf) == (1, {
        'c.conf:5:30: unknown field "bogus_key"',
        'c.conf:6:30: unknown field "permisions"',
        "c.conf:7:54: Unknown field name \"bogus\" parsing subject permissions, only 'allow' or 'deny' are permitted",
        'c.conf:8:44: Unknown field "publush" parsing permissions',
    })


@pytest.mark.parametrize("line, answered", [("", True), ("no_sys_acc: true", False), ("no_system_account: true", False)])
async def test_no_system_account(server_kind, tmp_path, line, answered):
    """no_system_account (and its aliases): no system account, so nothing
    answers $SYS.REQ (not even USER.INFO); without it, USER.INFO is answered."""
    import nats.errors

    from conftest import connect

    srv = started(server_kind, tmp_path, f"listen: 127.0.0.1:{{port}}\n{line}\n")
    try:
        nc = await connect(srv.url)
        try:
            msg = await nc.request("$SYS.REQ.USER.INFO", b"", timeout=2)
            assert answered and json.loads(msg.data)["data"]["account"] == "$G"
        except nats.errors.NoRespondersError:
            assert not answered
        await nc.close()
    finally:
        srv.stop()


async def test_logtime_false(server_kind, tmp_path):
    """logtime: false: log lines without the date and time, as nats-server writes them."""
    import re

    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\nlogtime: false\n")
    srv.stop()
    lines = [ln for ln in srv.log().splitlines() if "Starting nats-server" in ln]
    assert len(lines) == 1 and re.fullmatch(r"\[\d+\] \[INF\] Starting nats-server", lines[0]), lines


@pytest.mark.parametrize("where", ["authorization-default_permissions", "authorization-permissions",
                                   "account-default_permissions"])
async def test_default_permissions(server_kind, tmp_path, where):
    """default_permissions (in authorization also spelled permissions, and in
    an account): every user without permissions of its own gets them; a user
    with its own keeps its own."""
    users = "users: [{user: a, password: a}, {user: b, password: b, permissions: {publish: \">\"}}]"
    block, key = where.split("-")
    perms = f'{key}: {{publish: "ok.>", subscribe: {{deny: "secret"}}}}'
    if block == "authorization":
        text = f"listen: 127.0.0.1:{{port}}\nauthorization {{\n  {perms}\n  {users}\n}}\n"
    else:
        text = f"listen: 127.0.0.1:{{port}}\naccounts {{\n  A {{\n    {perms}\n    {users}\n  }}\n}}\n"
    srv = started(server_kind, tmp_path, text)
    try:
        a = await RawClient.open(srv, connect='{"verbose":false,"user":"a","pass":"a","protocol":1}')
        await a.send("PUB not.ok 1\r\nx\r\nSUB secret 1\r\nSUB ok.x 2\r\nPUB ok.x 1\r\ny\r\n")
        assert await a.read_until_pong() == ["-ERR 'Permissions Violation for Publish to \"not.ok\"'",
                                             "-ERR 'Permissions Violation for Subscription to \"secret\"'",
                                             "MSG ok.x 2 1", "y"]
        b = await RawClient.open(srv, connect='{"verbose":false,"user":"b","pass":"b","protocol":1}')
        await b.send("SUB secret 1\r\nPUB secret 1\r\nz\r\n")
        assert await b.read_until_pong() == ["MSG secret 1 1", "z"]
        a.close()
        b.close()
    finally:
        srv.stop()


async def test_write_deadline_cuts_a_subscriber_that_does_not_read(server_kind, tmp_path):
    """write_deadline: a subscriber whose socket takes nothing more for that
    long is cut as a slow consumer (max_pending is set far above what is
    sent, so only the deadline can cut it); /varz shows the deadline."""
    import asyncio
    import urllib.request

    from conftest import eventually

    http = free_port()
    srv = started(server_kind, tmp_path, f"listen: 127.0.0.1:{{port}}\nhttp: 127.0.0.1:{http}\n"
                  'write_deadline: "1s"\nmax_pending: 1GB\n')

    def varz() -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/varz", timeout=3) as r:
            return json.loads(r.read())

    try:
        assert varz()["write_deadline"] == 1_000_000_000
        sub = await RawClient.open(srv)
        await sub.send("SUB flood 1\r\n")
        assert await sub.read_until_pong() == []
        pub = await RawClient.open(srv)
        chunk = b"x" * (512 * 1024)
        for _ in range(96):  # 48 MiB the subscriber never reads (bounded)
            await pub.send(b"PUB flood %d\r\n%s\r\n" % (len(chunk), chunk))
        await pub.read_until_pong(timeout=10)
        assert await eventually(lambda: varz()["slow_consumers"] >= 1, timeout=20)
        assert await sub.closed(timeout=10)
        assert await pub.read_until_pong() == []  # the publisher is served on
        pub.close()
        sub.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("strict", [None, True, False])
async def test_jetstream_strict(server_kind, tmp_path, strict):
    """jetstream { strict }: by default (and with true) an API request with a
    field the server does not know is refused (10025); with false it is read
    as json.Unmarshal reads it, the field ignored."""
    from conftest import connect

    line = "jetstream: enabled" if strict is None else f"jetstream {{ strict: {str(strict).lower()} }}"
    srv = started(server_kind, tmp_path, f"listen: 127.0.0.1:{{port}}\n{line}\n")
    try:
        nc = await connect(srv.url)
        body = json.dumps({"name": "S", "subjects": ["s"], "bogus": 1}).encode()
        resp = json.loads((await nc.request("$JS.API.STREAM.CREATE.S", body, timeout=3)).data)
        if strict is False:
            assert "error" not in resp and resp["config"]["name"] == "S"
        else:
            assert resp["error"]["err_code"] == 10025
            assert resp["error"]["description"] == 'invalid JSON: json: unknown field "bogus"'
        await nc.close()
    finally:
        srv.stop()


# bcrypt hashes of "bar" (cost 11) and "foo" (cost 10), from nats-server's conf/ test files
BCRYPT_BAR = "$2a$11$dZM98SpGeI7dCFFGSpt.JObQcix8YHml4TBUZoge9R1uxnMIln5ly"
BCRYPT_FOO = "$2a$10$UHR6GhotWhpLsKtVP0/i6.Nh9.fuY73cWjLoJjb2sKT8KISBcUW5q"


@pytest.mark.parametrize("where", ["users", "token"])
async def test_bcrypt_passwords_and_tokens(server_kind, tmp_path, where):
    """A bcrypt hash as password or token is checked as bcrypt: the clear
    text logs in, the hash itself or another word is an Authorization
    Violation. The users come from an included file whose hashes are
    variables of a file it includes in turn (nats-server's conf/simple.conf)."""
    if where == "users":
        text = "port: {port}\nauthorization {\n  include 'includes/users.conf'\n  timeout: 0.5\n}\n"
        files = {"includes/users.conf": "include ./passwords.conf;\nusers = [\n  {user: alice, password: $ALICE_PASS}\n"
                                        "  {user: bob, password: $BOB_PASS}\n]\n",
                 "includes/passwords.conf": f"ALICE_PASS: {BCRYPT_FOO}\nBOB_PASS: {BCRYPT_BAR}\n"}
        good = [{"user": "alice", "pass": "foo"}, {"user": "bob", "pass": "bar"}]
        bad = [{"user": "alice", "pass": "bar"}, {"user": "bob", "pass": BCRYPT_BAR}, {"user": "bob", "pass": ""}]
    else:
        text = "port: {port}\nauthorization { token: \"" + BCRYPT_BAR + "\" }\n"
        files = {}
        good = [{"auth_token": "bar"}]
        bad = [{"auth_token": "foo"}, {"auth_token": BCRYPT_BAR}]
    srv = started(server_kind, tmp_path, text, files=files)
    try:
        for creds in good + bad:
            c = await RawClient.open(srv, connect=None)
            try:
                await c.send("CONNECT " + json.dumps({"verbose": False, "protocol": 1, **creds}) + "\r\nPING\r\n")
                line = await c.readline(timeout=10)
                assert line == ("PONG" if creds in good else "-ERR 'Authorization Violation'"), creds
            finally:
                c.close()
    finally:
        srv.stop()


def test_check_config_flag(server_kind, tmp_path):
    """-t: the file is checked and the server exits, 0 with "configuration
    file X is valid" (nats-server adds a digest natslab does not make), 1
    with the error a start would give; -t without -c is an error."""
    prefix = "natslab server: " if server_kind == "natslab" else "nats-server: "
    (tmp_path / "ok.conf").write_text("port: 4999\nauthorization { user: u, password: p }\n")
    (tmp_path / "bad.conf").write_text("port: 4999\nbogus: 1\n")
    ok = subprocess.run(binary(server_kind) + ["-c", "ok.conf", "-t"], cwd=tmp_path, capture_output=True, text=True,
                        timeout=20)
    assert ok.returncode == 0 and ok.stdout == ""
    assert ok.stderr.startswith(prefix + "configuration file ok.conf is valid"), ok.stderr
    bad = subprocess.run(binary(server_kind) + ["-c", "bad.conf", "-t"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=20)
    assert bad.returncode == 1
    assert [ln for ln in bad.stderr.splitlines() if ln] == [prefix + 'bad.conf:2:1: unknown field "bogus"']
    none = subprocess.run(binary(server_kind) + ["-t"], cwd=tmp_path, capture_output=True, text=True, timeout=20)
    assert none.returncode == 1
    assert none.stderr.strip() == prefix + "must specify [-c, --config] option to check configuration file syntax"


async def test_log_profile_and_metadata_keys_are_accepted(server_kind, tmp_path):
    """syslog, remote_syslog, prof_port, server_metadata, feature_flags and
    http_base_path (all in nats-server's server/configs/test.conf) do not stop
    the start; natslab logs once each that it does not use them."""
    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\nserver_metadata { region: eu }\n"
                  "feature_flags { js_ack_fc_v2: true }\nhttp_base_path: /nats\nsyslog: true\n"
                  'remote_syslog: "udp://127.0.0.1:1"\nprof_port: %d\n' % free_port())
    try:
        c = await RawClient.open(srv)
        await c.send("SUB x 1\r\nPUB x 2\r\nhi\r\n")
        assert await c.read_until_pong() == ["MSG x 1 2", "hi"]
        c.close()
    finally:
        srv.stop()
    if server_kind == "natslab":
        log = srv.log()
        for name in ("server_metadata", "feature_flags", "http_base_path", "syslog", "remote_syslog", "prof_port"):
            assert log.count(f"[WRN] {name} is not used by natslab (a single node): ignored") == 1, (name, log)


MANY_ERRORS = """
authorization {
  user = foo
  pass = bar
  token = quux
}
monitoring = 8222
write_deadline = 5
max_payload: true
server_name: "a b"
bogus { x: 1 }
accounts {
  synadia {
    nkey = "OC5GRL36RQV7MJ2GT6WQSCKDKJKYTK4T2LGLWJ2SEJKRDHFOQQWGGFQL"
  }
}
"""


def _report(kind: str, tmp_path, text: str, *flags: str) -> tuple[int, list[str]]:
    (tmp_path / "many.conf").write_text(text)
    r = subprocess.run(binary(kind) + ["-c", "many.conf", "-p", "-1", *flags], cwd=tmp_path, capture_output=True,
                       text=True, timeout=20)
    prefix = "natslab server: " if kind == "natslab" else "nats-server: "
    return r.returncode, [ln.removeprefix(prefix) for ln in r.stderr.splitlines() if ln]


@pytest.mark.parametrize("flags", [(), ("-t",)])
def test_every_error_of_a_file_at_once(server_kind, tmp_path, flags):
    """nats-server's processConfigFile collects the problems of every key and
    reports them together, the warnings first (nats-server's own order
    among the keys is Go's map order, so the errors are compared as a set)."""
    rc, lines = _report(server_kind, tmp_path, MANY_ERRORS, *flags)
    assert rc == 1
    assert lines[0] == ('many.conf:8:1: invalid use of field "write_deadline": write_deadline should be converted '
                        'to a duration')
    assert set(lines[1:]) == {
        "many.conf:2:1: Cannot have a user/pass and token",
        'many.conf:7:1: unknown field "monitoring"',
        "many.conf:9:1: interface conversion: interface {} is bool, not int64",
        "many.conf:10:1: server name cannot contain spaces",
        'many.conf:11:1: unknown field "bogus"',
        'many.conf:14:5: Not a valid public nkey for an account: "OC5GRL36RQV7MJ2GT6WQSCKDKJKYTK4T2LGLWJ2SEJKRDHFOQQWGGFQL"',
    }, lines
    assert len(lines) == 7


async def test_a_warning_alone_does_not_stop_a_start(server_kind, tmp_path):
    """write_deadline as a number of seconds: nats-server's warning on stderr,
    and the server starts; with -t the warning fails the check."""
    rc, lines = _report(server_kind, tmp_path, "write_deadline = 5\n", "-t")
    assert (rc, lines) == (1, ['many.conf:1:0: invalid use of field "write_deadline": write_deadline should be '
                               'converted to a duration'])
    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\nwrite_deadline = 5\n")
    try:
        c = await RawClient.open(srv)
        c.close()
    finally:
        srv.stop()
    assert 'c.conf:2:1: invalid use of field "write_deadline": write_deadline should be converted to a duration' \
        in srv.log()


ACCOUNT_ERRORS = """authorization {
  user = foo
  pass = bar
}
accounts {
  a {
    nkey = "OC5GRL36RQV7MJ2GT6WQSCKDKJKYTK4T2LGLWJ2SEJKRDHFOQQWGGFQL"
    users [
      { nkey = "OCARKS2E3KVB7YORL2DG34XLT7PUCOL2SVM7YXV6ETHLW6Z46UUJ2VZ3" }
    ]
  }
  b {
    users [
      { nkey = "UB57IEMPG4KOTPFV5A66QKE2HZ3XBXFHVRCCVMJEWKECMVN2HSH3VTSJ" }
    ]
  }
}
cluster {
  authorization {
    users = []
  }
}
"""


def test_every_account_error_at_once(server_kind, tmp_path):
    """Within accounts {} too (nats-server's server/configs/multiple_errors.conf):
    each bad account or user nkey, and an account with users beside a
    single user/pass, at its place; a cluster's authorization with users."""
    rc, lines = _report(server_kind, tmp_path, ACCOUNT_ERRORS, "-t")
    assert rc == 1
    always = {
        'many.conf:7:5: Not a valid public nkey for an account: "OC5GRL36RQV7MJ2GT6WQSCKDKJKYTK4T2LGLWJ2SEJKRDHFOQQWGGFQL"',
        "many.conf:9:9: Not a valid public nkey for a user",
        "many.conf:19:3: Cluster authorization does not allow multiple users",
    }
    in_order = "many.conf:13:5: Can not have a single user/pass and accounts"
    # nats-server walks the top-level keys in Go's map order: about one run in
    # five it reads accounts' users before authorization's user/pass, and then
    # says it at the file's start instead (natslab reads the file in order)
    accounts_first = "many.conf:1:0: Can not have a single user/pass and a users array"
    assert set(lines) in (always | {in_order}, always | {accounts_first}), lines
    assert len(lines) == 4


async def test_jetstream_max_buffered_size(server_kind, tmp_path):
    """jetstream { max_buffered_size }: a message that would take more than
    that in a stream's ingest queue (subject, reply, headers and payload) is
    dropped; a publisher that waits hears 429 / 10167 with a 429 status
    header, a plain publish is lost, and the stream serves smaller ones on.
    (max_buffered_msgs: nats-server's queue length, which messages that
    arrive one at a time never reach: taken; its checks are in test_bad_files.)"""
    from conftest import connect, eventually

    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\n"
                  "jetstream { max_buffered_size: 1kb, max_buffered_msgs: 1000 }\n")
    try:
        nc = await connect(srv.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        reply = "r.1234567890"
        inbox = await nc.subscribe(reply)
        await nc.flush()
        await nc.flush()
        ack = await js.publish("s.small", b"x" * 100)
        assert ack.seq == 1
        # the limit counts every byte: subject + reply + payload over 1024 by one
        big = b"x" * (1024 - len("s.big") - len(reply) + 1)
        await nc.publish("s.big", big, reply=reply)
        msg = await inbox.next_msg(timeout=5)
        assert msg.headers == {"Status": "429", "Description": "Too Many Requests"}
        assert json.loads(msg.data) == {"error": {"code": 429, "err_code": 10167, "description": "too many requests"},
                                        "stream": "S", "seq": 0}
        await nc.publish("s.big", big[:-1], reply=reply)  # exactly the limit: stored
        assert json.loads((await inbox.next_msg(timeout=5)).data)["seq"] == 2
        await nc.publish("s.big", big * 2)  # no reply: dropped without a word
        ack = await js.publish("s.small", b"y")
        assert ack.seq == 3
        assert (await js.stream_info("S")).state.messages == 3
        await nc.close()
    finally:
        srv.stop()


async def test_client_advertise_sub_tokens_headers_tags_closed_clients(server_kind, tmp_path):
    """Keys a client sees the effect of: client_advertise (INFO's host and
    port), max_sub_tokens (nats-server's -ERR, the connection served on),
    no_header_support (INFO says headers false; an HPUB then closes the
    connection without a word), server_tags (/varz, lower case) and
    max_closed_clients (/connz?state=closed keeps that many)."""
    import urllib.request

    from conftest import eventually

    http = free_port()
    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\n"
                  'client_advertise: "nats.example.com:5222"\nmax_sub_tokens: 3\nno_header_support: true\n'
                  'server_tags: ["Region:EU ", "az:1"]\nmax_closed_clients: 2\n', "-m", str(http))

    def monitor(path: str) -> dict:
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{http}{path}", timeout=5).read())

    try:
        i = info(srv)
        assert (i["host"], i["port"], i["headers"]) == ("nats.example.com", 5222, False)
        c = await RawClient.open(srv, connect='{"verbose":false,"pedantic":false,"headers":true,"protocol":1}')
        await c.send("SUB a.b.c.d 1\r\nSUB a.b.c 2\r\nSUB a.b.* 3\r\n")
        assert await c.read_until_pong() == ["-ERR 'Permissions Violation for Subscription to \"a.b.c.d\", too many tokens'"]
        await c.send("PUB a.b.c 2\r\nhi\r\n")
        got = await c.read_until_pong()  # (the two subscriptions in either order)
        assert sorted(zip(got[::2], got[1::2])) == [("MSG a.b.c 2 2", "hi"), ("MSG a.b.c 3 2", "hi")]
        await c.send("HPUB a.b.c 12 14\r\nNATS/1.0\r\n\r\nhi\r\n")
        assert await c.closed()
        assert monitor("/varz")["tags"] == ["region:eu", "az:1"]
        for _ in range(3):
            RawClient.close(await RawClient.open(srv))
        assert await eventually(lambda: monitor("/connz?state=closed")["total"] >= 2)
        assert await eventually(lambda: monitor("/varz")["connections"] == 0)
        closed = monitor("/connz?state=closed")
        assert (closed["num_connections"], closed["total"]) == (2, 2)
    finally:
        srv.stop()


async def test_ports_file_dir(server_kind, tmp_path):
    """ports_file_dir: once the server listens, ``<dir>/<program>_<pid>.ports``
    holds its client and monitor URLs as JSON; a clean stop removes it."""
    from conftest import eventually

    d = tmp_path / "ports"
    d.mkdir()
    http = free_port()
    srv = started(server_kind, tmp_path, f'listen: 127.0.0.1:{{port}}\nports_file_dir: "{d}"\n', "-m", str(http))
    try:
        assert await eventually(lambda: len(list(d.glob(f"*_{srv.proc.pid}.ports"))) == 1)
        (path,) = d.glob(f"*_{srv.proc.pid}.ports")
        assert await eventually(lambda: path.read_text().endswith("}"))
        assert json.loads(path.read_text()) == {"nats": [f"nats://127.0.0.1:{srv.port}"],
                                                "monitoring": [f"http://127.0.0.1:{http}"]}
    finally:
        srv.stop()
    assert list(d.iterdir()) == []


@pytest.mark.parametrize("text,fatal", [
    # a client_advertise nats-server's parseHostPort refuses: -t passes it, the start ends once the port is bound
    ('client_advertise: "a:b:c"', "Error setting server INFO with ClientAdvertise value of a:b:c, "
                                  "err=address a:b:c: too many colons in address"),
    ('client_advertise: "host:abc"', "Error setting server INFO with ClientAdvertise value of host:abc, "
                                     'err=strconv.Atoi: parsing "abc": invalid syntax'),
    ('client_advertise: "[::1"', "Error setting server INFO with ClientAdvertise value of [::1, "
                                 "err=address [::1: missing ']' in address"),
    ('client_advertise: "x]:1"', "Error setting server INFO with ClientAdvertise value of x]:1, "
                                 "err=address x]:1: unexpected ']' in address"),
    # StartMonitoring's checks (nats-server's own server/configs/listen.conf has both ports)
    ("http: 127.0.0.1:{http}\nhttps: 127.0.0.1:{https}",
     "Can't start monitoring: can't specify both HTTP ({http}) and HTTPs ({https}) ports"),
    ("https: 127.0.0.1:{https}", "Can't start monitoring: TLS cert and key required for HTTPS"),
    ("http: 127.0.0.1:{busy}", "Can't start monitoring: can't listen to the monitor port: listen tcp "
                               "127.0.0.1:{busy}: bind: address already in use"),
])
def test_fatal_start(server_kind, tmp_path, text, fatal):
    """What nats-server's start refuses with a fatal log line (after -t
    passed the file): the same line, exit status 1."""
    import socket

    with socket.socket() as busy:  # (a port another program listens on)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        ports = {"http": free_port(), "https": free_port(), "busy": busy.getsockname()[1]}
        conf = tmp_path / "c.conf"
        conf.write_text(f"listen: 127.0.0.1:{free_port()}\n{text.format(**ports)}\n")
        r = subprocess.run(binary(server_kind) + ["-sd", str(tmp_path / "store"), "-c", str(conf)],
                           capture_output=True, text=True, timeout=20)
    lines = [ln.split("] ", 2)[-1] for ln in r.stderr.splitlines() if "[FTL]" in ln]
    assert (r.returncode, lines) == (1, [fatal.format(**ports)])


@pytest.mark.parametrize("text,want", [
    # nats-server's warnings: a start goes on with them, -t fails on them
    ("port: 1\nping_interval: 30\n",
     'c.conf:2:1: invalid use of field "ping_interval": ping_interval should be converted to a duration'),
    # (a number not an int: the warning, then the panic of v.(int64))
    ("port: 1\nping_interval: true\n",
     'c.conf:2:1: invalid use of field "ping_interval": ping_interval should be converted to a duration\n'
     "c.conf:2:1: interface conversion: interface {} is bool, not int64"),
    ("port: 1\nwrite_deadline: 1.5\n",
     'c.conf:2:1: invalid use of field "write_deadline": write_deadline should be converted to a duration\n'
     "c.conf:2:1: interface conversion: interface {} is float64, not int64"),
    ("port: 1\njetstream { sync_interval: 5 }\n",
     'c.conf:2:13: invalid use of field "sync_interval": sync_interval should be converted to a duration'),
    ("port: 1\nwebsocket { port: -1, no_tls: true, ping_interval: 5 }\n",
     'c.conf:2:37: invalid use of field "ping_interval": ping_interval should be converted to a duration'),
    ('port: 1\nauthorization { user: a, password: b, timeout: "2m" }\n',
     'c.conf:2:39: invalid use of field "timeout": timeout of 2m (120.000000 seconds) is high, consider keeping it '
     "under 60 seconds. possibly caused by unquoted duration; use '1m' instead of 1m, for example"),
    ("port: 1\nauthorization { user: a, password: b, timeout: 90.5 }\n",
     'c.conf:2:39: invalid use of field "timeout": timeout of 90.5 (90.500000 seconds) is high, consider keeping it '
     "under 60 seconds. possibly caused by unquoted duration; use '1m' instead of 1m, for example"),
])
def test_duration_warnings_fail_the_check(server_kind, tmp_path, text, want):
    conf = tmp_path / "c.conf"
    conf.write_text(text)
    r = subprocess.run(binary(server_kind) + ["-t", "-c", conf.name], capture_output=True, text=True, timeout=20,
                       cwd=tmp_path)
    prefix = "natslab server: " if server_kind == "natslab" else "nats-server: "
    assert (r.returncode, [ln.removeprefix(prefix) for ln in r.stderr.splitlines() if ln]) == (1, want.split("\n"))


@pytest.mark.parametrize("text,want", [
    ('jetstream { domain: "a.b" }', "invalid domain name: may not contain ., * or >"),
    ("system_account: NOPE", "error resolving system account: account missing"),
    ('lame_duck_grace_period: "3m"',
     "lame duck grace period (3m0s) should be strictly lower than lame duck duration (2m0s)"),
    ("websocket { port: -1 }", "websocket requires TLS configuration"),
    ('websocket { port: -1, no_tls: true, allowed_origins: [ "::bad" ] }',
     'unable to parse allowed origin: parse "::bad": missing protocol scheme'),
    ('websocket { port: -1, no_tls: true, allowed_origins: [ "foo" ] }',
     'unable to parse allowed origin: parse "foo": invalid URI for request'),
])
def test_checks_of_the_options_are_the_starts_not_the_files(server_kind, tmp_path, text, want):
    """nats-server's validateOptions: -t passes the file (it reads the file
    only), the start stops with the first of them, without a place."""
    conf = tmp_path / "c.conf"
    conf.write_text(f"port: -1\n{text}\n")
    prefix = "natslab server: " if server_kind == "natslab" else "nats-server: "
    r = subprocess.run(binary(server_kind) + ["-t", "-c", conf.name], capture_output=True, text=True, timeout=20,
                       cwd=tmp_path)
    assert r.returncode == 0 and "is valid" in r.stderr, r.stderr
    assert refusal(server_kind, conf) == (1, {want})
