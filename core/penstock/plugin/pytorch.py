"""``penstock.plugin.pytorch``: provided by the ``penstock-data-pytorch`` distribution."""
from ._resolve import install

install(__name__, "penstock_pytorch", "penstock-data-pytorch")
