"""The numba side of :mod:`meshopt_batch.support.kernel_cache`: a per-kernel cache over two folders.

:class:`KernelCache` is numba's ``FunctionCache`` with its files placed by
:mod:`meshopt_batch.support.kernel_files` (the shipped folder inside the package, and the folder new
kernels are written to) and with code built for the ``generic`` CPU accepted where code for
this CPU is absent.  :func:`patch` gives it to every ``cache=True`` kernel of the packages;
other numba users in the process keep numba's own cache.  Loaded only once numba is.
"""

from __future__ import annotations

import gc
import inspect
import os
import sys
from pathlib import PurePosixPath

from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile, _CacheLocator
from numba.core.dispatcher import Dispatcher
from numba.core.runtime import rtsys

from meshopt_batch.support import kernel_files


class _Locator(_CacheLocator):
    """One kernel's folder and source stamp (the source's SHA-256, so the install's file times do not matter)."""

    def __init__(self, py_func, source: str, folder: str):
        self._py_file = source
        self._lineno = py_func.__code__.co_firstlineno
        self._folder = folder

    def get_cache_path(self):
        return self._folder

    def get_source_stamp(self):
        return kernel_files.source_hash(self._py_file)

    def get_disambiguator(self):
        return str(self._lineno)


class _Impl(CompileResultCacheImpl):
    """numba's compile-result serialisation and file naming, with the locator given instead of searched for."""

    def __init__(self, py_func, locator: _Locator):
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = locator
        modname = os.path.splitext(os.path.basename(locator._py_file))[0]
        self._filename_base = self.get_filename_base(f"{modname}.{py_func.__qualname__}", getattr(sys, "abiflags", ""))


class KernelCache(FunctionCache):
    """numba's per-function cache, reading the write folder then the shipped one, host code then generic code."""

    def __init__(self, py_func, source: str, rel: str):
        self._name = repr(py_func)
        self._py_func = py_func
        self._rel = rel
        sub = PurePosixPath(rel).parent
        shipped = os.path.join(kernel_files.SHIPPED_DIR, *sub.parts)
        target = kernel_files.write_dir()
        local = os.path.join(target, *sub.parts) if target is not None else None
        self._impl = _Impl(py_func, _Locator(py_func, source, local or shipped))
        self._cache_path = self._impl.locator.get_cache_path()
        stamp = self._impl.locator.get_source_stamp()
        base = self._impl.filename_base
        self._cache_file = IndexDataCacheFile(cache_path=self._cache_path, filename_base=base, source_stamp=stamp)
        self._files = [self._cache_file]
        if local is not None and local != shipped:
            self._files.append(IndexDataCacheFile(cache_path=shipped, filename_base=base, source_stamp=stamp))
        self._writable = local is not None
        self.enable()

    def load_overload(self, sig, target_context):
        """numba's load of a cached kernel, without the refresh of the whole target context that
        numba's own runs first: that refresh imports and installs every lowering and typing
        registry, which compiling needs (numba's compiler refreshes the contexts itself) but
        linking a compiled library does not; only the runtime the kernels allocate with (NRT)
        is set up, so that a command's first kernel loads without that start-up cost."""
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        triple, cpu, _features = key[1]
        keys = [key]
        if cpu != kernel_files.GENERIC_CPU:
            keys.append((key[0], (triple, kernel_files.GENERIC_CPU, ""), key[2]))
        for cache_file in self._files:
            for candidate in keys:
                try:
                    data = cache_file.load(candidate)
                except Exception:  # an unreadable index or entry is a miss, as a missing one
                    data = None
                if data is not None:
                    return self._impl.rebuild(target_context, data)
        kernel_files.note_miss(f"{self._rel}:{self._py_func.__qualname__}", self._rel)
        return None

    def _save_overload(self, sig, data):
        if self._writable:
            super()._save_overload(sig, data)

    @property
    def index_name(self) -> str:
        """The index file's path relative to a cache folder (two kernels with one name share entries)."""
        return f"{PurePosixPath(self._rel).parent}/{self._impl.filename_base}"

    def entries(self) -> int:
        """The compiled entries held for this kernel's current source, over both folders."""
        count = 0
        for cache_file in self._files:
            try:
                count += len(cache_file._load_index())
            except Exception:  # an unreadable index holds nothing usable
                pass
        return count


def _function_cache(original):
    def function_cache(py_func):
        try:
            source = inspect.getfile(py_func)
        except TypeError:
            source = None
        rel = kernel_files.relative_source(source) if source else None
        return KernelCache(py_func, source, rel) if rel is not None else original(py_func)

    function_cache.original = original
    return function_cache


def patch(dispatcher) -> None:
    """Make ``dispatcher.Dispatcher.enable_caching`` give the packages' kernels a :class:`KernelCache`."""
    current = dispatcher.FunctionCache
    if getattr(current, "original", None) is None:
        dispatcher.FunctionCache = _function_cache(current)


def cached_kernels() -> list:
    """Every live numba dispatcher of the packages with a :class:`KernelCache`, except ``inline="always"`` ones
    (numba inlines those into their callers and compiles no code of their own)."""
    found = [obj for obj in gc.get_objects() if isinstance(obj, Dispatcher) and isinstance(obj._cache, KernelCache)]
    return [d for d in found if d.targetoptions.get("inline", "never") != "always"]
