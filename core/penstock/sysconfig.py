"""Build settings of operator plugins. DALI's answers point at its headers and libdali, which its C++
plugins are built against; penstock loads no such plugins (plugin_manager), so each says so."""
from .plugin_manager import NO_CPP_PLUGINS


def _no_plugin_build(what: str) -> RuntimeError:
    return RuntimeError(f"sysconfig.{what}(): there are no headers or library to build C++ operator plugins "
                        f"against: {NO_CPP_PLUGINS}")


def get_include_dir() -> str:
    raise _no_plugin_build("get_include_dir")


def get_lib_dir() -> str:
    raise _no_plugin_build("get_lib_dir")


def get_include_flags() -> list:
    raise _no_plugin_build("get_include_flags")


def get_compile_flags() -> list:
    raise _no_plugin_build("get_compile_flags")


def get_link_flags() -> list:
    raise _no_plugin_build("get_link_flags")
