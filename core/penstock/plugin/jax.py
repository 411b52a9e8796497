"""``penstock.plugin.jax``: provided by the ``penstock-jax`` distribution."""
from ._resolve import install

install(__name__, "penstock_jax", "penstock-jax")
