"""The live consumers pane for the selected stream, and the consumer form."""

from .pane import ConsumersPane

__all__ = ["ConsumersPane"]
