"""Photo-like JPEG datasets for the benchmarks, made from real photographs that ship in a package.

Decoder speed depends on what is in the JPEGs: synthetic noise (flat spectrum, no smooth areas,
Huffman-heavy) decodes at very different speeds from photographs, and not alike on every
decoder. So the image benchmarks run on sets made from the photographs that scikit-image
bundles (astronaut, chelsea, coffee, rocket, motorcycle, hubble_deep_field, retina, ihc and a
few grey-scale scenes and textures, coloured): crops, rescales, flips, colour shifts and soft
blends of them, encoded like the target set (baseline JPEG, 4:2:0, quality 90-92).

  imagenet-like  short side 300-500 px, ~90 KB (0.38 bytes/pixel, quality 92): ImageNet's training
                 images (~110 KB at ~0.5-0.6 bytes/pixel, their qualities mixed)
  high-res       long side 1,600-4,000 px, 0.5-2 MB (~1.2 MB, quality 90): COCO/OpenImages
                 originals, phone photos
  noise          the old synthetic-noise set (520x430, noise sigma 17): a named stress case only

Sets are deterministic (seeded per image, whatever the number of worker processes), generated
once and cached on disk with a manifest of their statistics (mean bytes, mean dimensions, bytes
per pixel) so that a reader can check them against the real sets. The photographs are read with
Pillow from skimage's package folder, found without importing skimage: on a machine with no
scikit-image dependencies, carrying the scikit-image wheel (installed with --no-deps) is enough.

    python bench/photos.py --set imagenet-like --images 2048   # make (or find) the set, print its statistics
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import importlib.util
import io
import json
import multiprocessing
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.environ.get("PENSTOCK_BENCH_DATA", os.path.join(HERE, "..", "data", "bench_photos"))
GENERATOR_VERSION = 1  # bump when the generator's output changes: cached sets of another version are remade

# Colour photographs, with how often each is the main picture (scenes weigh more than the
# microscopy and astronomy images, as in a general-purpose photo collection).
COLOUR_PHOTOS = {"astronaut.png": 3, "chelsea.png": 3, "coffee.png": 3, "rocket.jpg": 3,
                 "motorcycle_left.png": 2, "motorcycle_right.png": 2, "hubble_deep_field.jpg": 1,
                 "retina.jpg": 1, "ihc.png": 1}
# Grey-scale photographs, coloured before use: scenes, and natural textures (foliage, ground,
# walls: the fine detail that scenes have).
GREY_SCENES = ("camera.png", "coins.png", "moon.png", "cell.png", "clock_motion.png")
TEXTURES = ("brick.png", "grass.png", "gravel.png")
GREY_PHOTOS = GREY_SCENES + TEXTURES


@dataclasses.dataclass(frozen=True)
class PhotoSetSpec:
    """What a set's pictures look like. A picture is a scene composed of photographs' windows, then
    resized by ``shrink``: ImageNet's pictures are camera photographs scaled down, with more detail
    per pixel than the scenes they were shrunk from; pictures larger than the source photographs
    show them enlarged (``zoom`` > 1), the more so the larger the picture, as a sharper camera
    shows the same scene in more pixels."""
    name: str
    side: str                       # "short" or "long": which side `side_range` bounds
    side_range: tuple[int, int]
    quality: int
    shrink: tuple[float, float]     # picture size / scene size
    zoom: tuple[float, float]       # scene pixels per source pixel, at the smallest picture size
    zoom_grows_with_size: bool      # zoom times (picture side / smallest side)
    classes: int
    default_images: int


SETS = {
    # Quality 92, not 90: the source photographs are cleaner than ImageNet's camera pictures (0.35
    # bytes per pixel at quality 90 against ImageNet's ~0.5-0.6 at its mixed qualities); 92 brings
    # a picture to ~90 KB (ImageNet's average ~110 KB), and bytes are what Huffman decoding costs.
    "imagenet-like": PhotoSetSpec("imagenet-like", "short", (300, 500), 92, (0.3, 0.5), (0.8, 1.1), False, 16, 2048),
    "high-res": PhotoSetSpec("high-res", "long", (1600, 4000), 90, (1.0, 1.0), (0.9, 1.2), True, 8, 256),
}
OBJECT_COVERAGE = (1.0, 1.6)  # the objects' total area over the scene's (they overlap, and fade at their edges)
TEXTURE_SHARE = 0.35          # objects that are a texture
NOISE_SET = "noise"
ALL_SETS = (*SETS, NOISE_SET)

# Shapes of photographs: width/height of landscape pictures and how often each comes; a quarter
# of the pictures are portrait (the same shapes turned).
ASPECTS = ((4 / 3, 0.5), (3 / 2, 0.3), (1.0, 0.1), (16 / 9, 0.1))
PORTRAIT_SHARE = 0.25


# ---- the source photographs -------------------------------------------------------------------

def photographs_folder() -> str:
    """skimage's bundled data folder, found without importing skimage (nor its dependencies)."""
    spec = importlib.util.find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the benchmark photographs come from scikit-image's package data: install scikit-image, "
                           "or carry its wheel and install it with `pip install --no-deps --target DIR` "
                           "(DIR on PYTHONPATH); its own dependencies are not needed")
    return os.path.join(list(spec.submodule_search_locations)[0], "data")


_SOURCES: dict[str, object] = {}


def _load(name: str):
    """A source photograph as an RGB PIL image (grey ones stay grey until coloured), loaded once a process."""
    from PIL import Image
    if name not in _SOURCES:
        with Image.open(os.path.join(photographs_folder(), name)) as im:
            _SOURCES[name] = im.convert("L" if name in GREY_PHOTOS else "RGB")
    return _SOURCES[name]


# ---- building one picture -------------------------------------------------------------------

def _target_size(rng: np.random.Generator, spec: PhotoSetSpec) -> tuple[int, int]:
    """(width, height) of the next picture: its bounded side drawn from the spec's range, a
    photograph's aspect ratio, a quarter of them portrait."""
    shapes, weights = zip(*ASPECTS)
    aspect = shapes[rng.choice(len(shapes), p=np.array(weights) / sum(weights))]
    side = int(rng.integers(spec.side_range[0], spec.side_range[1] + 1))
    long_side, short_side = (round(side * aspect), side) if spec.side == "short" else (side, round(side / aspect))
    return (short_side, long_side) if rng.random() < PORTRAIT_SHARE else (long_side, short_side)


def _colourise(grey, rng: np.random.Generator):
    """A grey photograph in colour: its levels mapped through a random two-colour ramp (dark to light)."""
    from PIL import ImageOps
    dark = tuple(int(v) for v in rng.integers(0, 90, 3))
    light = tuple(int(v) for v in rng.integers(160, 256, 3))
    return ImageOps.colorize(grey, dark, light)


def _source(rng: np.random.Generator, names: list[str], weights: list[float] | None = None):
    name = names[rng.choice(len(names), p=None if weights is None else np.array(weights) / sum(weights))]
    image = _load(name)
    return _colourise(image, rng) if image.mode == "L" else image


def _crop_to(rng: np.random.Generator, image, size: tuple[int, int], zoom: tuple[float, float]):
    """A random window of ``image`` with the aspect of ``size``, resized to ``size``: the window is
    size / z for z drawn from ``zoom``, made smaller where the source is too small (enlarging it
    more); mirrored half of the time."""
    from PIL import Image, ImageOps
    w, h = size
    z = float(rng.uniform(*zoom))
    fit = min(1.0, image.width * z / w, image.height * z / h)
    cw, ch = max(1.0, w / z * fit), max(1.0, h / z * fit)
    x0 = float(rng.uniform(0, max(0.0, image.width - cw)))
    y0 = float(rng.uniform(0, max(0.0, image.height - ch)))
    out = image.resize((w, h), Image.BICUBIC, box=(x0, y0, x0 + cw, y0 + ch))  # antialiased when shrinking
    return ImageOps.mirror(out) if rng.random() < 0.5 else out


def _colour_shift(rng: np.random.Generator, image):
    """White balance, exposure and saturation changes of the size that tell photographs apart."""
    from PIL import ImageEnhance
    gamma = float(rng.uniform(0.8, 1.25))
    luts = []
    for gain in rng.uniform(0.85, 1.15, 3):
        ramp = 255.0 * (np.arange(256) / 255.0) ** gamma * gain
        luts += np.clip(ramp, 0, 255).astype(np.uint8).tolist()
    return ImageEnhance.Color(image.point(luts)).enhance(float(rng.uniform(0.7, 1.3)))


def _blob_mask(rng: np.random.Generator, size: tuple[int, int]):
    """An irregular soft-edged shape filling most of ``size``: where an object of the scene shows.
    Soft edges, as where things overlap out of focus; no hard seams for the encoder to spend bits on."""
    from PIL import Image, ImageChops
    grid = rng.random((int(rng.integers(2, 5)), int(rng.integers(2, 5))))
    blobs = Image.fromarray((96 + 159 * grid).astype(np.uint8), "L").resize(size, Image.BICUBIC)
    return ImageChops.multiply(_soft_ellipse(size), blobs).point([min(255, 2 * v) for v in range(256)])


def _soft_ellipse(size: tuple[int, int]):
    """An ellipse filling ``size`` whose edge fades over ~12% of its width; drawn and blurred at
    an eighth of the size (the edge is smooth: nothing is lost), then enlarged."""
    from PIL import Image, ImageDraw, ImageFilter
    w, h = max(8, size[0] // 8), max(8, size[1] // 8)
    inset = 0.08 * min(w, h)
    small = Image.new("L", (w, h), 0)
    ImageDraw.Draw(small).ellipse((inset, inset, w - inset, h - inset), fill=255)
    return small.filter(ImageFilter.GaussianBlur(0.06 * min(w, h))).resize(size, Image.BILINEAR)


def _place_object(rng: np.random.Generator, scene, zoom: tuple[float, float]) -> int:
    """Pastes a window of another photograph (at ``zoom`` scene pixels per source pixel) somewhere
    in ``scene``, inside a soft-edged shape."""
    names = TEXTURES if rng.random() < TEXTURE_SHARE else (*COLOUR_PHOTOS, *GREY_SCENES)
    source = _source(rng, list(names))
    z = float(rng.uniform(*zoom))
    frac = rng.uniform(0.4, 1.0, 2)
    w = int(min(source.width * frac[0] * z, scene.width * 0.8))
    h = int(min(source.height * frac[1] * z, scene.height * 0.8))
    if min(w, h) < 16:
        return 0
    obj = _colour_shift(rng, _crop_to(rng, source, (w, h), (z, z)))
    x = int(rng.integers(-w // 4, scene.width - 3 * w // 4))
    y = int(rng.integers(-h // 4, scene.height - 3 * h // 4))
    scene.paste(obj, (x, y), _blob_mask(rng, (w, h)))
    return w * h


@functools.lru_cache(maxsize=8)  # a scene's windows share one size
def _feathered(size: tuple[int, int], feather: int):
    """A mask that is opaque inside ``size`` and fades out over ``feather`` pixels at the border."""
    from PIL import Image, ImageDraw, ImageFilter
    mask = Image.new("L", size, 0)
    ImageDraw.Draw(mask).rectangle((feather, feather, size[0] - feather, size[1] - feather), fill=255)
    return mask.filter(ImageFilter.GaussianBlur(feather / 2))


def _background(rng: np.random.Generator, size: tuple[int, int], zoom: tuple[float, float]):
    """The scene's background at the objects' detail: windows of colour photographs side by side,
    overlapping, each fading into its neighbours (no hard seams), colour-shifted."""
    from PIL import Image
    z = float(rng.uniform(*zoom))
    names, weights = list(COLOUR_PHOTOS), list(COLOUR_PHOTOS.values())
    cell = max(64, int(0.8 * 512 * z))  # the photographs are ~500 px: cells they fill at zoom z
    cols, rows = -(-size[0] // cell), -(-size[1] // cell)
    cw, ch = size[0] / cols, size[1] / rows
    overlap = int(0.15 * min(cw, ch))
    # laid out on a canvas larger by the overlap all round, so that the scene's own border does
    # not fade: only the seams between windows do
    scene = Image.new("RGB", (size[0] + 2 * overlap, size[1] + 2 * overlap))
    for r in range(rows):
        for c in range(cols):
            tile_size = (int(cw) + 3 * overlap, int(ch) + 3 * overlap)
            tile = _colour_shift(rng, _crop_to(rng, _source(rng, names, weights), tile_size, (z, z)))
            scene.paste(tile, (int(c * cw), int(r * ch)), _feathered(tile_size, overlap))
    scene = scene.crop((overlap, overlap, overlap + size[0], overlap + size[1]))
    return scene


def picture(spec: PhotoSetSpec, seed: int, index: int):
    """Picture ``index`` of a set: a scene (a background of photographs' windows fading into each
    other, then windows of other photographs and textures placed in it in soft-edged shapes, each
    flipped at random and colour-shifted) resized to the picture's size. Depends only on (spec,
    seed, index), not on the process or the order pictures are made in."""
    from PIL import Image
    rng = np.random.default_rng([seed, GENERATOR_VERSION, zlib.crc32(spec.name.encode()), index])
    w, h = _target_size(rng, spec)
    shrink = float(rng.uniform(*spec.shrink))
    scene_size = (round(w / shrink), round(h / shrink))
    side = min(w, h) if spec.side == "short" else max(w, h)
    growth = side / spec.side_range[0] if spec.zoom_grows_with_size else 1.0
    zoom = (spec.zoom[0] * growth, spec.zoom[1] * growth)
    scene = _background(rng, scene_size, zoom)
    covered, target = 0, float(rng.uniform(*OBJECT_COVERAGE)) * scene_size[0] * scene_size[1]
    for _ in range(32):  # a bound for scenes the photographs cover slowly (small objects)
        if covered >= target:
            break
        covered += _place_object(rng, scene, zoom)
    return scene.resize((w, h), Image.LANCZOS) if scene_size != (w, h) else scene


def encode(image, quality: int) -> bytes:
    """Baseline JPEG, 4:2:0, standard Huffman tables: how cameras and most web images are stored."""
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality, subsampling="4:2:0", optimize=False, progressive=False)
    return out.getvalue()


# ---- a set on disk ----------------------------------------------------------------------------

def _file_of(root: str, classes: int, index: int) -> str:
    return os.path.join(root, f"class_{index % classes:03d}", f"img_{index:05d}.jpg")


def _write_one(job: tuple[str, str, int, int, int]) -> tuple[int, int, int]:
    set_name, root, classes, seed, index = job
    spec = SETS[set_name]
    image = picture(spec, seed, index)
    data = encode(image, spec.quality)
    path = _file_of(root, classes, index)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)  # whole files only, also for a reader of a set another process is making
    return len(data), image.width, image.height


def statistics_of(sizes: list[tuple[int, int, int]]) -> dict:
    """Mean and range of file bytes and dimensions, and bytes per pixel, of (bytes, width, height) rows."""
    a = np.array(sizes, np.float64)
    nbytes, w, h = a[:, 0], a[:, 1], a[:, 2]
    short, long_ = np.minimum(w, h), np.maximum(w, h)
    return {"images": len(sizes), "mean_bytes": int(nbytes.mean()),
            "bytes_range": [int(nbytes.min()), int(nbytes.max())],
            "mean_width": round(float(w.mean())), "mean_height": round(float(h.mean())),
            "short_side_range": [int(short.min()), int(short.max())],
            "long_side_range": [int(long_.min()), int(long_.max())],
            "bytes_per_pixel": round(float(nbytes.sum() / (w * h).sum()), 3)}


def _write_noise_set(root: str, images: int, seed: int) -> list[tuple[int, int, int]]:
    """The synthetic set the benchmarks used before the photo sets: smooth shapes under heavy noise."""
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    from make_sample_data import make_dataset
    size, classes = (430, 520), 16
    make_dataset(root, classes=classes, per_class=-(-images // classes), size=size, noise_sigma=17.0, seed=seed)
    return [(os.path.getsize(os.path.join(d, f)), size[1], size[0])
            for d, _, files in os.walk(root) for f in files if f.endswith(".jpg")]


def photo_set(name: str, images: int | None = None, seed: int = 0, cache: str = DEFAULT_CACHE,
              workers: int | None = None) -> tuple[str, dict]:
    """(folder, statistics) of the named set with ``images`` pictures (the set's default when None),
    made if not cached yet. The folder holds class sub-folders (readers.file / ImageFolder layout);
    the statistics are the manifest's: mean bytes, dimensions, bytes per pixel."""
    if name not in ALL_SETS:
        raise ValueError(f"unknown photo set {name!r}: one of {', '.join(ALL_SETS)}")
    images = images or SETS.get(name, SETS["imagenet-like"]).default_images
    root = os.path.abspath(os.path.join(cache, f"{name}-n{images}-s{seed}-v{GENERATOR_VERSION}"))
    manifest = root + ".json"  # beside the folder, not in it: readers would take it for a sample
    if os.path.exists(manifest):
        with open(manifest) as f:
            return root, json.load(f)
    if name == NOISE_SET:
        rows = _write_noise_set(root, images, seed)
    else:
        classes = SETS[name].classes
        for k in range(classes):
            os.makedirs(os.path.join(root, f"class_{k:03d}"), exist_ok=True)
        jobs = [(name, root, classes, seed, i) for i in range(images)]
        rows = _run_jobs(jobs, workers)
    stats = {"set": name, "seed": seed, "generator_version": GENERATOR_VERSION, **statistics_of(rows)}
    with open(manifest + ".tmp", "w") as f:
        json.dump(stats, f)
    os.replace(manifest + ".tmp", manifest)  # written last: a set cut off half-way is made again
    return root, stats


def _run_jobs(jobs: list, workers: int | None) -> list[tuple[int, int, int]]:
    workers = min(len(jobs), workers or os.cpu_count() or 1)
    if workers <= 1:
        return [_write_one(job) for job in jobs]
    # fork: the bench makes its data before it starts any threads of its own
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        return list(pool.map(_write_one, jobs, chunksize=4))


def add_arguments(ap: argparse.ArgumentParser, default_set: str = "imagenet-like", default_images: int | None = None,
                  sweep: bool = False) -> None:
    """The dataset options of an image benchmark: --set (--sets, comma-separated, for a ``sweep``),
    --images and --data-cache."""
    if sweep:
        ap.add_argument("--sets", default=default_set, help=f"comma-separated, of {', '.join(ALL_SETS)} "
                        f"(noise: the synthetic stress case, never the headline); default {default_set}")
    else:
        ap.add_argument("--set", default=default_set, choices=ALL_SETS,
                        help=f"the synthetic noise set is a stress case, never the headline; default {default_set}")
    ap.add_argument("--images", type=int, default=default_images, help="pictures per set (default: the set's)")
    ap.add_argument("--data-cache", default=DEFAULT_CACHE, help="where generated sets are kept")


def prepared(args: argparse.Namespace, name: str | None = None) -> str:
    """The folder of the set the arguments name (``name`` overrides --set), made if needed; prints
    its statistics as a JSON line so that every benchmark's output says what it ran on."""
    root, stats = photo_set(name or args.set, args.images, cache=args.data_cache)
    print(json.dumps({"bench": "dataset", "dataset": stats["set"], **{k: v for k, v in stats.items() if k != "set"},
                      "root": root}), flush=True)
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap)
    prepared(ap.parse_args())


if __name__ == "__main__":
    main()
