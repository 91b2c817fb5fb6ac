"""The object store browser."""

from .pane import ObjectsPane

__all__ = ["ObjectsPane"]
