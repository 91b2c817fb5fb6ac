"""Who is connected right now, from the monitoring endpoint."""

from .pane import ConnectionsPane

__all__ = ["ConnectionsPane"]
