"""Compiled numba kernels that travel with the package.

Every ``@njit(cache=True)`` kernel of this distribution's packages is cached in one folder
inside the installed package (:data:`~meshopt_batch.support.kernel_files.SHIPPED_DIR`) instead of
numba's defaults (a ``__pycache__`` beside each source file, or a per-user folder when that is
read-only).  A build (``pip install .``, ``pip wheel .``, ``python -m build``) fills that folder
by running the commands on small inputs (:mod:`meshopt_batch_app.warm_kernels`), so a first
run loads its kernels instead of compiling them.

Lookup, per kernel and argument types (:mod:`meshopt_batch.support.kernel_store`): the folder new
kernels are written to, then the shipped folder; in each, code for this CPU, then code built
for numba's ``generic`` CPU (what the build compiles, so that a wheel serves every CPU of its
architecture).  A kernel found nowhere is compiled, as numba does, and written to
:func:`~meshopt_batch.support.kernel_files.write_dir`: the shipped folder when writable, else
``NUMBA_CACHE_DIR`` or a per-user folder.  The first such compile of an installed package's
process says so on stderr, once, with the reason; in a source tree (``make setup``'s editable
install), or for a source changed since the build, kernels compile without a note (a
developer's edit).

:func:`install` loads no numba: it arranges for the cache to be set up when numba's
dispatcher module is imported, which happens before any kernel is defined.  Each top-level
package calls it from its ``__init__``, so every kernel module is covered whatever it imports.
"""

from __future__ import annotations

import os
import sys

#: The module whose ``FunctionCache`` numba gives every ``cache=True`` kernel.
_DISPATCHER = "numba.core.dispatcher"
_installed = []


def install() -> None:
    """Give every kernel of the packages defined from now on the package's kernel cache.

    Cheap and idempotent: if numba's dispatcher module is loaded it is patched now, otherwise
    right after it is first imported (a one-shot import hook), so ``import meshopt_batch``
    still loads no numba.
    """
    if _installed:
        return
    _installed.append(True)
    module = sys.modules.get(_DISPATCHER)
    if module is not None and hasattr(module, "Dispatcher"):
        _patch(module)
    else:
        sys.meta_path.insert(0, _PatchOnImport())


def _patch(dispatcher) -> None:
    from meshopt_batch.support import kernel_files  # lazy: import meshopt_batch stays cheap

    try:
        from meshopt_batch.support import kernel_store  # lazy: loads numba, which is being imported right now

        kernel_store.patch(dispatcher)
    except (ImportError, AttributeError, TypeError) as exc:
        kernel_files.note(f"kernel cache not set up ({type(exc).__name__}: {exc}); numba's own cache is used")


class _PatchOnImport:
    """A one-shot import hook: :func:`_patch` right after numba's dispatcher module has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _DISPATCHER:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


class _PatchingLoader:
    """Numba's own loader of the dispatcher module, then :func:`_patch`."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def kernel_status() -> list[str]:
    """Lines for ``meshopt-batch --version``: whether the kernels are ready and where the cache lives."""
    from meshopt_batch.support import kernel_files  # lazy: import meshopt_batch stays cheap

    built = kernel_files.manifest()
    shipped = kernel_files.SHIPPED_DIR
    if built is None:
        state = f"not compiled ahead (no {kernel_files.MANIFEST} in the cache): each compiles on its first use"
    elif stale := kernel_files.mismatch(built):
        state = f"stale, built for another runtime ({', '.join(stale)}): each compiles on its first use"
    elif changed := kernel_files.changed_sources(built):
        total = len(built["kernel_sources"])
        state = (f"{total - len(changed)} of {total} kernel sources as compiled; changed since: "
                 f"{', '.join(changed)} (their kernels compile on first use)")
    else:
        state = (f"ready: {built.get('kernels')} compiled ahead for numba {built.get('numba')}, "
                 f"{built.get('platform')}, {built.get('cpu')} CPU")
    lines = [f"kernels: {state}"]
    if built is not None and built.get("uncovered"):
        lines.append(f"kernels no command reached (compiled on first use): {', '.join(built['uncovered'])}")
    target = kernel_files.write_dir()
    if target == shipped:
        lines.append(f"kernel cache: {shipped}")
    elif target is None:
        lines.append(f"kernel cache: {shipped} (read-only, and no folder is writable: new kernels are not kept)")
    else:
        why = "NUMBA_CACHE_DIR" if os.environ.get("NUMBA_CACHE_DIR") else "the package folder is read-only"
        lines.append(f"kernel cache: {shipped}; new kernels: {target} ({why})")
    return lines
