"""A stream: its publish path (``stream.Stream``) and what it does with a
message on the way in and after it is stored, each in its own module:
config checks (``config``, ``topoconfig`` for mirrors, sources, transforms
and republish), expiry (max_age, TTLs), counters, schedules (``cron`` their
patterns), atomic and fast batches, republish, mirrors and sources
(``sourcing``) and the direct get it answers itself (``directget``).

A stream keeps its messages in a ``store`` and hands them to its
consumers (``consumer``). Nothing is imported here: an empty JetStream
starts without the streams' modules."""
