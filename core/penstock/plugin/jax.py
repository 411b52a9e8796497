"""``penstock.plugin.jax``: provided by the ``penstock-data-jax`` distribution."""
from ._resolve import install

install(__name__, "penstock_jax", "penstock-data-jax")
