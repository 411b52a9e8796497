"""``python -m penstock``: what this installation can run and what to install for the rest.
``python -m penstock profile SCRIPT_OR_MODULE:PIPELINE_FN [--batches N]``: where a pipeline's time
goes (``penstock.profiler``)."""
from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import os
import platform
import sys

import penstock

# plugin module -> (its distribution, the import name of its framework, the framework's distributions)
PLUGINS = {
    "penstock.plugin.pytorch": ("penstock-data-pytorch", "penstock_pytorch", "torch", ("torch",)),
    "penstock.plugin.jax": ("penstock-data-jax", "penstock_jax", "jax", ("jax",)),
    "penstock.plugin.tf": ("penstock-data-tensorflow", "penstock_tensorflow", "tensorflow",
                           ("tensorflow", "tensorflow-cpu")),
}


@dataclasses.dataclass
class Component:
    """One thing penstock can use: whether it is here, what it is, and how to get it if not."""
    name: str
    available: bool
    detail: str
    install: str = ""  # what to do when it is missing


def _version(*distributions: str) -> str | None:
    """``name version`` of the first of ``distributions`` that is installed, else None."""
    for name in distributions:
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _nvimgcodec_component(codec: str | None, gpu: bool) -> Component:
    """nvImageCodec decodes on the GPU only where there is one: its library alone (its CPU backend
    installs anywhere) is not JPEG decoding on the GPU."""
    name = "nvImageCodec (JPEG decoding on the GPU, device='mixed')"
    if codec is None:
        return Component(name, False, "not installed: mixed decoders decode on the host and upload",
                         "comes with the GPU extra: pip install 'penstock-data[cuda13]' (or [cuda12])")
    library = (_version("nvidia-nvimgcodec-cu13", "nvidia-nvimgcodec-cu12") or "found") + f" in {codec}"
    if gpu:
        return Component(name, True, library)
    return Component(name, False, f"{library}, but no usable GPU here: mixed decoders decode on the host",
                     "what CUDA (GPU pipelines) needs, above")


# the distributions of penstock itself, whose files may be in the top-level `penstock` package
OWN_DISTRIBUTIONS = {"penstock-data", "penstock-data-pytorch", "penstock-data-jax", "penstock-data-tensorflow"}


def foreign_distributions() -> list[str]:
    """Other installed distributions that put files into the top-level ``penstock`` package, as
    ``name version``: PyPI's unrelated ``penstock`` project installs one of that name, and the two
    overwrite each other's files."""
    owners = importlib.metadata.packages_distributions().get("penstock", [])
    others = sorted({name for name in owners if name.lower().replace("_", "-") not in OWN_DISTRIBUTIONS})
    return [_version(name) or name for name in others]


def components() -> list[Component]:
    """The native engine, CUDA, nvImageCodec, NVDEC, PyAV, libsndfile and each framework plugin, as found here."""
    from penstock import _engine, backend
    from penstock._cuda import INSTALL_HINT, _nvimgcodec
    from penstock.operators import _video_nvdec, audio_decode
    found = [Component("native engine", True, os.path.basename(_engine.__file__))]
    reason = backend.cuda_unavailable_reason()
    if reason is None:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
        names = ", ".join(cupy.cuda.runtime.getDeviceProperties(i)["name"].decode() for i in range(count))
        found.append(Component("CUDA (GPU pipelines)", True, f"CuPy {cupy.__version__}, {count} device(s): {names}"))
    else:
        missing_cupy = not _found("cupy")
        found.append(Component("CUDA (GPU pipelines)", False, "CuPy is not installed" if missing_cupy else reason,
                               INSTALL_HINT if missing_cupy else "a CUDA driver and device"))
    found.append(_nvimgcodec_component(_nvimgcodec.library_dir(), reason is None))
    nvdec, why = _video_nvdec.load_pynvvideocodec()
    found.append(Component(
        "NVDEC (video decoding on the GPU)", nvdec is not None,
        _version("PyNvVideoCodec") or "found" if nvdec is not None else f"{why}: GPU video decodes on the host",
        "comes with the video-gpu extra: pip install 'penstock-data[video-gpu]'"))
    found.append(Component(
        "PyAV (video reading and CPU decoding)", _found("av"), _version("av") if _found("av") else "not installed",
        "the video extra: pip install 'penstock-data[video]'"))
    libsndfile = audio_decode.libsndfile_path()
    found.append(Component(
        "libsndfile (audio decoding)", libsndfile is not None, libsndfile or "not found",
        "the audio extra: pip install 'penstock-data[audio]' (or the system's libsndfile)"))
    for module, (distribution, package, framework, framework_dists) in PLUGINS.items():
        plugin = _version(distribution) or (f"{distribution} (source tree)" if _found(package) else None)
        library = _version(*framework_dists) if _found(framework) else None
        to_install = ([distribution] if plugin is None else []) + ([framework_dists[0]] if library is None else [])
        install = f"pip install {' '.join(to_install)}" if to_install else ""
        if library is None and len(framework_dists) > 1:
            install += f" (or {' or '.join(framework_dists[1:])})"
        found.append(Component(module, not to_install, ", ".join(filter(None, (plugin, library))) or "not installed",
                               install))
    return found


def report() -> str:
    """The text ``python -m penstock`` prints."""
    lines = [f"penstock {penstock.__version__} (penstock-data) in {os.path.dirname(penstock.__file__)}",
             f"Python {platform.python_version()} on {platform.system()} {platform.machine()}", ""]
    for other in foreign_distributions():
        lines += [f"WARNING: {other} is installed here too: a project unrelated to penstock-data that also installs "
                  "a top-level package named `penstock`, so each overwrites the other's files. Use separate "
                  "environments, or `pip uninstall " + other.split()[0] + "` and reinstall penstock-data.", ""]
    parts = components()
    width = max(len(c.name) for c in parts)
    for c in parts:
        lines.append(f"  {'yes' if c.available else 'no ':3}  {c.name:<{width}}  {c.detail}")
    missing = [c for c in parts if not c.available and c.install]
    if missing:
        lines += ["", "To add what is missing:"] + [f"  {c.name}: {c.install}" for c in missing]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m penstock", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("info", help="what this installation can run (the default)")
    profile = commands.add_parser("profile", help="run a pipeline and report where its time goes")
    profile.add_argument("target", help="SCRIPT.py:FUNCTION or package.module:FUNCTION; the function returns "
                                        "a Pipeline (or is a @pipeline_def)")
    profile.add_argument("--batches", type=int, default=20, help="iterations to measure (default 20)")
    profile.add_argument("--warmup", type=int, default=2, help="iterations run before measuring (default 2)")
    profile.add_argument("--trace", metavar="FILE.json", help="write a Chrome-trace/Perfetto timeline")
    args = parser.parse_args(argv)
    if args.command == "profile":
        from penstock import profiler
        result = profiler.profile(profiler.load_target(args.target), batches=args.batches, warmup=args.warmup,
                                  trace=args.trace)
        print(result.report())
        return 0
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
