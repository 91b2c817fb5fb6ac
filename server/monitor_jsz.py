"""/jsz and the jetstream block of /varz (placeholder until the adapter lands)."""
from __future__ import annotations


def varz_jetstream(srv) -> dict:
    return {}


def jsz(mon, q):
    from .monitor_views import to_json
    return "application/json", to_json({})
