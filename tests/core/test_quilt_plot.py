"""Quilt pictures: ``CalibrationResult.plot`` and ``puffgm calibrate --plot`` for networks and chains."""

import dataclasses
import json
import pickle
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

import puffgm  # noqa: E402
from puffgm.core.plot import COLOURS  # noqa: E402
from puffgm.exceptions import ParameterError  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
CHAIN = {"transition": [[0.6, 0.4], [0.4, 0.6]], "initial": "stationary", "length": 200}


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts if t.get_text()]  # not the arcs (empty annotations)


def _chain(length=200):
    from puffgm.chains.priors import ChainPriorClass

    return ChainPriorClass.from_matrices(CHAIN["transition"], initial="stationary", length=length)


def _legend(fig):
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def test_cli_plot_network_writes_png(cli, tmp_path):
    out_png = tmp_path / "q.png"
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--plot", out_png)
    assert code == 0, err
    assert out_png.read_bytes()[:8] == PNG and f"quilt picture saved to {out_png}" in out
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "3", "--plot", out_png, "--json")
    assert code == 0 and json.loads(out)["worst_node"] == "either"  # --json stays one JSON object


def test_cli_plot_chain_writes_png(cli, tmp_path):
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps(CHAIN))
    for method in ("exact", "approx"):
        out_png = tmp_path / f"{method}.png"
        code, out, err = cli("calibrate", spec, "--epsilon", "1", "--method", method, "--plot", out_png)
        assert code == 0, err
        assert out_png.read_bytes()[:8] == PNG


def test_network_picture_has_every_node_the_sets_and_the_legend():
    r = puffgm.calibrate("example:asia", epsilon=3.0)
    fig = r.plot()
    texts = _texts(fig)
    assert sorted(texts) == sorted(["asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp"])
    colour = {t.get_text(): t.get_bbox_patch().get_facecolor() for t in fig.axes[0].texts if t.get_text()}
    from matplotlib.colors import to_rgba

    assert colour[r.worst.node] == to_rgba(COLOURS["worst"])
    assert all(colour[q] == to_rgba(COLOURS["quilt"]) for q in r.worst.quilt) and r.worst.quilt
    assert all(colour[n] == to_rgba(COLOURS["nearby"]) for n in r.worst.nearby if n != r.worst.node)
    legend = " | ".join(_legend(fig))
    assert f"worst node {r.worst.node}" in legend
    assert f"max-influence {r.worst.max_influence:.4g}" in legend and f"score {r.worst.score:.4g}" in legend
    assert f"remote X_R ({r.worst.n_remote})" in legend
    assert len([t for t in fig.axes[0].texts if not t.get_text()]) == 8  # the arcs of asia
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_chain_picture_shortens_long_runs():
    r = puffgm.calibrate(_chain(100000), epsilon=1.0)
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    fig = r.plot(ax=ax)  # draws into the given axes
    assert fig is ax.figure
    texts = _texts(fig)
    assert "X1" in texts and "X100000" in texts and r.worst.node in texts
    assert all(q in texts for q in r.worst.quilt)
    gaps = [t for t in texts if t.startswith("...")]
    assert gaps and len(texts) < 30
    # every position is counted: shown boxes plus the gaps' counts make T
    shown = sum(1 for t in texts if t.startswith("X"))
    assert shown + sum(int(t.split()[1]) for t in gaps) == 100000
    assert f"remote X_R ({r.worst.n_remote})" in " ".join(_legend(fig))


def test_results_without_a_graph_take_one(tmp_path, asia):
    from puffgm.networks.calibration import calibrate

    low = calibrate(asia, epsilon=3.0)  # the engine records the DAG itself, on the low-level road too
    assert low.graph is not None and low.graph.kind == "dag" and set(low.graph.edges) == set(asia.dag.edges)
    r = dataclasses.replace(low, graph=None)  # a result that carries no graph (built by hand)
    with pytest.raises(ParameterError, match="graph="):
        r.plot()
    for graph in (asia, asia.dag, list(asia.dag.edges)):
        fig = r.plot(tmp_path / "a.png", graph=graph)
        assert (tmp_path / "a.png").read_bytes()[:8] == PNG and len(_texts(fig)) == 8
    # the graph travels with pickled results and does not change equality
    full = puffgm.calibrate(asia, epsilon=3.0)
    back = pickle.loads(pickle.dumps(full))
    assert back.graph == full.graph == low.graph and back.graph.kind == "dag" and full == r
    assert "graph" not in full.to_dict()


def test_plot_refusals(cli, tmp_path, monkeypatch):
    r = puffgm.calibrate(_chain(), epsilon=1.0, method="groupdp")
    with pytest.raises(ParameterError, match="no quilt"):
        r.plot()
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps(CHAIN))
    for argv in (("--method", "groupdp"), ("--method", "wasserstein", "--query", '{"count": 1}')):
        code, out, err = cli("calibrate", spec, "--epsilon", "1", *argv, "--plot", tmp_path / "x.png")
        assert code == 2 and len(err.splitlines()) == 1 and "--plot" in err
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--plot", tmp_path / "no" / "dir" / "x.png")
    assert code == 2 and len(err.splitlines()) == 1 and "Could not save the quilt picture" in err
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    code, out, err = cli("calibrate", spec, "--epsilon", "1", "--plot", tmp_path / "x.png")
    assert code == 2 and "pip install 'puffgm[plot]'" in err and len(err.splitlines()) == 1
    with pytest.raises(ParameterError, match="matplotlib"):
        puffgm.calibrate(_chain(), epsilon=1.0).plot()


def test_help_and_chain_calibration_do_not_import_matplotlib(tmp_path):
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps(CHAIN))
    code = ("import sys; from puffgm.cli import main; main(['calibrate', sys.argv[1], '--epsilon', '1']); "
            "print('matplotlib' in sys.modules, 'pgmpy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "False False", proc.stderr
