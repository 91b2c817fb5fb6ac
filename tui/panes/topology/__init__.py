"""The topology view: which streams feed which, drawn as a tree, with each link's live state."""

from .graph import draw_topology
from .view import TopologyView

__all__ = ["TopologyView", "draw_topology"]
