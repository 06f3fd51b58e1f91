"""An IAX2 port for testing the owners of calls alone: the node's rules, no engine."""

from __future__ import annotations

import random

from node.context import NodeContext
from node.iax2.endpoint import InboundPolicy
from node.links.service import is_link_caller
from node.port import IaxPort


def make_port(ctx: NodeContext, seed: int = 1) -> IaxPort:
    rng = random.Random(seed)
    return IaxPort(
        InboundPolicy.from_listener(ctx.config.listener),
        ctx.config.codec_policy,
        token_key=bytes(32),
        randbelow=rng.randrange,
        peer_secret=ctx.secrets.peer_secret,
        holds=lambda number, user: is_link_caller(ctx.config, number, user),
        clock=ctx.clock,
    )
