"""TLS for client connections, as nats-server does it.

The options come from the ``tls {}`` block of the config file or from the
``--tls*`` flags. A client gets the plain-text INFO (with ``tls_required``)
and the server then starts the handshake at once, before reading anything
(asyncio's start_tls, with the alert of a refused handshake sent); with ``handshake_first`` the handshake comes first and
INFO follows over TLS. A plain client on a TLS port is simply closed, as
nats-server closes it ("tls: first record does not look like a TLS
handshake", logged at debug level; no -ERR). With ``verify`` a client must
present a certificate signed by ``ca_file``; with ``verify_and_map`` the
certificate names the user (e-mail, DNS name, URI or subject DN, in
nats-server's order).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import select
import ssl
from asyncio import sslproto
from dataclasses import dataclass
from pathlib import Path

from .conf import ConfigError, PlacedError, config_duration, element_error, go_duration, go_type, go_value

TLS_TIMEOUT = 2.0  # nats-server's default handshake timeout, in seconds
HANDSHAKE_FIRST_FALLBACK = 0.05  # handshake_first: auto waits this long for a ClientHello
CLOSED_TLS = "TLS Handshake Failure"  # close reason (connz)

# the keys of a tls {} block natslab knows; nats-server knows more (_REFUSED:
# pinned_certs, ocsp_peer, cert_store...): those are refused as not supported
# rather than silently ignored (docs/compatibility.md says why each)
_REFUSED = ("ocsp_peer", "cert_store", "cert_match_by", "cert_match", "ca_certs_match",
            "cert_match_skip_invalid", "connection_rate_limit", "verify_cert_and_check_known_urls")
_KNOWN = ("cert_file", "key_file", "ca_file", "verify", "verify_and_map", "timeout",
          "handshake_first", "first", "immediate", "insecure", "min_version", "cipher_suites",
          "curve_preferences", "allow_insecure_cipher_suites", "certs", "certificates", "pinned_certs")

# cipher_suites: Go's names (tls.CipherSuites(), then tls.InsecureCipherSuites()) and OpenSSL's.
# The TLS 1.3 suites cannot be chosen, in Go as in OpenSSL: named, they change nothing.
_TLS13 = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
_CIPHERS = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
_INSECURE_CIPHERS = {
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}
# curve_preferences: Go's names, OpenSSL's (None: a hybrid group this OpenSSL may not have)
_CURVES = {"X25519": "X25519", "CurveP256": "prime256v1", "CurveP384": "secp384r1", "CurveP521": "secp521r1",
           "X25519MLKEM768": None, "SecP256r1MLKEM768": None, "SecP384r1MLKEM1024": None}


@dataclass
class TLSOptions:
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    verify: bool = False
    map: bool = False  # verify_and_map: the client certificate names the user
    timeout: float = TLS_TIMEOUT
    handshake_first: bool = False
    fallback: float = 0.0  # handshake_first "auto" or a delay: plain INFO to a client silent that long
    min_version: str = ""
    ciphers: tuple = ()  # cipher_suites, OpenSSL's names (empty: the defaults)
    curves: tuple = ()  # curve_preferences, OpenSSL's names
    certs: tuple = ()  # certs [{cert_file, key_file}...]: (cert, key) pairs, chosen by SNI (without cert_file)
    pinned: frozenset | None = None  # pinned_certs: sha256 (hex) of the client certificates' SubjectPublicKeyInfo

    def context(self) -> ssl.SSLContext:
        """The server-side SSLContext, with nats-server's error texts when a
        file does not load. With ``certs`` (and no ``cert_file``) there is a
        context for each pair: the first serves, and a client's SNI that one
        of the others' names matches switches to it (Go's getCertificate:
        the first certificate valid for the name, else the first)."""
        if self.cert_file or not self.certs:
            return self._context(self.cert_file, self.key_file)
        pairs = []
        for i, (cert, key) in enumerate(self.certs):
            try:
                pairs.append((self._context(cert, key), _cert_names(cert)))
            except ConfigError as e:
                raise ConfigError(str(e).replace("certificate/key pair:", f"certificate/key pair {i + 1}/"
                                                 f"{len(self.certs)}:", 1)) from None
        first = pairs[0][0]
        if len(pairs) > 1:
            def pick(sslobj, server_name, _ctx):
                if server_name:
                    for ctx, names in pairs:
                        if _matches(server_name, names):
                            sslobj.context = ctx
                            return None
                return None

            first.sni_callback = pick
        return first

    def _context(self, cert_file: str, key_file: str) -> ssl.SSLContext:
        if self.cert_file and not self.key_file:
            raise ConfigError("missing 'key_file' in TLS configuration")
        if self.key_file and not self.cert_file:
            raise ConfigError("missing 'cert_file' in TLS configuration")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3 if self.min_version == "1.3" else ssl.TLSVersion.TLSv1_2
        if self.ciphers:
            known = {c["name"] for c in ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).get_ciphers()}
            try:
                ctx.set_ciphers(":".join(c for c in self.ciphers if c in known) or "!ALL")
            except ssl.SSLError:
                if not any(c in known for c in self.ciphers):  # (TLS 1.3 stays: its suites are not chosen)
                    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        for curve in self.curves:  # Python's ssl sets one curve: the first this OpenSSL has
            try:
                ctx.set_ecdh_curve(curve)
                break
            except (ValueError, ssl.SSLError):
                continue
        if cert_file:
            _load_pair(ctx, cert_file, key_file)
        if self.verify:
            ctx.verify_mode = ssl.CERT_REQUIRED
        if self.ca_file:
            try:
                pem = Path(self.ca_file).read_text()
            except OSError as e:
                raise ConfigError(f"open {self.ca_file}: {e.strerror.lower() if e.strerror else e}") from None
            try:
                ctx.load_verify_locations(cadata=pem)
            except (ssl.SSLError, ValueError):
                raise ConfigError("failed to parse root ca certificate") from None
        elif self.verify:
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return ctx


def _cert_names(path: str) -> tuple[list[str], list[str]]:
    """The DNS names and IP addresses of a PEM certificate's subjectAltName."""
    try:
        decoded = ssl._ssl._test_decode_cert(path)
    except (OSError, ssl.SSLError, AttributeError):
        return [], []
    san = decoded.get("subjectAltName", ())
    return ([v.lower() for k, v in san if k == "DNS"],
            [v.strip() for k, v in san if k == "IP Address"])


def _matches(host: str, names: tuple[list[str], list[str]]) -> bool:
    """Go's x509 VerifyHostname: an IP matches the IP SANs, a name the DNS
    SANs (a leading ``*.`` stands for one label)."""
    import ipaddress

    dns, ips = names
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        ip = None
    if ip is not None:
        return any(_same_ip(ip, v) for v in ips)
    host = host.lower().rstrip(".")
    for name in dns:
        if name == host:
            return True
        if name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:]:
            return True
    return False


def _same_ip(ip, text: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(text) == ip
    except ValueError:
        return False


def _load_pair(ctx: ssl.SSLContext, cert_file: str, key_file: str) -> None:
    """``ctx`` with the certificate and key, nats-server's error text when
    they do not load. Go takes an RSA key of 1024 bits; OpenSSL's default
    security level (2) wants 2048: such a key lowers the context to level 1
    (RSA 1024 and up, Go's own floor) rather than being refused."""
    try:
        ctx.load_cert_chain(cert_file, key_file)
        return
    except ssl.SSLError as e:
        if "KEY_VALUES_MISMATCH" in str(e):  # (Go's words for it)
            raise ConfigError("error parsing X509 certificate/key pair: tls: private key does not match public "
                              "key") from None
        if "KEY_TOO_SMALL" not in str(e):
            raise ConfigError(f"error parsing X509 certificate/key pair: {_reason(e)}") from None
    except OSError as e:
        raise ConfigError(f"error parsing X509 certificate/key pair: {_reason(e, cert_file, key_file)}") from None
    current = ":".join(c["name"] for c in ctx.get_ciphers() if c["protocol"] != "TLSv1.3") or "DEFAULT"
    try:
        ctx.set_ciphers(current + ":@SECLEVEL=1")
        ctx.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"error parsing X509 certificate/key pair: {_reason(e)}") from None


def _reason(e: Exception, *files: str) -> str:
    """Go's text for a pair that does not load: ``open FILE: reason`` for
    the first file (the certificate, then the key, as LoadX509KeyPair reads
    them) that cannot be read (ssl's error names none)."""
    if isinstance(e, OSError) and not isinstance(e, ssl.SSLError):
        name = e.filename
        if name is None:
            for f in files:
                try:
                    open(f, "rb").close()
                except OSError as err:
                    name, e = f, err
                    break
        if name:
            return f"open {name}: {(e.strerror or str(e)).lower()}"
    return str(e)


def _string_element(array, i: int) -> str:
    """Element ``i`` of a list nats-server reads as strings (``r.(string)``:
    anything else is its panic's error, at the element)."""
    if not isinstance(array[i], str):
        raise element_error(array, i, f"interface conversion: interface {{}} is {go_type(array[i])}, not string")
    return array[i]


def parse_tls_block(block, at: str = "") -> TLSOptions:
    """A ``tls {}`` block, checked as nats-server's parseTLS checks it: an
    error about a key at the key's place, one of the checks after the keys
    at the block's own key (``at``, its ``file:line:col``: nats-server's
    token of the block then)."""
    last: list[str] = []
    try:
        return _parse_tls_block(block, last)
    except PlacedError:
        raise
    except ConfigError as e:
        if last and hasattr(block, "where"):
            raise ConfigError(f"{block.where(last[-1])}: {e}") from None
        if at:
            raise ConfigError(f"{at}: {e}") from None
        raise


def _parse_tls_block(block, last: list[str]) -> TLSOptions:
    if not isinstance(block, dict):
        raise ConfigError("error parsing tls config, expected a map")
    t = TLSOptions()
    insecure: list[str] = []
    allow_insecure = False
    for key, v in block.items():
        last.append(key)
        k = key.lower()
        if k in _REFUSED:
            raise ConfigError(f'"tls.{k}" is not supported by natslab')
        if k not in _KNOWN:
            raise ConfigError(f'error parsing tls config, unknown field "{key}"')
        if k in ("cert_file", "key_file", "ca_file"):
            if not isinstance(v, str):
                raise ConfigError(f"error parsing tls config, expected '{k}' to be filename")
            setattr(t, k, v)
        elif k == "pinned_certs":
            if not isinstance(v, list):
                raise ConfigError("error parsing tls config, expected 'pinned_certs' to be a list of hex-encoded "
                                  "sha256 of DER encoded SubjectPublicKeyInfo")
            if v:
                pinned = set()
                for i in range(len(v)):
                    e = _string_element(v, i).lower()
                    if not re.fullmatch(r"[a-f0-9]{64}", e):
                        raise element_error(v, i, f"error parsing tls config, 'pinned_certs' key {e} does not look "
                                                   "like hex-encoded sha256 of DER encoded SubjectPublicKeyInfo")
                    pinned.add(e)
                t.pinned = frozenset(pinned)
        elif k in ("verify", "verify_and_map", "insecure"):
            if not isinstance(v, bool):
                raise ConfigError(f"error parsing tls config, expected '{k}' to be a boolean")
            if k == "verify":
                t.verify = v
            elif k == "verify_and_map":
                t.verify = t.verify or v
                t.map = v
        elif k == "timeout":
            t.timeout = config_duration(v, "error parsing tls config, 'timeout' {}", (int, float),
                                        "error parsing tls config, 'timeout' wrong type")
        elif k in ("handshake_first", "first", "immediate"):
            if isinstance(v, bool):
                t.handshake_first = v
            elif isinstance(v, str) and v.lower() in ("true", "on", "false", "off"):
                t.handshake_first = v.lower() in ("true", "on")
            elif isinstance(v, str) and v.lower() in ("auto", "auto_fallback"):
                t.handshake_first, t.fallback = True, HANDSHAKE_FIRST_FALLBACK
            elif isinstance(v, str):
                try:
                    t.fallback = go_duration(v)
                except ConfigError:
                    raise ConfigError(f'field "{key}"\'s value "{v}" is invalid') from None
                t.handshake_first = True
            else:
                raise ConfigError(f'field "{key}" should be a boolean or a string, got {go_type(v)}')
        elif k == "allow_insecure_cipher_suites":
            if not isinstance(v, bool):
                raise ConfigError("error parsing tls config, expected 'allow_insecure_cipher_suites' to be a boolean")
            allow_insecure = v
        elif k in ("cipher_suites", "curve_preferences"):
            if not isinstance(v, list):  # (mv.([]any): nats-server's panic, at the key)
                raise ConfigError(f"interface conversion: interface {{}} is {go_type(v)}, not []interface {{}}")
            if not v:
                raise ConfigError(f"error parsing tls config, '{k}' cannot be empty")
            table = {**_CIPHERS, **_INSECURE_CIPHERS, **dict.fromkeys(_TLS13)} if k == "cipher_suites" else _CURVES
            for i in range(len(v)):  # (each at its element, as nats-server places them)
                name = _string_element(v, i)
                if name not in table:
                    what = "cipher" if k == "cipher_suites" else "curve preference"
                    raise element_error(v, i, f"unrecognized {what} {name}")
            names = tuple(table[str(n)] for n in v if table[str(n)])
            if k == "cipher_suites":
                t.ciphers = names or ("TLS13",)
                insecure += [str(n) for n in v if str(n) in _INSECURE_CIPHERS]
            else:
                t.curves = names
        elif k in ("certs", "certificates"):
            if not isinstance(v, list):  # (nats-server names the type of the whole tls block)
                raise ConfigError("error parsing certificates config: unsupported type map[string]interface {}")
            pairs = []
            for pair in v:
                if not isinstance(pair, dict):
                    raise ConfigError(f"error parsing certificates config: unsupported type {go_type(pair)}")
                cert = keyf = ""
                for pk, pv in pair.items():
                    if not isinstance(pv, str):
                        raise ConfigError(f"error parsing certificates config: unsupported type {go_type(pv)}")
                    if pk == "cert_file":
                        cert = pv
                    elif pk == "key_file":
                        keyf = pv
                    else:
                        raise ConfigError(f'error parsing tls certs config, unknown field "{pk}"')
                if not cert or not keyf:
                    raise ConfigError("error parsing certificates config: both 'cert_file' and 'cert_key' options "
                                      "are required")
                pairs.append((cert, keyf))
            t.certs = tuple(pairs)
        elif k == "min_version":  # (parseTLSVersion, tlsVersionFromString)
            if not isinstance(v, str):
                raise ConfigError(f"error parsing tls config: 'min_version' wrong type: {go_value(v)}")
            if v in ("1.0", "1.1"):
                raise ConfigError(f"error parsing tls config: unsupported TLS version: TLS {v}")
            if v not in ("1.2", "1.3"):
                raise ConfigError(f"error parsing tls config: unknown version: {v}")
            t.min_version = v
    last.clear()  # (the checks after the keys: at the block's key)
    if insecure and not allow_insecure:
        raise ConfigError("insecure cipher suites configured without 'allow_insecure_cipher_suites' option set: "
                          + ", ".join(insecure))
    return t


def from_flags(flags: dict) -> TLSOptions:
    """``--tls --tlscert --tlskey --tlscacert --tlsverify`` (they replace a
    config file's tls block, as with nats-server)."""
    if not flags.get("tlscert"):
        raise ConfigError("TLS Server certificate must be present and valid")
    if not flags.get("tlskey"):
        raise ConfigError("TLS Server private key must be present and valid")
    return TLSOptions(cert_file=flags["tlscert"], key_file=flags["tlskey"], ca_file=flags.get("tlscacert", ""),
                      verify=bool(flags.get("tlsverify")))


# -- the handshake ------------------------------------------------------------

def start(client, ctx: ssl.SSLContext, opts: TLSOptions, info: bytes) -> None:
    """Upgrade a just-accepted connection: INFO in plain text first (unless
    handshake_first), then the server side of the handshake. Reading stays
    paused until the TLS layer takes the socket over, so no byte of the
    handshake reaches the protocol parser. ``client.tls_ready()`` runs once
    it is done; a failed handshake closes the connection."""
    transport = client.transport
    transport.pause_reading()
    loop = client.server.loop
    if opts.handshake_first and opts.fallback > 0:
        loop.call_later(opts.fallback, _fallback, client, transport, ctx, opts, info)
        return
    if client.server.opts.allow_non_tls and not opts.handshake_first:
        transport.write(info)
        _sniff(client, transport, ctx, opts, info, loop.time() + opts.timeout)
        return
    if not opts.handshake_first:
        transport.write(info)
    loop.create_task(_handshake(client, transport, ctx, opts, info, opts.handshake_first))


def _fallback(client, transport, ctx, opts: TLSOptions, info: bytes) -> None:
    """handshake_first with a fallback delay: a client that has sent
    something by now starts TLS first; a silent one waits for INFO, gets it
    in plain text and upgrades after it (nats-server's fallback). The socket
    is only polled: reading stays paused, nothing is consumed."""
    if client.closed or transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    first = bool(sock is not None and select.select([sock.fileno()], [], [], 0)[0])
    if not first:
        transport.write(info)
    client.server.loop.create_task(_handshake(client, transport, ctx, opts, info, first))


def _sniff(client, transport, ctx, opts: TLSOptions, info: bytes, deadline: float) -> None:
    """allow_non_tls: INFO has gone out in plain text; the client's first
    byte says what it wants, as nats-server reads it (0x16, a TLS record:
    the handshake; anything else, or nothing within the TLS timeout: plain
    text). The byte is only peeked at (the socket is polled, reading stays
    paused), so the handshake or the parser gets it whole."""
    if client.closed or transport.is_closing():
        return
    loop = client.server.loop
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    first = None
    if select.select([sock.fileno()], [], [], 0)[0]:
        import socket

        peek = socket.socket(fileno=os.dup(sock.fileno()))
        try:
            first = peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            first = b""
        finally:
            peek.close()
    if first is None and loop.time() < deadline:
        loop.call_later(0.005, _sniff, client, transport, ctx, opts, info, deadline)
        return
    if first == b"\x16":
        loop.create_task(_handshake(client, transport, ctx, opts, info, False))
        return
    transport.resume_reading()  # a plain-text client
    client.tls_ready()


async def _handshake(client, transport, ctx, opts: TLSOptions, info: bytes, first: bool) -> None:
    srv = client.server
    log = srv.logger
    log.debug("%s:%d - cid:%d - Starting TLS client connection handshake", client.host, client.port, client.cid)
    # what the client sends right behind its handshake (CONNECT) can be
    # decrypted before this coroutine resumes: it waits in the shim until
    # the client has its new transport
    shim = _Shim(client)
    try:
        new = await _start_tls(srv.loop, transport, shim, ctx, opts.timeout)
    except (OSError, ssl.SSLError, asyncio.TimeoutError, ConnectionError) as e:
        text, probe = describe(e, transport)
        (log.debug if probe else log.error)("%s:%d - cid:%d - TLS handshake error: %s",
                                            client.host, client.port, client.cid, text)
        transport.abort()
        client.close_reason = CLOSED_TLS
        client.connection_lost(None)
        return
    if client.closed:
        new.abort()
        return
    obj = new.get_extra_info("ssl_object")
    if opts.pinned is not None and not _pinned(obj, opts.pinned):
        # (nats-server's ErrCertNotPinned: a handshake error once the handshake is done)
        log.error("%s:%d - cid:%d - TLS handshake error: certificate not pinned", client.host, client.port, client.cid)
        new.abort()
        client.close_reason = CLOSED_TLS
        client.connection_lost(None)
        return
    log.debug("%s:%d - cid:%d - TLS handshake complete", client.host, client.port, client.cid)
    if obj is not None:
        log.debug("%s:%d - cid:%d - TLS version %s, cipher suite %s", client.host, client.port, client.cid,
                  _version(obj.version()), obj.cipher()[0] if obj.cipher() else "")
    new.set_write_buffer_limits(high=transport.get_write_buffer_limits()[1])
    client.transport = new
    client.tls_state = obj
    client.tls_first = first
    if first:
        new.write(info)
    client.tls_ready()
    shim.hand_over(new)


class _AlertingSSLProtocol(sslproto.SSLProtocol):
    """asyncio's server side of TLS, except that a handshake that fails
    (a client certificate refused under ``verify``) sends the alert OpenSSL
    wrote for it (certificate required, unknown CA, ...) before the close,
    as nats-server (Go's crypto/tls) does; asyncio drops it and closes bare."""

    def _on_handshake_complete(self, handshake_exc):
        if handshake_exc is not None and self._transport is not None:
            try:
                alert = self._outgoing.read()
                if alert:
                    self._transport.write(alert)
            except Exception:  # (the alert is a courtesy: the close follows anyway)
                pass
        super()._on_handshake_complete(handshake_exc)


def alerting_server_protocol(loop, protocol, ctx: ssl.SSLContext, timeout: float) -> asyncio.BaseProtocol:
    """For ``create_server`` without ``ssl=``: the TLS layer (server side,
    handshake at once) over ``protocol``, as asyncio's own ``ssl=ctx`` makes
    it, but with the alert of a refused handshake sent (the websocket port)."""
    return _AlertingSSLProtocol(loop, protocol, ctx, None, True, None, ssl_handshake_timeout=timeout)


async def _start_tls(loop, transport, protocol, ctx: ssl.SSLContext, timeout: float):
    """loop.start_tls (server side) with _AlertingSSLProtocol: the same
    steps as asyncio's own."""
    waiter = loop.create_future()
    ssl_protocol = _AlertingSSLProtocol(loop, protocol, ctx, waiter, True, None,
                                        ssl_handshake_timeout=timeout, call_connection_made=False)
    transport.pause_reading()
    transport.set_protocol(ssl_protocol)
    conmade_cb = loop.call_soon(ssl_protocol.connection_made, transport)
    resume_cb = loop.call_soon(transport.resume_reading)
    try:
        await waiter
    except BaseException:
        transport.close()
        conmade_cb.cancel()
        resume_cb.cancel()
        raise
    return ssl_protocol._app_transport


class _Shim(asyncio.Protocol):
    """The TLS transport's protocol until the handshake is through: keeps
    what arrives, then hands the connection (and that data) to the client."""

    def __init__(self, client):
        self.client = client
        self.early: list[bytes] = []
        self.lost = False
        self.exc = None

    def data_received(self, data: bytes) -> None:
        self.early.append(data)

    def eof_received(self):
        return False

    def connection_lost(self, exc) -> None:
        self.lost, self.exc = True, exc

    def hand_over(self, transport) -> None:
        c = self.client
        transport.set_protocol(c)
        if self.early and not c.closed:
            c.data_received(b"".join(self.early))
        self.early.clear()
        if self.lost:
            c.connection_lost(self.exc)


def _version(v: str | None) -> str:
    return {"TLSv1.2": "1.2", "TLSv1.3": "1.3"}.get(v or "", v or "")


def describe(e: BaseException, transport) -> tuple[str, bool]:
    """nats-server's (Go's) words for a failed handshake, and whether it is
    one of the "probe" errors it logs at debug level only (a plain client or
    a silent one)."""
    if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
        local = transport.get_extra_info("sockname") or ("", 0)
        peer = transport.get_extra_info("peername") or ("", 0)
        return f"read tcp {local[0]}:{local[1]}->{peer[0]}:{peer[1]}: i/o timeout", True
    reason = getattr(e, "reason", "") or ""
    if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE",
                  "PACKET_LENGTH_TOO_LONG", "HTTPS_PROXY_REQUEST"):
        return "tls: first record does not look like a TLS handshake", True
    if reason in ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "NO_CERTIFICATES_RETURNED"):
        return "tls: client didn't provide a certificate", False
    if reason == "CERTIFICATE_VERIFY_FAILED":
        detail = getattr(e, "verify_message", "") or ""
        if "unable to get local issuer" in detail or "self-signed" in detail or "self signed" in detail:
            return "tls: failed to verify certificate: x509: certificate signed by unknown authority", False
        return f"tls: failed to verify certificate: {detail or reason}", False
    if isinstance(e, ConnectionError) or (isinstance(e, ssl.SSLError) and "EOF" in str(e)):
        return "EOF", False
    return str(e), False


# -- verify_and_map -------------------------------------------------------------

# Python's long attribute names -> the short ones Go and RFC 2253 use
_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
          "localityName": "L", "stateOrProvinceName": "ST", "streetAddress": "STREET",
          "postalCode": "POSTALCODE", "serialNumber": "SERIALNUMBER", "domainComponent": "DC",
          "userId": "UID", "emailAddress": "EMAILADDRESS"}


def cert_names(ssl_object) -> list[str]:
    """The names a verified client certificate offers for mapping, in the
    order nats-server tries them: e-mail addresses, DNS names, URIs, then
    the subject as an RFC 2253 DN (last RDN first, as Go prints it)."""
    cert = ssl_object.getpeercert() if ssl_object is not None else None
    if not cert:
        return []
    sans = cert.get("subjectAltName", ())
    out = [v for k, v in sans if k == "email"]
    out += [v for k, v in sans if k == "DNS"]
    out += [v for k, v in sans if k == "URI"]
    rdns = []
    for rdn in cert.get("subject", ()):
        rdns.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    if rdns:
        out.append(",".join(reversed(rdns)))
    return out


def _escape(v: str) -> str:
    out = "".join("\\" + ch if ch in ',+"\\<>;=' else ch for ch in v)
    if out.startswith(("#", " ")):
        out = "\\" + out
    return out


def _dn_parts(dn: str) -> list[str] | None:
    """A DN split into normalised RDNs (attribute type upper-cased), or None
    when the text is no DN."""
    parts, cur, esc = [], "", False
    for ch in dn:
        if esc:
            cur += ch
            esc = False
        elif ch == "\\":
            cur += ch
            esc = True
        elif ch == ",":
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    norm = []
    for p in parts:
        t, eq, v = p.strip().partition("=")
        if not eq or not t:
            return None
        norm.append(f"{t.strip().upper()}={v.strip()}")
    return norm


def map_user(ssl_object, users: dict[str, dict]):
    """The configured user a verified client certificate maps to, or None.
    A literal match of one of the certificate's names wins; a DN matches a
    user named by the same DN, also with its RDNs in another order."""
    names = cert_names(ssl_object)
    for n in names:
        if n in users:
            return users[n]
    if not names or "=" not in names[-1]:
        return None
    want = _dn_parts(names[-1])
    for name, u in users.items():
        have = _dn_parts(name)
        if have is not None and have == want:
            return u
    for name, u in users.items():
        have = _dn_parts(name)
        if have is not None and sorted(have) == sorted(want):
            return u
    return None


# OpenSSL's TLS 1.2 suite names -> Go's tls.CipherSuiteName (TLS 1.3 names agree)
_GO_SUITES = {
    "ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}


def connz_fields(ssl_object, first: bool) -> dict:
    """/connz's tls_version, tls_cipher_suite and tls_first for a TLS connection."""
    if ssl_object is None:
        return {}
    cipher = ssl_object.cipher()
    d = {"tls_version": _version(ssl_object.version())}
    if cipher:
        d["tls_cipher_suite"] = _GO_SUITES.get(cipher[0], cipher[0])
    if first:
        d["tls_first"] = True
    return d


def _pinned(obj, pinned: frozenset) -> bool:
    """Does the client's certificate have a pinned public key (the sha256
    of its DER SubjectPublicKeyInfo, as nats-server's matchesPinnedCert)?"""
    der = obj.getpeercert(binary_form=True) if obj is not None else None
    spki = _subject_public_key_info(der) if der else None
    return spki is not None and hashlib.sha256(spki).hexdigest() in pinned


def _tlv(der: bytes, pos: int) -> tuple[int, int, int]:
    """A DER element at ``pos``: (tag, where its content starts, where it ends)."""
    tag, n = der[pos], der[pos + 1]
    pos += 2
    if n & 0x80:
        k = n & 0x7F
        n = int.from_bytes(der[pos:pos + k], "big")
        pos += k
    return tag, pos, pos + n


def _subject_public_key_info(der: bytes) -> bytes | None:
    """The DER SubjectPublicKeyInfo of an X.509 certificate: the seventh
    field of its TBSCertificate (the sixth when the version is left out)."""
    try:
        _, body, _ = _tlv(der, 0)  # Certificate
        _, pos, end = _tlv(der, body)  # TBSCertificate
        tag, _, nxt = _tlv(der, pos)
        if tag == 0xA0:  # [0] version
            pos = nxt
        for _ in range(5):  # serialNumber, signature, issuer, validity, subject
            pos = _tlv(der, pos)[2]
        tag, _, nxt = _tlv(der, pos)
        return der[pos:nxt] if tag == 0x30 and nxt <= end else None
    except IndexError:
        return None
