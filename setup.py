"""Builds the native engine `penstock._engine` from csrc/ (every .cpp under it)."""
import glob
import os
import shutil

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

ParallelCompile("PENSTOCK_BUILD_JOBS", default=os.cpu_count() or 2).install()

HERE = os.path.dirname(os.path.abspath(__file__))


def _image_libraries() -> list[str]:
    """libjpeg (libjpeg-turbo) and libpng are required for the image decoders."""
    missing = [h for h in ("jpeglib.h", "png.h")
               if not any(os.path.exists(os.path.join(d, h))
                          for d in ("/usr/include", "/usr/local/include"))]
    if missing:
        raise RuntimeError(
            f"penstock needs the headers {missing} to build its image decoders: "
            "install libjpeg-turbo and libpng development packages "
            "(Debian/Ubuntu: apt-get install libjpeg-dev libpng-dev)")
    return ["jpeg", "png"]


def _tree(pattern: str) -> list[str]:
    return sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "**", pattern), recursive=True))


sources = _tree("*.cpp")

ext = Pybind11Extension(
    "penstock._engine",
    sources,
    include_dirs=[os.path.join(HERE, "csrc")],
    libraries=_image_libraries() + ["pthread", "dl"],
    depends=_tree("*.h"),  # a header edit rebuilds the extension
    cxx_std=17,
    extra_compile_args=["-O3", "-fvisibility=hidden", "-Wall", "-Wno-unused-function"],
)

class BuildPyWithCudaSources(build_py):
    """Wheels carry the CUDA kernel sources (compiled at run time) as penstock/_cuda/src."""

    def run(self) -> None:
        super().run()
        target = os.path.join(self.build_lib, "penstock", "_cuda", "src")
        os.makedirs(target, exist_ok=True)
        for path in glob.glob(os.path.join(HERE, "csrc", "cuda", "*.cu*")):
            shutil.copy(path, target)


setup(ext_modules=[ext], cmdclass={"build_ext": build_ext, "build_py": BuildPyWithCudaSources})
