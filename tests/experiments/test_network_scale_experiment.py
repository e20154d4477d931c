"""The scale-table experiment (docs/results.md, docs/scale.md) in quick mode, and its rows."""

from puffgm.experiments import network_scale


def test_quick_scale_table_calibrates_asia_through_the_cli(tmp_path):
    seen = []
    section = network_scale.run(tmp_path, quick=True, progress=lambda d, t: seen.append((d, t)))
    assert section.startswith(f"## {network_scale.TITLE}")
    assert "| asia | 8 | 8 | 3 / 8 |" in section and "| calibrated | 8.000 | 8.000 | 0 (optimal) | 8 | x1.000 |" in section
    assert seen == [(1, 1)]


def test_rows_say_a_refusal_and_a_budget_cut():
    size = {"nodes": 3, "edges": 2, "largest_clique_vars": 2, "largest_clique_states": 4}
    refused = {"name": "n1", **size, "cli": {"wall_s": 2.0, "outcome": "refused",
                                            "refusal": "puffgm: error: Calibrating network 'n1' would take about 900 s."}}
    cut = {"name": "n2", **size, "cli": {"wall_s": 120.4, "outcome": "calibrated", "sigma_max": 3.0,
                                        "sigma_lower_bound": 2.0, "optimality_gap": 0.5, "groupdp_sigma": 3.0,
                                        "gain": 1.0, "time_limit_reached": True}}
    table = network_scale.markdown([refused, cut])
    assert "| 2.0 s | refused: Calibrating network 'n1' would take about 900 s. |" in table
    assert "| 120.4 s | calibrated (budget reached) | 3.000 | 2.000 | 50.0% | 3 | x1.000 |" in table
