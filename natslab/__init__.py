"""natslab: a terminal workbench for NATS JetStream with an embedded broker.

The code lives in three rooms: ``natslab.server`` (the broker), ``natslab.tui``
(the Textual workbench) and ``natslab.themes`` (theme files).
"""

__version__ = "0.1.0"
