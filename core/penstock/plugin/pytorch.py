"""``penstock.plugin.pytorch``: provided by the ``penstock-pytorch`` distribution."""
from ._resolve import install

install(__name__, "penstock_pytorch", "penstock-pytorch")
