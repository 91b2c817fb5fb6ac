"""The publish composer: core or JetStream publish, headers, repeat with a template."""

from .pane import PublishPane

__all__ = ["PublishPane"]
