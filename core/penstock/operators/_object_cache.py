"""A size-bounded folder of objects fetched from object stores, for jobs that read them every epoch.

Objects are taken to stay as they are while a job reads them (as training data does): a cached
object is keyed by its URL alone. Least recently used objects go first when the folder would
outgrow its bound. Files are written whole under a temporary name and renamed, so several
processes may share a folder; one that finds a file gone (evicted by another) fetches again.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict


class ObjectCache:
    def __init__(self, folder: str, max_bytes: int):
        self.folder, self.max_bytes = folder, max_bytes
        os.makedirs(folder, exist_ok=True)
        held = []
        for entry in os.scandir(folder):
            if entry.is_file() and not entry.name.startswith("."):
                st = entry.stat()
                held.append((st.st_mtime, entry.name, st.st_size))
        self.sizes: OrderedDict[str, int] = OrderedDict((name, size) for _, name, size in sorted(held))
        self.total = sum(self.sizes.values())

    @staticmethod
    def _name(url: str) -> str:
        return hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()

    def get(self, url: str) -> bytes | None:
        name = self._name(url)
        if name not in self.sizes:
            return None
        try:
            with open(os.path.join(self.folder, name), "rb") as f:
                data = f.read()
        except OSError:
            self.total -= self.sizes.pop(name)
            return None
        self.sizes.move_to_end(name)
        return data

    def put(self, url: str, data) -> None:
        size = len(data)
        if size > self.max_bytes:
            return
        name = self._name(url)
        while self.sizes and self.total + size > self.max_bytes:
            old, old_size = self.sizes.popitem(last=False)
            self.total -= old_size
            try:
                os.unlink(os.path.join(self.folder, old))
            except OSError:
                pass  # already evicted by another process sharing the folder
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".part-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(self.folder, name))
        self.total += size - self.sizes.pop(name, 0)
        self.sizes[name] = size
