"""The entry points that take any prior kind and dispatch on the prior interface."""

from puffgm.api.dispatch import influence_curve

__all__ = ["influence_curve"]
