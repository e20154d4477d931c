import gzip

import numpy as np
import pytest

from puffgm.exceptions import PriorError
from puffgm.networks.formats import _bif_pgmpy, _fast_bif
from puffgm.networks.priors import (
    NetworkPrior,
    PriorClass,
    _example_dir,
    bundled_networks,
    load_network,
    load_prior_class,
)


def tiny(cpd_a=(0.3, 0.7), cpd_b=((0.9, 0.2), (0.1, 0.8)), name="tiny"):
    return NetworkPrior(["A", "B"], {"A": ("0", "1"), "B": ("0", "1")}, {"A": (), "B": ("A",)},
                        {"A": np.array(cpd_a), "B": np.array(cpd_b)}, name=name)


@pytest.mark.parametrize("name,n_nodes,zeros", [("alarm", 37, 5), ("hailfinder", 56, 501), ("win95pts", 76, 224)])
def test_bundled_networks_keep_their_zeros(name, n_nodes, zeros):
    net = load_network(f"example:{name}")
    assert len(net.nodes) == n_nodes
    assert net.n_zero_entries == zeros


def test_alarm_rounding_slips_are_renormalised_and_recorded():
    pc = load_prior_class("example:alarm")
    assert any("renormalised" in n and "HREKG" in n for n in pc.notes)
    for t in pc.priors[0].cpts.values():
        assert np.allclose(t.sum(axis=0), 1.0, atol=1e-15)


@pytest.mark.parametrize("name", ["asia", "alarm", "hailfinder", "win95pts", "child", "insurance"])
def test_fast_bif_reader_agrees_with_pgmpy(name):
    text = gzip.open(_example_dir() / f"{name}.bif.gz", "rt").read()
    parsed = _fast_bif(text, name)
    assert parsed is not None
    fast = NetworkPrior(*parsed, name=name)
    t = _bif_pgmpy(text, name)
    slow = NetworkPrior(t.nodes, t.states, t.parents, t.cpds, name=name).reordered(fast.states, fast.parents)
    assert fast.nodes == slow.nodes
    for n in fast.nodes:
        assert np.allclose(fast.cpts[n], slow.cpts[n], rtol=0, atol=1e-15)


def test_bundled_list_and_unknown_example():
    assert "alarm" in bundled_networks()
    with pytest.raises(PriorError, match="no bundled network named 'nosuch'"):
        load_network("example:nosuch")


def test_column_off_by_more_than_tolerance_is_rejected():
    with pytest.raises(PriorError, match=r"node 'A'.*off 1 by more than 1e-06"):
        tiny(cpd_a=(0.3, 0.7 + 2e-6))


def test_small_slip_is_renormalised_and_noted():
    net = tiny(cpd_a=(0.3, 0.7 + 5e-7))
    assert net.cpts["A"].sum() == pytest.approx(1.0, abs=1e-15)
    assert any("renormalised" in n and "'A'" in n for n in net.notes)


def test_negative_and_nan_entries_are_rejected():
    with pytest.raises(PriorError, match="negative entry"):
        tiny(cpd_b=((1.1, 0.2), (-0.1, 0.8)))
    with pytest.raises(PriorError, match="NaN or infinite"):
        tiny(cpd_b=((np.nan, 0.2), (0.1, 0.8)))


def test_wrong_shape_and_cycles_are_rejected():
    with pytest.raises(PriorError, match="shape"):
        tiny(cpd_b=((0.9, 0.2, 0.5), (0.1, 0.8, 0.5)))
    with pytest.raises(PriorError, match="directed cycle"):
        NetworkPrior(["A", "B"], {"A": ("0",), "B": ("0",)}, {"A": ("B",), "B": ("A",)},
                     {"A": [[1.0]], "B": [[1.0]]})


def test_class_validation():
    with pytest.raises(PriorError, match="empty"):
        PriorClass([])
    other = NetworkPrior(["A", "B"], {"A": ("0", "1"), "B": ("0", "1")}, {"A": ("B",), "B": ()},
                         {"A": np.array([[0.5, 0.5], [0.5, 0.5]]), "B": np.array([0.5, 0.5])})
    with pytest.raises(PriorError, match="does not share the graph.*edge"):
        PriorClass([tiny(), other])
    states = NetworkPrior(["A", "B"], {"A": ("0", "2"), "B": ("0", "1")}, {"A": (), "B": ("A",)},
                          {"A": np.array([0.5, 0.5]), "B": np.array([[0.5, 0.5], [0.5, 0.5]])})
    with pytest.raises(PriorError, match="gives node 'A' the states"):
        PriorClass([tiny(), states])
    with pytest.raises(PriorError, match="nodes .* are in one but not the other"):
        load_prior_class(["example:asia", "example:cancer"])


def test_members_with_other_state_order_are_reordered():
    a = tiny()
    b = NetworkPrior(["A", "B"], {"A": ("1", "0"), "B": ("0", "1")}, {"A": (), "B": ("A",)},
                     {"A": np.array([0.7, 0.3]), "B": np.array([[0.2, 0.9], [0.8, 0.1]])})
    pc = PriorClass([a, b])
    assert np.allclose(pc.priors[1].cpts["A"], a.cpts["A"])
    assert np.allclose(pc.priors[1].cpts["B"], a.cpts["B"])


def test_pgmpy_round_trip_and_files(tmp_path):
    net = load_network("example:asia")
    again = load_prior_class(net.to_pgmpy())
    assert again.priors[0].fingerprint == net.fingerprint
    from pgmpy.readwrite import BIFWriter, XMLBIFWriter

    model = net.to_pgmpy()
    XMLBIFWriter(model).write(str(tmp_path / "asia.xml"))
    BIFWriter(model).write(str(tmp_path / "asia.bif"))
    for f in ("asia.xml", "asia.bif"):
        got = load_network(str(tmp_path / f)).reordered(net.states, net.parents)
        for n in net.nodes:
            assert np.allclose(got.cpts[n], net.cpts[n], atol=1e-12)


def test_unreadable_files(tmp_path):
    bad = tmp_path / "bad.bif"
    bad.write_text("this is not a network")
    with pytest.raises(PriorError, match="'bad.bif' is not a Bayesian network in a format puffgm reads"):
        load_network(str(bad))
    with pytest.raises(PriorError, match="no network file"):
        load_network(str(tmp_path / "missing.bif"))
    with pytest.raises(PriorError, match="must be a pgmpy DiscreteBayesianNetwork"):
        load_network(42)


def test_immutable():
    net = tiny()
    with pytest.raises(AttributeError):
        net.nodes = ()
    pc = PriorClass([net])
    with pytest.raises(AttributeError):
        pc.nodes = ()
