"""The projection behind the time budget: the fixed cost before the first searches is left out."""

import types

import pytest

import puffgm.mechanisms.mqm_loop as mqm_loop
import puffgm.networks.calibration as calibration
from puffgm.exceptions import TimeLimitError


class _FakeTime:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


@pytest.fixture
def clock_at(monkeypatch):
    fake = _FakeTime()
    monkeypatch.setattr(mqm_loop, "time", types.SimpleNamespace(monotonic=fake.monotonic))
    return fake


def test_the_fixed_cost_of_the_first_searches_is_not_projected_over_every_node(clock_at):
    # two workers pay 10 s of set-up before their first search ends, then 0.1 s per node:
    # 441 nodes take about 10 + 0.1 * 439 = 54 s, well within 120 s (the old projection,
    # 10 / 2 * 441 = 2205 s, refused)
    clock = calibration.network_clock(120.0, 441, "net", jobs=2)
    clock_at.now = 10.0
    clock.tick(2)
    for _ in range(300):
        clock_at.now += 0.1
        clock.tick()
    assert clock.projected(clock_at.now) == pytest.approx(10.0 + 0.1 * 439)


def test_a_clear_excess_refuses_early_and_a_small_one_after_a_quarter_of_the_limit(clock_at):
    clock = calibration.network_clock(120.0, 441, "net", jobs=1)
    clock_at.now = 1.0
    clock.tick()  # the first search (fixed cost included)
    clock_at.now = 6.0
    with pytest.raises(TimeLimitError, match=r"would take about 2201 s \(2 of 441 node searches done in 6 s\)"):
        clock.tick()  # 5 s per node: more than 4 x 120 s, refused at once
    clock_at.now = 0.0
    clock = calibration.network_clock(120.0, 100, "net", jobs=1)
    for _ in range(20):
        clock_at.now += 1.5  # 1.5 s per node, 150 s in all: above the limit, below 4 x the limit
        clock.tick()
    clock_at.now += 1.5
    with pytest.raises(TimeLimitError, match=r"about 150 s \(21 of 100 .*0: no limit"):
        clock.tick()  # a quarter of the limit has passed
