"""The type stubs of fn and ops (penstock/_stubs.py, written by the build): the shipped files are
what the registry generates, and each operator's stub has the registry's arguments, defaults,
result and doc."""
import ast
import enum
import os
import sys

import pytest

import penstock
from penstock import _stubs, fn, ops
from penstock._registry import schemas

PACKAGE = os.path.dirname(penstock.__file__)
EXPORTED = [s for s in schemas().values() if not s.internal]


@pytest.fixture(scope="module")
def generated():
    return _stubs.generate()


def _tree(generated, api, module):
    return ast.parse(generated[_stubs.stub_path(api, module)])


def test_the_installed_stubs_are_what_the_registry_generates(generated):
    assert os.path.exists(os.path.join(PACKAGE, "py.typed"))
    for relative, text in generated.items():
        path = os.path.join(PACKAGE, relative)
        assert os.path.exists(path), f"{path} is missing: run make stubs (the build writes it)"
        with open(path) as f:
            assert f.read() == text, f"{path} is stale: run make stubs"


def test_each_operator_stub_has_the_registry_arguments_defaults_and_doc(generated):
    for schema in EXPORTED:
        leaf = schema.fn_name.rpartition(".")[2]
        (func,) = [n for n in _tree(generated, "fn", schema.module).body if isinstance(n, ast.FunctionDef)
                   and n.name == leaf]
        keywords = dict(zip((a.arg for a in func.args.kwonlyargs), func.args.kw_defaults))
        assert set(keywords) == set(schema.arguments), schema.fn_name
        for name, arg in schema.arguments.items():
            if arg.required:
                assert keywords[name] is None, f"{schema.fn_name}: {name} is required"
            elif isinstance(arg.default, enum.Enum):
                assert ast.unparse(keywords[name]) == f"types.{type(arg.default).__name__}.{arg.default.name}"
            elif isinstance(arg.default, (bool, int, float, str)):
                assert ast.literal_eval(keywords[name]) == arg.default, f"{schema.fn_name}: {name}"
        assert len(func.args.posonlyargs) == schema.max_inputs if schema.max_inputs != -1 else func.args.vararg
        assert ast.get_docstring(func).splitlines()[0] == schema.doc.strip().splitlines()[0]
        (cls,) = [n for n in _tree(generated, "ops", schema.module).body if isinstance(n, ast.ClassDef)
                  and n.name == schema.class_name]
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        assert [a.arg for a in init.args.kwonlyargs] == [a.arg for a in func.args.kwonlyargs]


def test_every_name_of_fn_and_ops_has_a_stub(generated):
    for api, module in (("fn", fn), ("ops", ops)):
        for sub in [""] + sorted({s.module for s in EXPORTED} - {""}):
            namespace = module
            for part in sub.split(".") if sub else ():
                namespace = getattr(namespace, part)
            stubbed = {target.id for node in _tree(generated, api, sub).body
                       for target in ([node] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else
                                      getattr(node, "targets", []))
                       for target in [getattr(target, "name", None) and ast.Name(target.name) or target]
                       if isinstance(target, ast.Name)}
            stubbed |= {alias.asname for node in _tree(generated, api, sub).body if isinstance(node, ast.ImportFrom)
                        for alias in node.names}  # moved operators, imported from their new place
            public = {name for name, value in vars(namespace).items() if not name.startswith("_")
                      and callable(value) and getattr(value, "__module__", "").startswith(("penstock.fn", "penstock.ops"))}
            assert public <= stubbed, f"{api}.{sub}: no stub for {sorted(public - stubbed)}"


def test_the_stubs_evaluate_against_the_real_types(generated):
    """Every annotation and default names something that exists (evaluated as Python)."""
    for relative, text in generated.items():
        tree = ast.parse(text)  # less what names the stubs' own submodules (imported, aliased)
        tree.body = [node for node in tree.body if not (isinstance(node, ast.ImportFrom) and node.level)
                     and not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute))]
        exec(compile(tree, relative, "exec"), {"__name__": "stub_check"})


def test_make_stubs_writes_the_files(tmp_path):
    (tmp_path / "fn").mkdir()
    (tmp_path / "ops").mkdir()
    written = _stubs.write(str(tmp_path))
    assert {os.path.relpath(p, tmp_path) for p in written} == set(_stubs.generate()) | {"py.typed"}
    assert sys.modules["penstock.fn"] is fn  # generating imported nothing anew
