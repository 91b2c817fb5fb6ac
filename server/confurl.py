"""Go's net/url.Parse, as nats-server's config checks meet it: whether a
route, gateway or leafnode URL parses (nats-server's error then names the
URL, not why: ``error parsing route url ["nats://bad host:x"]``) and, for a
leafnode remote's proxy, its scheme and host or Go's own error text
(``parse "::": missing protocol scheme``). Ported from Go 1.26's
net/url (parse, getScheme, parseAuthority, parseHost, unescape), checked
against nats-server 2.15.1 (built with Go 1.27) in tests/test_config_nodes.py.
"""

from __future__ import annotations

import re

from .conf import go_quote

_HOST_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~!$&'()*+,;=:[]<>\"")
_USERINFO_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:~!$&'()*+,;=%@")
_HEX = set("0123456789abcdefABCDEF")


class URLError(ValueError):
    """Go's url.Parse error, as its Error() says it (``parse "u": why``)."""


def _bq(b: bytes) -> str:
    return go_quote(b.decode("utf-8", "replace"))


def _unescape(s: bytes, host: bool = False, zone: bool = False) -> None:
    """Go's unescape, for its errors only (EscapeError, InvalidHostError)."""
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:  # %
            if i + 2 >= len(s) or chr(s[i + 1]) not in _HEX or chr(s[i + 2]) not in _HEX:
                raise URLError(f"invalid URL escape {_bq(s[i:i + 3])}")
            if host and int(chr(s[i + 1]), 16) < 8 and s[i:i + 3] != b"%25":
                raise URLError(f"invalid URL escape {_bq(s[i:i + 3])}")
            if zone:
                v = int(s[i + 1:i + 3], 16)
                if s[i:i + 3] != b"%25" and v != 0x20 and (v >= 0x80 or chr(v) not in _HOST_OK):
                    raise URLError(f"invalid URL escape {_bq(s[i:i + 3])}")
            i += 3
            continue
        if (host or zone) and c < 0x80 and chr(c) not in _HOST_OK:
            raise URLError(f"invalid character {_bq(s[i:i + 1])} in host name")
        i += 1


def _valid_port(p: bytes) -> bool:
    return not p or (p[:1] == b":" and all(0x30 <= b <= 0x39 for b in p[1:]))


def _ipv6(h: bytes) -> None:
    import ipaddress

    try:
        text = bytes(h).decode()
        addr, pct, zone = text.partition("%")
        if pct and not zone:
            raise ValueError
        ip = ipaddress.ip_address(addr)
    except (ValueError, UnicodeDecodeError):
        raise URLError(f"invalid host: ParseAddr({go_quote(h.decode('utf-8', 'replace'))}): unable to parse IP") \
            from None
    if ip.version == 4:
        raise URLError("invalid IP-literal")


def _unescaped(s: bytes) -> bytes:
    return re.sub(rb"%([0-9a-fA-F]{2})", lambda m: bytes([int(m.group(1), 16)]), s)


def _host(scheme: str, host: bytes) -> bytes:
    o = host.rfind(b"[")
    if o > 0:
        raise URLError("invalid IP-literal")
    if o == 0:
        c = host.rfind(b"]")
        if c < 0:
            raise URLError("missing ']' in host")
        if not _valid_port(host[c + 1:]):
            raise URLError(f"invalid port {_bq(host[c + 1:])} after host")
        _unescape(host[c + 1:], host=True)
        name = host[1:c]
        z = name.find(b"%25")
        if z >= 0:
            _unescape(name[:z], host=True)
            _unescape(name[z:], zone=True)
        else:
            _unescape(name, host=True)
        _ipv6(_unescaped(name))
        return host
    i = host.find(b":")
    if i != -1:
        last = host.rfind(b":")
        if last != i and scheme not in ("http", "https"):
            i = last
        if not _valid_port(host[i:]):
            raise URLError(f"invalid port {_bq(host[i:])} after host")
    _unescape(host, host=True)
    return host


def trim_space(s: str) -> str:
    """Go's strings.TrimSpace (unicode.IsSpace)."""
    return s.strip(" \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                   "\u200a\u2028\u2029\u202f\u205f\u3000")


def go_url(raw: str) -> tuple[str, str]:
    """Go's url.Parse of ``raw``: its (scheme, host), or URLError with
    Go's words."""
    whole = raw.encode("utf-8", "surrogatepass")
    u, _, frag = whole.partition(b"#")
    scheme, host = "", b""
    try:
        scheme, host = _parse(u)
    except URLError as e:
        raise URLError(f"parse {_bq(u)}: {e}") from None
    if frag:
        try:
            _unescape(frag)
        except URLError as e:
            raise URLError(f"parse {_bq(whole)}: {e}") from None
    return scheme, host.decode("utf-8", "replace")


def _parse(u: bytes) -> tuple[str, bytes]:
    if any(b < 0x20 or b == 0x7F for b in u):
        raise URLError("net/url: invalid control character in URL")
    if u == b"*":
        return "", b""
    scheme, rest = "", u
    for i, c in enumerate(u):
        ch = chr(c)
        if ch.isascii() and ch.isalpha():
            continue
        if ch in "0123456789+-.":
            if i == 0:
                break
            continue
        if ch == ":":
            if i == 0:
                raise URLError("missing protocol scheme")
            scheme, rest = u[:i].decode().lower(), u[i + 1:]
        break
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        rest = rest[:-1]
    else:
        rest = rest.partition(b"?")[0]
    if not rest.startswith(b"/"):
        if scheme:
            return scheme, b""  # (opaque)
        if b":" in rest.partition(b"/")[0]:
            raise URLError("first path segment in URL cannot contain colon")
    host = b""
    if (scheme or not rest.startswith(b"///")) and rest.startswith(b"//"):
        authority, slash, path = rest[2:].partition(b"/")
        rest = slash + path
        at = authority.rfind(b"@")
        host = _host(scheme, authority[at + 1:] if at >= 0 else authority)
        if at >= 0:
            userinfo = authority[:at]
            if not all(ch in _USERINFO_OK for ch in userinfo.decode("utf-8", "replace")):
                raise URLError("net/url: invalid userinfo")
            for part in userinfo.split(b":", 1):
                _unescape(part)
    _unescape(rest)
    return scheme, host


def url_parses(raw: str) -> bool:
    """Whether Go's url.Parse takes ``raw`` (after nats-server's TrimSpace)."""
    try:
        go_url(trim_space(raw))
    except URLError:
        return False
    return True
