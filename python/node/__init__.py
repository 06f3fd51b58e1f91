"""iax-node: a headless IAX2 voice node daemon for amateur-radio linking networks."""

from node._core import __version__

__all__ = ["__version__"]
