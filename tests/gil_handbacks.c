/* Counts the times numpy gives the GIL away (PyEval_SaveThread called from numpy's extension
 * modules), for tests/test_gil_handbacks.py: preloaded into a Python that links libpython
 * dynamically, it stands in front of libpython's PyEval_SaveThread. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

typedef void PyThreadState;
static PyThreadState* (*real_save)(void);
static atomic_long numpy_handbacks, all_handbacks;

PyThreadState* PyEval_SaveThread(void) {
  if (!real_save) real_save = (PyThreadState * (*)(void)) dlsym(RTLD_NEXT, "PyEval_SaveThread");
  Dl_info info;
  atomic_fetch_add(&all_handbacks, 1);
  if (dladdr(__builtin_return_address(0), &info) && info.dli_fname && strstr(info.dli_fname, "/numpy/"))
    atomic_fetch_add(&numpy_handbacks, 1);
  return real_save();
}

long gil_numpy_handbacks(void) { return atomic_load(&numpy_handbacks); }
long gil_all_handbacks(void) { return atomic_load(&all_handbacks); }
