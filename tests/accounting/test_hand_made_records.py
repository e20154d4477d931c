"""No public call forges a charge: records handed in from outside puffgm need the user's explicit opt-in.

The forgery found by an audit, ``issue(dataclasses.replace(rel, epsilon=0.001))``, has a second
spelling once releases are charged through one building block:
``make_release(replace(rel, value=None, epsilon=0.001), lambda: rel.value, accountant=acc)`` (or
``acc.charge`` then ``acc.record``) would record a value drawn at epsilon 1 as a 0.001 release, or an
exact answer as a noisy one.  These calls are refused from outside puffgm unless the user enables
``"honest-but-curious"`` (as OpenDP does for hand-made measurements).
"""

import dataclasses

import pytest

import puffgm
from puffgm.accounting import PrivacyAccountant
from puffgm.core.features import disable_features, enable_features, enabled
from puffgm.core.release import make_release
from puffgm.exceptions import CompositionError, ParameterError


@pytest.fixture(scope="module")
def released():
    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    return puffgm.release(cal, answer=1.0, random_state=0)


def test_make_release_from_outside_is_refused_and_charges_nothing(released):
    assert not enabled("honest-but-curious")
    acc = PrivacyAccountant(budget=1.0)
    forged = dataclasses.replace(released, value=None, epsilon=0.001)
    with pytest.raises(CompositionError, match="honest-but-curious"):
        make_release(forged, lambda: released.value, accountant=acc)
    with pytest.raises(CompositionError, match="honest-but-curious"):
        make_release(forged, lambda: 123.0)  # no accountant: still no hand-made release from this road
    assert acc.entries == () and acc.total == 0.0


def test_charge_and_record_from_outside_are_refused(released):
    acc = PrivacyAccountant(budget=1.0)
    forged = dataclasses.replace(released, value=None, epsilon=0.001)
    with pytest.raises(CompositionError, match="PrivacyAccountant.charge"):
        acc.charge(forged)
    with pytest.raises(CompositionError, match="PrivacyAccountant.record"):
        acc.record(dataclasses.replace(released, epsilon=0.001), charged=0)
    assert acc.entries == ()
    assert acc.check(released) == 1.0  # asking is harmless: nothing is recorded


def test_puffgm_release_functions_need_no_opt_in(released):
    acc = PrivacyAccountant(budget=2.0)
    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    puffgm.release(cal, answer=1.0, accountant=acc, random_state=1)
    assert acc.total == 1.0 and len(acc.entries) == 1


def test_the_opt_in_is_explicit_and_named(released):
    with pytest.raises(ParameterError, match="honest-but-curious"):
        enable_features("no-such-feature")
    acc = PrivacyAccountant(budget=1.0)
    enable_features("honest-but-curious")
    try:
        rel = make_release(dataclasses.replace(released, value=None), lambda: 0.5, accountant=acc)
    finally:
        disable_features("honest-but-curious")
    assert rel.value == 0.5 and acc.total == 1.0
    assert not enabled("honest-but-curious")
