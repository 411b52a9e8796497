"""``penstock.plugin.tf``: provided by the ``penstock-tensorflow`` distribution."""
from ._resolve import install

install(__name__, "penstock_tensorflow", "penstock-tensorflow")
