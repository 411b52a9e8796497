"""The benchmarks' --variant (bench/_common.py): a named penstock system with environment variables
and mixed decoder arguments, run in the alternating rounds beside the others (train_e2e's feeds,
rn50_gpu's systems)."""
import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import _common  # noqa: E402


def test_a_variant_splits_its_settings_into_environment_and_decoder_arguments():
    name, (env, decoder_args) = _common.variant(
        ["cf", "PENSTOCK_CONSUMER_FIRST_US=4000", "decoder.hw_decoder_load=0.99", "decoder.hybrid_huffman_threshold=0"])
    assert name == "cf"
    assert env == {"PENSTOCK_CONSUMER_FIRST_US": "4000"}
    assert decoder_args == {"hw_decoder_load": 0.99, "hybrid_huffman_threshold": 0}


@pytest.mark.parametrize("spec, says", [(["alone"], "expected a NAME"), (["a:b", "X=1"], "expected a NAME"),
                                        (["", "X=1"], "expected a NAME"),
                                        (["x", "novalue"], "is not KEY=VALUE"),
                                        (["x", "decoder.hw_decoder_load=high"], "not a Python literal")])
def test_a_bad_variant_says_what_is_wrong(spec, says):
    with pytest.raises(SystemExit, match=says):
        _common.variant(spec)


def test_variants_by_name_and_the_settings_each_system_runs_with():
    ap = _common.bench_parser("doc")
    _common.add_variant_option(ap, "system")
    args = ap.parse_args(["--variant", "normal", "PENSTOCK_STREAM_PRIORITY=normal",
                          "--variant", "hw", "decoder.hw_decoder_load=0.9"])
    variants = _common.parsed_variants(args)
    assert variants == {"normal": ({"PENSTOCK_STREAM_PRIORITY": "normal"}, {}),
                        "hw": ({}, {"hw_decoder_load": 0.9})}
    assert _common.variant_of(variants, "penstock") == ({}, {})
    assert _common.variant_of(variants, "penstock:hw") == ({}, {"hw_decoder_load": 0.9})
    hw = _common.decoder_args_option({"hw_decoder_load": 0.9})
    assert _common.decoder_args_option({}) == []
    # what the worker reads back
    assert _common.variant_decoder_args(ap.parse_args(hw)) == {"hw_decoder_load": 0.9}
    assert _common.variant_decoder_args(ap.parse_args([])) is None
    with pytest.raises(SystemExit, match="--variant hw: given twice"):
        _common.parsed_variants(ap.parse_args(["--variant", "hw", "X=1", "--variant", "hw", "Y=2"]))


def test_the_pipeline_bench_runs_a_variant_beside_the_defaults_and_reports_its_settings(tmp_path):
    out = subprocess.run(
        [sys.executable, os.path.join(BENCH, "rn50_gpu.py"), "--device", "cpu", "--sets", "imagenet-like",
         "--images", "8", "--data-cache", str(tmp_path), "--pipelines", "train", "--threads", "1",
         "--systems", "penstock", "--rounds", "1", "--seconds", "0.1", "--warmup-seconds", "0",
         "--variant", "hw", "decoder.hw_decoder_load=0.9", "PENSTOCK_STREAM_PRIORITY=normal"],
        capture_output=True, text=True, timeout=300, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    results = {line["system"]: line for line in lines if line.get("bench") == "rn50_gpu" and "img_per_s" in line}
    assert set(results) == {"penstock", "penstock:hw"}
    assert results["penstock"]["decoder_args"] == {} and "env" not in results["penstock"]
    assert results["penstock:hw"]["decoder_args"] == {"hw_decoder_load": 0.9}
    assert results["penstock:hw"]["env"] == {"PENSTOCK_STREAM_PRIORITY": "normal"}
    assert all(line["img_per_s"] > 0 for line in results.values())
    ratio, = [line for line in lines if "vs_penstock" in line]
    assert ratio["system"] == "penstock:hw"
    plan, = [line["plan"] for line in lines if "plan" in line]  # the host named beside the card
    assert plan["host_cpu"]["logical_cores"] == len(os.sched_getaffinity(0))
    assert ratio["vs_penstock"] == pytest.approx(results["penstock:hw"]["img_per_s"] / results["penstock"]["img_per_s"],
                                                 abs=1e-3)


def _rn50_cpu_run(tmp_path, *variant: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, os.path.join(BENCH, "rn50_gpu.py"), "--device", "cpu", "--sets", "imagenet-like",
         "--images", "8", "--data-cache", str(tmp_path / "photos"), "--pipelines", "train", "--threads", "1",
         "--systems", "penstock", "--rounds", "1", "--seconds", "0.1", "--warmup-seconds", "0", "--variant", *variant],
        capture_output=True, text=True, timeout=300)


def test_a_variants_settings_reach_its_worker_and_no_other(tmp_path):
    # the environment: a sitecustomize on the variant's PYTHONPATH records each worker that starts with it
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, sys\nopen(os.path.join(os.path.dirname(__file__), 'started'), 'a').write(sys.argv[2] + '\\n')\n")
    path = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    done = _rn50_cpu_run(tmp_path, "hooked", f"PYTHONPATH={path}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (hook / "started").read_text().split() == ["penstock:hooked"]
    # the decoder's arguments: the worker's operator is given them (and names the one it does not know)
    done = _rn50_cpu_run(tmp_path, "bad", "decoder.no_such_arg=1")
    assert done.returncode != 0
    assert "decoders.image_random_crop: unknown argument 'no_such_arg'" in done.stderr


def test_penstocks_runs_say_what_its_arenas_and_pool_hold_and_dalis_do_not():
    import rn50_gpu
    from penstock._cuda import _pools
    assert rn50_gpu.held_gpu_mb("nvidia.dali") == {}
    held = rn50_gpu.held_gpu_mb("penstock")
    assert held["held_gpu_mb:arenas"] == round(_pools.device_memory_held()["arenas"] / 2**20, 1)
    assert set(held) <= {"held_gpu_mb:arenas", "held_gpu_mb:pool", "held_gpu_mb:pool_in_use"}


def _dali_site(tmp_path):
    """A folder as DALI's staging makes one: DALI, and nvImageCodec beside it."""
    site = tmp_path / "dalisite"
    (site / "nvidia" / "dali").mkdir(parents=True)
    (site / "nvidia" / "nvimgcodec").mkdir()
    return str(site)


def test_a_system_other_than_dali_runs_without_dalis_folder_on_its_path(tmp_path, monkeypatch):
    site, other = _dali_site(tmp_path), str(tmp_path / "bench_site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([other, site]))
    monkeypatch.setattr(_common, "module_exists", lambda name: False)
    assert _common.own_path("penstock", {}) == {"PYTHONPATH": other}
    assert _common.own_path("penstock:h8", {"X": "1"}) == {"X": "1", "PYTHONPATH": other}
    for dali in ("dali", "dali-tuned"):
        assert _common.own_path(dali, {}) is None  # this process's environment
    assert _common.own_path("penstock:mine", {"PYTHONPATH": site}) == {"PYTHONPATH": site}  # a variant's own
    monkeypatch.setenv("PYTHONPATH", other)
    assert _common.own_path("penstock", {}) is None


@pytest.mark.parametrize("imports_without", [True, False])
def test_dalis_folder_stays_where_nvimgcodec_imports_only_from_it(tmp_path, monkeypatch, imports_without):
    """penstock's GPU decoders need nvImageCodec, which DALI's staging brings into its folder: that
    folder stays on penstock's path unless nvImageCodec imports without it (a worker is asked, once a path)."""
    site, other = _dali_site(tmp_path), str(tmp_path / "bench_site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([site, other]))
    monkeypatch.setattr(_common, "module_exists", lambda name: name == "nvidia.nvimgcodec")
    asked = []

    def run(cmd, env, capture_output):
        asked.append(env["PYTHONPATH"])
        return subprocess.CompletedProcess(cmd, 0 if imports_without else 1)
    monkeypatch.setattr(_common.subprocess, "run", run)
    for system in ("penstock", "penstock:h8"):
        assert _common.own_path(system, {}) == ({"PYTHONPATH": other} if imports_without else None)
    assert asked == [other]  # once per path
