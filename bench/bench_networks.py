"""Benchmark: full MQM calibration of the bundled bnlearn networks, before and after.

Prints one JSON object.  For every network, every node protected, at ``--epsilon``:

* **after**: the working tree's ``puffgm.calibrate``;
* **before**: today's algorithm as of the baseline commit (``--baseline``, default
  a3d16ce), extracted with ``git archive BASELINE puffgm | tar -x -C TMPDIR`` and run
  with ``PYTHONPATH=TMPDIR``; only for the networks in ``--before`` (the baseline
  needs minutes or more on the larger ones, which are listed with a note instead).

Each run is a fresh interpreter (``subprocess``), so the figures include every
import and the parsing of the bundled file, as a user of ``puffgm calibrate
example:NAME`` experiences it; ``calibrate_s`` is the wall time of the calibration
alone and ``calibrate_cpu_s`` its CPU time (steadier on a shared machine).  Peak
memory is the child's ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (the whole
interpreter, numpy included) and its growth during calibration.  ``speedup`` is
before / after of the best (smallest) ``calibrate_s`` over ``--repeat`` runs, and
``speedup_cpu`` the same for CPU time, both from the same run of this script.
``sigma_lower_bound`` and ``optimality_gap`` are read with ``res.to_dict().get``
(None where the calibration does not report them).  A network the calibration
refuses (for example because exact inference exceeds ``max_table_entries``) gets
the one-sentence message under ``refused``.

Targets (2-core machine): alarm >= 10x faster than before (< 0.2 s of
calibration on a quiet machine), hailfinder and win95pts < 1 s; with the routing of
exact inference by cost (issue 45), andes complete (no time-limit stop) within 45 s,
pigs within 30 s and munin with no time limit within 600 s.  On a shared machine
quote the ratios of one interleaved run (``speedup_cpu`` is the steadier) and the
load averages it prints.

``sigma_rel_diff`` is |sigma_max before - after| / sigma_max before, and
``same_worst_quilt`` whether the worst node's quilt is the same.

The after runs get ``time_limit=--time-limit`` (default 600 s): a network whose
projected calibration time exceeds it is refused early with calibrate's one-sentence
TimeLimitError (under ``refused``), instead of running for hours.

Usage: python3 bench/bench_networks.py [--epsilon 1] [--repeat 1] [--timeout 900] [--time-limit 600]
                                       [--before alarm,hailfinder,...] [--baseline COMMIT]
                                       [--before-time-limit S] [--n-jobs N] [NAME ...]
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NETWORKS = ["alarm", "hailfinder", "win95pts", "hepar2", "pathfinder", "andes", "pigs", "munin"]
BEFORE = ["alarm", "hailfinder", "win95pts", "hepar2"]

CHILD = r"""
import inspect, json, resource, sys, time
t0 = time.perf_counter()
from puffgm.networks.calibration import calibrate
from puffgm.networks.priors import load_prior_class
t1 = time.perf_counter()
pc = load_prior_class("example:" + sys.argv[1])
t2 = time.perf_counter()
kw = {}
params = inspect.signature(calibrate).parameters
if "progress" in params:
    kw["progress"] = False
if "n_jobs" in params and sys.argv[3] != "auto":
    kw["n_jobs"] = int(sys.argv[3])
if "time_limit" in params and float(sys.argv[4]) > 0:
    kw["time_limit"] = float(sys.argv[4])
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
c2 = time.process_time()
out = {"nodes": len(pc.nodes), "import_s": t1 - t0, "load_s": t2 - t1}
try:
    res = calibrate(pc, epsilon=float(sys.argv[2]), **kw)
except Exception as exc:  # a refusal: report its one-sentence message
    out.update({"refused": f"{type(exc).__name__}: {exc}", "after_s": time.perf_counter() - t2,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    print(json.dumps(out))
    sys.exit(0)
t3 = time.perf_counter()
c3 = time.process_time()
d = res.to_dict()
out.update({"calibrate_s": t3 - t2, "calibrate_cpu_s": c3 - c2, "total_s": t3 - t0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_before_calibrate_mb": rss0,
            "sigma_max": res.sigma_max, "groupdp_sigma": res.groupdp_sigma, "gain": res.gain,
            "sigma_lower_bound": d.get("sigma_lower_bound"), "optimality_gap": d.get("optimality_gap"),
            "worst_node": res.worst_node, "worst_quilt": list(res.worst.quilt),
            "influence_evaluations": res.details["influence_evaluations"],
            "skipped_quilts": res.details.get("skipped_quilts"),
            "quilt_family": res.details["quilt_family"],
            "per_node_scores": [c.score for c in res.per_node],
            "per_node_quilts": [list(c.quilt) for c in res.per_node]})
print(json.dumps(out))
"""


def run_child(pythonpath, name, epsilon, n_jobs, timeout, time_limit=0.0):
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    # its own process group, so a timeout also ends the joblib workers it started
    proc = subprocess.Popen([sys.executable, "-c", CHILD, name, str(epsilon), str(n_jobs), str(time_limit)],
                            env=env, cwd=str(pythonpath), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"timeout_s": timeout}
    if proc.returncode != 0:
        return {"error": (err.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]}
    return json.loads(out)


def best_of(runs):
    ok = [r for r in runs if "calibrate_s" in r]
    if not ok:
        return runs[-1]
    best = dict(min(ok, key=lambda r: r["calibrate_s"]))
    best["calibrate_cpu_s"] = min(r["calibrate_cpu_s"] for r in ok)
    best["runs_calibrate_s"] = [round(r["calibrate_s"], 4) for r in ok]
    return best


def extract_baseline(commit, dest):
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "puffgm"], capture_output=True)
    if archive.returncode != 0:
        return archive.stderr.decode().strip() or "git archive failed"
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return None


def compare(before, after):
    """Speed-ups and agreement of the per-node results (same quilts, scores to 1e-9)."""
    out = {}
    if "calibrate_s" in before and "calibrate_s" in after:
        out["speedup"] = before["calibrate_s"] / after["calibrate_s"]
        out["speedup_cpu"] = before["calibrate_cpu_s"] / after["calibrate_cpu_s"]
        pairs = list(zip(before["per_node_scores"], after["per_node_scores"], strict=True))
        out["identical_quilts"] = before["per_node_quilts"] == after["per_node_quilts"]
        out["max_score_rel_diff"] = max(
            (abs(a - b) / max(1.0, abs(a)) for a, b in pairs if a != b), default=0.0)
        out["same_worst_node"] = before["worst_node"] == after["worst_node"]
        out["same_worst_quilt"] = before["worst_quilt"] == after["worst_quilt"]
        out["sigma_rel_diff"] = abs(before["sigma_max"] - after["sigma_max"]) / before["sigma_max"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=NETWORKS)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=1, help="runs per network and side (best time kept)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child run")
    ap.add_argument("--before", default=",".join(BEFORE), help="networks to run the baseline on")
    ap.add_argument("--baseline", default="a3d16ce", help="commit of today's algorithm")
    ap.add_argument("--before-time-limit", type=float, default=0.0,
                    help="calibrate's time_limit for the before runs (0: none)")
    ap.add_argument("--n-jobs", default="auto", help="calibrate's n_jobs for the after runs")
    ap.add_argument("--time-limit", type=float, default=600.0,
                    help="calibrate's time_limit for the after runs (0: none); a refusal is reported")
    args = ap.parse_args()
    before_set = {s for s in args.before.split(",") if s}
    out = {"epsilon": args.epsilon, "baseline": args.baseline,
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                       "load_average_start": list(os.getloadavg())},
           "targets": {"alarm_speedup": 10, "hailfinder_s": 1, "win95pts_s": 1, "andes_s": 45, "pigs_s": 30,
                       "munin_no_limit_s": 600},
           "networks": {}}
    tmp = Path(tempfile.mkdtemp(prefix="puffgm-baseline-"))
    try:
        problem = extract_baseline(args.baseline, tmp) if before_set else "no baseline requested"
        for name in args.names:
            entry = {}
            after_runs, before_runs = [], []
            for _ in range(max(1, args.repeat)):  # interleaved, so both sides see the same load
                after_runs.append(run_child(ROOT, name, args.epsilon, args.n_jobs, args.timeout, args.time_limit))
                if name in before_set and problem is None:
                    before_runs.append(run_child(tmp, name, args.epsilon, "auto", args.timeout,
                                                 args.before_time_limit))
            entry["after"] = best_of(after_runs)
            if before_runs:
                entry["before"] = best_of(before_runs)
                entry.update(compare(entry["before"], entry["after"]))
            else:
                entry["before"] = {"skipped": problem or f"baseline not run on {name} (too slow; pass --before)"}
            for side in ("after", "before"):
                entry[side].pop("per_node_scores", None)
                entry[side].pop("per_node_quilts", None)
            out["networks"][name] = entry
            print(f"{name}: done", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["machine"]["load_average_end"] = list(os.getloadavg())
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
