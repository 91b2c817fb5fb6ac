"""The request-reply tester and its mock responders."""

from .pane import RequestPane

__all__ = ["RequestPane"]
