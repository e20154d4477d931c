"""`puffgm audit` and the continuous/aggregate secrets of Kifer-Machanavajjhala section 7."""

import json
import math

import numpy as np
import pytest

from puffgm.framework import Instantiation, audit_laplace
from puffgm.framework.continuous import (
    aggregate_pairs,
    aggregate_sum_scale,
    audit_absolute_error_sum,
    interval_pairs,
    relative_error_scale,
    release_aggregate_sum,
    release_relative_error,
    release_sum_absolute_error,
)


@pytest.mark.slow
def test_cli_case_numbers_json(cli):
    code, out, _ = cli("audit", "--case", "all", "--json")
    assert code == 0
    res = {r["case"]: r for r in json.loads(out)}
    assert res["flu"]["W"] == 2.0 and res["flu"]["group_dp_sensitivity"] == 4.0
    assert res["close-adversary"]["exp_unconditioned"] == pytest.approx(90.0)
    assert res["close-adversary"]["exp_conditioned"] == pytest.approx(1728 / 19)
    assert res["close-adversary"]["paper_value_from_rounded_conditionals"] == pytest.approx(91.0962, abs=1e-4)
    assert [r["two_run_loss"] for r in res["bai-4.2"]["rows"]] == ["inf"] * 6
    assert all(r["expected_runs_exact"] == pytest.approx(3.0) for r in res["bai-4.2"]["rows"])
    assert res["bai-4.3"]["one_run_loss"] == pytest.approx(res["bai-4.3"]["theorem_3_epsilon"])
    assert all(r["violates_epsilon"] for r in res["exam-order"]["rows"])
    assert res["theorem-6"]["passes_independent"] and not res["theorem-6"]["passes_correlated"]
    assert res["lemma-7.1"]["audited_loss"] == pytest.approx(res["lemma-7.1"]["expected_worst"])


def test_cli_json_spec(tmp_path, cli):
    spec = {
        "nodes": ["A", "B"], "states": {"A": [0, 1], "B": [0, 1]},
        "priors": [{"table": [[0.25, 0.25], [0.25, 0.25]]}],
        "pairs": [[{"node": "A", "value": 0}, {"node": "A", "value": 1}]],
        "mechanism": {"type": "laplace", "query": "sum", "scale": 2.0},
    }
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    code, out, _ = cli("audit", str(p), "--json")
    assert code == 0 and json.loads(out)["loss"] == pytest.approx(0.5)
    spec["mechanism"] = {"type": "finite", "table": [[[0.75, 0.25], [0.75, 0.25]], [[0.25, 0.75], [0.25, 0.75]]], "runs": 2}
    p.write_text(json.dumps(spec))
    code, out, _ = cli("audit", str(p), "--json")
    assert json.loads(out)["loss"] == pytest.approx(2 * math.log(3))
    spec["mechanism"] = {"type": "wasserstein", "query": {"weights": {"A": 3}}, "epsilon": 1.0}
    spec["pairs"] = "default"
    p.write_text(json.dumps(spec))
    code, out, _ = cli("audit", str(p))
    assert code == 0 and "W = 3" in out


def test_cli_network_form(cli):
    code, out, _ = cli("audit", "example:asia", "--scale", "8", "--count-state", "yes", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["n_databases"] == 256 and d["loss"] <= 1.0


def test_cli_errors_are_one_line(tmp_path, cli):
    code, _, err = cli("audit")
    assert code == 2 and err.count("\n") == 1
    code, _, err = cli("audit", "--case", "flu", "--epsilon", "-1")
    assert code == 2 and "'epsilon' parameter" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = cli("audit", str(bad))
    assert code == 2 and "not valid JSON" in err
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"nodes": [f"X{i}" for i in range(17)], "states": [2] * 17,
                               "priors": [{"table": (np.full((2,) * 17, 2.0 ** -17)).tolist()}],
                               "mechanism": {"type": "laplace", "scale": 1.0}}))
    code, _, err = cli("audit", str(big))
    assert code == 2 and "131072" in err


# ---------------------------------------------------------------- section 7


def test_lemma_7_1_exact_audit():
    for k, eps, step in ((1.0, 1.0, 0.25), (0.5, 2.0, 0.125)):
        r = audit_absolute_error_sum(k=k, epsilon=eps, step=step)
        assert r["loss"] == pytest.approx(eps * (1 - step / (4 * k)), rel=1e-12)
        assert r["loss"] <= eps


def test_half_the_lemma_scale_is_not_enough():
    r = audit_absolute_error_sum(k=1.0, epsilon=1.0, step=0.25)
    inst = r["result"]
    # rebuild: same instantiation, scale 2k/eps -> loss ~ 2 eps (1 - step/4k) > eps
    res = audit_absolute_error_sum(k=1.0, epsilon=2.0, step=0.25)
    assert res["loss"] > 1.0 and inst.loss <= 1.0


def test_relative_error_is_absolute_error_on_logs():
    c, eps = 0.5, 1.0
    grid = np.exp(np.arange(0, 10) * math.log(2) * 0.5)  # geometric grid, ratio sqrt(2)
    nodes = ["t1", "t2"]
    logs = np.log(grid)
    rng = np.random.default_rng(0)
    priors = [np.multiply.outer(rng.dirichlet(np.ones(10)), rng.dirichlet(np.ones(10))) for _ in range(3)]
    k = math.log(1 / c)
    centers = [x for x in logs if x - k >= -1e-9 and x + 3 * k <= logs[-1] + 1e-9]
    states = {n: tuple(float(v) for v in logs) for n in nodes}
    pairs = interval_pairs("t1", centers, k) + interval_pairs("t2", centers, k)
    inst = Instantiation(priors, pairs, nodes=nodes, states=states)
    assert len(pairs) >= 4
    r = audit_laplace(inst, lambda a: float(sum(a.values())), relative_error_scale(c, epsilon=eps))
    assert 0 < r.loss <= eps + 1e-12
    rel = release_relative_error(grid, c, epsilon=eps, random_state=1)
    assert rel.secure is False and rel.value > 0


def test_aggregate_secret_scale_passes_exact_audit():
    eps, delta = 1.0, 1.0
    nodes = ["a", "b", "c"]
    states = {n: (0.0, 0.5, 1.0, 1.5) for n in nodes}
    rng = np.random.default_rng(3)
    priors = []
    for _ in range(3):
        j = np.ones(())
        for _n in nodes:
            j = np.multiply.outer(j, rng.dirichlet(np.ones(4)))
        priors.append(j)
    # a correlated prior too: the bound holds under any prior
    priors.append(rng.dirichlet(np.full(64, 0.3)).reshape(4, 4, 4))
    inst = Instantiation(priors, aggregate_pairs([1.5, 2.0, 2.5], delta), nodes=nodes, states=states)
    r = audit_laplace(inst, lambda a: float(sum(a.values())), aggregate_sum_scale(delta, epsilon=eps))
    assert r.loss <= eps + 1e-12
    # and the noise is not gratuitous: a third of it fails on some prior
    assert audit_laplace(inst, lambda a: float(sum(a.values())), aggregate_sum_scale(delta, epsilon=eps) / 3).loss > eps


def test_release_validation_and_secure_flag():
    r = release_sum_absolute_error([1.0, 2.0], k=1.0, epsilon=1.0, random_state=0)
    assert r.scale == 4.0 and r.secure is False
    assert release_aggregate_sum([1.0, 2.0], 1.0, epsilon=1.0, random_state=0).scale == 3.0
    with pytest.raises(ValueError, match="'k' parameter"):
        release_sum_absolute_error([1.0], k=0, epsilon=1.0)
    with pytest.raises(ValueError, match="values > 0"):
        release_relative_error([1.0, -2.0], 0.5, epsilon=1.0)
    with pytest.raises(ValueError, match="'c' parameter"):
        relative_error_scale(1.5, epsilon=1.0)
