"""Benchmark: tables of statistics (workloads) released together, calibrated by their exact joint laws.

Prints one JSON object.  Every case runs in a fresh interpreter (so ``wall_s`` includes
importing puffgm and reading the prior) and calls :func:`puffgm.calibrate_workload` at
``--epsilon`` with the default limits (``max_joint_length`` 2^18 = 262144 cells; on networks a
clique times the grid's cells up to ``max_table_entries`` 2^26; the chains' exact laws up to length 600):

* ``networks``: k counts of each node's first state (``{"count": 0, "nodes": part}``) over
  the k disjoint, contiguous parts of the network's node order (halves, thirds): asia,
  child and alarm with k = 2 and 3; insurance, hailfinder, win95pts and hepar2 with k = 2;
* ``chain``: the 3-state histogram (one count per state over every position) of a chain of
  length 30 fitted to statsmodels' monthly El Nino sea-surface temperatures (732 months,
  3 equal-width bins, stationary start, smoothing tau = 1e-5);
* ``k_growth``: alarm with k = 1, 2, 3, 4, 5 counts over the k parts of its node order;
* ``chain_growth``: the chain's 3-state histogram against its length T = 10, 20, 30, 40, 50, 60
  (``max_joint_length`` raised to 2^20 cells, so that the version before the grid, whose default
  stops at 65536 cells, runs the same cases);
* ``axis_growth``: alarm, two counts over the first m and the next m nodes (axis m + 1 each),
  m = 4, 9, 14, 18; and the chain's 3-state histogram at lengths 10, 20, 30 (axes T + 1);
* ``limits``: where the limits stop a workload: a 3-state histogram at T = 64 and a 4-state
  one at T = 30 (max_joint_length), two counts on a chain of length 700 (the exact laws of
  chains stop at 600), two counts on pathfinder and andes and four counts on hepar2 (the
  networks' table limit: a clique of the junction tree times the grid's cells).

Each row has the wall time, the calibration's own seconds, the joint law's shape, the
joint scales and their exact loss, the MQM scale, group DP, each statistic's own optimal
scale (calibrated alone: not a valid release of the table), the totals of expected
absolute error and the ratio MQM / joint (totals).  A refused case has ``refused`` (the
one-line message) and the seconds it took to refuse.

``--before PATH`` runs every case twice, interleaved (PATH's version, then this checkout's, each
in a fresh interpreter with its own PYTHONPATH), and adds to each case ``before``, ``after``,
the ratios before / after of the exact laws' seconds, of the scale search's and of the whole
calibration's (wall clock and CPU seconds of the process), and the largest relative difference of
the joint scales (the machine may be shared: the ratios, measured a few seconds apart, and the CPU
seconds, which a busy machine changes much less than the wall clock, are the figures to quote), and
``scales_agree`` (every joint scale within a relative 1e-9 of the before version's).

``--reference JSON`` compares each case with the same case of an earlier output of this script
(bench/data/workload.json holds one, with the before-the-grid version's scales where it ran):
``reference_scales`` (the recorded version's before scales where recorded, else its own),
``scales_max_rel_diff`` and ``scales_agree`` (within 1e-9), without rerunning that version.

Targets (2-core machine): asia, child and alarm in seconds; insurance, hailfinder,
win95pts and hepar2 within two minutes each; the chain histogram within a minute; alarm with
k = 3 within 1 s and k = 4 within 5 s (the calibration's seconds, quiet machine).

Usage: python3 bench/workload.py [--epsilon 1] [--timeout 900] [--before PATH] [--reference JSON] [SECTION ...]
       (sections: networks chain k_growth chain_growth axis_growth limits; default all but chain_growth)
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

SECTIONS = ("networks", "chain", "k_growth", "chain_growth", "axis_growth", "limits")
DEFAULT_SECTIONS = ("networks", "chain", "k_growth", "axis_growth", "limits")
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, sys, time
t0 = time.monotonic()
import numpy as np
import puffgm
from puffgm.api import as_prior
from puffgm.exceptions import PuffgmError, first_line
case, eps = json.loads(sys.argv[1]), float(sys.argv[2])
if case["prior"] == "chain":
    import statsmodels.api as sm
    from puffgm.chains import ChainPriorClass
    from puffgm.chains.data import discretise
    d = sm.datasets.elnino.load_pandas().data.drop(columns="YEAR").to_numpy(float).ravel()
    k = case["states"]
    kind = as_prior(ChainPriorClass.fit(discretise(d, k).tolist(), length=case["length"], states=list(range(k)),
                                        initial="stationary"))
else:
    kind = as_prior(f"example:{case['prior']}")
try:
    nodes = [str(n) for n in kind.query_domain()[0]]
except PuffgmError as exc:
    print(json.dumps({"refused": first_line(exc), "refused_after_s": round(time.monotonic() - t0, 3)}))
    raise SystemExit(0)
if "histogram" in case:
    workload = {"histogram": {}}
else:
    parts, size = case["parts"], case.get("part_size")
    size = size or len(nodes) // parts
    cut = [nodes[i * size:(i + 1) * size] for i in range(parts)]
    if not case.get("part_size"):
        cut[-1] = nodes[(parts - 1) * size:]
    workload = [{"count": 0, "nodes": c, "name": f"part {i + 1}"} for i, c in enumerate(cut)]
t1 = time.monotonic()
row = {"n_nodes": len(nodes), "load_s": round(t1 - t0, 3), "puffgm": puffgm.__file__}
if "histogram" not in case:
    row["part_sizes"] = [len(q["nodes"]) for q in workload]
try:
    limits = {key: case[key] for key in ("max_joint_length",) if key in case}
    c1 = time.process_time()
    cal = puffgm.calibrate_workload(kind, workload, epsilon=eps, time_limit=case.get("time_limit"), **limits)
    row["calibrate_cpu_s"] = round(time.process_time() - c1, 3)
except PuffgmError as exc:
    row.update(refused=first_line(exc), refused_after_s=round(time.monotonic() - t1, 3),
               wall_s=round(time.monotonic() - t0, 3))
    print(json.dumps(row))
    raise SystemExit(0)
t2 = time.monotonic()
cmp = cal.comparison()
joint = cmp["joint"]["total"]
mqm = None if cmp["mqm"] is None else cmp["mqm"]["total"]
row.update({
    "wall_s": round(t2 - t0, 3), "calibrate_s": round(t2 - t1, 3), "seconds": cal.seconds,
    "k": cal.k, "names": list(cal.names), "dims": [int(round((q["max_value"] - q["min_value"]) * q["unit"])) + 1
             for q in cal.workload["queries"]],
    "joint_cells": cal.workload["joint_cells"], "lipschitz_l1": cal.workload["lipschitz_l1"],
    "n_pairs": cal.n_pairs, "evaluations": cal.evaluations,
    "joint_scales": list(cal.scales), "loss": cal.loss, "mqm_scale": cal.mqm_scale,
    "group_dp_scale": cal.group_dp_scale, "single_scales": list(cal.single_scales or ()),
    "total_joint": joint, "total_mqm": mqm, "total_group_dp": cmp["group_dp"]["total"],
    "total_single_not_valid": None if cmp["single"] is None else cmp["single"]["total"],
    "ratio_mqm_over_joint": None if mqm is None or not joint else mqm / joint,
    "ratio_group_dp_over_joint": None if not joint else cmp["group_dp"]["total"] / joint,
    "witness": None if cal.witness is None else cal.witness.to_dict(), "notes": list(cal.notes),
})
print(json.dumps(row))
"""


def cases(section: str) -> list:
    """(label, case) pairs of a section."""
    if section == "networks":
        out = [(f"{n}_k{k}", {"prior": n, "parts": k}) for n in ("asia", "child", "alarm") for k in (2, 3)]
        return out + [(f"{n}_k2", {"prior": n, "parts": 2}) for n in ("insurance", "hailfinder", "win95pts", "hepar2")]
    if section == "chain":
        return [("elnino_3states_T30", {"prior": "chain", "states": 3, "length": 30, "histogram": True})]
    if section == "k_growth":
        return [(f"alarm_k{k}", {"prior": "alarm", "parts": k}) for k in (1, 2, 3, 4, 5)]
    if section == "chain_growth":
        return [(f"elnino_3states_T{t}", {"prior": "chain", "states": 3, "length": t, "histogram": True,
                                          "max_joint_length": 1 << 20}) for t in (10, 20, 30, 40, 50, 60)]
    if section == "axis_growth":
        out = [(f"alarm_2x{m}", {"prior": "alarm", "parts": 2, "part_size": m}) for m in (4, 9, 14, 18)]
        return out + [(f"elnino_3states_T{t}", {"prior": "chain", "states": 3, "length": t, "histogram": True})
                      for t in (10, 20, 30)]
    if section == "limits":
        return [("elnino_3states_T64", {"prior": "chain", "states": 3, "length": 64, "histogram": True}),
                ("elnino_4states_T30", {"prior": "chain", "states": 4, "length": 30, "histogram": True}),
                ("elnino_2states_T700_2x5", {"prior": "chain", "states": 2, "length": 700, "parts": 2,
                                             "part_size": 5}),
                ("pathfinder_k2", {"prior": "pathfinder", "parts": 2, "time_limit": 300}),
                ("andes_k2", {"prior": "andes", "parts": 2, "time_limit": 300}),
                ("hepar2_k4", {"prior": "hepar2", "parts": 4})]
    raise SystemExit(f"unknown section {section!r}; choose from {', '.join(SECTIONS)}")


def run(case: dict, eps: float, timeout: float, path: str | None = None) -> dict:
    """One case in a fresh interpreter (with ``PYTHONPATH=path`` when given)."""
    t0, load = time.monotonic(), os.getloadavg()[0]
    args = [sys.executable, "-c", _CHILD, json.dumps(case), str(eps)]
    # with ``-c`` the working directory comes first on sys.path: run in ``path`` so that its version is imported
    env = None if path is None else {**os.environ, "PYTHONPATH": path}
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, cwd=path)
    except subprocess.TimeoutExpired:
        return {"case": case, "load": load, "refused": f"no answer within the bench's timeout of {timeout:g} s"}
    if out.returncode != 0:
        return {"case": case, "load": load, "error": (out.stderr.strip().splitlines() or ["?"])[-1],
                "wall_s": round(time.monotonic() - t0, 3)}
    return {"case": case, "load": load, **json.loads(out.stdout)}


def before_after(case: dict, eps: float, timeout: float, before: str) -> dict:
    """The case under ``before``'s version, then under this checkout's, and their ratios."""
    load = os.getloadavg()[0]
    old = run(case, eps, timeout, before)
    new = run(case, eps, timeout, HERE)
    row = {"case": case, "load_average_at_start": load, "before": old, "after": new}
    so, sn = old.get("seconds") or {}, new.get("seconds") or {}
    for key, a, b in (("laws", so.get("laws"), sn.get("laws")),
                      ("joint_scale", so.get("joint_scale"), sn.get("joint_scale")),
                      ("calibrate", old.get("calibrate_s"), new.get("calibrate_s")),
                      ("calibrate_cpu", old.get("calibrate_cpu_s"), new.get("calibrate_cpu_s"))):
        row[f"ratio_{key}"] = round(a / b, 2) if a and b else None
    row.update(compare_scales(old.get("joint_scales"), new.get("joint_scales")))
    return row


#: Two versions' joint scales agree when every one is within this relative difference.
SCALE_RTOL = 1e-9


def compare_scales(reference, scales) -> dict:
    """``scales_max_rel_diff`` and ``scales_agree`` (within :data:`SCALE_RTOL`) of two lists of joint scales."""
    if not reference or not scales:
        return {}
    if len(reference) != len(scales):
        return {"scales_agree": False}
    diff = max(abs(x - y) / abs(x) for x, y in zip(reference, scales, strict=True))
    return {"scales_max_rel_diff": diff, "scales_agree": diff <= SCALE_RTOL}


def reference_scales(path: str) -> list:
    """(case, joint scales) of every case of an earlier output: the before version's scales where it ran."""
    with open(path) as f:
        recorded = json.load(f)["results"]
    out = []
    for rows in recorded.values():
        for row in rows.values():
            before, after = row.get("before") or {}, row.get("after", row)
            scales = before.get("joint_scales") or after.get("joint_scales")
            if scales:
                out.append((row["case"], scales))
    return out


def against(row: dict, reference: list) -> dict:
    """The row with its case's recorded scales and their agreement (unchanged when the case was not recorded)."""
    scales = row.get("after", row).get("joint_scales")
    for case, ref in reference:
        if case == row["case"]:
            return {**row, "reference_scales": ref, **compare_scales(ref, scales)}
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per case before it is stopped")
    p.add_argument("--before", metavar="PATH", help="a checkout of the version to compare with, run interleaved")
    p.add_argument("--reference", metavar="JSON", help="an earlier output of this script to compare the scales with")
    p.add_argument("sections", nargs="*", default=list(DEFAULT_SECTIONS))
    args = p.parse_args(argv)
    reference = [] if args.reference is None else reference_scales(args.reference)
    results = {}
    for section in args.sections:
        results[section] = {}
        for label, case in cases(section):
            print(f"[bench/workload] {section}: {label}", file=sys.stderr, flush=True)
            row = (run(case, args.epsilon, args.timeout) if args.before is None
                   else before_after(case, args.epsilon, args.timeout, args.before))
            results[section][label] = against(row, reference)
    command = "python3 bench/workload.py" + (f" --before {args.before}" if args.before else "") + (
        f" --reference {args.reference}" if args.reference else "")
    print(json.dumps({"epsilon": args.epsilon, "command": " ".join([command] + args.sections),
                      "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                  "python": platform.python_version(), "load_average": os.getloadavg(),
                                  "note": "2-core Linux, shared with other jobs: times are indicative"},
                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
