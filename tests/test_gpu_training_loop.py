"""Mixed decoders feeding a model that trains on the GPU, as users run them.

The random-crop mixed decoder used to kill any process that had imported torchvision (its wheel
loads libjpeg-turbo 2.0.0 under the soname the engine's libjpeg had, and the engine's host share
decoded with it). Here torchvision's ResNet-18 trains (bf16 autocast, channels_last, SGD) on what
each mixed decoder delivers through the PyTorch iterator, and a JAX step through the JAX iterator:
every run completes, every file arrives once per epoch, and the images equal those of the same
pipeline decoding on the CPU.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
from penstock import _cuda, fn, pipeline_def, types  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not (_cuda.available() and torch.cuda.is_available()),
                                 reason="needs penstock's GPU backend and CUDA-enabled torch")]

FILES = 512
SIZE = 64  # the model's input
CORES = os.cpu_count() or 4


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[str]:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    from make_sample_data import photo_like
    from PIL import Image
    root = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(3)
    paths = []
    for k in range(FILES):
        path = str(root / f"{k:04d}.jpg")
        Image.fromarray(photo_like(rng, int(rng.integers(180, 300)), int(rng.integers(200, 340)))).save(
            path, quality=90)
        paths.append(path)
    return paths


DECODERS = {
    "image": lambda j, **kw: fn.decoders.image(j, **kw),
    "image_random_crop": lambda j, **kw: fn.decoders.image_random_crop(j, seed=11, **kw),
    "image_crop": lambda j, **kw: fn.decoders.image_crop(j, crop=(120, 150), crop_pos_x=0.3, crop_pos_y=0.6, **kw),
    "image_slice": lambda j, **kw: fn.decoders.image_slice(j, rel_start=(0.1, 0.15), rel_end=(0.85, 0.9), **kw),
}


def _pipeline(files, decoder: str, device: str, batch: int, threads: int, hw_load: float | None = None, **kw):
    """Decoded (``device``: "cpu" or "mixed") and resized to SIZE, uint8 HWC; the label is the file's index."""
    on = {"device": device, "output_type": types.RGB}
    if device == "mixed":
        on["jpeg_fancy_upsampling"] = True  # as the CPU decoders do
        if hw_load is not None:
            on["hw_decoder_load"] = hw_load

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0, seed=5, **kw)
    def pipe():
        jpegs, labels = fn.readers.file(files=files, labels=list(range(len(files))), random_shuffle=True,
                                        name="Reader")
        images = fn.resize(DECODERS[decoder](jpegs, **on), resize_x=SIZE, resize_y=SIZE)
        return images, labels.gpu() if device == "mixed" else labels

    return pipe()


class _Model:
    """torchvision's ResNet-18, trained as users do: bf16 autocast, channels_last, SGD."""

    def __init__(self):
        torch.backends.cudnn.benchmark = True
        self.net = torchvision.models.resnet18(num_classes=10).cuda().to(memory_format=torch.channels_last)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.01, momentum=0.9)
        self.losses: list[float] = []

    def step(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        x = images.permute(0, 3, 1, 2).float().div_(255).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(self.net(x).float(), labels.view(-1).long() % 10)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.losses.append(loss.detach())


def _train(pipes: list, epochs: int, model: _Model, checkpoint_at: int | None = None, restore=None) -> dict:
    """Trains on ``pipes`` (taking turns batch by batch) through DALIClassificationIterator;
    returns per pipeline, per epoch, the (label, image) pairs seen."""
    from penstock.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy
    iterators = [DALIClassificationIterator(p, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
                 for p in pipes]
    seen = {k: [] for k in range(len(pipes))}
    steps = 0
    for _ in range(epochs):
        epoch = {k: {} for k in range(len(pipes))}
        active = dict(enumerate(iterators))
        while active:
            for k, it in list(active.items()):
                try:
                    (batch,) = next(it)
                except StopIteration:
                    del active[k]
                    it.reset()
                    continue
                model.step(batch["data"], batch["label"])
                for label, image in zip(batch["label"].view(-1).tolist(), batch["data"].cpu().numpy()):
                    assert label not in epoch[k], f"file {label} arrived twice in one epoch"
                    epoch[k][label] = image
                steps += 1
                if checkpoint_at is not None and steps == checkpoint_at:
                    restore(pipes[k], it)
        for k in epoch:
            seen[k].append(epoch[k])
    torch.cuda.synchronize()
    assert all(np.isfinite(float(v)) for v in model.losses)
    return seen


def _assert_like_the_cpu(files, seen_epochs: list[dict], decoder: str, batch: int, epochs: int) -> None:
    """Every file once per epoch, and images within the decoders' tolerance of the CPU pipeline's."""
    reference = _pipeline(files, decoder, "cpu", batch, 4)
    expected = []
    for _ in range(epochs):
        epoch: dict = {}
        for _ in range(-(-FILES // batch)):
            images, labels = reference.run()
            for i in range(len(labels)):
                epoch.setdefault(int(labels.at(i).item()), images.at(i))
        expected.append(epoch)
    for got, want in zip(seen_epochs, expected):
        assert sorted(got) == list(range(FILES))
        diffs = np.stack([np.abs(got[k].astype(np.int16) - want[k].astype(np.int16)) for k in range(FILES)])
        assert diffs.mean() < 1.0 and diffs.max() <= 12  # GPU and host IDCTs differ slightly


@pytest.mark.parametrize("decoder", list(DECODERS))
@pytest.mark.parametrize("batch,threads,hw_load", [(64, 4, None), (256, min(16, CORES), 0.9)],
                         ids=["b64-t4-host-share", "b256-t16-gpu-only"])
def test_a_model_trains_on_every_mixed_decoder(files, decoder, batch, threads, hw_load):
    model = _Model()
    seen = _train([_pipeline(files, decoder, "mixed", batch, threads, hw_load)], 2, model)
    _assert_like_the_cpu(files, seen[0], decoder, batch, 2)


def test_a_validation_pipeline_takes_turns_with_the_training_one(files):
    model = _Model()
    train = _pipeline(files, "image_random_crop", "mixed", 64, 8)
    val = _pipeline(files, "image", "mixed", 128, 4)
    seen = _train([train, val], 2, model)
    _assert_like_the_cpu(files, seen[0], "image_random_crop", 64, 2)
    _assert_like_the_cpu(files, seen[1], "image", 128, 2)


def test_training_resumes_from_a_checkpoint_taken_in_the_middle(files):
    """A checkpoint after the 5th step: a new pipeline built from it delivers what the first went on
    to deliver."""
    checkpoint = {}

    def keep(pipe, iterator):
        checkpoint["state"] = iterator.checkpoints()[0]

    first = _train([_pipeline(files, "image_random_crop", "mixed", 64, 4, enable_checkpointing=True)], 1,
                   _Model(), checkpoint_at=5, restore=keep)[0][0]
    resumed = _pipeline(files, "image_random_crop", "mixed", 64, 4, enable_checkpointing=True,
                        checkpoint=checkpoint["state"])
    from penstock.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy
    rest = {}
    model = _Model()
    for (batch,) in DALIClassificationIterator(resumed, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL):
        model.step(batch["data"], batch["label"])
        for label, image in zip(batch["label"].view(-1).tolist(), batch["data"].cpu().numpy()):
            rest[label] = image
    assert len(rest) == FILES - 5 * 64 and set(rest) <= set(first)
    diffs = np.stack([np.abs(rest[k].astype(np.int16) - first[k].astype(np.int16)) for k in rest])
    assert diffs.mean() < 1.0 and diffs.max() <= 12  # the host share may take other samples this time


def test_the_jax_iterator_feeds_a_training_step(files):
    from _util import installed_or_skip
    jax = installed_or_skip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU here")
    import jax.numpy as jnp
    from penstock.plugin.jax import DALIGenericIterator

    @jax.jit
    def step(w, images, labels):
        def loss(w):
            logits = images.reshape(images.shape[0], -1).astype(jnp.float32) / 255 @ w
            return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(labels.shape[0]), labels.reshape(-1) % 10])
        value, grad = jax.value_and_grad(loss)(w)
        return w - 0.01 * grad, value

    w = jnp.zeros((SIZE * SIZE * 3, 10), jnp.float32)
    seen = set()
    for batch in DALIGenericIterator(_pipeline(files, "image_random_crop", "mixed", 64, 4), ["images", "labels"],
                                     reader_name="Reader"):
        w, value = step(w, batch["images"], batch["labels"])
        seen.update(np.asarray(batch["labels"]).reshape(-1).tolist())
    assert np.isfinite(float(value)) and seen == set(range(FILES))


_ISSUE_SCRIPT = textwrap.dedent("""
    import sys
    import torch, torchvision, penstock
    from penstock import fn, types
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet18().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(256, 3, 176, 176, device="cuda").contiguous(memory_format=torch.channels_last)
    files = sys.argv[1:]

    @penstock.pipeline_def(batch_size=256, num_threads=min(16, __import__("os").cpu_count()), device_id=0, seed=1)
    def pipe():
        j, l = fn.readers.file(files=files, random_shuffle=True, name="R")
        img = fn.decoders.image_random_crop(j, device="mixed", output_type=types.RGB)
        img = fn.resize(img, resize_x=176, resize_y=176)
        img = fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW", mean=[128.0], std=[64.0],
                                       mirror=fn.random.coin_flip())
        return img, l.gpu()

    p = pipe(); p.build()
    for _ in range(60):
        p.run()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().mean()
        opt.zero_grad(); loss.backward(); opt.step()
    torch.cuda.synchronize()
    print("trained", float(loss))
""")


def test_the_script_of_the_crash_report_trains_in_a_process_that_imported_torchvision_first(files):
    out = subprocess.run([sys.executable, "-X", "faulthandler", "-c", _ISSUE_SCRIPT, *files], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "trained" in out.stdout
