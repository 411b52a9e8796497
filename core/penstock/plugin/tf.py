"""``penstock.plugin.tf``: provided by the ``penstock-data-tensorflow`` distribution."""
from ._resolve import install

install(__name__, "penstock_tensorflow", "penstock-data-tensorflow")
