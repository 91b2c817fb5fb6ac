"""NATS nkeys: the public keys of nkey users, as text.

An nkey is base32 (no padding) of a prefix byte (its kind: ``U`` for a
user, ``N`` for a server, ...), the 32-byte Ed25519 public key and a CRC-16
(XMODEM, little-endian) of both. Only what the server needs is here: check a
configured user's key and get the raw key to verify its signatures with.
"""

from __future__ import annotations

import base64
import secrets

PREFIX_USER = 20 << 3  # "U..."
PREFIX_ACCOUNT = 0  # "A..."


class InvalidKey(ValueError):
    pass


def _crc16(data: bytes) -> int:
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def decode_public_key(key: str, prefix: int = PREFIX_USER) -> bytes:
    """The raw Ed25519 key of a public nkey of the given kind."""
    try:
        raw = base64.b32decode(key + "=" * (-len(key) % 8))
    except (ValueError, TypeError):
        raise InvalidKey(key) from None
    if len(raw) != 35 or raw[0] != prefix:
        raise InvalidKey(key)
    if _crc16(raw[:33]) != int.from_bytes(raw[33:], "little"):
        raise InvalidKey(key)
    return raw[1:33]


def is_user_key(key: str) -> bool:
    try:
        decode_public_key(key)
    except InvalidKey:
        return False
    return True


def nonce() -> str:
    """An INFO nonce as nats-server makes them: 11 random bytes, raw URL-safe base64."""
    return base64.urlsafe_b64encode(secrets.token_bytes(11)).decode().rstrip("=")
