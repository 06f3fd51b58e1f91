"""The pure part of DNS node lookup: names, SRV choice, garbage checks, the cache."""

from __future__ import annotations

import math

import pytest

from node.links.dns import (
    MAX_POSITIVE_TTL,
    AnswerCache,
    SrvRecord,
    dns_eligible,
    pick_srv,
    positive_ttl,
    srv_name,
    srv_problem,
)


def test_only_numbers_of_four_digits_or_more_go_to_dns() -> None:
    assert dns_eligible("2000") and dns_eligible("123456")
    for node in ("", "1", "999", "20a0", "２０００", "-2000"):
        assert not dns_eligible(node), node


def test_srv_name_is_absolute() -> None:
    assert srv_name("2000", "nodes.allstarlink.org") == "_iax._udp.2000.nodes.allstarlink.org."
    assert srv_name("2000", "example.org.") == "_iax._udp.2000.example.org."


def test_pick_srv_lowest_priority_then_highest_weight_then_first() -> None:
    a = SrvRecord(20, 100, 1, "a.")
    b = SrvRecord(10, 5, 2, "b.")
    c = SrvRecord(10, 50, 3, "c.")
    d = SrvRecord(10, 50, 4, "d.")
    assert pick_srv([a, b, c, d]) == c
    assert pick_srv([a]) == a
    assert pick_srv([]) is None


def test_srv_problems_name_the_garbage() -> None:
    assert srv_problem(SrvRecord(10, 10, 4569, "2000.example.org.")) is None
    assert "port 0" in (srv_problem(SrvRecord(10, 10, 0, "2000.example.org.")) or "")
    assert "'.'" in (srv_problem(SrvRecord(10, 10, 4569, ".")) or "")


def test_positive_ttl_is_the_smallest_and_capped() -> None:
    assert positive_ttl(30, 60) == 30
    assert positive_ttl(2**31 - 1, 2**31 - 1) == MAX_POSITIVE_TTL
    assert positive_ttl(0, 60) == 0
    assert positive_ttl(-5) == 0
    assert positive_ttl(math.nan) == 0
    assert positive_ttl() == 0


def test_cache_expires_by_the_given_clock_and_stays_bounded() -> None:
    cache: AnswerCache[str] = AnswerCache(size=2)
    cache.put("a", "A", now=0.0, ttl=10)
    assert cache.get("a", 9.99) == "A"
    assert cache.get("a", 10.0) is None
    assert len(cache) == 0

    cache.put("a", "A", now=0.0, ttl=10)
    cache.put("b", "B", now=0.0, ttl=10)
    cache.get("a", 1.0)  # a is now the most recently used
    cache.put("c", "C", now=1.0, ttl=10)
    assert cache.get("b", 1.0) is None
    assert cache.get("a", 1.0) == "A" and cache.get("c", 1.0) == "C"

    cache.put("a", "A2", now=2.0, ttl=0)  # not cacheable: also forgets the old answer
    assert cache.get("a", 2.0) is None
    with pytest.raises(ValueError):
        AnswerCache(size=0)
