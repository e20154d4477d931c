"""puffgm.calibrate_many: joblib locally, Dask on a cluster, results identical to direct calls."""

import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from _nets import random_network

import puffgm
from puffgm.chains import ChainPriorClass, MQMApprox, MQMExact
from puffgm.exceptions import ParameterError, WorkerError

ROOT = str(Path(__file__).resolve().parents[2])


def _timing_free(d):
    """to_dict() without wall-clock measurements (none today; the only thing allowed to differ)."""
    d = dict(d)
    d["details"] = {k: v for k, v in d["details"].items() if "seconds" not in k and "time" not in k}
    return d


def _dicts(results):
    return [_timing_free(r.to_dict(per_node=True)) for r in results]


def _chains():
    rng = np.random.default_rng(3)
    out = []
    for j, init in enumerate(["any", "stationary", [0.9, 0.1, 0.0], "any", [0.2, 0.3, 0.5], "stationary"]):
        P = rng.dirichlet(np.ones(3), size=3)
        out.append(ChainPriorClass.from_matrices(P, init, 25 + 7 * j))
    two = ChainPriorClass.from_family([[[0.9, 0.1], [0.4, 0.6]], [[0.7, 0.3], [0.2, 0.8]]],
                                      [[1, 0], "stationary"], 40)
    return out + [two]


def _networks():
    rng = np.random.default_rng(11)
    nets = [random_network(rng, n=5, name=f"r{j}")[0] for j in range(3)]
    m1, dag = random_network(rng, n=4, name="m1")
    m2, _ = random_network(rng, n=4, name="m2", dag=dag)
    return nets + ["example:cancer", [m1, m2]]


def _direct(items, eps, **kw):
    out = []
    for p in items:
        if isinstance(p, ChainPriorClass):
            out.append(MQMExact(p, **{k: v for k, v in kw.items() if k in ("per_node", "mixing")}).calibrate(epsilon=eps))
        else:
            out.append(puffgm.calibrate(p, epsilon=eps, **{k: v for k, v in kw.items() if k not in ("per_node", "mixing")}))
    return out


def test_local_joblib_matches_direct_calls_in_order():
    items = _chains() + _networks()
    want = _dicts(_direct(items, 1.5))
    assert len({d["fingerprint"] for d in want}) == len(items)  # distinct classes: order is checked
    assert _dicts(puffgm.calibrate_many(items, epsilon=1.5, n_jobs=1)) == want
    assert _dicts(puffgm.calibrate_many(items, epsilon=1.5, n_jobs=2, chunk_size=3)) == want
    chains = _chains()
    assert _dicts(puffgm.calibrate_many(chains, epsilon=1.5, n_jobs=2)) == want[: len(chains)]


def test_chain_methods_and_options_pass_through():
    chains = [c for c in _chains() if c.initial_kinds == {"stationary"}]
    got = puffgm.calibrate_many(chains, epsilon=2.0, method="approx", n_jobs=1, use_reversible=False)
    assert _dicts(got) == _dicts([MQMApprox(c, use_reversible=False).calibrate(epsilon=2.0) for c in chains])
    got = puffgm.calibrate_many(_chains(), epsilon=2.0, n_jobs=2, per_node=False, max_length=8)
    assert _dicts(got) == _dicts([MQMExact(c, per_node=False, max_length=8).calibrate(epsilon=2.0) for c in _chains()])
    nets = _networks()[:2]
    got = puffgm.calibrate_many(nets, epsilon=1.0, n_jobs=1, protected=["V0", "V3"])
    assert _dicts(got) == _dicts([puffgm.calibrate(p, epsilon=1.0, protected=["V0", "V3"]) for p in nets])
    assert all(len(r.per_node) == 2 for r in got)


def test_validation_is_one_clear_sentence():
    chains = _chains()
    with pytest.raises(ParameterError, match="epsilon"):
        puffgm.calibrate_many(chains, epsilon=0.0)
    with pytest.raises(ParameterError, match="'method' parameter of calibrate_many"):
        puffgm.calibrate_many(chains, epsilon=1.0, method="nope")
    with pytest.raises(ParameterError, match=r"Prior 0 \('example:cancer'\): Method 'approx' does not apply to "
                                             "Bayesian-network priors; they take 'exact'"):
        puffgm.calibrate_many(["example:cancer"], epsilon=1.0, method="approx")
    with pytest.raises(ParameterError, match="Option.s. protected do not apply to method 'exact' of Markov-chain"):
        puffgm.calibrate_many(chains, epsilon=1.0, protected=["X1"])
    with pytest.raises(ParameterError, match="Option.s. frobnicate do not apply to method 'exact' of Bayesian"):
        puffgm.calibrate_many(["example:cancer"], epsilon=1.0, frobnicate=True)
    with pytest.raises(ParameterError, match="list of prior classes"):
        puffgm.calibrate_many("example:cancer", epsilon=1.0)
    with pytest.raises(ParameterError, match="n_jobs"):
        puffgm.calibrate_many(chains, epsilon=1.0, n_jobs=0)
    with pytest.raises(ParameterError, match="client"):
        puffgm.calibrate_many(chains, epsilon=1.0, client=42)
    # an error inside a worker comes back as one line naming the prior and the cause
    with pytest.raises(WorkerError, match=r"^Calibrating prior 0 \('example:nosuchnet'\) failed: .*nosuchnet") as err:
        puffgm.calibrate_many(["example:nosuchnet", "example:cancer"], epsilon=1.0, n_jobs=2, chunk_size=1)
    assert len(str(err.value).splitlines()) == 1
    assert puffgm.calibrate_many([], epsilon=1.0) == []


def test_priors_survive_pickling_unchanged():
    for item in _chains() + _networks()[:3] + [puffgm.load_prior_class("example:asia")]:
        back = pickle.loads(pickle.dumps(item))
        assert back.fingerprint == item.fingerprint
        with pytest.raises(AttributeError, match="immutable"):
            back.name = "x"


@pytest.mark.slow
def test_dask_local_cluster_gives_the_local_results(monkeypatch):
    distributed = pytest.importorskip("distributed")
    # worker processes inherit the environment: make this checkout importable there too
    # (in CI puffgm is pip-installed and this is harmless)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    items = _chains() + _networks()
    local = _dicts(puffgm.calibrate_many(items, epsilon=1.5, n_jobs=1))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        remote = puffgm.calibrate_many(items, epsilon=1.5, client=client, chunk_size=2)
        assert _dicts(remote) == local
        # the work really ran on the workers, not in this process
        ran = client.run(lambda: "puffgm.networks.calibration" in __import__("sys").modules)
        assert len(ran) == 2 and any(ran.values())
        # a scheduler address opens (and closes) its own client
        by_address = puffgm.calibrate_many(_chains(), epsilon=1.5, client=cluster.scheduler_address)
        assert _dicts(by_address) == local[: len(_chains())]


def test_an_option_one_kind_does_not_use_is_refused_as_calibrate_refuses_it():
    """No option is dropped silently: a list that mixes kinds takes only the options every kind uses."""
    mixed = ["example:cancer", _chains()[0]]
    with pytest.raises(ParameterError) as many:
        puffgm.calibrate_many(mixed, epsilon=1.0, n_jobs=1, per_node=False)
    with pytest.raises(ParameterError) as one:
        puffgm.calibrate("example:cancer", epsilon=1.0, per_node=False)
    assert str(many.value) == str(one.value)
    assert "per_node do not apply to method 'exact' of Bayesian-network priors" in str(one.value)
