"""The engine decodes with its own copies of libjpeg and libpng, whatever the process loaded first.

torchvision's wheel loads libjpeg-turbo 2.0.0 under the soname libjpeg.so.8; an engine that
depended on "libjpeg.so.8" got that copy instead of the one it was built against, and its region
decoding with plain upsampling (the mixed decoders' host share) corrupted the heap. Here stand-in
libraries of every soname the image libraries go by, whose functions abort, are loaded before
penstock in a fresh process: the engine must never reach them.
"""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from penstock import _engine

_SONAMES = ["libjpeg.so.62", "libjpeg.so.8", "libpng16.so.16", "libz.so.1"]

# Decodes the two images of the batch in argv[2] (a 4:2:0 JPEG as the mixed decoders' host share
# does, a window with plain upsampling, and a PNG) and prints their pixels' sums and the files the
# engine's libraries came from. argv[1]: how the stand-ins are loaded (local, global).
_DECODE = textwrap.dedent("""
    import ctypes, json, sys
    import zlib  # Python's own zlib module would take the stand-in libz.so.1 if loaded after it
    import numpy as np
    mode, data_path, fakes = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = dict(np.load(data_path))
    for path in fakes:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if mode == "global" else ctypes.RTLD_LOCAL)
    from penstock import _engine
    out = {}
    for name, crop, fancy in (("jpeg_window", [[37, 21, 200, 150]], False), ("jpeg", None, True),
                              ("png", None, True)):
        buf = data[name]
        shapes = np.array([[len(buf)]], np.int64)
        crop = None if crop is None else np.array(crop, np.int64)
        pixels, hw, offsets = _engine.decode_images(_engine.ThreadPool(2), buf, shapes, np.zeros(1, np.int64),
                                                    0, True, crop, None, False, fancy_upsampling=fancy)[:3]
        out[name] = [pixels[:int(hw[0].prod())].astype(np.int64).sum().item(), hw[0].tolist()]
    out["libraries"] = _engine.image_libraries()
    print(json.dumps(out))
""")


def _stand_in(folder: str, soname: str, symbols: list[str]) -> str:
    """A shared library of ``soname`` exporting ``symbols``, each a function that aborts."""
    source = os.path.join(folder, soname + ".c")
    with open(source, "w") as f:
        f.write("#include <stdio.h>\n#include <stdlib.h>\n")
        for name in symbols:
            f.write(f'void {name}(void) {{ fputs("stand-in {soname}: {name}\\n", stderr); abort(); }}\n')
    path = os.path.join(folder, soname)
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", path, source], check=True)
    return path


def _exported_functions(library: str) -> list[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    return sorted({line.split()[2].split("@")[0] for line in out.splitlines() if line.split()[1:2] == ["T"]})


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory) -> list[str]:
    folder = str(tmp_path_factory.mktemp("stand_ins"))
    own = os.path.dirname(_engine.image_libraries()["libjpeg"])
    functions = {"jpeg": [], "png": [], "z": []}
    for name in os.listdir(own):
        kind = "jpeg" if "jpeg" in name else "png" if "png" in name else "z"
        functions[kind] += _exported_functions(os.path.join(own, name))
    return [_stand_in(folder, soname, functions["jpeg" if "jpeg" in soname else "png" if "png" in soname else "z"])
            for soname in _SONAMES]


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> str:
    import io

    from PIL import Image
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    from make_sample_data import photo_like

    photo = photo_like(np.random.default_rng(1), 300, 260)
    encoded = {}
    for name, fmt, options in (("jpeg_window", "JPEG", {"quality": 90, "subsampling": 2}),
                               ("jpeg", "JPEG", {"quality": 90, "subsampling": 2}), ("png", "PNG", {})):
        f = io.BytesIO()
        Image.fromarray(photo).save(f, fmt, **options)
        encoded[name] = np.frombuffer(f.getvalue(), np.uint8)
    path = str(tmp_path_factory.mktemp("images") / "images.npz")
    np.savez(path, **encoded)
    return path


def _decode(mode: str, images: str, stand_ins: list[str], preload: str = "") -> subprocess.CompletedProcess:
    script = "".join(f"import {name}\n" for name in filter(None, preload.split(","))) + _DECODE
    return subprocess.run([sys.executable, "-c", script, mode, images, *stand_ins], capture_output=True, text=True,
                          timeout=300)


def test_the_engine_links_private_copies_of_its_image_libraries():
    found = _engine.image_libraries()
    own = os.path.join(os.path.dirname(found["engine"]), "_libs")
    assert os.path.dirname(found["libjpeg"]) == own and os.path.dirname(found["libpng"]) == own
    assert "-penstock.so" in os.path.basename(found["libjpeg"])


def test_libraries_of_the_same_sonames_loaded_first_are_never_reached(images, stand_ins):
    """As when torchvision (or any wheel bundling libjpeg.so.8, libpng16.so.16, libz.so.1) was
    imported first: the decodes equal those of a clean process."""
    clean = _decode("local", images, [])
    assert clean.returncode == 0, clean.stderr
    crowded = _decode("local", images, stand_ins)
    assert crowded.returncode == 0, crowded.stderr
    expected, got = json.loads(clean.stdout), json.loads(crowded.stdout)
    assert got == expected
    assert got["jpeg_window"][1] == [200, 150, 3] and got["jpeg"][1] == [300, 260, 3]


def test_libraries_loaded_globally_first_fail_the_import_naming_them(images, stand_ins):
    """A library loaded with RTLD_GLOBAL would take the engine's calls: the import refuses, naming
    it, rather than decode with it."""
    out = _decode("global", images, stand_ins)
    assert out.returncode != 0
    assert "ImportError" in out.stderr and "RTLD_GLOBAL" in out.stderr
    assert "stand-in" not in out.stderr  # nothing reached a stand-in's function
    assert any(os.path.basename(path) in out.stderr for path in stand_ins)


@pytest.mark.parametrize("framework", ["PIL.Image", "cv2", "torch", "torchvision", "jax", "tensorflow"])
def test_decoding_after_a_framework_was_imported_first(images, framework):
    """Each bundles image or compression libraries of its own (Pillow's libjpeg, OpenCV's, ...)."""
    root = framework.split(".")[0]
    spec = importlib.util.find_spec(root)
    if spec is None or spec.origin is None:  # absent, or only a namespace package (examples/tensorflow)
        pytest.skip(f"{root} is not installed here")
    clean = _decode("local", images, [])
    after = _decode("local", images, [], preload=framework)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout) == json.loads(clean.stdout)
