"""The table of core/penstock/operators/README.md (fn name -> Python module -> CPU kernel -> GPU kernel
-> tests) is the one the registry gives today."""
from operator_table import committed, table


def test_the_operator_table_is_up_to_date():
    assert committed() == table(), ("core/penstock/operators/README.md's operator table is stale: "
                                    "regenerate it with `PYTHONPATH=core python tests/operator_table.py`")
