"""Fixtures shared by the interop tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interop.harness import NODE_SECRETS
from tests.interop.registrar import Registrar


@pytest.fixture
def registrar() -> Iterator[Registrar]:
    """A registrar that knows the two nodes of `node_pair`, NODE_A and NODE_B. A test module
    whose nodes register with other names or secrets defines its own `registrar`."""
    with Registrar(NODE_SECRETS) as reg:
        yield reg
