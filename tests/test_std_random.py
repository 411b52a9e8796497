"""The C++ standard library's draws that readers make as DALI's do (the engine's std_shuffle and
minstd_below, _std_random's seeding), checked against the real thing: a small program compiled with
the system's g++ (which building penstock needs) and its libstdc++."""
import subprocess

from penstock import _engine
from penstock._std_random import minstd_state, seed_seq

CPP = r"""
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>
int main() {
  for (int n : {1, 2, 3, 7, 20, 1000, 70000}) {
    std::vector<int> v(n);
    std::iota(v.begin(), v.end(), 0);
    std::mt19937 g(524287 + n);
    std::shuffle(v.begin(), v.end(), g);
    for (int x : v) std::printf("%d ", x);
    std::printf("\n");
  }
  for (long long seed : {0LL, 1LL, 42LL, 1234LL, -1LL, 5000000000LL}) {
    std::seed_seq seq({seed});
    std::default_random_engine e(seq);
    for (int k : {1, 2, 3, 5, 20, 1000, 1, 7}) {
      std::uniform_int_distribution<> dis(0, k - 1);
      std::printf("%d ", dis(e));
    }
    std::printf("\n");
  }
  std::vector<unsigned> words(1024);
  std::seed_seq({5LL, 77LL}).generate(words.begin(), words.end());
  for (int k : {0, 1, 2, 511, 1023}) std::printf("%u ", words[k]);
  std::printf("\n");
}
"""


def _reference(tmp_path):
    src = tmp_path / "ref.cpp"
    src.write_text(CPP)
    exe = tmp_path / "ref"
    subprocess.run(["g++", "-std=c++17", "-O1", str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    return [[int(x) for x in line.split()] for line in lines]


def test_matches_libstdcxx(tmp_path):
    ref = _reference(tmp_path)
    sizes = (1, 2, 3, 7, 20, 1000, 70000)  # 70000: past 2^16, one swap per draw
    for line, n in zip(ref[:7], sizes):
        assert _engine.std_shuffle(list(range(n)), 524287 + n) == line
    for line, seed in zip(ref[7:13], (0, 1, 42, 1234, -1, 5000000000)):
        state, values = minstd_state(seed), []
        for k in (1, 2, 3, 5, 20, 1000, 1, 7):
            value, state = _engine.minstd_below(state, k)
            values.append(value)
        assert values == line
    words = seed_seq([5, 77], 1024)
    assert [words[k] for k in (0, 1, 2, 511, 1023)] == ref[13]
