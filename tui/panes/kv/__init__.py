"""The KV browser: buckets, keys (live), values, history, edits."""

from .pane import KvPane

__all__ = ["KvPane"]
