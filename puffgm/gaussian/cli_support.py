"""CLI support for linear-Gaussian network files (``puffgm calibrate|curve|translate FILE.json``).

A PRIOR argument is a linear-Gaussian network when it is a JSON file whose
``"format"`` is ``"puffgm-linear-gaussian"`` (see :mod:`puffgm.gaussian.networks`);
chain JSON specs are told apart by that key.  No pgmpy import on this path.
"""

from __future__ import annotations

from puffgm.exceptions import ParameterError

__all__ = ["gaussian_specs", "calibrate_gaussian_specs", "gaussian_curve"]


def gaussian_specs(priors) -> list:
    """The linear-Gaussian network files among ``priors``; raises if they are mixed with other kinds."""
    from puffgm.gaussian.networks import is_gaussian_spec

    gauss = [p for p in priors if is_gaussian_spec(p)]
    if gauss and len(gauss) != len(priors):
        raise ParameterError("PRIOR arguments mix linear-Gaussian networks with other priors; give one kind.")
    return gauss


def _protected(args):
    if getattr(args, "protect", None) is None:
        return None
    return [s.strip() for s in args.protect.split(",") if s.strip()]


def calibrate_gaussian_specs(args):
    """``puffgm calibrate`` for linear-Gaussian network files (one class Theta)."""
    from puffgm.gaussian.networks import gaussian_calibrate

    if args.method != "exact":
        raise ParameterError(f"Method {args.method!r} applies to Markov-chain specs; Gaussian networks use 'exact'.")
    if args.paper_convention:
        raise ParameterError("--paper-convention applies to Markov-chain specs, not Gaussian networks.")
    if args.max_quilt_states is not None:
        raise ParameterError("--max-quilt-states applies to discrete networks, not Gaussian networks.")
    for flag in ("search_budget", "certify_budget", "max_table_entries", "time_limit"):
        if getattr(args, flag, None) is not None:
            raise ParameterError(f"--{flag.replace('_', '-')} applies to discrete networks, not Gaussian networks.")
    return gaussian_calibrate(list(args.priors), epsilon=args.epsilon, lipschitz=args.lipschitz,
                              protected=_protected(args))


def gaussian_curve(spec_list, args):
    """``puffgm curve`` / ``puffgm translate`` for linear-Gaussian network files."""
    from puffgm.gaussian.networks import gaussian_influence_curve

    if args.max_quilt_states is not None:
        raise ParameterError("--max-quilt-states applies to discrete networks, not Gaussian networks.")
    return gaussian_influence_curve(list(spec_list), args.max_b, protected=_protected(args))
