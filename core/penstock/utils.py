"""Looking at batches: ``show_batch(batch)`` draws a batch of images as a grid with matplotlib,
``save_grid(batch, path)`` writes that grid to an image file, ``make_grid(batch)`` returns it.

A batch is a pipeline output (``TensorListCPU``/``TensorListGPU``), an array of images (numpy,
torch, JAX ...) or a list of them; samples may differ in size. Layouts HWC, CHW and HW (from the
batch's ``layout()``, else guessed from the shapes); float images (normalized) are stretched
per image to the full range, so they are seen as they are, not clipped.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def _samples(batch: Any) -> tuple[list[np.ndarray], str]:
    """The batch's images as host arrays, and its layout when it knows it ("" otherwise)."""
    if hasattr(batch, "as_cpu") and hasattr(batch, "at"):
        batch = batch.as_cpu()
    if hasattr(batch, "at") and hasattr(batch, "layout"):
        return [np.asarray(batch.at(i)) for i in range(len(batch))], batch.layout() or ""
    if hasattr(batch, "detach"):  # a torch tensor, on whatever device
        batch = batch.detach().cpu().numpy()
    if isinstance(batch, (list, tuple)):
        return [np.asarray(x) for x in batch], ""
    return list(np.asarray(batch)), ""


def _as_hwc(image: np.ndarray, layout: str) -> np.ndarray:
    if image.ndim == 2:
        image = image[:, :, None]
    elif image.ndim == 3 and (layout == "CHW" or (not layout and image.shape[0] in (1, 3, 4)
                                                  and image.shape[2] not in (1, 3, 4))):
        image = image.transpose(1, 2, 0)
    elif image.ndim != 3:
        raise ValueError(f"expected images (HWC, CHW or HW), got a sample of shape {image.shape}")
    if image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    return image[:, :, :3]


def _as_uint8(image: np.ndarray) -> np.ndarray:
    if image.dtype == np.uint8:
        return image
    image = image.astype(np.float32)
    low, high = float(image.min()), float(image.max())
    scale = 255.0 / (high - low) if high > low else 0.0
    return np.round((image - low) * scale).astype(np.uint8)


def make_grid(batch: Any, columns: int | None = None, padding: int = 2, layout: str | None = None) -> np.ndarray:
    """The batch's images side by side, ``columns`` a row (default: a near-square grid), as one
    uint8 RGB array; each image in a cell as large as the largest, separated by ``padding`` pixels."""
    samples, known = _samples(batch)
    if not samples:
        raise ValueError("the batch is empty")
    images = [_as_uint8(_as_hwc(s, layout or known)) for s in samples]
    columns = columns or int(np.ceil(np.sqrt(len(images))))
    rows = -(-len(images) // columns)
    cell_h = max(i.shape[0] for i in images) + padding
    cell_w = max(i.shape[1] for i in images) + padding
    grid = np.zeros((rows * cell_h + padding, columns * cell_w + padding, 3), np.uint8)
    for k, image in enumerate(images):
        top, left = padding + (k // columns) * cell_h, padding + (k % columns) * cell_w
        grid[top:top + image.shape[0], left:left + image.shape[1]] = image
    return grid


def show_batch(batch: Any, labels: Sequence[Any] | Any = None, columns: int | None = None,
               layout: str | None = None, size: float = 2.5, title: str | None = None) -> Any:
    """Draws the batch's images in a grid of matplotlib axes, each titled with its label when
    ``labels`` are given (a list or a batch of them); returns the figure."""
    try:
        import matplotlib.pyplot as plt  # noqa: PLC0415 - optional dependency
    except ImportError:
        raise ImportError("show_batch needs matplotlib: pip install matplotlib") from None
    samples, known = _samples(batch)
    names = None if labels is None else [np.asarray(x).reshape(-1).tolist() for x in _samples(labels)[0]]
    columns = columns or int(np.ceil(np.sqrt(len(samples))))
    rows = -(-len(samples) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(size * columns, size * rows), squeeze=False)
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k < len(samples):
            ax.imshow(_as_uint8(_as_hwc(samples[k], layout or known)))
            if names is not None:
                ax.set_title(", ".join(str(v) for v in names[k]) if len(names[k]) != 1 else str(names[k][0]))
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure


def save_grid(batch: Any, path: str, columns: int | None = None, padding: int = 2, layout: str | None = None) -> None:
    """Writes ``make_grid(batch, ...)`` to ``path`` (PNG, JPEG ... by its extension), with matplotlib
    or else Pillow. Returns nothing, so that an interactive session prints nothing: ``make_grid``
    returns the grid."""
    grid = make_grid(batch, columns, padding, layout)
    try:
        import matplotlib.pyplot as plt  # noqa: PLC0415 - optional dependency
        plt.imsave(path, grid)
    except ImportError:
        try:
            from PIL import Image  # noqa: PLC0415 - optional dependency
        except ImportError:
            raise ImportError("save_grid needs matplotlib or Pillow: pip install matplotlib") from None
        Image.fromarray(grid).save(path)
