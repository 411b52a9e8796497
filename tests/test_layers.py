"""Layers of ``core/penstock``: a module imports only from its own layer or below, module level and
inside functions alike (design.md §2, "Layers and imports").

From the bottom: the core (types, tensors, the registry, graph building, the executor ...), the
runtimes (CUDA, the worker processes of parallel sources, conditionals), the operators, the front
ends (pipeline, fn, ops ...) and the plugins. Where the core needs behaviour defined above it, the
upper layer installs it into ``penstock._hooks`` when it is imported.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "core" / "penstock"

# every top-level module or package of penstock, by layer, from the bottom
LAYERS = {
    "core": {"types", "tensors", "_registry", "_graph", "data_node", "_operator", "_executor", "_switch_interval", "_consumer", "_environment", "_checkpoint",
             "_engine", "_hooks", "_current", "_generate", "_batch", "_image_layout", "_std_random", "_sources",
             "_on_error", "_pairs", "_per_frame", "_workers", "pickling", "tfrecord", "tfrecord2idx"},
    "runtimes": {"_cuda", "_parallel", "_conditionals"},
    "operators": {"operators"},
    "front ends": {"pipeline", "fn", "ops", "experimental", "math", "backend", "backend_impl", "auto_aug",
                   "custom", "external_source", "internal", "plugin_manager", "python_function_plugin", "reducers",
                   "sysconfig", "profiler", "utils", "_stubs", "__init__"},
    "plugins": {"plugin"},
    "tools": {"__main__"},  # python -m penstock
}
RANK = {name: rank for rank, names in enumerate(LAYERS.values()) for name in names}
LAYER_OF_RANK = list(LAYERS)


def _top(parts: list[str]) -> str:
    """The top-level name under penstock of a module path (``["penstock", "operators", ...]``)."""
    return parts[1] if len(parts) > 1 else "__init__"


def _module_parts(path: pathlib.Path) -> list[str]:
    parts = ["penstock", *path.relative_to(ROOT).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, top-level penstock name) of every import of penstock in a file, nested ones too."""
    parts = _module_parts(path)
    package = parts if path.name == "__init__.py" else parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = base + (node.module.split(".") if node.module else [])
            if node.module:
                found.append((node.lineno, module))
            else:  # from . import a, b: each name is a module or a name of the package
                found += [(node.lineno, module + [alias.name]) for alias in node.names]
    return [(line, _top(target)) for line, target in found if target[0] == "penstock"]


def test_every_module_is_in_a_layer():
    names = {_top(_module_parts(p)) for p in ROOT.rglob("*.py")} | {"_engine"}
    unplaced = sorted(names - set(RANK))
    assert not unplaced, f"put these modules of penstock in a layer of {__file__}: {unplaced}"


def test_no_import_climbs_a_layer():
    climbs = []
    for path in sorted(ROOT.rglob("*.py")):
        here = _top(_module_parts(path))
        for line, target in imports(path):
            if RANK[target] > RANK[here]:
                climbs.append(f"{path.relative_to(ROOT.parent)}:{line}: {LAYER_OF_RANK[RANK[here]]} "
                              f"module imports {target} ({LAYER_OF_RANK[RANK[target]]})")
    assert not climbs, "imports that climb a layer:\n" + "\n".join(climbs)
