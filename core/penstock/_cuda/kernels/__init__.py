"""GPU batch kernels with the signatures of their CPU siblings in ``penstock._engine``.

An operator's Python code plans a batch (output shapes, windows, per-sample parameters) once for
both devices and calls ``ws.kernels.<name>(ws.pool, ...)``: on the CPU that is the native engine,
on the GPU an instance of :class:`GpuKernels`, which takes the same arguments with CuPy buffers
in place of numpy ones. Each call uploads its per-sample descriptors in one copy and launches
one grid per batch (resize: one per pass) on the pipeline's stream; nothing waits on the host.

One module per ``csrc/cuda/<family>.cu``, of the same name; ``_launch`` holds what they share.
"""
from ._launch import BLOCK, ITEMS, Launch, budget_runs
from .audio_features import AudioFeatureKernels
from .boxes import BoxKernels
from .clahe import ClaheKernels
from .color import ColorKernels
from .crop_mirror_normalize import CropMirrorNormalizeKernels
from .debayer import DebayerKernels
from .displacement import DisplacementKernels
from .elementwise import ElementwiseKernels
from .filter import FilterKernels
from .gaussian_blur import GaussianBlurKernels
from .image_decode import ImageDecodeKernels
from .jpeg_compression_distortion import JpegCompressionDistortionKernels
from .normalize import NormalizeKernels
from .occlusion import OcclusionKernels
from .one_hot import OneHotKernels
from .paste import PasteKernels
from .point_ops import PointOpKernels
from .pointwise import PointwiseKernels
from .reductions import ReductionKernels
from .resize import ResizeKernels
from .slice import SliceKernels
from .video import VideoKernels
from .warp import WarpKernels

__all__ = ["GpuKernels", "Launch", "BLOCK", "ITEMS", "budget_runs"]


class GpuKernels(AudioFeatureKernels, BoxKernels, ClaheKernels, ColorKernels, CropMirrorNormalizeKernels,
                 DebayerKernels, DisplacementKernels, ElementwiseKernels, FilterKernels, GaussianBlurKernels,
                 ImageDecodeKernels, JpegCompressionDistortionKernels, NormalizeKernels, OcclusionKernels,
                 OneHotKernels, PasteKernels, PointOpKernels, PointwiseKernels, ReductionKernels, ResizeKernels,
                 SliceKernels, VideoKernels, WarpKernels):
    """The GPU kernels of one pipeline (its device and stream): every family's."""
