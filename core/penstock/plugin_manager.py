"""Loading operator plugin libraries. DALI's plugins are C++ libraries built against DALI's own
headers and registry: penstock cannot load them, and says so rather than fail later."""

NO_CPP_PLUGINS = ("penstock does not load DALI's C++ operator plugins (built against DALI's headers and operator "
                  "registry); operators written in Python (fn.python_function, fn.dl_tensor_python_function) run "
                  "as they are")


def load_library(library_path: str, global_symbols: bool = False) -> None:
    """Loads an operator plugin library (raises RuntimeError: see the module's note)."""
    raise RuntimeError(f"Cannot load the operator plugin library {library_path!r}: {NO_CPP_PLUGINS}")


def load_directory(plugin_dir_path: str, global_symbols: bool = False) -> None:
    """Loads the operator plugin libraries of a directory (raises RuntimeError: see the module's note)."""
    raise RuntimeError(f"Cannot load the operator plugins of {plugin_dir_path!r}: {NO_CPP_PLUGINS}")
