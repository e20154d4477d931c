"""Record the CLI outputs that ``tests/cli/test_golden.py`` replays and compares.

Run ``python tests/cli/record_golden.py`` to (re)write ``tests/data/golden_cli.json``, or
``python tests/cli/record_golden.py NAME ...`` to re-record only the named commands (the
others keep their recorded outputs).  Record from a clean checkout: the file holds what the
committed code prints.  Commands run in the repository root (their paths are relative to
it).  Keys that measure time are removed before comparing; floats are compared with the
tolerance stated in ``test_golden.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "golden_cli.json"

BOX = json.dumps({"box": {"p0": [0.2, 0.8], "p1": [0.3, 0.7]}, "initial": "any", "length": 20})
CHAINS = json.dumps({"transitions": [[[0.9, 0.1], [0.4, 0.6]], [[0.8, 0.2], [0.3, 0.7]]],
                     "initials": [[1, 0], [0.5, 0.5]], "length": 30})
POLICY = json.dumps({"domain": {"kind": "ordered", "size": 10}, "graph": {"kind": "distance", "theta": 2}})

#: name -> (argv, files to write first {name: text})
COMMANDS = {
    "calibrate asia": ["calibrate", "example:asia", "--epsilon", "1", "--json", "--per-node", "--quiet"],
    "calibrate alarm": ["calibrate", "example:alarm", "--epsilon", "1", "--json", "--quiet"],
    "calibrate hailfinder": ["calibrate", "example:hailfinder", "--epsilon", "1", "--json", "--quiet"],
    "calibrate win95pts": ["calibrate", "example:win95pts", "--epsilon", "1", "--json", "--quiet"],
    "calibrate hepar2": ["calibrate", "example:hepar2", "--epsilon", "1", "--json", "--quiet"],
    "calibrate asia class": ["calibrate", "example:asia", "tests/data/asia_variant.bif", "--epsilon", "0.5", "--json",
                              "--lipschitz", "2", "--quiet"],
    "calibrate chain class exact": ["calibrate", "@chains.json", "--epsilon", "1", "--json"],
    "calibrate chain class approx": ["calibrate", "@chains.json", "--epsilon", "1", "--method", "approx", "--json"],
    "calibrate chain class gk16": ["calibrate", "@chains.json", "--epsilon", "1", "--method", "gk16", "--json"],
    "calibrate chain class groupdp": ["calibrate", "@chains.json", "--epsilon", "1", "--method", "groupdp",
                                      "--json"],
    "calibrate box exact": ["calibrate", "@box.json", "--epsilon", "1", "--json"],
    "calibrate box approx": ["calibrate", "@box.json", "--epsilon", "1", "--method", "approx", "--json"],
    "calibrate gaussian": ["calibrate", "examples/gaussian_sensors.json", "--epsilon", "40", "--lipschitz", "6",
                           "--json"],
    "curve asia": ["curve", "example:asia", "--json"],
    "curve alarm": ["curve", "example:alarm", "--json"],
    "curve asia class": ["curve", "example:asia", "tests/data/asia_variant.bif", "--json"],
    "curve chain class": ["curve", "@chains.json", "--json", "--max-b", "12"],
    "curve gaussian": ["curve", "examples/gaussian_sensors.json", "--json"],
    "translate asia": ["translate", "example:asia", "--epsilon-puffer", "2", "--json"],
    "translate alarm dp": ["translate", "example:alarm", "--epsilon-dp", "0.5", "--json"],
    "translate chain class": ["translate", "@chains.json", "--epsilon-puffer", "3", "--json"],
    "translate gaussian": ["translate", "examples/gaussian_sensors.json", "--epsilon-puffer", "30", "--json"],
    "blowfish sensitivity": ["blowfish", "sensitivity", "--policy", POLICY, "--query", '{"kind": "cumulative"}',
                             "--json"],
    "audit asia-like": ["audit", "--case", "all", "--json"],
}
FILES = {"chains.json": CHAINS, "box.json": BOX}

#: keys whose values are wall-clock measurements
VOLATILE = {"seconds", "elapsed", "elapsed_seconds", "time", "wall_seconds", "timings", "time_seconds"}


def strip_volatile(obj):
    if isinstance(obj, dict):
        return {k: strip_volatile(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [strip_volatile(v) for v in obj]
    return obj


def run_cli(argv, workdir: pathlib.Path):
    """Run the CLI in-process and return (exit code, parsed JSON output)."""
    from puffgm.cli import main

    args = [str(workdir / a[1:]) if a.startswith("@") else a for a in argv]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    finally:
        os.chdir(here)
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {code}: {err.getvalue().strip()}")
    text = out.getvalue().replace(json.dumps(str(workdir))[1:-1], "WORKDIR")
    return strip_volatile(json.loads(text))


def write_files(workdir: pathlib.Path) -> None:
    for name, text in FILES.items():
        (workdir / name).write_text(text)


def main(names=()) -> None:
    import tempfile

    unknown = sorted(set(names) - set(COMMANDS))
    if unknown:
        raise SystemExit(f"unknown command names {unknown}; known: {sorted(COMMANDS)}")
    record = json.loads(GOLDEN.read_text()) if names else {}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        write_files(work)
        for name, argv in COMMANDS.items():
            if names and name not in names:
                continue
            record[name] = {"argv": argv, "output": run_cli(argv, work)}
            print(name, file=sys.stderr)
    DATA.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(tuple(sys.argv[1:]))
