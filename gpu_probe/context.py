"""One headless OpenGL context per process (moderngl, EGL).

The probe needs OpenGL 4.3 (shader storage buffers and atomics in the vertex shader).
On a machine without a GPU this is Mesa's llvmpipe, a real OpenGL 4.5 implementation.

>>> from gpu_probe.context import get_context, gl_info
>>> ctx = get_context()          # the same object on every call
>>> gl_info()["renderer"]        # doctest: +SKIP
'llvmpipe (LLVM 15.0.6, 256 bits)'

When no context can be created, :func:`get_context` raises :class:`GLUnavailableError`
(a :class:`~meshopt_batch.support.errors.MeshoptBatchError`, so the CLI prints one line and exits
with 2) that says what to install.  What libEGL/Mesa print on stderr while the context is
created (``libEGL warning: MESA-LOADER: failed to open ...``) is captured and folded into
that one line.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
import tempfile
import threading

from meshopt_batch.support.errors import MeshoptBatchError

#: Debian/Ubuntu packages that give a headless EGL + OpenGL (Mesa llvmpipe) runtime.
DEBIAN_PACKAGES = "libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri"
INSTALL_HINT = (
    "install Mesa's EGL/OpenGL runtime (Debian/Ubuntu: "
    f"apt-get install {DEBIAN_PACKAGES}; Fedora: dnf install mesa-libEGL mesa-dri-drivers) "
    "or a GPU driver with EGL"
)
MIN_GL_VERSION = 430

_lock = threading.Lock()
_ctx = None
_error: str | None = None


class GLUnavailableError(MeshoptBatchError):
    """No usable headless OpenGL >= 4.3 context on this machine."""


def _create():
    try:
        import moderngl  # lazy: loads libGL; importing gpu_probe must not touch GL
    except ImportError as exc:  # pragma: no cover - moderngl is a dependency
        raise GLUnavailableError(f"moderngl is not importable ({exc}); pip install moderngl") from None
    chatter: list[str] = []
    try:
        with _fd2_captured(chatter):
            ctx = moderngl.create_context(standalone=True, backend="egl", require=MIN_GL_VERSION)
    except Exception as exc:  # moderngl/glcontext raise plain Exceptions
        reason = " ".join(str(exc).split()) or type(exc).__name__
        said = "; ".join(dict.fromkeys(" ".join(line.split()) for line in chatter if line.strip()))
        if said:
            reason += f"; the driver said: {said[:400]}"
        raise GLUnavailableError(
            f"cannot create a headless OpenGL {MIN_GL_VERSION // 100}.{MIN_GL_VERSION // 10 % 10} "
            f"context through EGL ({reason}); {INSTALL_HINT}"
        ) from None
    return ctx


@contextlib.contextmanager
def _fd2_captured(lines: list[str]):
    """Collect what is written to file descriptor 2 inside the block into ``lines`` (libEGL and
    Mesa print their warnings there, several lines, before an EGL call fails); the caller folds
    them into its one error line or drops them."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:                              # no stderr to capture
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines.extend(sink.read().decode("utf-8", errors="replace").splitlines())


def get_context():
    """The process-wide moderngl context (created on first use, then reused).

    Returns
    -------
    moderngl.Context
        A headless (EGL) OpenGL 4.3 context.

    Raises
    ------
    GLUnavailableError
        When no headless OpenGL 4.3 context can be created; the message names the
        packages to install. A failure is remembered, so later calls fail fast.
    """
    global _ctx, _error
    with _lock:
        if _ctx is not None:
            return _ctx
        if _error is not None:
            raise GLUnavailableError(_error)
        try:
            _ctx = _create()
        except GLUnavailableError as exc:
            _error = str(exc)
            raise
        return _ctx


def gl_available() -> bool:
    """Whether an OpenGL context can be had here (tests skip cleanly without one).

    Returns
    -------
    bool
        True when :func:`get_context` succeeds.
    """
    try:
        get_context()
    except GLUnavailableError:
        return False
    return True


def gl_info() -> dict:
    """Renderer, vendor, version and the extensions the probe cares about.

    Returns
    -------
    dict
        ``renderer``, ``vendor``, ``version`` (the driver strings),
        ``version_code`` (e.g. 450), ``pipeline_statistics`` (ARB_pipeline_statistics_query
        present), ``subgroup_extensions`` (the subgroup/ballot extensions present).
    """
    ctx = get_context()
    info = ctx.info
    ext = set(ctx.extensions)
    subgroup = sorted(
        e for e in ext
        if any(k in e for k in ("subgroup", "shader_ballot", "group_vote", "shader_thread_group",
                                "shader_thread_shuffle", "warp_shuffle", "wavefront"))
    )
    return {
        "renderer": info.get("GL_RENDERER", ""),
        "vendor": info.get("GL_VENDOR", ""),
        "version": info.get("GL_VERSION", ""),
        "version_code": int(ctx.version_code),
        "pipeline_statistics": "GL_ARB_pipeline_statistics_query" in ext or ctx.version_code >= 460,
        "subgroup_extensions": subgroup,
    }


# -- raw GL entry points that moderngl does not wrap (queries, enables) ----------------------

_procs: dict[str, object] = {}


def _get_proc_address():
    for name in ("EGL", "libEGL.so.1"):
        path = ctypes.util.find_library(name) if name == "EGL" else name
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        fn = lib.eglGetProcAddress
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p]
        return fn
    raise GLUnavailableError(f"libEGL cannot be loaded; {INSTALL_HINT}")


def gl_proc(name: str, restype, *argtypes):
    """A ctypes function for the GL entry point ``name`` of the current context.

    Used for what moderngl does not expose (``glBeginQuery`` with
    ``GL_VERTEX_SHADER_INVOCATIONS``, ``glGetQueryObjectui64v``, ``glIsEnabled``).
    """
    key = name
    if key in _procs:
        return _procs[key]
    get_context()
    addr = _get_proc_address()(name.encode())
    if not addr:
        raise GLUnavailableError(f"the OpenGL driver has no {name}")
    fn = ctypes.CFUNCTYPE(restype, *argtypes)(addr)
    _procs[key] = fn
    return fn
