"""Live tail of any subject (core NATS)."""

from .pane import TailPane

__all__ = ["TailPane"]
