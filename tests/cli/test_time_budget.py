"""The default time budget of ``puffgm calibrate``: no plain run is open-ended."""

import json
import time

import pytest

import puffgm.cli.calibrate as cli_calibrate
from puffgm.exceptions import ParameterError


def _args(*argv):
    from puffgm.cli import build_parser

    return build_parser().parse_args(["calibrate", *argv])


def test_plain_network_and_chain_runs_get_the_default_budget(tmp_path):
    from puffgm.api import as_prior

    args = _args("example:asia", "--epsilon", "1")
    assert cli_calibrate._options(args, as_prior(["example:asia"]))["time_limit"] == cli_calibrate.DEFAULT_TIME_LIMIT
    assert cli_calibrate.DEFAULT_TIME_LIMIT == 120.0
    args = _args("example:asia", "--epsilon", "1", "--time-limit", "0")
    assert "time_limit" not in cli_calibrate._options(args, as_prior(["example:asia"]))  # 0: no limit
    args = _args("example:asia", "--epsilon", "1", "--time-limit", "7.5")
    assert cli_calibrate._options(args, as_prior(["example:asia"]))["time_limit"] == 7.5
    from record_golden import CHAINS

    (tmp_path / "chains.json").write_text(CHAINS)
    chain = as_prior(str(tmp_path / "chains.json"))
    for method in ("exact", "approx", "groupdp", "gk16"):  # every chain method takes the budget
        assert "time_limit" in chain.accepted_options(method)
        opts = cli_calibrate._options(_args("x.json", "--epsilon", "1", "--method", method), chain)
        assert opts["time_limit"] == cli_calibrate.DEFAULT_TIME_LIMIT
    assert "time_limit" not in cli_calibrate._options(_args("x.json", "--epsilon", "1", "--time-limit", "0"), chain)
    assert cli_calibrate._options(_args("x.json", "--epsilon", "1", "--time-limit", "3"), chain)["time_limit"] == 3.0


def test_query_methods_get_the_same_default_budget():
    from puffgm.api import as_prior

    prior = as_prior(["example:asia"])
    base = ("example:asia", "--epsilon", "1", "--method", "wasserstein", "--query", '{"count": 0}')
    assert cli_calibrate._query_options(_args(*base), prior)["time_limit"] == cli_calibrate.DEFAULT_TIME_LIMIT
    assert "time_limit" not in cli_calibrate._query_options(_args(*base, "--time-limit", "0"), prior)


def test_a_plain_run_on_a_network_too_slow_for_the_budget_refuses_within_it(cli, monkeypatch):
    # a tiny default budget stands for a network far too slow for 120 s: the plain command
    # answers within the budget (plus the fixed cost of loading), with one line naming the
    # projected time and the option that lifts the limit
    monkeypatch.setattr(cli_calibrate, "DEFAULT_TIME_LIMIT", 0.05)
    start = time.perf_counter()
    code, out, err = cli("calibrate", "example:hailfinder", "--epsilon", "1", "--quiet")
    assert time.perf_counter() - start < 10
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "time_limit=0.05 s" in err and "--time-limit SECONDS; 0: no limit" in err


def test_time_limit_zero_means_no_limit_and_a_negative_one_is_refused(cli):
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--json", "--time-limit", "0", "--quiet")
    code2, out2, _ = cli("calibrate", "example:asia", "--epsilon", "1", "--json", "--quiet")
    assert code == code2 == 0 and err == ""
    assert json.loads(out)["sigma_max"] == json.loads(out2)["sigma_max"]
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--time-limit", "-3")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "time_limit" in err and "0: no limit" in err and "-3" in err
    code, _, err = cli("calibrate", "example:asia", "--epsilon", "1", "--method", "wasserstein",
                       "--query", '{"count": 0}', "--time-limit", "-1")
    assert code == 2 and err.count("\n") == 1 and "0: no limit" in err


def test_python_time_limit_none_or_zero_is_no_limit():
    from puffgm import calibrate_query
    from puffgm.core.validation import check_time_limit
    from puffgm.networks.calibration import calibrate

    assert check_time_limit(None, "x") is None and check_time_limit(0, "x") is None
    assert check_time_limit(2, "x") == 2.0
    for bad in (-1, float("inf"), float("nan"), "10", True):
        with pytest.raises(ParameterError, match="time_limit"):
            check_time_limit(bad, "x")
    assert calibrate("example:asia", epsilon=1.0, time_limit=0).sigma_max == calibrate("example:asia", epsilon=1.0).sigma_max
    assert calibrate_query("example:asia", {"count": 0}, epsilon=1.0, time_limit=0).wasserstein == 5.0


def test_the_budget_note_reports_the_certified_gap_reached(monkeypatch):
    # the limit reached after every node search: a calibration with a note giving the gap
    from puffgm.exceptions import TimeLimitError
    from puffgm.networks.calibration import calibrate
    from puffgm.networks.quilt_scores import QuiltSearch

    def expired(self, node, epsilon, incumbent):
        raise TimeLimitError("Calibrating network 'hepar2' did not finish within time_limit=1 s.")

    monkeypatch.setattr(QuiltSearch, "refine_steps", expired)
    res = calibrate("example:hailfinder", epsilon=1.0, time_limit=600, progress=False)
    assert res.details["time_limit_reached"] is True
    gap = f"{res.sigma_max / res.sigma_lower_bound - 1:.1%}"
    assert any(f"certified gap reached: {gap}" in n and "0 for no limit" in n for n in res.notes)


def _chain(tmp_path, length, transition="[[0.9, 0.1], [0.4, 0.6]]", initial="[1, 0]"):
    path = tmp_path / f"chain_{len(str(length))}.json"
    path.write_text(f'{{"transition": {transition}, "initial": {initial}, "length": {length}}}')
    return str(path)


@pytest.mark.parametrize("length", [10**15, 10**18])
def test_a_fixed_start_chain_of_any_length_answers_within_the_budget(cli, tmp_path, length):
    start = time.perf_counter()
    code, out, err = cli("calibrate", _chain(tmp_path, length), "--epsilon", "1", "--json", "--time-limit", "2")
    assert time.perf_counter() - start < 2 + 5
    assert code == 0, err
    assert json.loads(out)["sigma_max"] == pytest.approx(12.934051086186495, rel=1e-12)


@pytest.mark.parametrize("argv", [
    ("--method", "wasserstein", "--query", '{"count": 0}'),
    ("--method", "optimal-laplace", "--query", '{"count": 0}'),
    ("--method", "optimal-noise", "--query", '{"count": 0}'),
])
@pytest.mark.parametrize("length", [10**5, 10**6])
def test_query_methods_on_long_chains_refuse_within_the_budget(cli, tmp_path, argv, length):
    start = time.perf_counter()
    code, out, err = cli("calibrate", _chain(tmp_path, length), "--epsilon", "1", "--time-limit", "1", *argv)
    assert time.perf_counter() - start < 1 + 5
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "would take about" in err and "over the time limit of 1 s" in err and "0: no limit" in err


def test_chain_refusals_are_one_line_with_and_without_a_limit(cli, tmp_path):
    periodic = _chain(tmp_path, 10**18, transition="[[0, 1], [1, 0]]", initial='"any"')
    start = time.perf_counter()
    code, out, err = cli("calibrate", periodic, "--epsilon", "1", "--time-limit", "1")
    assert time.perf_counter() - start < 1 + 5
    assert code == 2 and err.count("\n") == 1 and "over the time limit of 1 s" in err
    # no limit: the query's laws at T = 10**18 are refused on their projected memory, before any work
    code, out, err = cli("calibrate", _chain(tmp_path, 10**18), "--epsilon", "1", "--time-limit", "0",
                         "--method", "wasserstein", "--query", '{"count": 0}')
    assert code == 2 and err.count("\n") == 1 and "GiB of memory" in err
    code, out, err = cli("calibrate", _chain(tmp_path, 10**19), "--epsilon", "1", "--method", "gk16")
    assert code == 2 and err.count("\n") == 1 and "above 10**18" in err
