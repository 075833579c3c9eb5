"""The meshopt-batch application: the command line, its subcommands and the report.

This is the top layer.  It resolves user-facing names (a profile, a method, a technique, a
scene) once, at the boundary, and calls the libraries below it: the core
:mod:`meshopt_batch`, the GPU probe :mod:`gpu_probe` and the pipeline model
:mod:`pipeline_model`.  Nothing below imports it.
"""

from meshopt_batch.support.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # before this package defines a kernel (see meshopt_batch.support.kernel_cache)
