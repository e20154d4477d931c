"""A prior kind declares its methods once and registers once (puffgm.api.kinds): the CLI's --method
choices and calibrate_many's validation and messages read them from the registry."""

import json
from dataclasses import dataclass

import pytest

import puffgm
from puffgm.api import as_prior
from puffgm.api.kinds import SavedForm, calibration_methods, prior_kinds, register_kind, saved_forms, unregister_kind
from puffgm.chains.kind import ChainBoxKind, MarkovChainKind
from puffgm.cli import build_parser
from puffgm.core.prior import QUERY_METHODS, PriorKind
from puffgm.exceptions import ParameterError, PriorError
from puffgm.gaussian.kind import LinearGaussianKind
from puffgm.networks.kind import BayesianNetworkKind


class ToyKind(PriorKind):
    """A new prior kind: its one method ``"toy"``, declared here and nowhere else."""

    kind = "toy priors"
    methods = {"toy": ("knob",)}

    def _calibrate(self, *, epsilon, lipschitz, method, options):
        return ("toy", epsilon, lipschitz, method, options)


@pytest.fixture
def toy():
    register_kind(ToyKind)
    try:
        yield ToyKind
    finally:
        unregister_kind(ToyKind)


@dataclass(frozen=True)
class ToyClass:
    """The toy kind's class: what its saved form writes and reads (a fingerprint and notes, as every class)."""

    weights: tuple
    notes: tuple = ()

    @property
    def fingerprint(self) -> str:
        return f"toy-{len(self.weights)}-{sum(self.weights)!r}"


def _toy_to_json(obj: ToyClass) -> dict:
    return {"weights": list(obj.weights)}


def _toy_from_json(data: dict, label: str) -> ToyClass:
    if not all(isinstance(w, float) for w in data["weights"]):
        raise PriorError(f"The 'weights' of {label} must be numbers.")
    return ToyClass(tuple(data["weights"]))


TOY_SAVED = SavedForm("toy", ToyClass, _toy_to_json, _toy_from_json)


def _parse(*argv):
    return build_parser().parse_args(["calibrate", "example:asia", "--epsilon", "1", *argv])


def test_the_built_in_kinds_are_registered_with_their_declared_methods():
    assert prior_kinds() == (BayesianNetworkKind, LinearGaussianKind, MarkovChainKind, ChainBoxKind)
    assert calibration_methods() == tuple(dict.fromkeys(m for k in prior_kinds() for m in k.methods))
    assert calibration_methods() == ("exact", "approx", "groupdp", "gk16")


def test_a_toy_kind_registered_once_appears_in_the_cli_and_calibrate_many(toy, capsys):
    assert "toy" in calibration_methods()
    assert _parse("--method", "toy").method == "toy"  # a --method choice
    with pytest.raises(SystemExit):
        _parse("--help")
    assert "toy" in capsys.readouterr().out
    out = puffgm.calibrate_many([ToyKind(None)], epsilon=2.0, method="toy", n_jobs=1, knob=3)
    assert out == [("toy", 2.0, 1.0, "toy", {"knob": 3})]
    with pytest.raises(ParameterError, match="'toy'"):  # the refusal names the registered methods
        puffgm.calibrate_many([ToyKind(None)], epsilon=1.0, method="nope")


def test_an_unregistered_method_is_refused_everywhere(capsys):
    assert "toy" not in calibration_methods()
    with pytest.raises(SystemExit) as exc:
        _parse("--method", "toy")
    assert exc.value.code == 2 and "invalid choice: 'toy'" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="must be one of .*'gk16'.* Got 'toy'"):
        puffgm.calibrate_many([ToyKind(None)], epsilon=1.0, method="toy")


def test_every_query_method_is_a_cli_choice():
    for method in QUERY_METHODS:
        assert _parse("--method", method).method == method


def test_a_toy_kind_registered_with_its_recogniser_is_reached_from_its_inputs(toy):
    """One registration also routes the kind's own inputs: as_prior, puffgm.calibrate and the mix refusal."""
    unregister_kind(ToyKind)
    register_kind(ToyKind, recognises=lambda item: isinstance(item, str) and item.startswith("toy:"))
    kind = as_prior("toy:one")
    assert type(kind) is ToyKind and kind.prior_class == "toy:one"
    assert puffgm.calibrate("toy:two", epsilon=1.0, method="toy") == ("toy", 1.0, 1.0, "toy", {})
    with pytest.raises(PriorError, match="mixes toy priors with other priors"):
        as_prior(["toy:one", "example:asia"])
    unregister_kind(ToyKind)
    assert type(as_prior("example:asia")) is BayesianNetworkKind


def test_a_kind_registered_without_a_saved_form_is_refused_by_save_prior(toy, tmp_path):
    with pytest.raises(PriorError, match="^Toy priors cannot be saved from a ToyClass: its registration"):
        puffgm.save_prior(ToyKind(ToyClass((0.5,))), tmp_path / "toy.json")
    assert not (tmp_path / "toy.json").exists()


def test_register_kind_refuses_what_is_not_a_kind():
    with pytest.raises(ParameterError, match="PriorKind subclass"):
        register_kind(object)


def test_a_toy_kind_registered_with_its_saved_form_round_trips_through_persist(tmp_path):
    """One registration (recogniser and to/from JSON pair): save_prior writes the envelope and the toy body,
    load_prior_class and every entry point read it back; persist.py names no kind."""
    register_kind(ToyKind, recognises=lambda item: isinstance(item, ToyClass), saved=TOY_SAVED)
    try:
        toy = ToyClass((0.1 + 0.2, 0.5), notes=("made by hand",))
        path = tmp_path / "toy.json"
        assert puffgm.save_prior(ToyKind(toy), path) == toy.fingerprint
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data == {"format": "puffgm-prior", "version": 1, "kind": "toy", "fingerprint": toy.fingerprint,
                        "notes": ["made by hand"], "weights": [0.1 + 0.2, 0.5]}
        assert puffgm.load_prior_class(path) == toy  # every bit, and the notes
        assert puffgm.calibrate(path, epsilon=1.0, method="toy") == ("toy", 1.0, 1.0, "toy", {})
        data["fingerprint"] = "toy-2-1.0"
        with pytest.raises(PriorError, match="fingerprint 'toy-2-1.0'"):
            puffgm.load_prior_class(data)
        with pytest.raises(ParameterError, match="'toy' is registered already"):
            register_kind("tests.somewhere:Other", saved=SavedForm("toy", ToyClass, _toy_to_json, _toy_from_json))
    finally:
        unregister_kind(ToyKind)
    with pytest.raises(PriorError, match=r"has the kind 'toy'; kinds: bayesian-network, linear-gaussian, "
                                         r"markov-chain, chain-box\.$"):
        puffgm.load_prior_class(path)
    assert [f.tag for f in saved_forms()] == ["bayesian-network", "linear-gaussian", "markov-chain", "chain-box"]


def test_persist_names_no_prior_kind():
    """persist.py writes the envelope and dispatches by tag: it imports no kind package and names no tag."""
    import ast
    import inspect

    import puffgm.api.persist as persist

    tree = ast.parse(inspect.getsource(persist))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and m.split(".")[1:2] in (["networks"], ["chains"], ["gaussian"])}
    code = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and n is not tree.body[0].value]
    assert not [c for c in code if c in {f.tag for f in saved_forms()}]
