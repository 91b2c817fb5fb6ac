"""JetStream for natslab's broker: streams, consumers and the ``$JS.API``.

Layers, arrows pointing one way: ``api`` (dispatch) -> ``jetstream`` (account
registry) -> ``stream`` (publish path, limits, retention) -> ``store``
(``memstore`` / ``filestore``); ``consumer`` -> ``delivery`` and ``acks``."""

from .jetstream import JetStream

__all__ = ["JetStream"]
