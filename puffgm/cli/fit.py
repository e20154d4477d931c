"""``puffgm fit``: fit a prior class to a CSV file and save it as a PRIOR for the other subcommands.

Networks (:func:`puffgm.fit_network`)::

    puffgm fit --data survey.csv [--dag "A->B,B->C" | --learn hill-climb|tree] [--bootstrap B]
               [--bins COL=K ...] [--seed N] -o prior.json

Markov chains (:func:`puffgm.fit_chain`)::

    puffgm fit --chain --data series.csv [--unit COL --time COL --state COL] [--states S1 S2 ...] -o chain.json

The file written is a saved prior (:func:`puffgm.save_prior`, ``"format": "puffgm-prior"``),
which ``puffgm calibrate``, ``puffgm release`` and the other subcommands take as a PRIOR.
The options are the Python fitters' parameters, validated by them with the same messages.
Imports (pandas, pgmpy) happen when the command runs, so ``puffgm --help`` stays light.
"""

from __future__ import annotations

import os

from puffgm.cli.arguments import integer, number

__all__ = ["register", "run"]


def register(p) -> None:
    p.add_argument("--data", required=True, metavar="FILE.csv",
                   help="the data: a CSV file with a header row (networks: one column per node, one row per "
                        "record; chains: one trace per column, or long format with --unit/--time/--state)")
    p.add_argument("-o", "--output", required=True, metavar="PRIOR.json",
                   help="where to save the fitted class (a PRIOR for calibrate, release, curve, translate)")
    p.add_argument("--chain", action="store_true", help="fit a Markov chain (puffgm.fit_chain) instead of a network")
    net = p.add_argument_group("networks (puffgm.fit_network)")
    net.add_argument("--dag", default=None, metavar="EDGES",
                     help="the DAG: comma-separated PARENT->CHILD edges (\"A->B,B->C\"; \"\" for none), or a "
                          "saved prior or network file whose DAG to use; default: learned (--learn)")
    net.add_argument("--learn", default=None, metavar="METHOD",
                     help="structure learning without --dag: hill-climb (BIC), hill-climb:SCORE (bic-d, aic-d, "
                          "bdeu, k2, bds) or tree (Chow-Liu); default hill-climb")
    net.add_argument("--bootstrap", type=integer, default=0, metavar="B",
                     help="also refit the CPDs on B bootstrap resamples: the class holds B + 1 members")
    net.add_argument("--bins", nargs="+", action="extend", default=None, metavar="COL=K",
                     help="cut the numeric column COL into K bins first (equal width; --quantiles for equal counts)")
    net.add_argument("--quantiles", action="store_true", help="--bins by quantiles (pandas.qcut)")
    net.add_argument("--bin-labels", nargs="+", action="extend", default=None, metavar="COL=L1,L2,...",
                     help="names of COL's bins, lowest first (default: the intervals, edges rounded)")
    net.add_argument("--columns", default=None, metavar="A,B,...", help="use only these columns (default: all)")
    net.add_argument("--estimator", default=None, metavar="NAME",
                     help="CPD estimator: bayes (BDeu, every entry positive; default) or ml (maximum likelihood)")
    net.add_argument("--seed", type=integer, default=None, metavar="N",
                     help="seed of the bootstrap resamples (the search itself draws no random numbers)")
    chain = p.add_argument_group("chains (puffgm.fit_chain, with --chain)")
    chain.add_argument("--unit", default=None, metavar="COL", help="long format: the column naming each row's trace")
    chain.add_argument("--time", default=None, metavar="COL", help="the column giving the time order of the rows")
    chain.add_argument("--state", default=None, metavar="COL", help="the column of states")
    chain.add_argument("--states", nargs="+", default=None, metavar="S",
                       help="the state space in order (default: the observed values, in their natural order)")
    chain.add_argument("--length", type=integer, default=None, metavar="T",
                       help="the chain length T (default: the longest trace)")
    chain.add_argument("--initial", default=None, metavar="KIND",
                       help="initial distribution: stationary (default) or any")
    chain.add_argument("--tau", type=number, default=None, metavar="X",
                       help="additive smoothing of zero transition probabilities (default 1e-5; 0: none)")


def run(args) -> str:
    from puffgm.api.persist import FORMAT, VERSION, save_prior
    from puffgm.exceptions import ParameterError

    frame = _read_csv(args.data)
    if args.chain:
        _refuse(args, ("dag", "learn", "bootstrap", "bins", "quantiles", "bin_labels", "columns", "estimator", "seed"),
                "--chain",
                ParameterError)
        fitted = _fit_chain(frame, args)
        lines = _chain_summary(fitted)
    else:
        _refuse(args, ("unit", "time", "state", "states", "length", "tau", "initial"), "a network (no --chain)",
                ParameterError)
        fitted = _fit_network(frame, args)
        lines = _network_summary(fitted)
    save_prior(fitted, args.output)
    lines.append(f"fingerprint: {fitted.fingerprint}")
    lines += [f"note: {n}" for n in fitted.notes]
    lines.append(f"saved: {args.output} ({FORMAT} v{VERSION}; a PRIOR for puffgm calibrate, release, curve and "
                 "translate)")
    return "\n".join(lines)


def _refuse(args, names: tuple, what: str, error) -> None:
    given = [n for n in names if getattr(args, n) not in (None, False)]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise error(f"{flag} does not apply to {what}: it is an option of "
                    f"{'networks' if what == '--chain' else 'chains (--chain)'}.")


def _read_csv(path: str):
    import pandas as pd

    from puffgm.exceptions import ParameterError

    if not os.path.isfile(path):
        raise ParameterError(f"There is no data file {path!r}.")
    try:
        frame = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' EmptyDataError and ParserError are ValueErrors
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ParameterError(f"The data file {path!r} is not a CSV file with a header row ({detail}).") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


# ------------------------------------------------------------------ networks
def _fit_network(frame, args):
    from puffgm.networks.fit import bin_columns, fit_network

    if args.columns is not None:
        frame = _columns(frame, args.columns)
    if args.bins:
        frame = bin_columns(frame, _pairs(args.bins, "--bins", "COL=K", _count),
                            quantiles=args.quantiles, labels=_pairs(args.bin_labels or [], "--bin-labels",
                                                                    "COL=L1,L2,...", _labels))
    elif args.quantiles or args.bin_labels:
        from puffgm.exceptions import ParameterError

        raise ParameterError("--quantiles and --bin-labels describe the bins of --bins COL=K: give --bins.")
    if args.dag is not None and args.learn is not None:
        from puffgm.exceptions import ParameterError

        raise ParameterError("--dag gives the DAG and --learn learns one: give one of them.")
    dag = None if args.dag is None else _dag(args.dag)
    return fit_network(frame, dag=dag, estimator=args.estimator or "bayes", bootstrap=args.bootstrap,
                       random_state=args.seed, structure=args.learn or "hill-climb")


def _columns(frame, text: str):
    from puffgm.exceptions import ParameterError

    wanted = [c.strip() for c in text.split(",") if c.strip()]
    missing = [c for c in wanted if c not in frame.columns]
    if not wanted or missing:
        raise ParameterError(f"--columns names {missing[0] if missing else text!r}, which is not a column of the "
                             f"data; columns: {', '.join(frame.columns)}.")
    return frame[wanted]


def _pairs(items: list, flag: str, form: str, value) -> dict:
    """``COL=VALUE`` arguments as a dict column -> value(VALUE)."""
    from puffgm.exceptions import ParameterError

    out = {}
    for item in items:
        col, sep, text = item.partition("=")
        if not sep or not col.strip() or not text.strip():
            raise ParameterError(f"{flag} takes {form}; got {item!r}.")
        out[col.strip()] = value(text.strip(), flag, item)
    return out


def _count(text: str, flag: str, item: str) -> int:
    from puffgm.exceptions import ParameterError

    try:
        return int(text)
    except ValueError:
        raise ParameterError(f"{flag} takes COL=K with K a whole number of bins; got {item!r}.") from None


def _labels(text: str, flag: str, item: str) -> list:
    return [s.strip() for s in text.split(",")]


def _dag(text: str):
    """The DAG of ``--dag``: a saved prior or network file's DAG, or PARENT->CHILD edges."""
    from puffgm.exceptions import ParameterError

    if os.path.isfile(text) or text.startswith("example:"):
        from puffgm.api.persist import load_prior_class

        return load_prior_class(text)
    edges = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        parent, sep, child = part.partition("->")
        if not sep or not parent.strip() or not child.strip():
            raise ParameterError(f"--dag takes comma-separated PARENT->CHILD edges (or a prior file); {part!r} is "
                                 "not an edge.")
        edges.append((parent.strip(), child.strip()))
    return edges


def _network_summary(pc) -> list:
    members = ", ".join(p.name for p in pc.priors)
    lines = [f"fitted: a Bayesian-network prior class of {len(pc)} member(s) ({members}), {len(pc.nodes)} nodes, "
             f"{pc.dag.number_of_edges()} edge(s)"]
    for n in pc.nodes:
        parents = ", ".join(pc.parents[n]) or "none"
        lines.append(f"  {n}: {len(pc.states[n])} states ({_list(pc.states[n])}); parents: {parents}")
    return lines


# ------------------------------------------------------------------ chains
def _fit_chain(frame, args):
    from puffgm.chains.priors import SMOOTHING_TAU, fit_chain

    return fit_chain(frame, states=args.states, length=args.length, initial=args.initial or "stationary",
                     tau=SMOOTHING_TAU if args.tau is None else args.tau, id_column=args.unit,
                     value_column=args.state, order_column=args.time)


def _chain_summary(cc) -> list:
    return [f"fitted: a Markov-chain prior class of {len(cc)} chain(s), {cc.k} states ({_list(cc.states)}), "
            f"T = {cc.length} ({cc.length_source}), initial distribution {cc.members[0].initial_kind}"]


def _list(states, shown: int = 8) -> str:
    states = list(states)
    if len(states) <= shown:
        return ", ".join(states)
    return ", ".join(states[: shown - 2]) + ", ..., " + states[-1]
