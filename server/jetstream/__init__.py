"""JetStream for natslab's broker: streams, consumers and the ``$JS.API``.

A folder per concept, arrows pointing one way: ``api/`` (the dispatch,
snapshots) -> ``jetstream`` (the account's registry) -> ``stream/`` (the
publish path, limits, retention and what a stream does with a message) ->
``store/`` (``memory`` / ``file/``); ``consumer/`` (config, acks, pull
queue, delivery) reads its stream's store. What every concept uses stays
here at the top: errors, fields, gojson, shapes, headers, names,
advisories, persist, limits, domain and the journal.

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
    from . import persist
    from .store.file import recovery

    return (persist, recovery)
