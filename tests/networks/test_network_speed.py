"""The fast roads of network calibration against the reference roads.

* variable elimination in scaled probability space (with its underflow guard) against the
  log-space elimination, zeros included, and on a network whose probabilities fall below
  1e-280 (the guard must hand the query to the log road);
* the junction-tree roads (pairwise pass, Steiner subtree) against the log road;
* the bitmask d-separation index against networkx;
* whole calibrations with every fast road switched off (the reference) against the default,
  on random networks large enough for the structured family: same active quilts, scores to 1e-9;
* joblib parallelism gives identical results; the table limit refuses or skips with one
  sentence naming the option.
"""

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from _nets import chain_network, random_dag, random_network

from puffgm.exceptions import InferenceLimitError, TimeLimitError
from puffgm.networks.calibration import calibrate
from puffgm.networks.inference import LogVariableElimination
from puffgm.networks.influence import InfluenceEngine
from puffgm.networks.priors import NetworkPrior, PriorClass, load_network, load_prior_class
from puffgm.networks.quilt_scores import QuiltSearch
from puffgm.networks.quilts import DSeparationIndex, remote_nodes


def _same_table(a, b, tol=1e-9):
    assert np.array_equal(np.isfinite(a), np.isfinite(b))  # zeros are exact on both roads
    f = np.isfinite(a)
    assert np.allclose(a[f], b[f], rtol=0, atol=tol)


def test_fast_elimination_matches_log_space_on_random_networks_with_zeros():
    rng = np.random.default_rng(17)
    for _ in range(25):
        net, _ = random_network(rng, n=int(rng.integers(3, 10)), zero_prob=0.3, p_edge=0.5)
        ve = LogVariableElimination(net)
        for _ in range(8):
            k = int(rng.integers(1, min(5, len(net.nodes)) + 1))
            vs = tuple(str(v) for v in rng.choice(net.nodes, size=k, replace=False))
            _same_table(ve.log_marginal(vs), ve.log_marginal_logspace(vs))
        assert ve.fallbacks == 0


def test_alarm_marginals_agree_on_both_roads():
    ve = LogVariableElimination(load_network("example:alarm"))
    rng = np.random.default_rng(1)
    nodes = list(ve.prior.nodes)
    for _ in range(20):
        vs = tuple(str(v) for v in rng.choice(nodes, size=int(rng.integers(2, 6)), replace=False))
        _same_table(ve.log_marginal(vs), ve.log_marginal_logspace(vs))


def test_underflow_guard_falls_back_to_log_space_and_keeps_tiny_probabilities():
    # a chain of 120 binary nodes whose every step has a 1e-6 branch: P(all ones) = 1e-720,
    # far below the smallest double; the fast road must not call it 0
    T = 120
    net = chain_network([1 - 1e-6, 1e-6], [[1 - 1e-6, 1e-6], [1e-6, 1 - 1e-6]], T)
    ve = LogVariableElimination(net)
    vs = ("X1", f"X{T}")
    t = ve.log_marginal(vs)
    assert np.isfinite(t).all()
    _same_table(t, ve.log_marginal_logspace(vs))
    # a deterministic chain: long runs of exact zeros stay exact
    det = chain_network([0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]], 30)
    ve2 = LogVariableElimination(det)
    t2 = ve2.log_marginal(("X1", "X30"))
    assert np.isneginf(t2[0, 1]) and np.isneginf(t2[1, 0]) and np.isfinite(np.diag(t2)).all()


def test_underflow_guard_forces_log_road_when_the_bound_is_crossed():
    rng = np.random.default_rng(3)
    nodes = [f"V{i}" for i in range(60)]
    parents = {v: ((nodes[i - 1],) if i else ()) for i, v in enumerate(nodes)}
    states = {v: ("a", "b", "c") for v in nodes}
    cpds = {}
    for i, v in enumerate(nodes):
        t = rng.dirichlet(np.ones(3), size=3 if i else 1).T
        t[2] = 1e-14  # tiny but positive: 60 steps give products near 1e-840
        cpds[v] = (t / t.sum(axis=0)).reshape((3, 3) if i else (3,))
    net = NetworkPrior(nodes, states, parents, cpds)
    ve = LogVariableElimination(net)
    q = ("V0", "V30", "V59")
    _same_table(ve.log_marginal(q), ve.log_marginal_logspace(q))


def test_junction_tree_roads_match_log_space():
    rng = np.random.default_rng(23)
    nets = [load_network("example:asia")] + [
        random_network(rng, n=int(rng.integers(3, 9)), zero_prob=0.3, p_edge=0.5)[0] for _ in range(20)]
    for net in nets:
        ve = LogVariableElimination(net)
        for i in net.nodes:
            pairs = ve.pair_log_marginals(i)
            assert pairs is not None
            for j, table in pairs.items():
                _same_table(table, ve.log_marginal_logspace((i, j)))
        for _ in range(6):  # Steiner-subtree road (chosen when smaller than the ancestral set)
            k = int(rng.integers(1, min(5, len(net.nodes)) + 1))
            vs = tuple(str(v) for v in rng.choice(net.nodes, size=k, replace=False))
            factors = ve._subtree_factors(sorted(ve._index[v] for v in vs), ve._index[vs[0]])
            if factors is None:
                continue
            names, table = ve._compute_fast(frozenset(vs), vs[0])
            _same_table(np.transpose(table, [names.index(v) for v in vs]), ve.log_marginal_logspace(vs))


def test_dseparation_index_matches_networkx():
    rng = np.random.default_rng(8)
    for _ in range(150):
        n = int(rng.integers(2, 12))
        g = random_dag(rng, n, 0.35)
        idx = DSeparationIndex(g)
        node = int(rng.integers(n))
        q = {v for v in range(n) if v != node and rng.random() < 0.4}
        remote = idx.names(idx.remote_bits(node, idx.bits(q)))
        assert remote == remote_nodes(g, node, q)
        for v in set(range(n)) - q - {node}:
            assert nx.is_d_separator(g, {node}, {v}, q) == (v in remote)


def _reference_calibrate(monkeypatch, *args, **kwargs):
    """calibrate with every fast road off: log-space elimination on the ancestral set only,
    no junction tree, no vectorised pairs, log-space influences."""
    from puffgm.networks import inference

    with monkeypatch.context() as m:
        def log_only(self, keep, root=None):
            return self._compute_log(keep)

        m.setattr(inference.LogVariableElimination, "_compute", log_only)
        m.setattr(inference.LogVariableElimination, "pair_log_marginals", lambda self, node, **kw: None)
        m.setattr(inference.LogVariableElimination, "scaled_marginal", lambda self, variables: None)
        return calibrate(*args, **kwargs)


@pytest.mark.slow
def test_structured_calibration_identical_to_the_reference_roads(monkeypatch):
    rng = np.random.default_rng(31)
    for trial in range(4):
        n = int(rng.integers(13, 17))  # above the exhaustive limit: structured family and refinement
        net, dag = random_network(rng, n=n, p_edge=0.25, max_card=3, zero_prob=0.1, concentration=20.0)
        members = [net] if trial % 2 == 0 else [net, random_network(rng, dag=dag, n=n, zero_prob=0.1,
                                                                    concentration=20.0)[0]]
        for eps in (0.5, 2.0):
            fast = calibrate(members, epsilon=eps)
            ref = _reference_calibrate(monkeypatch, members, epsilon=eps)
            assert fast.details["quilt_family"].startswith("structured")
            assert fast.worst_node == ref.worst_node
            assert fast.sigma_max == pytest.approx(ref.sigma_max, rel=1e-9)
            for a, b in zip(fast.per_node, ref.per_node, strict=True):
                assert a.quilt == b.quilt
                assert a.score == pytest.approx(b.score, rel=1e-9) or a.score == b.score == math.inf


def test_alarm_identical_to_the_reference_roads(monkeypatch):
    pc = load_prior_class("example:alarm")
    protect = ["CO", "HR", "SHUNT", "PVSAT"]
    fast = calibrate(pc, epsilon=1.0, protected=protect)
    ref = _reference_calibrate(monkeypatch, pc, epsilon=1.0, protected=protect)
    assert [c.quilt for c in fast.per_node] == [c.quilt for c in ref.per_node]
    for a, b in zip(fast.per_node, ref.per_node, strict=True):
        assert a.score == pytest.approx(b.score, rel=1e-9)
        assert a.max_influence == pytest.approx(b.max_influence, rel=1e-9, abs=1e-12)


def test_pairwise_influences_match_the_general_road_with_zeros_and_classes():
    rng = np.random.default_rng(12)
    for _ in range(15):
        net, dag = random_network(rng, n=int(rng.integers(3, 8)), zero_prob=0.3)
        other, _ = random_network(rng, dag=dag, n=len(net.nodes), zero_prob=0.3)
        pc = PriorClass([net, other])
        fast = InfluenceEngine(pc)
        for i, j in itertools.permutations(net.nodes, 2):
            slow = InfluenceEngine(pc)
            slow._pair_results_node, slow._pair_results = i, None  # the general road
            slow._pair_tables = [{}, {}]
            slow._pair_node = i
            a, b = fast.max_influence(i, (j,)).value, slow.max_influence(i, (j,)).value
            assert a == b or a == pytest.approx(b, rel=1e-9, abs=1e-12)


def test_parallel_nodes_give_identical_results():
    pc = load_prior_class("example:alarm")
    protect = ["CO", "HR", "SHUNT", "PVSAT", "BP", "HRBP"]
    one = calibrate(pc, epsilon=1.0, protected=protect, n_jobs=1)
    two = calibrate(pc, epsilon=1.0, protected=protect, n_jobs=2)
    assert one.per_node == two.per_node and one.sigma_max == two.sigma_max
    assert one.details == two.details


def test_table_limit_skips_candidates_or_falls_back_with_the_option_named():
    pc = load_prior_class("example:alarm")
    full = calibrate(pc, epsilon=1.0, protected=["CO"])
    small = calibrate(pc, epsilon=1.0, protected=["CO"], max_table_entries=2000)
    assert small.details["skipped_quilts"] > 0
    assert any("max_table_entries=2000" in n for n in small.notes)
    assert small.sigma_max >= full.sigma_max  # fewer candidates: valid, never below the optimum
    tiny = calibrate(pc, epsilon=1.0, protected=["CO"], max_table_entries=4)  # CO's search cannot run
    assert tiny.details["fallback_nodes"] == ("CO",) and tiny.worst.quilt == ()
    assert tiny.sigma_max == len(tiny.worst.nearby) <= tiny.groupdp_sigma  # trivial: X_R = independent nodes
    assert any("fell back to the trivial quilt" in n and "max_table_entries=4" in n for n in tiny.notes)
    with pytest.raises(ValueError, match="max_table_entries"):
        calibrate(pc, epsilon=1.0, max_table_entries=0)


def test_progress_bar_goes_to_stderr_only(capsys):
    res = calibrate("example:asia", epsilon=1.0, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and res.sigma_max > 0


def test_cli_quiet_json_is_pure_json(capsys):
    import json

    from puffgm.cli import main

    assert main(["calibrate", "example:asia", "--epsilon", "1", "--json", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["sigma_max"] > 0
    assert main(["calibrate", "example:asia", "--epsilon", "1", "--max-table-entries", "0"]) == 2


def test_candidates_are_valid_quilts_with_the_index():
    pc = load_prior_class("example:win95pts")
    search = QuiltSearch(pc)
    for node in pc.nodes[::9]:
        for c in search.candidates(node):
            if c.remote:
                assert nx.is_d_separator(pc.dag, {node}, set(c.remote), set(c.quilt))
            assert c.quilt | c.nearby | c.remote == set(pc.nodes)


def _plain_minimal(dag, order, node, quilt):
    """The minimal separator by its definition: drop nodes one by one (reverse ``order``) while the remote set keeps."""
    from puffgm.networks.quilts import make_quilt

    q = set(quilt)
    target = make_quilt(dag, node, q).remote
    for v in sorted(quilt, key=order.index, reverse=True):
        cand = make_quilt(dag, node, q - {v})
        if v in cand.remote and target <= cand.remote:
            q = q - {v}
    return frozenset(q)


def test_minimal_separator_shortcuts_match_the_plain_definition():
    rng = np.random.default_rng(0)
    for name in ("alarm", "win95pts"):
        pc = load_prior_class(f"example:{name}")
        search = QuiltSearch(pc)
        for _ in range(150):
            node = str(rng.choice(pc.nodes))
            q = frozenset(str(v) for v in rng.choice(pc.nodes, int(rng.integers(1, 15)), replace=False)) - {node}
            assert search._minimal(node, q) == _plain_minimal(pc.dag, list(pc.nodes), node, q)


def test_minimal_separator_is_the_touched_part_of_the_quilt_on_random_dags():
    """One Bayes ball decides the minimal separator: the quilt nodes it touches, whatever the node order."""
    from puffgm.networks.quilts import DSeparationIndex, make_quilt

    rng = np.random.default_rng(7)
    dropped = 0
    for _ in range(80):
        n = int(rng.integers(4, 14))
        topo = [f"v{k}" for k in range(n)]
        dag = nx.DiGraph()
        dag.add_nodes_from(str(v) for v in rng.permutation(topo))  # node order is not topological
        p = rng.uniform(0.1, 0.6)
        dag.add_edges_from((topo[a], topo[b]) for a in range(n) for b in range(a + 1, n) if rng.random() < p)
        search = QuiltSearch.__new__(QuiltSearch)
        search._dsep = DSeparationIndex(dag)
        search._order = {v: k for k, v in enumerate(dag.nodes)}
        for _ in range(8):
            node = str(rng.choice(topo))
            q = frozenset(str(v) for v in rng.choice(topo, int(rng.integers(1, n)), replace=False)) - {node}
            minimal = search._minimal(node, q)
            assert minimal == _plain_minimal(dag, list(dag.nodes), node, q)
            if q:
                full, small = make_quilt(dag, node, q), make_quilt(dag, node, minimal)
                assert small.remote == full.remote | (q - minimal) and small.nearby == full.nearby
            dropped += len(q - minimal)
    assert dropped > 50  # the rule is exercised


def test_time_limit_refuses_with_the_projection_and_the_option():
    from puffgm.exceptions import TimeLimitError

    with pytest.raises(TimeLimitError, match=r"time_limit=0.001 s; protect fewer nodes"):
        calibrate("example:alarm", epsilon=1.0, time_limit=0.001)
    with pytest.raises(ValueError, match="time_limit"):
        calibrate("example:asia", epsilon=1.0, time_limit=-1)
    assert calibrate("example:asia", epsilon=1.0, time_limit=600).sigma_max == calibrate("example:asia", epsilon=1.0).sigma_max


@pytest.mark.slow
def test_time_limit_during_refinement_keeps_the_valid_quilts(monkeypatch):
    # the limit reached after every node search (here: at the first refinement) returns the
    # structured quilts, which are valid, with the single-node bound and a note
    from puffgm.networks.priors import load_prior_class
    from puffgm.networks.quilt_scores import QuiltSearch
    from puffgm.networks.quilts import make_quilt

    full = calibrate("example:hailfinder", epsilon=1.0)

    def expired(self, node, epsilon, incumbent):
        raise TimeLimitError("Calibrating network 'hailfinder' did not finish within time_limit=1 s.")

    monkeypatch.setattr(QuiltSearch, "refine_steps", expired)
    res = calibrate("example:hailfinder", epsilon=1.0, time_limit=600)
    assert res.details["time_limit_reached"] is True
    assert any("time_limit=600 s reached after every node search" in n for n in res.notes)
    assert res.sigma_max >= full.sigma_max * (1 - 1e-12)
    assert res.sigma_lower_bound <= full.sigma_max
    assert res.sigma_lower_bound <= res.sigma_max
    dag = load_prior_class("example:hailfinder").dag
    for c in res.per_node:  # every quilt is a Markov quilt with its remote set by d-separation
        q = make_quilt(dag, c.node, c.quilt)
        assert set(c.remote) == set(q.remote) and set(c.nearby) == set(q.nearby)
    assert full.details["time_limit_reached"] is False


def _plain_refine(search, node, epsilon, incumbent):
    """QuiltSearch.refine with no floors: every addition scored at every step (the reference)."""
    from puffgm.networks.quilt_scores import better

    best, quilt = incumbent, frozenset()
    order = search._order.__getitem__
    while True:
        current = search._make(node, quilt)
        options = []
        for j in sorted(current.nearby - {node}, key=order):
            q = quilt | {j}
            if not search._fits(q):
                continue
            ch = search.choice(search._make(node, q), epsilon=epsilon)
            if math.isfinite(ch.score):
                options.append((ch.score, ch.max_influence, order(j), j, ch))
        if not options:
            return best
        low = min(o[0] for o in options)
        near = [o for o in options if o[0] <= low * (1 + 1e-9)]
        low_e = min(o[1] for o in near)
        score, _, _, j, ch = min((o for o in near if o[1] <= low_e + 1e-9), key=lambda o: o[2])
        if better(score, best.score):
            best = ch
        quilt = quilt | {j}


@pytest.mark.slow
def test_refine_with_the_floors_of_earlier_steps_is_the_plain_greedy_growth():
    # the refinement skips an addition whose floor, max(e(quilt), e({j}), e(Q' + j) scored at an
    # earlier step), cannot reach the smallest score: the same quilts as scoring every addition
    from puffgm.networks.quilt_scores import QuiltSearch

    rng = np.random.default_rng(12)
    cases = [(load_prior_class("example:hailfinder"), ["R5Fcst", "CombVerMo", "AreaMoDryAir"])]
    for _ in range(3):
        net, _dag = random_network(rng, n=15, p_edge=0.25, max_card=3, zero_prob=0.1, concentration=20.0)
        cases.append((load_prior_class(net), [str(v) for v in net.nodes[:4]]))
    for pc, nodes in cases:
        fast, plain = QuiltSearch(pc, exhaustive=False), QuiltSearch(pc, exhaustive=False)
        for node in nodes:
            for eps in (1.0, 3.0):
                start = fast.best(node, epsilon=eps)
                a = fast.refine(node, epsilon=eps, incumbent=start)
                b = _plain_refine(plain, node, eps, plain.best(node, epsilon=eps))
                assert (a.quilt, a.nearby, a.remote) == (b.quilt, b.nearby, b.remote)
                assert a.score == b.score and a.max_influence == b.max_influence


@pytest.mark.slow
def test_growing_the_worst_node_while_it_is_the_worst_gives_every_nodes_complete_growth():
    """The calibration's refinement grows the worst node one step at a time while it is the
    worst: its sigma_max is the largest score of every node grown completely, and that of
    growing the worst node completely until the worst is one grown; each step's score never
    increases and the last step is refine's result."""
    from puffgm.networks.calibration import _first_worst, _refine_worst

    rng = np.random.default_rng(0)
    nets = [random_network(rng, n=24, p_edge=0.2, max_card=3, zero_prob=0.05, concentration=5.0)[0]
            for _ in range(5)]
    paused = 0
    for net in nets[2], nets[4]:  # five nodes grown in each
        pc = load_prior_class(net)
        search = QuiltSearch(pc, exhaustive=False)
        nodes = list(pc.nodes)
        start = {n: search.best(n, epsilon=3.0) for n in nodes}
        lazy, started = dict(start), []
        _refine_worst(search, lazy, nodes, 3.0, started.append)
        complete = {n: search.refine(n, epsilon=3.0, incumbent=start[n]) for n in nodes}
        for n in started:
            steps = [c.score for c in search.refine_steps(n, epsilon=3.0, incumbent=start[n])]
            assert steps == sorted(steps, reverse=True) and (steps[-1] if steps else start[n].score) == complete[n].score
            assert complete[n].score * (1 - 1e-12) <= lazy[n].score <= start[n].score
            paused += lazy[n].score > complete[n].score * (1 + 1e-12)
        whole, done = dict(start), set()
        while (node := _first_worst(nodes, lambda n: whole[n].score)) not in done:
            done.add(node)
            whole[node] = complete[node]
        top = max(c.score for c in complete.values())
        assert max(c.score for c in lazy.values()) == pytest.approx(top, rel=1e-9)
        assert max(c.score for c in whole.values()) == pytest.approx(top, rel=1e-9)
        assert len(started) == len(set(started)) and set(started) <= done  # each node starts once
        assert all(lazy[n] == start[n] for n in nodes if n not in started)
    assert paused >= 3  # growths left part of the way (the work saved)


def test_a_worker_keeps_its_search_between_tasks_and_each_task_matches_a_fresh_search():
    """The parallel road's worker reuses one QuiltSearch per calibration; a task's quilts, new
    influences and counts are those of a fresh search of its nodes."""
    from puffgm.networks import calibration
    from puffgm.networks.secrets import SecretSpec

    pc = load_prior_class("example:alarm")
    spec = SecretSpec()  # sent to the workers as it is (it pickles)
    args = (pc, spec, 10**5, False, None)
    first = calibration._best_chunk(*args, list(pc.nodes[:5]), 1.0)
    kept = calibration._worker_search(*args)
    second = calibration._best_chunk(*args, list(pc.nodes[5:12]), 1.0)
    assert calibration._worker_search(*args) is kept  # the junction tree and conditionals are kept
    for (out, record, evaluations, skipped, fallback), nodes in ((first, pc.nodes[:5]), (second, pc.nodes[5:12])):
        fresh = QuiltSearch(pc, None, 10**5, False)
        assert out == {n: fresh.best(n, epsilon=1.0) for n in nodes}
        want = fresh.engine.evaluated()  # which quilts were evaluated, not the influences
        assert set(record) == set(want) and evaluations == fresh.engine.evaluations
        for n, (singles, multis) in want.items():
            assert sorted(record[n][0].tolist()) == sorted(singles.tolist()) and sorted(record[n][1]) == sorted(multis)
        assert skipped == fresh.skipped == 0 and fallback == [] and not fresh.fallback


def test_a_quilt_beyond_the_inference_limit_is_unavailable_to_the_improvement_steps():
    """The branch and bound, its dive and the certificate ask influence_if_fits: a quilt whose exact
    inference exceeds max_table_entries is None for them (and counted), never an abort."""
    pc = load_prior_class("example:alarm")
    search = QuiltSearch(pc, None, 10**5, False, 64)
    node = "CO"
    quilt = ("TPR", "CATECHOL", "HR", "STROKEVOLUME")  # 3 x 3 x 2 x 3 x 3 states with CO: above 64
    assert search.influence_if_fits(node, quilt) is None and search.skipped == 1
    with pytest.raises(InferenceLimitError):
        QuiltSearch(pc, None, 10**5, False, 64).engine.max_influence(node, quilt)
    with pytest.raises(InferenceLimitError):  # a single-node influence drives the search itself: refused
        search.influence_if_fits(node, ("HR",))
    assert search.skipped == 1


def _factor_plan(ve, factors, keep_mask):
    """The greedy min-size order and largest table by explicit factor scopes (the reference of _plan)."""
    scopes = [set(f[0]) for f in factors]
    elim = {v for s in scopes for v in s if not keep_mask >> v & 1}
    order, largest = [], 0
    while elim:
        def size(v):
            scope = set().union(*(s for s in scopes if v in s))
            return math.prod(ve._card[u] for u in scope), v
        v = min(elim, key=size)
        largest = max(largest, size(v)[0])
        merged = set().union(*(s for s in scopes if v in s)) - {v}
        scopes = [s for s in scopes if v not in s] + ([merged] if merged else [])
        order.append(v)
        elim.discard(v)
    return order, largest


def test_route_plans_match_the_factor_elimination_and_refuse_before_contracting(monkeypatch):
    """The symbolic plan (interaction graph as bitmasks) eliminates in the order, and meets the largest
    table, of the factor-by-factor greedy elimination on both routes; a query past the limit is refused
    with no contraction run, and exactly when the reference route (today's) needs a larger table."""
    from puffgm.networks import inference

    rng = np.random.default_rng(31)
    nets = [load_network("example:asia")] + [
        random_network(rng, n=int(rng.integers(4, 10)), zero_prob=0.2, p_edge=0.5)[0] for _ in range(12)]
    built = []
    real_contract = inference._contract
    monkeypatch.setattr(inference, "_contract",
                        lambda ops, scope, out: built.append(len(scope)) or real_contract(ops, scope, out))
    for net in nets:
        ve = LogVariableElimination(net)
        for _ in range(6):
            k = int(rng.integers(1, min(4, len(net.nodes)) + 1))
            vs = tuple(str(v) for v in rng.choice(net.nodes, size=k, replace=False))
            keep_idx = sorted(ve._index[v] for v in vs)
            keep_mask = sum(1 << v for v in keep_idx)
            anc_mask = 0
            for v in keep_idx:
                anc_mask |= ve._anc_bits[v]
            anc = [(ve._fvars[u],) for u in inference.bit_indices(anc_mask)]
            tree = ve._subtree_factors(keep_idx, ve._index[vs[0]])
            routes = [anc] + ([tree[0]] if tree is not None else [])
            for factors in routes:
                order, largest, _ = ve._plan(factors, keep_mask)
                ref_order, ref_largest = _factor_plan(ve, factors, keep_mask)
                assert order == ref_order
                assert largest == max(ref_largest, math.prod(ve._card[v] for v in keep_idx))
            reference = tree[0] if tree is not None and tree[1] < anc_mask.bit_count() else anc
            need = ve._plan(reference, keep_mask)[1]
            ve.max_table_entries = need  # the tree is built already: the limit decides the query only
            ve._compute_fast(frozenset(vs), vs[0])  # at the limit: answered
            ve.max_table_entries = need - 1
            built.clear()
            with pytest.raises(InferenceLimitError, match="max_table_entries"):
                ve._compute_fast(frozenset(vs), vs[0])
            ve.max_table_entries = inference.DEFAULT_MAX_TABLE_ENTRIES
            assert built == []  # refused from the plan: no contraction ran


def test_one_network_on_a_dask_cluster_gives_the_local_result(cli):
    """calibrate(client=...) and ``puffgm calibrate --scheduler``: the node searches run on Dask workers
    (threads of a LocalCluster in this process), each worker sends back the active quilts and which
    influences it computed; the result is the local one, witness, bound and counts included."""
    import json

    distributed = pytest.importorskip("distributed")
    pc = load_prior_class("example:child")
    local = calibrate(pc, epsilon=1.0, n_jobs=1)
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        with pytest.raises(TimeLimitError, match="reached its time_limit"):  # raised on a worker: a refusal
            calibrate(pc, epsilon=1.0, client=client, time_limit=1e-3)
        remote = calibrate(pc, epsilon=1.0, client=client)
        assert remote.to_dict() == local.to_dict()
        assert remote.worst.witness == local.worst.witness
        assert remote.details["influence_evaluations"] == local.details["influence_evaluations"]
        code, out, err = cli("calibrate", "example:child", "--epsilon", "1", "--json", "--per-node",
                             "--scheduler", cluster.scheduler_address)
        assert code == 0
        assert json.loads(out)["sigma_max"] == local.sigma_max
        code, out, err = cli("calibrate", '{"transition": [[0.9, 0.1], [0.4, 0.6]], "length": 5}',
                             "--epsilon", "1", "--scheduler", cluster.scheduler_address)
        assert code == 2 and "--scheduler does not apply" in err
    with pytest.raises(ValueError, match="'client' parameter of calibrate"):
        calibrate(pc, epsilon=1.0, client=42)


def test_parallel_workers_send_back_no_influence_cache(monkeypatch):
    """The joblib road merges a compact record of the quilts each worker evaluated (positions only):
    the refinement recomputes what it needs, with the sequential run's result and evaluation count."""
    from puffgm.networks import calibration

    sent = []
    real = calibration._best_chunk

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        sent.append(out[1])
        return out

    monkeypatch.setattr(calibration, "_best_chunk", spy)
    pc = load_prior_class("example:alarm")
    protect = ["CO", "HR", "SHUNT", "PVSAT", "BP", "HRBP", "PAP", "SAO2"]
    one = calibrate(pc, epsilon=1.0, protected=protect, n_jobs=1)
    import joblib

    with joblib.parallel_config(backend="threading"):  # the spy runs in this process
        two = calibrate(pc, epsilon=1.0, protected=protect, n_jobs=2)
    assert one.to_dict() == two.to_dict()
    assert sent and all(isinstance(rec, dict) for rec in sent)
    for rec in sent:
        for singles, multis in rec.values():
            assert singles.dtype == np.int32 and all(isinstance(q, tuple) for q in multis)
