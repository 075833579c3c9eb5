from meshopt_batch.support.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # before this package defines a kernel (see meshopt_batch.support.kernel_cache)
