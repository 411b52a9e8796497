"""Samples in object stores: ``s3://``, ``gs://``, ``az://`` and ``http(s)://`` paths of the file-based readers.

Requests go through obstore (Rust's object_store; the README says why it and not s3fs): one
store per bucket, each with its pool of connections, its timeouts and its bounded retries with
exponential backoff. Every request runs on one event loop in a background thread, so a batch's
objects are fetched with as many GETs in flight as it has objects (up to ``max_in_flight()``), and
readers start the next batches' GETs before they need them (``ObjectReads.prefetch``).

Credentials, region and endpoint come from where the clients of each store look for them: for S3
the ``AWS_*`` environment variables (``AWS_ENDPOINT_URL`` included), else the profile
(``AWS_PROFILE``, ``default``) of ``~/.aws/config`` and ``~/.aws/credentials``, then the
instance's or container's role; ``GOOGLE_*`` and ``AZURE_*`` for the others. An endpoint given
as ``http://`` is taken as meaning plain HTTP is allowed.

Settings of penstock's own (environment): ``PENSTOCK_OBJECT_TIMEOUT`` (seconds a request may
take, default 30), ``PENSTOCK_OBJECT_RETRIES`` (retries of a failed request, default 3),
``PENSTOCK_OBJECT_REQUESTS`` (GETs in flight at once, default 128), ``PENSTOCK_OBJECT_CACHE``
(a folder caching fetched objects for later epochs) with
``PENSTOCK_OBJECT_CACHE_BYTES`` (its bound, default 10 GiB).
"""
from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import configparser
import io
import os
import posixpath
import re
import threading
import weakref
from collections import deque
from datetime import timedelta
from typing import Any, Awaitable, Callable, Coroutine, Sequence
from urllib.parse import urlsplit

import numpy as np

from .._operator import SampleError
from ._object_cache import ObjectCache

SCHEMES = ("s3", "gs", "az", "abfs", "abfss", "http", "https")
LIST_PAGE = 1000         # keys per listing request (S3's largest page)


def is_url(path: str) -> bool:
    return isinstance(path, str) and path.split("://", 1)[0].lower() in SCHEMES and "://" in path


def all_urls(label: str, what: str, paths: Sequence[str]) -> bool:
    """Whether ``paths`` are all URLs of object stores (False: all local paths); a mix is refused."""
    remote = sum(map(is_url, paths))
    if 0 < remote < len(paths):
        raise ValueError(f"{label}: {what} mix URLs and local paths; give one kind")
    return bool(remote)


def join(base: str, name: str) -> str:
    """``name`` under ``base``, a folder or a URL prefix; a URL or an absolute path stays as it is."""
    if is_url(name):
        return name
    if is_url(base):
        return posixpath.join(base, name.lstrip("/")) if name else base
    return os.path.join(base, name)


def dirname(path: str) -> str:
    return posixpath.dirname(path) if is_url(path) else os.path.dirname(os.path.abspath(path))


def _obstore():
    try:
        import obstore
    except ImportError:
        raise ImportError("reading from object stores (s3://, gs://, az://, http(s)://) needs obstore: "
                          "pip install 'penstock-data[s3]'") from None
    return obstore


# ---- stores: one per bucket, configured from the standard places -------------------------------

def _aws_profile() -> dict[str, str]:
    """What the AWS profile files give that the environment does not (obstore reads only the
    environment and the instance's or container's credentials)."""
    profile = os.environ.get("AWS_PROFILE", "default")
    wanted = {"region": "AWS_REGION", "endpoint_url": "AWS_ENDPOINT_URL", "aws_access_key_id": "AWS_ACCESS_KEY_ID",
              "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY", "aws_session_token": "AWS_SESSION_TOKEN"}
    found: dict[str, str] = {}
    sources = ((os.environ.get("AWS_CONFIG_FILE", "~/.aws/config"), f"profile {profile}"),
               (os.environ.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"), profile))
    for path, section in sources:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(os.path.expanduser(path))
        for name in (section, profile):
            if parser.has_section(name):
                for key, env in wanted.items():
                    if parser.has_option(name, key) and env not in os.environ:
                        found.setdefault(env.lower(), parser.get(name, key))
    if "AWS_DEFAULT_REGION" in os.environ:
        found.pop("aws_region", None)
    if "AWS_ENDPOINT_URL_S3" in os.environ:
        found["aws_endpoint_url"] = os.environ["AWS_ENDPOINT_URL_S3"]
    return found


def _timeout() -> float:
    return float(os.environ.get("PENSTOCK_OBJECT_TIMEOUT", "30"))


def _new_store(scheme: str, bucket: str) -> Any:
    obstore = _obstore()
    timeout = _timeout()
    retries = int(os.environ.get("PENSTOCK_OBJECT_RETRIES", "3"))
    retry = {"max_retries": retries, "retry_timeout": timedelta(seconds=timeout * (retries + 1)),
             "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=5),
                         "base": 2}}
    client = {"timeout": timedelta(seconds=timeout), "connect_timeout": timedelta(seconds=min(timeout, 10)),
              "pool_max_idle_per_host": str(max_in_flight())}
    if scheme == "s3":
        config = _aws_profile()
        endpoint = config.get("aws_endpoint_url") or os.environ.get("AWS_ENDPOINT_URL", "")
        client["allow_http"] = endpoint.startswith("http://")
        return obstore.store.S3Store(bucket, config=config, client_options=client, retry_config=retry)
    if scheme in ("http", "https"):
        client["allow_http"] = scheme == "http"
    return obstore.store.from_url(f"{scheme}://{bucket}", client_options=client, retry_config=retry)


_stores: dict[tuple, Any] = {}
_stores_lock = threading.Lock()
# settings a store is made with: a store is made anew when one of them changes
_SETTINGS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
             "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE",
             "AWS_SHARED_CREDENTIALS_FILE", "PENSTOCK_OBJECT_TIMEOUT", "PENSTOCK_OBJECT_RETRIES")


def locate(url: str) -> tuple[Any, str]:
    """The store holding ``url`` and the object's key in it."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    key = parts.path.lstrip("/")
    which = (scheme, parts.netloc, *map(os.environ.get, _SETTINGS))
    with _stores_lock:
        store = _stores.get(which)
        if store is None:
            store = _stores[which] = _new_store(scheme, parts.netloc)
    return store, key


# ---- the event loop the requests run on --------------------------------------------------------

def max_in_flight() -> int:
    """GETs at once over all readers of the process. Enough for a store tens of milliseconds away
    (128 objects of 100 KB per 30 ms: 400 MB/s); more only adds contention on a nearby server
    (on loopback, 512 halved the rate of 32-128: bench/s3_read.py)."""
    return int(os.environ.get("PENSTOCK_OBJECT_REQUESTS", "128"))


class _DeliveringLoop(asyncio.SelectorEventLoop):
    """An event loop that counts the calls other threads are making into it. The client's threads
    hand a result over with ``call_soon_threadsafe``, which queues it and then wakes the loop, the
    GIL released meanwhile: a request is answered (its task done) while the thread that answered
    it is still in that call, and a thread taking the GIL back once the interpreter finalizes is
    ended there, which aborts the process (the client's code cannot be unwound)."""

    def __init__(self) -> None:
        super().__init__()
        self.calling = 0
        self.calls_ended = threading.Condition()

    def call_soon_threadsafe(self, *args: Any, **kwargs: Any) -> asyncio.Handle:
        with self.calls_ended:
            self.calling += 1
        try:
            return super().call_soon_threadsafe(*args, **kwargs)
        finally:
            with self.calls_ended:
                self.calling -= 1
                self.calls_ended.notify_all()

    def wait_for_callers(self, timeout: float) -> None:
        with self.calls_ended:
            self.calls_ended.wait_for(lambda: self.calling == 0, timeout)


class _Loop:
    """An asyncio loop on a daemon thread; a semaphore bounds the requests in flight."""

    def __init__(self) -> None:
        self.loop = _DeliveringLoop()
        self.slots = asyncio.Semaphore(max_in_flight())
        self.in_flight = 0  # requests being answered now (the bench reports it)
        self.lock = threading.Lock()
        self.closing = False  # set at exit: no request starts after the last ones are waited for
        self.submitted: weakref.WeakSet = weakref.WeakSet()  # futures someone may still wait on
        self.thread = threading.Thread(target=self.loop.run_forever, name="penstock-objects", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine) -> concurrent.futures.Future:
        """The future of ``coro`` run on the loop; once the interpreter exits, a cancelled one
        (what asks then is a thread reading ahead, which a reader's close may be waiting for)."""
        with self.lock:
            if not self.closing:
                future = asyncio.run_coroutine_threadsafe(coro, self.loop)
                self.submitted.add(future)
                return future
        coro.close()
        future = concurrent.futures.Future()
        future.cancel()
        return future

    def stop(self) -> None:
        """Stops the loop; what waits on a request it will not answer now (the exit's wait for
        them ran out) is cancelled rather than left to time out."""
        with self.lock:
            self.closing = True
            unanswered = list(self.submitted)
        self.loop.call_soon_threadsafe(self.loop.stop)
        for future in unanswered:
            future.cancel()

    async def request(self, coro: Awaitable) -> Any:
        async with self.slots:
            self.in_flight += 1
            try:
                return await coro
            finally:
                self.in_flight -= 1


_loop: _Loop | None = None
_loop_lock = threading.Lock()


def event_loop() -> _Loop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = _Loop()
            atexit.register(_settle, _loop)
        return _loop


def _settle(loop: _Loop, bound: float = 10.0) -> None:
    """At exit, requests still in flight (batches read ahead) end first, within ``bound``
    seconds, no new one starts (threads still running, a pipeline's stages reading ahead, are
    refused), and the loop stops: the client's threads would otherwise hand their results to an
    interpreter being torn down, which aborts the process."""
    async def drain() -> None:
        end = asyncio.get_running_loop().time() + bound
        while True:  # requests submitted before closing may start others (a batch's GETs)
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            left = end - asyncio.get_running_loop().time()
            if not pending or left <= 0:
                return
            await asyncio.wait(pending, timeout=left)

    with loop.lock:  # every request submitted before this is queued on the loop ahead of drain()
        loop.closing = True
        drained = asyncio.run_coroutine_threadsafe(drain(), loop.loop)
    try:
        drained.result(bound + 5)
    except Exception:  # noqa: BLE001 - exiting anyway
        pass
    loop.stop()
    loop.thread.join(5)
    loop.loop.wait_for_callers(5)  # the threads that answered the last requests are out of Python


def requests_in_flight() -> int:
    return 0 if _loop is None else _loop.in_flight


def describe_error(exc: BaseException) -> str:
    """The first line of a client error, named by its kind."""
    obstore = _obstore()
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0].split(": <?xml")[0]
    kinds = (((obstore.exceptions.NotFoundError, FileNotFoundError), "no such object"),
             ((obstore.exceptions.PermissionDeniedError, PermissionError), "access denied"),
             (obstore.exceptions.UnauthenticatedError, "not authenticated"))
    for kind, what in kinds:
        if isinstance(exc, kind):
            return f"{what} ({first})"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return f"timed out after {_timeout():g} s"
    return first


_waits_lock = threading.Lock()
_waiting: dict[threading.Thread, concurrent.futures.Future] = {}  # the request each thread waits for
_stopped: weakref.WeakSet = weakref.WeakSet()  # threads whose waits end at once (stop_waiting)


def wait(label: str, what: str, future: concurrent.futures.Future) -> Any:
    """The result of a request, with a bound on the wait: the client's own timeouts and retries
    end every request before it, so reaching it means the loop itself is stuck."""
    retries = int(os.environ.get("PENSTOCK_OBJECT_RETRIES", "3"))
    thread = threading.current_thread()
    with _waits_lock:
        if thread in _stopped:
            future.cancel()
        _waiting[thread] = future
    try:
        return future.result(timeout=_timeout() * (retries + 2) + 10)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise RuntimeError(f"{label}: reading {what} did not finish in time") from None
    except concurrent.futures.CancelledError:
        raise RuntimeError(f"{label}: reading {what} was cancelled (its pipeline shut down, or the interpreter "
                           "is exiting)") from None
    finally:
        with _waits_lock:
            _waiting.pop(thread, None)


def stop_waiting(threads: Sequence[threading.Thread]) -> None:
    """The requests ``threads`` wait for, now and from now on, are cancelled: their waits end at
    once (a pipeline shutting down joins its threads, and one the garbage collector finalizes on
    the event loop's own thread would otherwise wait for reads that thread alone can answer)."""
    with _waits_lock:
        for thread in threads:
            _stopped.add(thread)
            future = _waiting.get(thread)
            if future is not None:
                future.cancel()


# ---- listing ---------------------------------------------------------------------------------

async def _list(store: Any, prefix: str) -> list[str]:
    obstore = _obstore()
    keys: list[str] = []
    async for page in obstore.list(store, prefix=prefix or None, chunk_size=LIST_PAGE):
        keys += [meta["path"] for meta in page]
    return keys


async def _list_folders(store: Any, prefix: str, keep: Callable[[list[str]], list[str]]) -> dict[str, list[str]]:
    obstore = _obstore()
    base = prefix.rstrip("/") + "/" if prefix else ""
    top = await obstore.list_with_delimiter_async(store, prefix or None)
    folders = keep([p.rsplit("/", 1)[-1] for p in top["common_prefixes"]])
    listed = await asyncio.gather(*[obstore.list_with_delimiter_async(store, base + f) for f in folders])
    return {f: [m["path"].rsplit("/", 1)[-1] for m in found["objects"]] for f, found in zip(["", *folders],
                                                                                          [top, *listed])}


def _listing_error(label: str, root: str, exc: BaseException) -> RuntimeError:
    """A failed listing, named by URL; over http(s), what a server that cannot list means."""
    why = describe_error(exc)
    refused = re.search(r"PROPFIND.*status code: (405|501)", str(exc), re.S)
    if urlsplit(root).scheme.lower() in ("http", "https") and refused:
        why = ("an http(s) prefix is listed with WebDAV's PROPFIND, which this server does not answer (a plain "
               "HTTP server cannot list a folder): give the objects' URLs ('files' or a 'file_list') instead; "
               + why)
    return RuntimeError(f"{label}: cannot list '{root}': {why}")


def list_folders(label: str, root: str, keep: Callable[[list[str]], list[str]]) -> dict[str, list[str]]:
    """The names of the objects directly in each folder directly under the URL ``root`` (a
    reader's class folders), of the folders ``keep`` keeps (in its order), and under "" those
    directly under ``root``: one listing of the top level, then one of each folder, all at
    once, each in pages."""
    store, prefix = locate(root)
    try:
        return wait(label, f"the listing of '{root}'", event_loop().submit(_list_folders(store, prefix, keep)))
    except RuntimeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the client's errors, named by URL
        raise _listing_error(label, root, exc) from None


def list_all(label: str, root: str) -> list[str]:
    """Every object under the URL ``root``, as paths relative to it, sorted."""
    store, prefix = locate(root)
    try:
        keys = wait(label, f"the listing of '{root}'", event_loop().submit(_list(store, prefix)))
    except RuntimeError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _listing_error(label, root, exc) from None
    cut = len(prefix.rstrip("/")) + 1 if prefix else 0
    return sorted(k[cut:] for k in keys)


# ---- reading ---------------------------------------------------------------------------------

_cache: ObjectCache | None = None


def object_cache() -> ObjectCache | None:
    global _cache
    folder = os.environ.get("PENSTOCK_OBJECT_CACHE")
    if not folder:
        return None
    bound = int(os.environ.get("PENSTOCK_OBJECT_CACHE_BYTES", str(10 << 30)))
    if _cache is None or (_cache.folder, _cache.max_bytes) != (folder, bound):
        _cache = ObjectCache(folder, bound)
    return _cache


async def _get(url: str, cache: ObjectCache | None) -> Any:
    if cache is not None:
        held = cache.get(url)
        if held is not None:
            return held
    obstore = _obstore()
    store, key = locate(url)

    async def whole() -> Any:
        return await (await obstore.get_async(store, key)).bytes_async()

    data = await event_loop().request(whole())
    if cache is not None:
        cache.put(url, data)
    return data


async def _get_all(urls: Sequence[str]) -> list:
    cache = object_cache()
    return await asyncio.gather(*[_get(u, cache) for u in urls], return_exceptions=True)


RANGE_COALESCE = 4 << 20  # ranges of one object closer than this are fetched in one GET (record files)


def ignored_range(exc: BaseException) -> bool:
    """Whether a ranged GET failed because the server sent the whole object (HTTP lets a server
    ignore Range; object_store refuses the answer). rclone's S3 server does so."""
    return "non-partial response" in str(exc)


async def _get_ranges(url: str, starts: np.ndarray, ends: np.ndarray) -> list:
    obstore = _obstore()
    store, key = locate(url)
    try:
        return await event_loop().request(obstore.get_ranges_async(store, key, starts=starts.tolist(),
                                                                   ends=ends.tolist(), coalesce=RANGE_COALESCE))
    except Exception as exc:  # noqa: BLE001
        if not ignored_range(exc):
            raise
    whole = memoryview(await _get(url, None))  # a server that ignores ranges: the object once, cut here
    return [whole[b:e] for b, e in zip(starts.tolist(), ends.tolist())]


async def _ranges_by_object(urls: Sequence[str], which: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple:
    """The non-empty ranges grouped by object, one request (few merged GETs) per object, all at once."""
    wanted = np.flatnonzero(ends > starts)
    order = wanted[np.argsort(which[wanted], kind="stable")]
    objects, first = np.unique(which[order], return_index=True)
    groups = np.split(order, first[1:])
    fetched = await asyncio.gather(*[_get_ranges(urls[o], starts[g], ends[g]) for o, g in zip(objects, groups)],
                                   return_exceptions=True)
    return objects, groups, fetched


def read_ranges(label: str, urls: Sequence[str], which: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                samples: int) -> np.ndarray:
    """Byte ranges [starts[i], starts[i] + sizes[i]) of objects ``urls[which[i]]`` (samples of
    record files) packed in order, as ``_engine.read_file_ranges`` packs ranges of files. Ranges
    of one object go in one request, merged into few large GETs. Range i belongs to sample
    ``i % samples`` (the error of a range that fails names it)."""
    which, starts, sizes = (np.asarray(x, np.int64) for x in (which, starts, sizes))
    ends = starts + sizes
    objects, groups, fetched = wait(label, f"{len(starts)} ranges", event_loop().submit(
        _ranges_by_object(urls, which, starts, ends)))
    out = np.empty(int(sizes.sum()), np.uint8)
    at = np.cumsum(sizes) - sizes
    for o, g, parts in zip(objects, groups, fetched):
        if isinstance(parts, BaseException):
            raise SampleError(int(g[0]) % samples, f"{label}: cannot read '{urls[o]}': {describe_error(parts)}")
        for i, part in zip(g.tolist(), parts):
            if len(part) != sizes[i]:
                raise SampleError(i % samples, f"{label}: '{urls[o]}' is shorter than its index says "
                                               f"(range at offset {starts[i]})")
            out[at[i]:at[i] + sizes[i]] = np.frombuffer(part, np.uint8)
    return out


_file_pool: concurrent.futures.ThreadPoolExecutor | None = None
_file_pool_lock = threading.Lock()


def _file_requests() -> concurrent.futures.ThreadPoolExecutor:
    """The threads that make file objects' requests (each waited for by the thread reading the
    file). Not the event loop's: a finalizer the garbage collector runs on its thread may wait for
    a lock the reading thread holds (a reader's close). Not the reading threads themselves: the
    interpreter waits for these at exit, and a thread inside the client when it finalizes aborts
    the process."""
    global _file_pool
    with _file_pool_lock:
        if _file_pool is None:
            _file_pool = concurrent.futures.ThreadPoolExecutor(32, "penstock-object-files")
        return _file_pool


class _ObjectFile(io.RawIOBase):
    """A seekable binary file over an object (what ``tarfile`` and other file readers take): read
    through a window of ``chunk`` bytes fetched with one ranged GET, so that scanning a shard's
    headers costs a GET per ``chunk``, not one per seek."""

    def __init__(self, label: str, url: str, chunk: int):
        super().__init__()
        self.label, self.url, self.chunk = label, url, chunk
        self.store, self.key = locate(url)
        obstore = _obstore()
        try:
            self.size = int(self._request(lambda: obstore.head(self.store, self.key))["size"])
        except RuntimeError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise RuntimeError(f"{label}: cannot read '{url}': {describe_error(exc)}") from None
        self.pos, self.window, self.window_start = 0, memoryview(b""), 0

    def _request(self, call: Callable[[], Any]) -> Any:
        """The answer of the request ``call`` makes, made on a thread of ``_file_requests``."""
        return wait(self.label, f"'{self.url}'", _file_requests().submit(call))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _fetch(self, start: int, end: int) -> None:
        obstore = _obstore()
        try:
            self.window = memoryview(self._request(lambda: obstore.get_range(self.store, self.key, start=start,
                                                                                   end=end)))
            self.window_start = start
        except RuntimeError:
            raise
        except Exception as exc:  # noqa: BLE001
            if not ignored_range(exc):
                raise RuntimeError(f"{self.label}: cannot read '{self.url}': {describe_error(exc)}") from None
            # a server that ignores ranges: the whole object, once
            self.window, self.window_start = memoryview(read_object(self.label, self.url)), 0

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.size - self.pos)
        if n <= 0:
            return 0
        at = self.pos - self.window_start
        if at < 0 or at + n > len(self.window):
            self._fetch(self.pos, min(self.size, self.pos + max(n, self.chunk)))
            at = self.pos - self.window_start
        buffer[:n] = self.window[at:at + n]
        self.pos += n
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = max(0, offset + (0, self.pos, self.size)[whence])
        return self.pos

    def tell(self) -> int:
        return self.pos


def open_file(label: str, url: str, chunk: int = 8 << 20) -> io.RawIOBase:
    """A seekable file object over the object ``url`` (a tar shard scanned for its members)."""
    return _ObjectFile(label, url, chunk)


def read_text(label: str, path: str, what: str) -> list[str]:
    """The lines of a text file (a file list, an index file), local or in an object store."""
    try:
        if is_url(path):
            return list(io.StringIO(read_object(label, path).decode("utf-8"), newline=None))
        with open(path, encoding="utf-8") as f:
            return list(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{label}: {what} '{path}' is not UTF-8 text: {e}") from None
    except OSError as e:
        raise RuntimeError(f"{label}: cannot read {what} '{path}': {e}") from None


def read_object(label: str, url: str) -> bytes:
    """One whole object (a file list, an index file)."""
    data = wait(label, f"'{url}'", event_loop().submit(_get_all([url])))[0]
    if isinstance(data, BaseException):
        raise RuntimeError(f"{label}: cannot read '{url}': {describe_error(data)}")
    return bytes(data)


def pack(label: str, urls: Sequence[str], fetched: list) -> tuple[np.ndarray, np.ndarray]:
    """The objects of a batch in one buffer, with their sizes; the first that failed raises a
    SampleError (so ``on_error="skip"`` replaces it) naming the reader and its URL."""
    for i, data in enumerate(fetched):
        if isinstance(data, BaseException):
            raise SampleError(i, f"{label}: cannot read '{urls[i]}': {describe_error(data)}")
    sizes = np.fromiter((len(d) for d in fetched), np.int64, len(fetched))
    views = [np.frombuffer(d, np.uint8) for d in fetched]
    return (np.concatenate(views) if views else np.empty(0, np.uint8)), sizes


class ObjectReads:
    """The GETs of one reader's batches: ``prefetch`` starts a batch's (in the order the reader
    will load them), ``read`` takes them (or starts them, when it was not prefetched)."""

    def __init__(self, label: str):
        self.label = label
        self.pending: deque[tuple[tuple[str, ...], concurrent.futures.Future]] = deque()

    def prefetch(self, urls: Sequence[str]) -> None:
        self.pending.append((tuple(urls), event_loop().submit(_get_all(urls))))

    def read(self, urls: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The objects ``urls`` packed as ``_engine.read_files`` packs files."""
        urls = tuple(urls)
        future = None
        while self.pending:  # batches read ahead and then dropped (a restored checkpoint) are skipped
            queued, pending = self.pending.popleft()
            if queued == urls:
                future = pending
                break
            pending.cancel()
        if future is None:
            future = event_loop().submit(_get_all(urls))
        return pack(self.label, urls, wait(self.label, f"{len(urls)} objects", future))

    def close(self) -> None:
        while self.pending:
            self.pending.popleft()[1].cancel()
