"""The streams area: live list, detail (config + state), message browser, forms."""

from .pane import StreamsPane

__all__ = ["StreamsPane"]
