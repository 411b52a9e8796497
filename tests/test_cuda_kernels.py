"""Host-side plumbing of the GPU kernels (penstock._cuda.kernels) that needs no GPU; the kernels
themselves are compared with the CPU ones on the GPU (tests/test_gpu_operators.py)."""
import numpy as np

from penstock._cuda.kernels import budget_runs


def test_budget_runs_cut_where_the_sizes_before_pass_a_multiple_of_the_budget():
    assert budget_runs(np.array([5, 5, 5, 5, 5]), 10) == [(0, 2), (2, 4), (4, 5)]
    assert budget_runs(np.array([30, 1, 1]), 10) == [(0, 1), (1, 3)]  # a large item runs alone
    assert budget_runs(np.array([3]), 10) == [(0, 1)]
    assert budget_runs(np.zeros(0, np.int64), 10) == []
    assert budget_runs(np.array([0, 0, 4]), 1) == [(0, 3)]  # empty items join the next run


def test_budget_runs_cover_every_item_once_and_stay_within_budget_plus_their_last_item():
    rng = np.random.default_rng(2)
    for _ in range(50):
        sizes = rng.integers(0, 100, rng.integers(1, 40))
        budget = int(rng.integers(1, 300))
        runs = budget_runs(sizes, budget)
        assert [a for a, _ in runs] == [0] + [b for _, b in runs[:-1]] and runs[-1][1] == len(sizes)
        for a, b in runs:
            assert b > a and sizes[a:b - 1].sum() < budget


def test_a_prepared_launch_gives_native_code_its_function_and_integer_parameters():
    import types

    import pytest

    from penstock._cuda.kernels import BLOCK, Launch
    device_array = types.SimpleNamespace(data=types.SimpleNamespace(ptr=0x7F00_0000_1000))
    function = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=0xABC))
    launch = Launch(function, 3, (device_array, np.int32(-2), 5))
    # a negative count goes as its two's complement bytes (the driver reads the parameter's width)
    assert launch.native() == (0xABC, 3, BLOCK, [0x7F00_0000_1000, 2**64 - 2, 5])
    assert Launch(None, 0, ()).native() is None  # nothing to launch
    Launch(None, 0, ()).queue(stream=None)  # queues nothing
    with pytest.raises(TypeError, match="device arrays and integers, not float"):
        Launch(function, 1, (1.5,)).native()


def test_each_kernel_family_module_launches_its_own_cuda_file():
    """_cuda/kernels/<family>.py compiles and launches csrc/cuda/<family>.cu only (the emulated tests
    replace the compiled kernels, so the file names are checked here)."""
    import pathlib
    import re

    import penstock._cuda.kernels as kernels
    cuda = pathlib.Path(__file__).resolve().parent.parent / "csrc" / "cuda"
    families = [p for p in pathlib.Path(kernels.__file__).parent.glob("*.py") if not p.name.startswith("_")]
    assert families
    for path in families:
        assert (cuda / f"{path.stem}.cu").is_file(), f"{path.name} has no csrc/cuda/{path.stem}.cu"
        used = set(re.findall(r'self\._(?:fn|launch_batch|prepare_batch|grid_stride)\(\s*"(\w+)"', path.read_text()))
        assert used == {path.stem}, f"{path.name} launches kernels of {sorted(used)}"
