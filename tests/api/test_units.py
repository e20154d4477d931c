"""Many units (issue 43): exact audits of whole panels, the aggregate's scale, per-unit releases, refusals.

The audits enumerate the product of the units' joint laws (every prior of the class for every
unit, the same or different), condition on every secret X_{u,i} = a vs b of every unit, and take
the sup of the log-ratio of the output densities: on one axis at the support points and one
point beyond each end (between them the ratio of two Laplace mixtures is monotone, beyond them
constant), on several axes at the vertices of the product of those points.
"""

import itertools

import numpy as np
import pytest

import puffgm
from puffgm.accounting import PrivacyAccountant
from puffgm.exceptions import CompositionError, ParameterError

pd = pytest.importorskip("pandas")

P1 = [[0.8, 0.2], [0.3, 0.7]]
P2 = [[0.6, 0.4], [0.1, 0.9]]
STATES = ("a", "b")
LENGTHS = (3, 4, 5)   # three units of different lengths, the class at T = 5
PANEL = {"u1": list("aba"), "u2": list("bbab"), "u3": list("aabba")}


@pytest.fixture(scope="module")
def chain_class():
    return puffgm.ChainPriorClass.from_family([P1, P2], "stationary", 5, states=list(STATES))


def _stationary(P):
    P = np.asarray(P, float)
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    return pi / pi.sum()


def _chain_outcomes(P, T):
    """Every trace of length T (state indices) and its probability under the stationary chain P."""
    P = np.asarray(P, float)
    pi = _stationary(P)
    xs = list(itertools.product(range(len(P)), repeat=T))
    pr = np.array([pi[x[0]] * np.prod([P[x[t - 1], x[t]] for t in range(1, T)]) for x in xs])
    return np.array(xs), pr


def _panel_laws(members, lengths):
    """For each assignment of a member to every unit: the per-unit outcome tables (product law)."""
    out = []
    for combo in itertools.product(members, repeat=len(lengths)):
        out.append([_chain_outcomes(P, T) for P, T in zip(combo, lengths, strict=True)])
    return out


def _log_lap(y, v, b):
    return -np.abs(y - v) / b - np.log(2 * b)


def _points(values, b):
    s = np.unique(np.round(values, 12))
    return np.concatenate([[s[0] - 1.0 - b], s, [s[-1] + 1.0 + b]])


def _audit(units_laws, stat, scales, *, each=False, both=False):
    """sup over secrets, priors and outputs of |log f_a / f_b| for the panel release.

    ``stat(u, x)`` is unit u's statistic vector on trace x; ``scales[u]`` the Laplace scales of unit u's
    release (each) or of the aggregate (all equal); ``both``: the aggregate (``scales[0]``) and the per-unit
    releases (``scales[1:]``) together.  Enumerates the product of the units' laws.
    """
    worst = 0.0
    for tables in units_laws:
        n = len(tables)
        grids = np.meshgrid(*[np.arange(len(t[1])) for t in tables], indexing="ij")
        idx = [g.reshape(-1) for g in grids]                      # unit u's outcome in each product outcome
        probs = np.prod([tables[u][1][idx[u]] for u in range(n)], axis=0)
        per_unit = [np.array([stat(u, x) for x in tables[u][0]])[idx[u]] for u in range(n)]
        total = np.sum(per_unit, axis=0)
        if both:
            outs = np.concatenate([total, *per_unit], axis=1)
            b = np.concatenate([scales[0], *scales[1:]])
        elif each:
            outs, b = np.concatenate(per_unit, axis=1), np.concatenate(scales)
        else:
            outs, b = total, np.asarray(scales[0])
        axes = [_points(outs[:, d], b[d]) for d in range(outs.shape[1])]
        ys = np.array(list(itertools.product(*axes)))
        kern = np.exp(sum(_log_lap(ys[:, None, d], outs[None, :, d], b[d]) for d in range(outs.shape[1])))
        for u, (xs, _) in enumerate(tables):
            for i in range(xs.shape[1]):
                dens = []
                for a in range(int(xs.max()) + 1):
                    w = probs * (xs[idx[u], i] == a)
                    if w.sum() > 0:
                        dens.append(np.log(kern @ w) - np.log(w.sum()))
                for da, db in itertools.combinations(dens, 2):
                    worst = max(worst, float(np.max(np.abs(da - db))))
    return worst


def _count_a(u, x):
    return np.array([float(np.sum(np.asarray(x) == 0))])


def _hist(u, x):
    x = np.asarray(x)
    return np.array([float(np.sum(x == 0)), float(np.sum(x == 1))])


@pytest.fixture(scope="module")
def laws():
    return _panel_laws([P1, P2], LENGTHS)


@pytest.mark.parametrize("method", ["wasserstein", "optimal-laplace"])
def test_aggregate_and_per_unit_query_releases_are_epsilon_private_on_the_whole_panel(chain_class, laws, method):
    cal = puffgm.calibrate_query(chain_class, {"count": "a"}, epsilon=1.0, method=method)
    agg = puffgm.release(cal, PANEL, unit=True, random_state=0)
    each = puffgm.release(cal, PANEL, unit=True, each=True, random_state=0)
    per_len = {int(T): s for T, s in each.details["scales_by_length"].items()}
    assert _audit(laws, _count_a, [agg.scales] * 3, each=False) <= 1.0 + 1e-9
    assert _audit(laws, _count_a, [per_len[T] for T in LENGTHS], each=True) <= 1.0 + 1e-9
    assert _audit(laws, _count_a, [tuple(0.7 * s for s in agg.scales)] * 3, each=False) > 1.0  # the audit can fail
    # the aggregate's scale is the largest single-unit scale over the lengths present, each calibrated once
    singles = [puffgm.calibrate_query(chain_class.with_length(T), {"count": "a"}, epsilon=1.0, method=method).scale
               for T in LENGTHS]
    assert agg.scales[0] == pytest.approx(max(singles), rel=1e-9)
    assert [per_len[T][0] for T in LENGTHS] == pytest.approx(singles, rel=1e-9)
    assert agg.details["calibrations"] == len(LENGTHS)


def test_three_state_panel_of_two_lengths_is_epsilon_private():
    P3 = [[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]]
    cc = puffgm.ChainPriorClass.from_matrices(P3, "stationary", 4, states=["x", "y", "z"])
    cal = puffgm.calibrate_query(cc, {"scores": [0, 1, 2]}, epsilon=0.5, method="optimal-laplace")
    units = {"p": list("xyz"), "q": list("zzyx")}
    agg = puffgm.release(cal, units, unit=True, random_state=0)
    each = puffgm.release(cal, units, unit=True, each=True, random_state=0)
    per_len = {int(T): s for T, s in each.details["scales_by_length"].items()}
    tables = _panel_laws([P3], (3, 4))

    def score(u, x):
        return np.array([float(np.sum(x))])

    assert _audit(tables, score, [agg.scales] * 2, each=False) <= 0.5 + 1e-9
    assert _audit(tables, score, [per_len[3], per_len[4]], each=True) <= 0.5 + 1e-9


def test_a_panel_of_one_length_has_the_single_units_scale(chain_class):
    cal = puffgm.calibrate_query(chain_class.with_length(4), {"count": "a"}, epsilon=1.0, method="optimal-laplace")
    traces = {f"p{j}": list("abab"[j:] + "abab"[:j]) for j in range(4)}
    rel = puffgm.release(cal, traces, unit=True, random_state=1)
    assert abs(rel.scales[0] - cal.scale) <= 1e-9 * cal.scale
    assert rel.details["calibrations"] == 1 and len(rel.units) == 4


def test_histogram_workload_and_mqm_panels_are_epsilon_private(chain_class, laws):
    w = puffgm.calibrate_workload(chain_class, {"histogram": {}}, epsilon=1.0)
    agg = puffgm.release(w, PANEL, unit=True, random_state=0)
    assert agg.names == STATES
    assert _audit(laws, _hist, [agg.scales] * 3, each=False) <= 1.0 + 1e-9
    mqm = puffgm.calibrate(chain_class, epsilon=1.0)
    rel = puffgm.release(mqm, PANEL, unit=True, query={"histogram": {}}, random_state=0)
    assert rel.scales == pytest.approx((2 * mqm.sigma_max,) * 2, rel=1e-9)   # T = 5 dominates here
    assert _audit(laws, _hist, [rel.scales] * 3, each=False) <= 1.0 + 1e-9
    two = {u: PANEL[u] for u in ("u1", "u2")}   # per-unit tables: two units keep the output lattice small
    each = puffgm.release(mqm, two, unit=True, query={"histogram": {}}, each=True, random_state=0)
    per_len = {int(T): s for T, s in each.details["scales_by_length"].items()}
    assert _audit(_panel_laws([P1, P2], (3, 4)), _hist, [per_len[3], per_len[4]], each=True) <= 1.0 + 1e-9


def test_an_aggregate_and_per_unit_mqm_releases_together_cost_what_the_accountant_charges(chain_class):
    mqm = puffgm.calibrate(chain_class, epsilon=0.5)
    two = {u: PANEL[u] for u in ("u1", "u2")}
    acc = PrivacyAccountant()
    agg = puffgm.release(mqm, two, unit=True, query={"count": "a"}, accountant=acc, random_state=0)
    each = puffgm.release(mqm, two, unit=True, query={"count": "a"}, each=True, accountant=acc, random_state=1)
    per_len = {int(T): s for T, s in each.details["scales_by_length"].items()}
    loss = _audit(_panel_laws([P1, P2], (3, 4)), _count_a, [agg.scales, per_len[3], per_len[4]], both=True)
    assert acc.total == 1.0                      # Theorem 4.4 per unit: 2 x 0.5
    assert 0.5 < loss <= acc.total + 1e-9        # together more than one release, within the charge


def test_optimal_noise_panel_is_epsilon_private(chain_class):
    from puffgm.mechanisms.optimal_noise import OptimalNoise

    cal = puffgm.calibrate_query(chain_class.with_length(3), {"count": "a"}, epsilon=1.0, method="optimal-noise")
    law = cal.optimal_noise
    assert isinstance(law, OptimalNoise)
    units = {"x": list("aba"), "y": list("bba")}
    rel = puffgm.release(cal, units, unit=True, random_state=3)
    assert rel.scales is None and np.isfinite(rel.value)
    tables = _panel_laws([P1, P2], (3, 3))
    K = law.law.half_width
    worst = 0.0
    for t in tables:  # exact discrete output law of F1 + F2 + Z
        prod = list(itertools.product(range(8), range(8)))
        for u in range(2):
            for i in range(3):
                logs = []
                for a in range(2):
                    pmf = {}
                    for c in prod:
                        if t[u][0][c[u]][i] != a:
                            continue
                        v = int(sum(np.sum(t[v][0][c[v]] == 0) for v in range(2)))
                        pmf[v] = pmf.get(v, 0.0) + t[0][1][c[0]] * t[1][1][c[1]]
                    ws = np.arange(-K - 3, 6 + K + 4)
                    vals = np.array(list(pmf)), np.array(list(pmf.values()))
                    m = np.exp(law.law.log_mass(ws[:, None] - vals[0][None, :] * law.unit))
                    logs.append(np.log((m * vals[1]).sum(axis=1) / vals[1].sum()))
                worst = max(worst, float(np.max(np.abs(logs[0] - logs[1]))))
    assert worst <= 1.0 + 1e-9
    with pytest.raises(ParameterError, match="optimal for one unit length"):
        puffgm.release(puffgm.calibrate_query(chain_class, {"count": "a"}, epsilon=1.0, method="optimal-noise"),
                       PANEL, unit=True, random_state=0)


# ------------------------------------------------------------------ networks: records of a small network
@pytest.fixture(scope="module")
def small_net():
    from _nets import random_network

    net, _ = random_network(np.random.default_rng(5), n=3, max_card=2, p_edge=0.9, zero_prob=0.0)
    return net


def test_network_records_panel_is_epsilon_private(small_net):
    from puffgm.networks.priors import PriorClass

    cls = PriorClass([small_net])
    cal = puffgm.calibrate_query(cls, {"count": 0}, epsilon=1.0, method="optimal-laplace")
    nodes = list(small_net.nodes)
    frame = pd.DataFrame([[small_net.states[n][x] for n, x in zip(nodes, r, strict=True)]
                          for r in [(0, 1, 0), (1, 1, 0)]], columns=nodes)
    frame.insert(0, "respondent", ["r1", "r2"])
    agg = puffgm.release(cal, frame, unit="respondent", random_state=0)
    each = puffgm.release(cal, frame, unit="respondent", each=True, random_state=0)
    assert abs(agg.scales[0] - cal.scale) <= 1e-9 * cal.scale and len(each.releases) == 2
    logj = small_net.log_joint_table()
    xs = np.array(list(itertools.product(*[range(s) for s in logj.shape])))
    pr = np.exp(logj.reshape(-1))
    tables = [[(xs, pr), (xs, pr)]]
    assert _audit(tables, _count_a, [agg.scales] * 2, each=False) <= 1.0 + 1e-9
    assert _audit(tables, _count_a, [each.scales] * 2, each=True) <= 1.0 + 1e-9


# ------------------------------------------------------------------ data in and refusals
def test_long_wide_and_split_forms_read_the_same_units(chain_class):
    cal = puffgm.calibrate_query(chain_class, {"count": "a"}, epsilon=1.0, method="wasserstein")
    long = pd.DataFrame({"id": ["u1"] * 3 + ["u2"] * 4 + ["u3"] * 5,
                         "t": [3, 2, 1] + [1, 2, 3, 4] + [1, 2, 3, 4, 5],
                         "s": list("aba")[::-1] + list("bbab") + list("aabba")})
    wide = pd.DataFrame([list("aba") + [None, None], list("bbab") + [None], list("aabba")], index=["u1", "u2", "u3"])
    r1 = puffgm.release(cal, long, unit="id", time="t", random_state=4)
    r2 = puffgm.release(cal, wide, unit=True, random_state=4)
    r3 = puffgm.release(cal, PANEL, unit=True, random_state=4)
    assert r1.value == r2.value == r3.value and r1.units == r2.units == ("u1", "u2", "u3")
    gappy = {"g": ["a", "b", None, "a", "a"]}
    with pytest.raises(ParameterError, match="gap"):
        puffgm.release(cal, gappy, unit=True)
    split = puffgm.release(cal, gappy, unit=True, gaps="split", each=True, random_state=0)
    assert split.units == ("g#1", "g#2") and any("split" in n for n in split.details["notes"])


@pytest.mark.parametrize("data, kwargs, match", [
    ("long", {"unit": "who"}, "unit column 'who' is not a column"),
    ({"u": list("abc")}, {}, "no state of the chain"),
    ({"u": ["a", None, "b"]}, {}, "has a gap"),
    ({"u": list("ababab")}, {}, "longer than the class's T = 5"),
    ({"u": [None, None]}, {}, "no observation"),
])
def test_bad_panels_are_refused_in_one_line_and_nothing_is_released(chain_class, data, kwargs, match):
    cal = puffgm.calibrate_query(chain_class, {"count": "a"}, epsilon=1.0, method="wasserstein")
    if data == "long":
        data = pd.DataFrame({"id": [1, 1], "s": ["a", "b"]})
    acc = PrivacyAccountant(budget=1.0)
    with pytest.raises(ParameterError, match=match) as err:
        puffgm.release(cal, data, **({"unit": True} | kwargs), accountant=acc)
    assert "\n" not in str(err.value)
    assert acc.entries == ()


def test_one_charge_for_every_unit_and_the_guarantee_names_independence(chain_class):
    mqm = puffgm.calibrate(chain_class, epsilon=0.5)
    acc = PrivacyAccountant(budget=1.0)
    rel = puffgm.release(mqm, PANEL, unit=True, each=True, query={"count": "a"}, accountant=acc, random_state=0)
    assert len(acc.entries) == 1 and acc.total == 0.5 and len(rel.releases) == 3
    assert "independent only under the prior" in rel.prior
    puffgm.release(mqm, PANEL, unit=True, query={"count": "a"}, accountant=acc, random_state=0)
    assert acc.total == 1.0   # Theorem 4.4 per unit: two MQM releases over the same quilt sets


def test_query_specific_panel_releases_compose_per_unit(chain_class):
    """Held alone on its units: disjoint unit sets compose in parallel, overlapping ones are refused."""
    cal = puffgm.calibrate_query(chain_class, {"count": "a"}, epsilon=0.5, method="optimal-laplace")
    acc = PrivacyAccountant(budget=1.0)
    first = {u: PANEL[u] for u in ("u1", "u2")}
    puffgm.release(cal, first, unit=True, each=True, accountant=acc, random_state=0)
    puffgm.release(cal, {"u3": PANEL["u3"]}, unit=True, accountant=acc, random_state=1)
    assert acc.total == 0.5 and len(acc.entries) == 2     # parallel composition: max over units
    with pytest.raises(CompositionError, match="on these units"):
        puffgm.release(cal, PANEL, unit=True, accountant=acc, random_state=2)
    assert len(acc.entries) == 2 and acc.total == 0.5     # nothing charged for the refused aggregate


def test_the_sqlite_ledger_keeps_a_panel_releases_unit_scope(chain_class, tmp_path):
    cal = puffgm.calibrate_query(chain_class, {"count": "a"}, epsilon=0.5, method="optimal-laplace")
    path = tmp_path / "panel.db"
    acc = PrivacyAccountant(budget=1.0, ledger=path)
    puffgm.release(cal, {u: PANEL[u] for u in ("u1", "u2")}, unit=True, accountant=acc, random_state=0)
    again = PrivacyAccountant(ledger=path)
    assert again.entries[0].units == frozenset({"u1", "u2"})
    puffgm.release(cal, {"u3": PANEL["u3"]}, unit=True, each=True, accountant=again, random_state=1)
    with pytest.raises(CompositionError):
        puffgm.release(cal, {"u2": PANEL["u2"]}, unit=True, accountant=again, random_state=2)
    assert again.total == 0.5


@pytest.mark.slow
def test_panel_example_runs_from_the_frame_to_a_published_table():
    import pathlib
    import subprocess
    import sys

    pytest.importorskip("statsmodels")
    root = pathlib.Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "examples" / "panel_release.py")], capture_output=True,
                          text=True, timeout=300, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "published table" in proc.stdout and "per firm" in proc.stdout and "respondents" in proc.stdout


def test_a_copied_calibration_releases_its_own_length_only(chain_class):
    import dataclasses

    cal = puffgm.calibrate_query(chain_class, {"count": "a"}, epsilon=1.0, method="wasserstein")
    copy = dataclasses.replace(cal)
    same = puffgm.release(copy, {"u": list("ababa"), "v": list("bbbba")}, unit=True, random_state=0)
    assert same.scales == (cal.scale,)
    with pytest.raises(ParameterError, match="does not carry how it was made") as err:
        puffgm.release(copy, PANEL, unit=True)
    assert "\n" not in str(err.value)


def test_a_panel_release_states_its_accuracy(chain_class):
    """The aggregate's rows are Laplace's at its scales; optimal noise gives its law's half-width over the total."""
    mqm = puffgm.calibrate(chain_class, epsilon=0.5)
    rel = puffgm.release(mqm, PANEL, unit=True, query={"count": "a"}, random_state=0)
    (row,) = rel.accuracy(0.05)
    assert row.scale == rel.scales[0] and abs(row.half_width - rel.scales[0] * np.log(20)) < 1e-12
    one = {u: PANEL[u] for u in ("u1", "u2")}
    cal = puffgm.calibrate_query(puffgm.ChainPriorClass.from_family([P1, P2], "stationary", 4, states=list(STATES)),
                                 {"count": "a"}, epsilon=0.5, method="optimal-noise")
    rel = puffgm.release(cal, {"u2": one["u2"]}, unit=True, relative=True, random_state=0)
    (row,) = rel.accuracy(0.1)
    (law_row,) = cal.accuracy(0.1)
    assert abs(row.half_width - law_row.half_width / 4) < 1e-12
    assert "noise_laws" not in rel.to_dict()
