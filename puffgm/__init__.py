"""puffgm: Pufferfish privacy for correlated data with graphical-model priors."""

__version__ = "0.1.0"
