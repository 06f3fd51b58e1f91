"""Calls: the IAX2 endpoint, the routing of its events, and the plain calls."""

from node.calls.service import CODEC_NAMES, CallInfo, CallService

__all__ = ["CODEC_NAMES", "CallInfo", "CallService"]
