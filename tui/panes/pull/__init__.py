"""The pull hand: fetch from a pull consumer, ack by hand, watch redelivery."""

from .hand import PullHand

__all__ = ["PullHand"]
