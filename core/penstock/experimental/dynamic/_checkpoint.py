"""``Checkpoint``: the states of chosen readers and generators under names, saved and restored
together (``ndd.checkpoint``). Each object keeps its own state (``get_state()`` / ``set_state()``);
a checkpoint only gathers, stores and hands them back."""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import string
from typing import Any

_FORMAT_VERSION = 1
_AUTO_PREFIX = "__op_"  # the names ``register`` gives objects registered without one


@dataclasses.dataclass(frozen=True)
class _Entry:
    state: Any
    type_name: str | None = None  # the class of the object the state came from, checked when applied


class Checkpoint:
    """The states of registered readers (``ndd.readers.*``) and ``ndd.random.RNG``s, by name.

    ``register(obj, name)`` adds an object (a pending state of that name, from ``load`` or
    ``set_state``, is applied to it at once); ``collect()`` reads every registered object's state;
    ``save(pattern)`` / ``load(pattern)`` write and read them as JSON, ``pattern`` optionally
    holding ``{seq}`` (``"ckpt_{seq:04d}.json"``: save picks the next free number, load the highest).
    Objects registered without a name get sequential names, so a resumed run that registers
    them in the same order finds its states.
    """

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forgets the registered objects and the states."""
        self._objects: dict[str, Any] = {}
        self._names_by_id: dict[int, str] = {}
        self._states: dict[str, _Entry] = {}
        self._pending: set[str] = set()  # states not yet applied to their object
        self._complete = False            # the states are what collect() read
        self._loaded = False              # the states came from load() / deserialize()
        self._next_seq: int | None = None

    @property
    def is_complete(self) -> bool:
        """Whether the states are those the last ``collect()`` read."""
        return self._complete

    @property
    def is_loaded(self) -> bool:
        """Whether the states came from ``load()`` or ``deserialize()``."""
        return self._loaded

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._objects)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, name: Any) -> bool:
        return str(name) in self._objects

    # -- registration
    def register(self, obj: Any, name: str | None = None) -> str:
        """Adds ``obj`` (a reader or an RNG) under ``name`` (a sequential name if None; an object
        registered before keeps its name) and returns the name. A reader is switched to
        checkpointing, which it must not have read without."""
        known = self._names_by_id.get(id(obj))
        if name is None and known is not None:
            self._apply(known)
            return known
        if name is not None:
            if not name:
                raise ValueError("A checkpoint name must not be empty")
            if name.startswith(_AUTO_PREFIX):
                raise ValueError(f"Names starting with {_AUTO_PREFIX!r} are given by register() itself")
            if known is not None and known != name:
                raise RuntimeError(f"The object is registered as {known!r} already; it cannot be registered "
                                   f"again as {name!r}")
        key = name if name is not None else f"{_AUTO_PREFIX}{len(self._objects)}"
        previous = self._objects.get(key)
        if previous is None:
            if self._complete:
                raise RuntimeError(f"Cannot register {key!r} in a checkpoint that collect() has completed; "
                                   "clear() it first")
            if self._loaded and key not in self._states:
                raise KeyError(f"The loaded checkpoint has no state for {key!r}"
                               + ("; registering in another order than the saved run's? Give names"
                                  if name is None else ""))
        elif previous is not obj:
            if type(previous) is not type(obj):
                raise TypeError(f"{key!r} holds a {type(previous).__qualname__}; it cannot be replaced by a "
                                f"{type(obj).__qualname__}")
            del self._names_by_id[id(previous)]
        enable = getattr(obj, "_enable_checkpointing", None)
        if enable is not None:
            enable()
        self._objects[key] = obj
        self._names_by_id[id(obj)] = key
        self._apply(key)
        return key

    def _apply(self, key: str) -> None:
        if key not in self._pending:
            return
        entry, obj = self._states[key], self._objects[key]
        if entry.type_name is not None and entry.type_name != type(obj).__qualname__:
            raise TypeError(f"The checkpoint's state of {key!r} is a {entry.type_name}'s; the object registered "
                            f"there is a {type(obj).__qualname__}")
        obj.set_state(entry.state)
        self._pending.discard(key)

    # -- states
    def get_state(self, name: str) -> Any:
        """The stored state of the object registered as ``name`` (None if there is none yet)."""
        key = str(name)
        if key not in self._objects:
            raise KeyError(f"Nothing is registered as {key!r}")
        entry = self._states.get(key)
        return None if entry is None else entry.state

    def set_state(self, name: str, value: Any, op_type: Any = None) -> None:
        """Stores ``value`` as the state of ``name``, applied when an object is registered there
        (or by ``restore()``); ``op_type`` (a class or its name) is checked against that object."""
        key = str(name)
        if self._complete and key not in self._objects:
            raise KeyError(f"Nothing is registered as {key!r}")
        if op_type is not None and not isinstance(op_type, (str, type)):
            raise TypeError(f"op_type must be a class or a class name, got {op_type!r}")
        type_name = op_type.__qualname__ if isinstance(op_type, type) else op_type
        self._states[key] = _Entry(value, type_name)
        self._pending.add(key)

    def collect(self) -> None:
        """Reads the state of every registered object."""
        self._check_no_orphans()
        self._states = {key: _Entry(obj.get_state(), type(obj).__qualname__) for key, obj in self._objects.items()}
        self._pending.clear()
        self._complete, self._loaded = True, False

    def restore(self) -> None:
        """Applies the states not applied yet; every registered object must have one (nothing
        happens while no state is stored)."""
        if not self._states:
            return
        self._check_no_orphans()
        missing = sorted(set(self._objects) - set(self._states))
        if missing:
            raise RuntimeError(f"The checkpoint has no state for {missing}")
        for key in sorted(self._pending):
            self._apply(key)

    def _check_no_orphans(self) -> None:
        orphans = sorted(set(self._states) - set(self._objects))
        if orphans:
            raise RuntimeError(f"The checkpoint holds states of {orphans}, which nothing is registered as")

    # -- text and files
    def serialize(self) -> str:
        """The states as JSON text."""
        if not self._states:
            raise RuntimeError("The checkpoint is empty: collect() (or set_state()) first")
        return json.dumps({"version": _FORMAT_VERSION,
                           "states": {k: {"state": str(e.state), "type": e.type_name} for k, e in self._states.items()}})

    def deserialize(self, text: str) -> None:
        """Replaces the states with those of ``serialize()``'s text; they are applied as objects
        are registered (or by ``restore()``)."""
        try:
            payload = json.loads(text)
        except ValueError as e:
            raise ValueError(f"not a checkpoint: {e}") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("states"), dict):
            raise ValueError("not a checkpoint (what serialize() or save() wrote)")
        if payload.get("version") != _FORMAT_VERSION:
            raise ValueError(f"checkpoint format version {payload.get('version')!r}; this version of penstock "
                             f"reads version {_FORMAT_VERSION}")
        states = {}
        for key, entry in payload["states"].items():
            if not isinstance(entry, dict) or "state" not in entry or not isinstance(entry.get("type"), (str, type(None))):
                raise ValueError(f"the checkpoint's entry {key!r} is malformed")
            states[str(key)] = _Entry(str(entry["state"]), entry.get("type"))
        self._states, self._pending = states, set(states)
        self._complete, self._loaded = False, True

    def save(self, filename: str) -> str:
        """Writes ``serialize()`` to ``filename`` (``{seq}`` in it: the next number no file has);
        returns the path written."""
        seq = self._next_seq if self._next_seq is not None else max((s for s, _ in _files(filename)), default=-1) + 1
        while _has_seq(filename) and os.path.exists(filename.format(seq=seq)):
            seq += 1
        path = filename.format(seq=seq)
        text = self.serialize()
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)  # a reader of the file never sees half of it
        self._next_seq = seq + 1
        return path

    def load(self, filename: str) -> str:
        """Reads the file ``filename`` names (with ``{seq}``: the highest number); returns its path."""
        found = sorted(_files(filename))
        if not found:
            raise FileNotFoundError(f"No checkpoint file matches {filename!r}")
        seq, path = found[-1]
        with open(path, encoding="utf-8") as f:
            self.deserialize(f.read())
        self._next_seq = seq + 1
        return path


def _has_seq(pattern: str) -> bool:
    fields = [field for _, field, _, _ in string.Formatter().parse(pattern) if field is not None]
    if fields not in ([], ["seq"]):
        raise ValueError(f"A checkpoint file name may hold one field, {{seq}}; {pattern!r} holds {fields}")
    return bool(fields)


def _files(pattern: str) -> list[tuple[int, str]]:
    """(sequence number, path) of the files ``pattern`` names; the number is 0 without ``{seq}``."""
    if not _has_seq(pattern):
        return [(0, pattern)] if os.path.exists(pattern) else []
    regex, wildcard = ["^"], []
    for literal, field, _, _ in string.Formatter().parse(pattern):
        regex.append(re.escape(literal))
        wildcard.append(glob.escape(literal))
        if field is not None:
            regex.append(r"(?P<seq>\d+)")
            wildcard.append("*")
    match = re.compile("".join(regex) + "$").match
    return [(int(m.group("seq")), path) for path in glob.glob("".join(wildcard)) if (m := match(path))]
