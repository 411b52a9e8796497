"""``readers.coco``: encoded images with their boxes, labels, polygons or pixelwise masks, and ids.

The annotations file is parsed once at build into packed arrays (all boxes of all images back to
back, with per-image offsets and counts); a batch is then one native read of the image files plus
vectorized gathers. Images are ordered by COCO image id (or as listed in ``images``); categories
are renumbered 1..K in the order the file lists them unless ``avoid_class_remapping``.
Pixelwise masks are painted natively per batch: a pixel belongs to a polygon when its centre lies
inside it (even-odd rule), run-length masks are decoded as COCO stores them, and objects are
painted in increasing label order (overlaps show the larger label).
Preprocessed annotations use DALI's binary layout (``<name>.dat``: a uint32 count, then the
values), so files saved by either library load in the other.
``file_root``, ``annotations_file`` and ``preprocessed_annotations`` may be URLs of object stores
(s3://, gs://, az://, http(s)://): the annotations are fetched once at build, each batch's images
with one GET per image, all in flight at once, started as the batch's samples are drawn.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .. import _engine
from .._registry import Arg, ArgType, OpSchema, register
from ..tensors import TensorListCPU
from . import _object_store as objects
from ._reader import READER_ARGS, FilesReader
from .readers_file import read_files

COCO_READER = OpSchema(
    "readers.COCO", "Reads COCO images (encoded) with their bounding boxes and labels.",
    args=[Arg("file_root", ArgType.STR, optional=True, doc="directory the image file names are relative to"),
          Arg("annotations_file", ArgType.STR, "", doc="COCO JSON annotations"),
          Arg("preprocessed_annotations", ArgType.STR, "", aliases=("meta_files_path",),
              doc="directory of annotations saved with save_preprocessed_annotations"),
          Arg("images", ArgType.STR_LIST, optional=True, doc="only these image file names, in this order"),
          Arg("ltrb", ArgType.BOOL, False, doc="boxes as [l, t, r, b] instead of [x, y, w, h]"),
          Arg("ratio", ArgType.BOOL, False, doc="coordinates relative to the image size"),
          Arg("skip_empty", ArgType.BOOL, False, doc="leave out images without objects"),
          Arg("size_threshold", ArgType.FLOAT, 0.1, doc="drop boxes narrower or lower than this (pixels)"),
          Arg("include_iscrowd", ArgType.BOOL, True, doc="keep annotations with iscrowd=1"),
          Arg("avoid_class_remapping", ArgType.BOOL, False, doc="labels are the category ids as they are"),
          Arg("image_ids", ArgType.BOOL, False, aliases=("save_img_ids",), doc="extra output: COCO image id"),
          Arg("polygon_masks", ArgType.BOOL, False, aliases=("masks",),
              doc="extra outputs: polygons [P, 3] (object, first vertex, end vertex) and vertices [V, 2]"),
          Arg("pixelwise_masks", ArgType.BOOL, False, doc="extra output: [H, W, 1] label mask"),
          Arg("save_preprocessed_annotations", ArgType.BOOL, False, aliases=("dump_meta_files",),
              doc="save the parsed annotations to save_preprocessed_annotations_dir"),
          Arg("save_preprocessed_annotations_dir", ArgType.STR, "", aliases=("dump_meta_files_path",),
              doc="where the parsed annotations are saved"),
          *READER_ARGS],
    min_inputs=0, num_outputs=lambda a: 3 + 2 * bool(a.get("polygon_masks")) + bool(a.get("pixelwise_masks"))
    + bool(a.get("image_ids")),
    is_reader=True, is_random=True, legacy_names=("COCOReader",))

# preprocessed annotation files: name -> (attribute, dtype, values per entry)
_SAVED = {"offsets": ("offsets", np.int32, 1), "boxes": ("boxes", np.float32, 1), "labels": ("labels", np.int32, 1),
          "counts": ("counts", np.int32, 1), "original_ids": ("ids", np.int32, 1)}
_SAVED_POLY = {"polygon_data": ("poly", np.int32, 3), "polygon_offset": ("poly_offsets", np.int64, 1),
               "polygons_count": ("poly_counts", np.int64, 1), "vertices": ("vertices", np.float32, 2),
               "vertices_offset": ("vert_offsets", np.int64, 1), "vertices_count": ("vert_counts", np.int64, 1)}


def decode_rle_string(text: str) -> list[int]:
    """COCO's compressed run lengths: 5-bit groups in characters from '0', a continuation bit,
    sign extension of the last group; from the third run on, values are deltas to the run two back."""
    runs: list[int] = []
    p = 0
    while p < len(text):
        value, shift, more = 0, 0, True
        while more:
            c = ord(text[p]) - 48
            value |= (c & 0x1F) << shift
            more = bool(c & 0x20)
            p += 1
            shift += 5
            if not more and c & 0x10:
                value |= -1 << shift
        if len(runs) > 2:
            value += runs[-2]
        runs.append(value)
    return runs


def ragged_take(offsets: np.ndarray, counts: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Flat positions of the entries of items ``indices`` (item i: offsets[i] .. +counts[i])."""
    c = counts[indices].astype(np.int64)
    starts = offsets[indices].astype(np.int64)
    return np.repeat(starts - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))


@register(COCO_READER)
class COCOReaderCPU(FilesReader):
    shuffles_list = True
    def scan(self) -> int:
        a = self.args
        if a["pixelwise_masks"] and a["polygon_masks"]:
            raise ValueError(f"{self.label}: polygon_masks and pixelwise_masks cannot be combined")
        if a["pixelwise_masks"] and (a["preprocessed_annotations"] or a["save_preprocessed_annotations"]):
            raise NotImplementedError(f"{self.label}: preprocessed annotations with pixelwise_masks are "
                                      "not supported")
        if a["file_root"] is None:
            raise ValueError(f"{self.label}: 'file_root' is required")
        if a["preprocessed_annotations"]:
            self._load_preprocessed(a["preprocessed_annotations"])
        elif a["annotations_file"]:
            self._parse(a["annotations_file"])
        else:
            raise ValueError(f"{self.label}: give 'annotations_file' or 'preprocessed_annotations'")
        if a["save_preprocessed_annotations"]:
            self._save(a["save_preprocessed_annotations_dir"])
        self.paths = [objects.join(a["file_root"], f) for f in self.files]
        if not self.paths:
            raise RuntimeError(f"{self.label}: no images found in '{a['annotations_file']}'")
        self.names = self.files  # source_info: the file name as the annotations give it (DALI's)
        self.fetch_remote()
        self._box_rows = self.boxes.reshape(-1, 4)
        return len(self.paths)

    # -- annotations ------------------------------------------------------------------------------
    def _parse(self, path: str) -> None:
        a = self.args
        text = "".join(objects.read_text(self.label, path, "annotations_file"))
        try:
            data = json.loads(text)
        except ValueError as e:
            raise RuntimeError(f"{self.label}: cannot read annotations_file '{path}': {e}") from None
        infos = data.get("images", [])
        remap = {c["id"]: k + 1 for k, c in enumerate(data.get("categories", []))}
        if a["images"] is not None:
            by_name = {im["file_name"]: im for im in infos}
            infos = [by_name[name] for name in a["images"] if name in by_name]
        else:
            infos = sorted(infos, key=lambda im: im["id"])
        per_image: dict[int, list] = {im["id"]: [] for im in infos}
        thr = a["size_threshold"]
        for ann in data.get("annotations", []):
            box = ann.get("bbox")
            if box is None or len(box) != 4:
                raise RuntimeError(f"{self.label}: annotation {ann.get('id')} in '{path}' needs a 4-value 'bbox'")
            if ann.get("iscrowd", 0) and not a["include_iscrowd"]:
                continue
            if box[2] < thr or box[3] < thr:
                continue
            if ann.get("image_id") in per_image:
                per_image[ann["image_id"]].append(ann)
        polys = a["polygon_masks"] or a["pixelwise_masks"]
        files, ids, counts, boxes, labels = [], [], [], [], []
        poly, poly_counts, vertices, vert_counts = [], [], [], []
        rle, rle_counts, rle_per_image, heights, widths = [], [], [], [], []
        rle_total = 0
        for im in infos:
            anns = per_image[im["id"]]
            if a["skip_empty"] and not anns:
                continue
            w, h = float(im.get("width", 1)), float(im.get("height", 1))
            # float32 arithmetic throughout, as DALI's reader computes (bit-identical boxes)
            scale = np.array([w, h, w, h], np.float32) if a["ratio"] else np.ones(4, np.float32)
            files.append(im["file_name"])
            ids.append(im["id"])
            counts.append(len(anns))
            for ann in anns:
                b = np.asarray(ann["bbox"], np.float32)
                if a["ltrb"]:
                    b[2:] += b[:2]
                boxes.append(b / scale)
                cat = ann["category_id"]
                if not a["avoid_class_remapping"] and cat not in remap:
                    raise RuntimeError(f"{self.label}: annotation {ann.get('id')} in '{path}' has category "
                                       f"{cat}, which is not in 'categories'")
                labels.append(cat if a["avoid_class_remapping"] else remap[cat])
            if polys:
                # pixelwise masks are painted in pixels: their polygons are never made relative
                vscale = scale[:2] if a["polygon_masks"] else np.ones(2)
                np_, nv, nr = 0, 0, 0
                for obj, ann in enumerate(anns):
                    seg = ann.get("segmentation")
                    if isinstance(seg, dict) and a["pixelwise_masks"]:
                        runs = self._rle_counts(seg, im, path)
                        rle.append((obj, rle_total, len(runs)))
                        rle_total += len(runs)
                        rle_counts.append(runs)
                        nr += 1
                    if not isinstance(seg, list):
                        continue  # run-length (crowd) masks have no polygons
                    for ring in seg:
                        xy = np.asarray(ring, np.float64).reshape(-1, 2)
                        poly.append((obj, nv, nv + len(xy)))
                        vertices.append(xy / vscale)
                        nv += len(xy)
                        np_ += 1
                poly_counts.append(np_)
                vert_counts.append(nv)
                if a["pixelwise_masks"]:
                    heights.append(int(im.get("height", 0)))
                    widths.append(int(im.get("width", 0)))
                    rle_per_image.append(nr)
        self.files = files
        self.ids = np.asarray(ids, np.int32)
        self.counts = np.asarray(counts, np.int32)
        self.offsets = (np.cumsum(self.counts) - self.counts).astype(np.int32)
        self.boxes = np.asarray(boxes, np.float32).reshape(-1)
        self.labels = np.asarray(labels, np.int32)
        if polys:
            self.poly = np.asarray(poly, np.int32).reshape(-1, 3)
            self.poly_counts = np.asarray(poly_counts, np.int64)
            self.poly_offsets = np.cumsum(self.poly_counts) - self.poly_counts
            self.vertices = (np.concatenate(vertices) if vertices else np.zeros((0, 2))).astype(np.float32)
            self.vert_counts = np.asarray(vert_counts, np.int64)
            self.vert_offsets = np.cumsum(self.vert_counts) - self.vert_counts
        if a["pixelwise_masks"]:
            self.heights, self.widths = np.asarray(heights, np.int64), np.asarray(widths, np.int64)
            self.rle = np.asarray(rle, np.int64).reshape(-1, 3)
            self.rle_flat = np.concatenate(rle_counts).astype(np.int64) if rle_counts else np.zeros(0, np.int64)
            self.rle_cnt = np.asarray(rle_per_image, np.int64)
            self.rle_off = np.cumsum(self.rle_cnt) - self.rle_cnt

    def _rle_counts(self, seg: dict, im: dict, path: str) -> list[int]:
        """Run lengths of a COCO run-length mask (counts list, or COCO's compressed string)."""
        size = seg.get("size")
        if size != [im.get("height"), im.get("width")]:
            raise RuntimeError(f"{self.label}: a run-length mask of image {im['id']} in '{path}' has size "
                               f"{size}, the image is {im.get('height')}x{im.get('width')}")
        counts = seg.get("counts")
        if isinstance(counts, list):
            return [int(c) for c in counts]
        if not isinstance(counts, str):
            raise RuntimeError(f"{self.label}: a run-length mask of image {im['id']} in '{path}' has no counts")
        return decode_rle_string(counts)

    def _tables(self) -> dict:
        tables = dict(_SAVED)
        if not self.args["image_ids"]:
            del tables["original_ids"]
        if self.args["polygon_masks"]:
            tables.update(_SAVED_POLY)
        return tables

    def _save(self, directory: str) -> None:
        if not directory:
            raise ValueError(f"{self.label}: save_preprocessed_annotations needs save_preprocessed_annotations_dir")
        if objects.is_url(directory):
            raise NotImplementedError(f"{self.label}: argument 'save_preprocessed_annotations_dir': saving to object "
                                      f"stores ({directory!r}) is not implemented; give a local directory")
        os.makedirs(directory, exist_ok=True)
        for name, (attr, dtype, _) in self._tables().items():
            values = np.ascontiguousarray(getattr(self, attr), dtype)
            with open(os.path.join(directory, name + ".dat"), "wb") as f:
                f.write(np.uint32(len(values)).tobytes())
                f.write(values.tobytes())
        with open(os.path.join(directory, "filenames.dat"), "w") as f:
            f.writelines(name + "\n" for name in self.files)

    def _load_preprocessed(self, directory: str) -> None:
        for name, (attr, dtype, width) in self._tables().items():
            path = objects.join(directory, name + ".dat")
            try:
                raw = (np.frombuffer(objects.read_object(self.label, path), np.uint8) if objects.is_url(path)
                       else np.fromfile(path, np.uint8))
            except OSError as e:
                raise RuntimeError(f"{self.label}: cannot read preprocessed annotations '{path}': {e}") from None
            count = int(raw[:4].view(np.uint32)[0]) if raw.size >= 4 else -1
            values = raw[4:].view(dtype) if (raw.size - 4) % np.dtype(dtype).itemsize == 0 else None
            if values is None or count < 0 or values.size != count * width:
                raise RuntimeError(f"{self.label}: preprocessed annotations '{path}' are corrupt")
            setattr(self, attr, values.reshape(-1, width) if width > 1 else values)
        self.files = "".join(objects.read_text(self.label, objects.join(directory, "filenames.dat"),
                                               "preprocessed annotations")).split()

    # -- batches ---------------------------------------------------------------------------------
    def load(self, ws, indices: np.ndarray):
        a = self.args
        paths = [self.paths[i] for i in indices]
        info = self.sources(indices)
        n = len(indices)
        buf, sizes = read_files(self, ws, paths)
        out = [TensorListCPU._from_packed(buf, sizes.reshape(-1, 1), source_info=info)]
        take = ragged_take(self.offsets, self.counts, indices)
        counts = self.counts[indices].astype(np.int64)
        out.append(TensorListCPU._from_packed(np.ascontiguousarray(self._box_rows[take]).reshape(-1),
                                              np.stack([counts, np.full(n, 4)], 1), source_info=info))
        out.append(TensorListCPU._from_packed(self.labels[take], counts.reshape(-1, 1), source_info=info))
        if a["polygon_masks"]:
            pt = ragged_take(self.poly_offsets, self.poly_counts, indices)
            vt = ragged_take(self.vert_offsets, self.vert_counts, indices)
            pc, vc = self.poly_counts[indices], self.vert_counts[indices]
            out.append(TensorListCPU._from_packed(np.ascontiguousarray(self.poly[pt]).reshape(-1),
                                                  np.stack([pc, np.full(n, 3)], 1), source_info=info))
            out.append(TensorListCPU._from_packed(np.ascontiguousarray(self.vertices[vt]).reshape(-1),
                                                  np.stack([vc, np.full(n, 2)], 1), source_info=info))
        if a["pixelwise_masks"]:
            out.append(self._masks(ws, indices, info))
        if a["image_ids"]:
            out.append(TensorListCPU._from_packed(self.ids[indices].copy(), np.ones((n, 1), np.int64),
                                                  source_info=info))
        return out

    def _masks(self, ws, indices: np.ndarray, info: list[str]) -> TensorListCPU:
        """[H, W, 1] int32 label maps of the images ``indices``."""
        from .._batch import empty_batch
        n = len(indices)
        shapes = np.stack([self.heights[indices], self.widths[indices], np.ones(n, np.int64)], 1)
        out = empty_batch(shapes, np.int32, "HWC", info)
        rle_take = ragged_take(self.rle_off, self.rle_cnt, indices)
        rle_cnt = self.rle_cnt[indices]
        poly_take = ragged_take(self.poly_offsets, self.poly_counts, indices)
        _engine.coco_masks(ws.pool, out._buf, out._offsets, shapes[:, 0].copy(), shapes[:, 1].copy(),
                           self.labels, self.offsets[indices].astype(np.int64), self.counts[indices].astype(np.int64),
                           np.ascontiguousarray(self.poly[poly_take]),
                           (np.cumsum(self.poly_counts[indices]) - self.poly_counts[indices]).astype(np.int64),
                           self.poly_counts[indices].astype(np.int64), self.vertices,
                           self.vert_offsets[indices].astype(np.int64), np.ascontiguousarray(self.rle[rle_take]),
                           (np.cumsum(rle_cnt) - rle_cnt).astype(np.int64), rle_cnt.astype(np.int64), self.rle_flat)
        return out
