"""Calls: the IAX2 endpoint, the routing of its events, and the plain calls."""

from node.calls.service import CallInfo, CallService

__all__ = ["CallInfo", "CallService"]
