"""One atheris fuzzer: ``python fuzz.py TARGET [libFuzzer options] [CORPUS_DIR ...]``."""
import sys

import atheris

with atheris.instrument_imports(include=["penstock.operators.readers_file", "penstock.operators.image_decode",
                                          "penstock._checkpoint", "penstock.operators._reader"]):
    import targets  # noqa: E402  (the Python code under test is instrumented for coverage)


def main() -> None:
    target = targets.TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0]] + sys.argv[2:], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
