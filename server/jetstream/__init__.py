"""JetStream for natslab's broker: streams, consumers and the ``$JS.API``.

Layers, arrows pointing one way: ``api`` (dispatch) -> ``jetstream`` (account
registry) -> ``stream`` (publish path, limits, retention) -> ``store``
(``memstore`` / ``filestore``); ``consumer`` -> ``delivery`` and ``acks``.

The seam: JetStream sees the core only through ``internal.Messaging``; the
core sees JetStream only through what this package exports, imported in one
place (``internal.jetstream()``, by the start and by the configuration that
names JetStream's limits or domain):

- ``JetStream``: one account's JetStream, made at the start with the
  account's ``Messaging``; ``sufficient_resources``: does an account's
  limits fit in the server's;
- the configuration: ``AccountLimits``, ``parse_limits`` (an account's
  ``jetstream {}``), ``storage_size``, ``LimitsConfigError``,
  ``check_domain``;
- ``Journal``: the history ring an embedding keeps (``ServerOptions.journal``);
  ``file_opening_modules()``: the store modules that open files for
  writing themselves, where the disk faults (diskfaults.py) put their own
  ``open``.

Beyond these the core asks the JetStream objects the start made
(``Server.jetstreams``): their streams and counters (the monitor), a
stream's ``config_json()`` (/jsz), ``not_enabled_answer()`` (an account
without JetStream), a stream's ``traced_as_stream`` (message tracing)."""

from .domain import check_domain
from .jetstream import JetStream
from .limits import AccountLimits, LimitsConfigError, storage_size, sufficient_resources
from .limits import parse as parse_limits

__all__ = ["JetStream", "sufficient_resources", "AccountLimits", "parse_limits", "storage_size",
           "LimitsConfigError", "check_domain", "Journal", "file_opening_modules"]


def __getattr__(name: str):
    if name == "Journal":  # (imported when asked for: a server without history never loads it)
        from .journal import Journal

        return Journal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def file_opening_modules() -> tuple:
    """The store modules that open files for writing through ``open`` (the
    atomic JSON writes, the recovery's repairs), which wrappers of ``os``
    do not see."""
    from . import filestore_recovery, persist

    return (persist, filestore_recovery)
