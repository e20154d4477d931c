"""What the ``puffgm`` command does with bad input and with its own bugs (issue 44, item 5).

Bad input (a puffgm error, an unreadable file, a malformed CSV) is one line on stderr and exit
code 2; a bug (TypeError, AttributeError, IndexError ...) is one line "internal error ...
(please report ...)" and exit code 1, with the traceback behind ``--debug`` or ``PUFFGM_DEBUG=1``,
also when the error is raised inside a joblib worker process.  A blank line or an empty cell of
a chain CSV is a gap at its position, refused, never dropped.
"""

import json

import pytest

import puffgm.cli.ledger as ledger_cli

CHAIN = {"transition": [[0.9, 0.1], [0.3, 0.7]], "initial": "stationary", "length": 4}
SPEC = {"nodes": ["A", "B"], "states": {"A": [0, 1], "B": [0, 1]}, "priors": [{"table": [[0.4, 0.1], [0.1, 0.4]]}],
        "pairs": [[{"node": "A", "value": 0}, {"node": "A", "value": 1}]]}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _raising(exc):
    def run(args):
        raise exc

    return run


@pytest.mark.parametrize("exc", [TypeError("unsupported operand"), AttributeError("'str' object has no 'get'"),
                                 IndexError("list index out of range"), KeyError("x"), ValueError("plain")])
def test_a_bug_is_an_internal_error_exit_1(cli, monkeypatch, tmp_path, exc):
    monkeypatch.setattr(ledger_cli, "run", _raising(exc))
    monkeypatch.delenv("PUFFGM_DEBUG", raising=False)
    code, out, err = cli("ledger", "show", tmp_path / "x.db")
    line = _one_line(err)
    assert code == 1 and line.startswith(f"puffgm: internal error: {type(exc).__name__}: ")
    assert line.endswith("(please report; rerun with --debug for the traceback)")


@pytest.mark.parametrize("exc, line", [
    (__import__("csv").Error("field larger than field limit (131072)"), "a CSV file cannot be read: field larger"),
    (__import__("sqlite3").OperationalError("database is locked"), "a SQLite file cannot be used: database is"),
    (FileNotFoundError(2, "No such file or directory", "x.json"), "cannot read 'x.json': No such file"),
])
def test_unconverted_csv_sqlite_and_file_errors_are_still_input_errors(cli, monkeypatch, tmp_path, exc, line):
    monkeypatch.setattr(ledger_cli, "run", _raising(exc))
    code, out, err = cli("ledger", "show", tmp_path / "x.db")
    assert code == 2 and _one_line(err).startswith("puffgm: error: " + line)


def test_debug_shows_the_traceback(cli, monkeypatch, tmp_path):
    monkeypatch.setattr(ledger_cli, "run", _raising(TypeError("boom")))
    code, out, err = cli("ledger", "show", tmp_path / "x.db", "--debug")  # anywhere on the line
    assert code == 1 and "Traceback (most recent call last)" in err and "TypeError: boom" in err
    code, out, err = cli("--debug", "ledger", "show", tmp_path / "x.db")
    assert code == 1 and "Traceback (most recent call last)" in err and "TypeError: boom" in err
    monkeypatch.setenv("PUFFGM_DEBUG", "1")
    code, out, err = cli("ledger", "show", tmp_path / "x.db")
    assert code == 1 and "Traceback (most recent call last)" in err


def _in_workers(exc_factory):
    """A subcommand whose work raises inside joblib worker processes."""
    def run(args):
        from joblib import Parallel, delayed

        Parallel(n_jobs=2)(delayed(exc_factory)(k) for k in range(2))

    return run


def test_errors_inside_joblib_workers_are_one_line(cli, monkeypatch, tmp_path):
    import operator

    from puffgm.core.validation import check_positive_finite

    monkeypatch.setattr(ledger_cli, "run", _in_workers(lambda k: check_positive_finite(-1, "epsilon", "worker")))
    code, out, err = cli("ledger", "show", tmp_path / "x.db")
    assert code == 2 and _one_line(err) == ("puffgm: error: The 'epsilon' parameter of worker must be a finite "
                                             "number > 0. Got -1 instead.")
    monkeypatch.setattr(ledger_cli, "run", _in_workers(lambda k: operator.add(k, "a")))
    code, out, err = cli("ledger", "show", tmp_path / "x.db")
    assert code == 1 and _one_line(err).startswith("puffgm: internal error: TypeError: unsupported operand")


@pytest.mark.parametrize("mechanism, match", [
    ("laplace", "'mechanism' must be an object"),
    ({"type": "finite"}, "needs 'table'"),
    ({"type": "finite", "table": [[1, 2], [3]]}, "list of numbers of one shape"),
    ({"type": "exponential"}, "needs 'utility'"),
    ({"type": []}, "'type' must be"),
])
def test_malformed_audit_specs_are_input_errors(cli, tmp_path, mechanism, match):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(dict(SPEC, mechanism=mechanism)))
    code, out, err = cli("audit", path)
    assert code == 2 and match in _one_line(err)


@pytest.mark.parametrize("key, value, match", [
    ("nodes", 5, "'nodes' must be a list"), ("states", {"A": 5, "B": [0, 1]}, "'states' must be"),
    ("states", {"A": [0, {}], "B": [0, 1]}, "'states' must be"), ("priors", [{"table": "x"}], "numbers"),
    ("priors", [{"network": 5}], "'network' must be"),
    ("pairs", [[{"node": "A", "in": 5}, {"node": "A", "value": 1}]], "list of states under 'in'"),
])
def test_malformed_audit_instantiations_are_input_errors(cli, tmp_path, key, value, match):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(dict(SPEC, mechanism={"type": "laplace", "scale": 1.0}, **{key: value})))
    code, out, err = cli("audit", path)
    assert code == 2 and match in _one_line(err)


# ------------------------------------------------------------------------------------------ chain CSV


@pytest.fixture
def chain(tmp_path):
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(CHAIN))
    return path


def _release(cli, chain, data):
    return cli("release", chain, "--data", data, "--query", '{"count": "1"}', "--method", "wasserstein",
               "--epsilon", "1", "--seed", "0", "--json")


@pytest.mark.parametrize("text, node", [
    ("state\n0\n\n1\n1\n", "X2"),      # a blank line: X2 is a gap, and X3, X4 stay where they are
    ("state\n0\n1\n \n1\n", "X3"),     # a line of spaces
    ('state\n0\n1\n1\n""\n', "X4"),    # an empty quoted cell
])
def test_a_blank_line_in_a_chain_csv_is_a_gap_refused(cli, chain, tmp_path, text, node):
    data = tmp_path / "trace.csv"
    data.write_text(text)
    code, out, err = _release(cli, chain, data)
    assert code == 2 and out == "" and f"no value for node {node!r} (a gap)" in _one_line(err)


def test_blank_lines_around_the_data_move_nothing(cli, chain, tmp_path):
    plain, padded = tmp_path / "plain.csv", tmp_path / "padded.csv"
    plain.write_text("state\n0\n1\n1\n0\n")
    padded.write_text("\nstate\n0\n1\n1\n0\n\n\n")
    a, b = _release(cli, chain, plain), _release(cli, chain, padded)
    assert a[0] == b[0] == 0 and json.loads(a[1])["value"] == json.loads(b[1])["value"]


def test_a_field_longer_than_the_csv_default_limit_is_read(cli, chain, tmp_path):
    data = tmp_path / "long.csv"
    data.write_text("state\n0\n1\n" + "1" * 200_000 + "\n0\n")
    code, out, err = _release(cli, chain, data)
    assert code == 2 and "has no state '" in _one_line(err) and "_csv" not in err


def test_malformed_csv_is_one_line(cli, chain, tmp_path):
    data = tmp_path / "quote.csv"
    data.write_text('state\n0\n"1"x\n1\n0\n')
    code, out, err = _release(cli, chain, data)
    assert code == 2 and "is not CSV that puffgm reads (line 3" in _one_line(err)
