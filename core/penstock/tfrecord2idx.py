"""``python -m penstock.tfrecord2idx TFRECORD INDEX``: writes the index file readers.tfrecord needs."""
from __future__ import annotations

import sys

from .tfrecord import make_index


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m penstock.tfrecord2idx TFRECORD INDEX", file=sys.stderr)
        return 2
    count = make_index(args[0], args[1])
    print(f"{args[1]}: {count} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
