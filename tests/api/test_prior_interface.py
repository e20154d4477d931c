"""One road for every prior kind: the PriorKind interface and its dispatch."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

import puffgm
from puffgm.api import as_prior, kind_of
from puffgm.chains import ChainParameterBox, ChainPriorClass, MQMApprox, MQMExact, gk16
from puffgm.chains.kind import ChainBoxKind, MarkovChainKind
from puffgm.core.prior import PriorKind
from puffgm.exceptions import NotApplicableError, ParameterError, PriorError, PuffgmError, WorkerError
from puffgm.gaussian.kind import LinearGaussianKind
from puffgm.networks.kind import BayesianNetworkKind

BOX = ChainParameterBox(p0=(0.2, 0.8), p1=(0.3, 0.7), initial="any", length=20)
CHAIN = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], [1, 0], 30)
GAUSS = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "gaussian_sensors.json")


def test_every_kind_is_recognised_and_implements_the_interface():
    assert kind_of("example:asia") is BayesianNetworkKind  # no network is loaded to classify
    assert kind_of(["example:asia", "example:asia"]) is BayesianNetworkKind
    assert kind_of(CHAIN) is MarkovChainKind and kind_of(CHAIN.members[0]) is MarkovChainKind
    assert kind_of(BOX) is ChainBoxKind
    assert kind_of(GAUSS) is LinearGaussianKind
    for prior in ("example:asia", CHAIN, BOX, GAUSS):
        kind = as_prior(prior)
        assert isinstance(kind, PriorKind) and as_prior(kind) is kind
        assert kind.name and kind.fingerprint and "exact" in kind.methods


def test_calibrate_takes_every_kind_and_matches_the_engines():
    assert puffgm.calibrate(CHAIN, epsilon=1.0).to_dict() == MQMExact(CHAIN).calibrate(epsilon=1.0).to_dict()
    assert puffgm.calibrate(BOX, epsilon=1.0, method="approx").to_dict() == \
        MQMApprox(BOX).calibrate(epsilon=1.0).to_dict()
    assert puffgm.calibrate(BOX, epsilon=1.0, method="gk16").to_dict() == gk16(BOX, epsilon=1.0).to_dict()
    assert puffgm.calibrate(BOX, epsilon=1.0).to_dict() == MQMExact(BOX).calibrate(epsilon=1.0).to_dict()
    gauss = puffgm.calibrate(GAUSS, epsilon=40.0, lipschitz=6.0)
    assert gauss.scale == pytest.approx(0.265447, rel=1e-5)


def test_options_a_kind_does_not_use_are_refused_never_dropped():
    with pytest.raises(ParameterError, match="max_quilt_states do not apply to method 'exact' of Markov-chain"):
        puffgm.calibrate(CHAIN, epsilon=1.0, max_quilt_states=5)
    with pytest.raises(ParameterError, match="max_quilt_states do not apply to method 'exact' of linear-Gaussian"):
        puffgm.calibrate(GAUSS, epsilon=40.0, max_quilt_states=5)
    with pytest.raises(ParameterError, match="paper_convention do not apply to method 'exact' of chain parameter"):
        puffgm.calibrate(BOX, epsilon=1.0, paper_convention=True)
    with pytest.raises(ParameterError, match="frobnicate do not apply to method 'exact' of Bayesian-network priors"):
        puffgm.calibrate("example:asia", epsilon=1.0, frobnicate=True)
    with pytest.raises(ParameterError, match="Method 'approx' does not apply to Bayesian-network priors"):
        puffgm.calibrate("example:asia", epsilon=1.0, method="approx")
    with pytest.raises(ParameterError, match="per_node do not apply to influence curves of Markov-chain"):
        puffgm.influence_curve(CHAIN, per_node=True)


def test_influence_curve_of_a_box_is_a_puffgm_error_naming_the_supported_kinds():
    with pytest.raises(NotApplicableError, match="not available for chain parameter boxes; they are for Bayesian "
                                                 "networks, Markov-chain classes and linear-Gaussian networks"):
        puffgm.influence_curve(BOX)
    assert puffgm.influence_curve(CHAIN, 5).a == MarkovChainKind(CHAIN).influence_curve(5).a


def test_translate_takes_a_prior_or_a_curve():
    curve = puffgm.influence_curve("example:asia")
    assert puffgm.translate("example:asia", epsilon=10.0) == puffgm.translate(curve, epsilon=10.0)
    with pytest.raises(ParameterError, match="max_b and curve options apply only to a prior class"):
        puffgm.translate(curve, epsilon=10.0, max_b=3)


def test_a_class_holds_one_kind():
    with pytest.raises(PriorError, match="mixes Markov chains with other priors"):
        as_prior([CHAIN, "example:asia"])
    with pytest.raises(PriorError, match="parameter box cannot be pooled"):
        as_prior([BOX, CHAIN])


def test_calibrate_many_takes_boxes_and_mixed_lists():
    items = [BOX, CHAIN, "example:asia"]
    got = puffgm.calibrate_many(items, epsilon=1.0, n_jobs=2, chunk_size=1)
    want = [puffgm.calibrate(p, epsilon=1.0) for p in items]
    assert [r.to_dict() for r in got] == [r.to_dict() for r in want]
    approx = puffgm.calibrate_many([BOX, CHAIN], epsilon=1.0, method="approx", n_jobs=1)
    assert [r.sigma_max for r in approx] == [MQMApprox(c).calibrate(epsilon=1.0).sigma_max for c in (BOX, CHAIN)]


def test_a_failure_in_a_worker_is_one_line_naming_the_prior():
    with pytest.raises(WorkerError) as err:  # the file is read on the worker, which reports the cause
        puffgm.calibrate_many([CHAIN, BOX, "no_such_file.bif"], epsilon=1.0, n_jobs=2, chunk_size=1)
    text = str(err.value)
    assert isinstance(err.value, PuffgmError) and len(text.splitlines()) == 1
    assert text.startswith("Calibrating prior 2 ('no_such_file.bif') failed: ") and "no_such_file.bif" in text[40:]


def test_cli_refuses_a_network_flag_on_a_chain_in_one_line(tmp_path):
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps({"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": [1, 0], "length": 30}))
    proc = subprocess.run([sys.executable, "-m", "puffgm", "calibrate", str(spec), "--epsilon", "1",
                           "--max-quilt-states", "8"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--max-quilt-states does not apply to Markov-chain priors" in lines[0]
