"""The publish composer: core or JetStream publish, headers, repeat with a template,
and the newer JetStream publishes: atomic batch, counter increment, schedule."""

from .pane import PublishPane

__all__ = ["PublishPane"]
