"""What every other part leans on: errors, limits, files, threads, compiled kernels.

* :mod:`.errors`: the exceptions a caller catches;
* :mod:`.limits`: sizes refused before anything is allocated;
* :mod:`.files`: outputs written all or nothing;
* :mod:`.json_values`: plain JSON values of numpy scalars and arrays;
* :mod:`.parallel`: a file's independent pieces on the machine's cores;
* :mod:`.meshoptimizer_bindings`: which meshoptimizer binding does what;
* :mod:`.kernel_cache`, :mod:`.kernel_files`, :mod:`.kernel_store`: the numba kernels shipped
  compiled with the package.
"""
