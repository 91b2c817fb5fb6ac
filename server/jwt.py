"""NATS JWTs (nats-io/jwt v2): decode one and check its signature.

A JWT is three base64url parts, ``header.payload.signature``, unpadded. The
header is ``{"typ":"JWT","alg":"ed25519-nkey"}``; the payload the claims
(``iss``: the issuer's public nkey, ``sub``: the subject's, ``iat``,
``exp``, ``nbf``, ``name``, ``jti``, and ``nats``: the operator, account or
user part, with its ``type``); the signature is Ed25519 over
``header.payload`` by the issuer's key (server/ed25519.py checks it). Which
kind of key may issue which claim is nats-io/jwt's rule (v1 JWTs,
``"alg":"ed25519"`` with the claim type outside ``nats``, are read too, as
nats-io/jwt v2 reads them: nats.py's own test credentials are v1): an operator signs
itself and accounts, an account (or one of its signing keys) its users.
"""

from __future__ import annotations

import base64
import json
import time

from . import nkeys
from .ed25519 import verify

PREFIX_OPERATOR = 14 << 3  # "O..."
PREFIX_ACCOUNT = 0  # "A..."
PREFIX_USER = nkeys.PREFIX_USER  # "U..."
_PREFIX = {"O": PREFIX_OPERATOR, "A": PREFIX_ACCOUNT, "U": PREFIX_USER}
# the claim type -> the kinds of key that may issue it
_ISSUERS = {"operator": "O", "account": "O", "user": "A"}


class JWTError(ValueError):
    pass


def _b64(part: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (ValueError, TypeError):
        raise JWTError("invalid base64 in JWT") from None


def public_key(key: str) -> bytes:
    """The raw Ed25519 key of an operator, account or user public nkey."""
    prefix = _PREFIX.get(key[:1])
    if prefix is None:
        raise JWTError(f"not a public nkey: {key!r}")
    try:
        return nkeys.decode_public_key(key, prefix)
    except nkeys.InvalidKey:
        raise JWTError(f"not a valid public nkey: {key!r}") from None


def is_key(key, kind: str) -> bool:
    """Is ``key`` a valid public nkey of kind ``O``, ``A`` or ``U``?"""
    if not isinstance(key, str) or key[:1] != kind:
        return False
    try:
        public_key(key)
    except JWTError:
        return False
    return True


def decode(token: str, expect: str | None = None) -> dict:
    """The claims of ``token``, its signature checked against its issuer
    (``expect``: the claim type it must be). Expiry is not checked here
    (``expired`` says it): a stored account stays readable."""
    if not isinstance(token, str):
        raise JWTError("JWT is not a string")
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise JWTError("expected 3 chunks")
    try:
        header = json.loads(_b64(parts[0]))
        claims = json.loads(_b64(parts[1]))
    except ValueError:
        raise JWTError("invalid JSON in JWT") from None
    if not isinstance(header, dict) or str(header.get("typ", "")).upper() != "JWT":
        raise JWTError("not a JWT")
    if header.get("alg") not in ("ed25519-nkey", "ed25519"):
        raise JWTError(f"unexpected {header.get('alg')!r} algorithm")
    if not isinstance(claims, dict):
        raise JWTError("not a NATS JWT")
    if header["alg"] == "ed25519":
        # a v1 JWT (nats-io/jwt v2 still reads them): the type at the top,
        # the ``nats`` part perhaps missing
        nats = claims.get("nats")
        claims["nats"] = nats = dict(nats) if isinstance(nats, dict) else {}
        nats.setdefault("type", claims.get("type"))
        claims["v1"] = True
    elif not isinstance(claims.get("nats"), dict):
        raise JWTError("not a NATS v2 JWT")
    kind = claims["nats"].get("type")
    if expect is not None and kind != expect:
        raise JWTError(f"not {expect} claim")
    iss = claims.get("iss")
    if not isinstance(iss, str) or iss[:1] != _ISSUERS.get(kind, "?"):
        raise JWTError(f"invalid issuer for {kind} claim")
    signed = parts[1] if header["alg"] == "ed25519" else parts[0] + "." + parts[1]  # (v1 signed the payload alone)
    if not verify(public_key(iss), signed.encode(), _b64(parts[2])):
        raise JWTError("claim failed V2 signature verification")
    _check_shape(kind, claims["nats"])
    for name in ("iat", "exp", "nbf"):
        v = claims.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, _NUM)):
            raise JWTError(f"invalid {name} in JWT")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not is_key(sub, {"operator": "O", "account": "A", "user": "U"}[kind]):
        raise JWTError(f"invalid subject for {kind} claim")
    return claims


# the types of the claim fields natslab reads (Go's json.Unmarshal into
# nats-io/jwt's structs fails on another type, and so the JWT is invalid)
_NUM = (int, float)
_FIELDS = {
    "operator": {"signing_keys": list, "system_account": str, "strict_signing_key_usage": bool},
    "account": {"imports": list, "exports": list, "limits": dict, "signing_keys": list, "revocations": dict,
                "default_permissions": dict},
    "user": {"pub": dict, "sub": dict, "issuer_account": str, "bearer_token": bool,
             "allowed_connection_types": list, "subs": _NUM, "payload": _NUM, "data": _NUM},
}
_PERMS = ("pub", "sub")


def _check_shape(kind: str, nats: dict) -> None:
    for name, want in _FIELDS.get(kind, {}).items():
        v = nats.get(name)
        if v is not None and (not isinstance(v, want) or (want is _NUM and isinstance(v, bool))):
            raise JWTError(f"invalid {name} in {kind} claim")
    perms = [nats] if kind == "user" else [nats.get("default_permissions") or {}]
    for part in perms:
        for side in _PERMS:
            p = part.get(side) or {}
            if not isinstance(p, dict) or any(not isinstance(p.get(k) or [], list) for k in ("allow", "deny")):
                raise JWTError(f"invalid {side} permissions in {kind} claim")
            if any(not isinstance(x, str) for k in ("allow", "deny") for x in p.get(k) or []):
                raise JWTError(f"invalid {side} permissions in {kind} claim")
    for name in ("imports", "exports"):
        for x in nats.get(name) or []:
            if not isinstance(x, dict) or any(x.get(k) is not None and not isinstance(x[k], str)
                                              for k in ("subject", "account", "type", "to", "local_subject", "name")):
                raise JWTError(f"invalid {name} in {kind} claim")
    if any(isinstance(v, bool) or not isinstance(v, _NUM) for v in (nats.get("revocations") or {}).values()):
        raise JWTError(f"invalid revocations in {kind} claim")
    lim = nats.get("limits") or {}
    if any(isinstance(v, bool) or not isinstance(v, _NUM) for k, v in lim.items()
           if k in ("subs", "conn", "payload", "data", "mem_storage", "disk_storage", "streams", "consumer")
           and v is not None):
        raise JWTError(f"invalid limits in {kind} claim")


def expired(claims: dict, now: float | None = None) -> bool:
    """Past its ``exp``, or before its ``nbf``."""
    now = time.time() if now is None else now
    exp = claims.get("exp") or 0
    nbf = claims.get("nbf") or 0
    return (exp and exp < now) or (nbf and nbf > now)


def signing_keys(nats: dict) -> dict[str, dict | None]:
    """An operator's or account's signing keys: key -> its scope (a user
    scope's ``template`` and ``role``) or None for a plain key."""
    out: dict[str, dict | None] = {}
    for k in nats.get("signing_keys") or ():
        if isinstance(k, str):
            out[k] = None
        elif isinstance(k, dict) and isinstance(k.get("key"), str):
            out[k["key"]] = k if k.get("kind") == "user_scope" else None
    return out


def limit(claims: dict, part: dict, name: str) -> int:
    """A limit of an account's ``limits`` or a user's claims: absent is 0
    in a v2 JWT (Go's zero value: nothing allowed), no limit (-1) in a v1
    one (nats-io/jwt's v1 migration starts from no limits)."""
    v = part.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return -1 if claims.get("v1") else 0
    return int(v)


def revoked(revocations: dict | None, key: str, issued_at: int) -> bool:
    """nats-server's isRevoked: revoked for ``key`` (or ``*``, every key)
    at or after the JWT was issued."""
    if not revocations:
        return False
    for k in (key, "*"):
        t = revocations.get(k)
        if isinstance(t, (int, float)) and t >= issued_at:
            return True
    return False
