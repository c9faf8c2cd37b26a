/* Per-name moments of the kernels' durations in one pass (tracelens/analyses/kernels.py), the numbers pandas'
 * groupby(...).agg(["count", "sum", "min", "max", "std"]) gives, without importing pandas (0.17 s a process).
 *
 * group_moments(codes, values, count, total, lo, hi, mean, m2): codes int16, int32 or int64 (each in [-1, slots - 1),
 * slot = code + 1), values int64, as long as codes; count, total, lo, hi int64 and mean, m2 float64, each `slots`
 * long, are written: per slot its number of values, their sum (int64, wrapping as numpy's and pandas' sums do),
 * their minimum and maximum (INT64_MAX / INT64_MIN where none), and their running mean and sum of squared
 * deviations by Welford's update over the values in their order, in float64, step for step as pandas' group_var
 * computes them (so sqrt(m2 / (count - 1)) is pandas' std to the last bit):
 *     n += 1; old = mean; mean += (x - old) / n; m2 += (x - mean) * (x - old)
 * The GIL is released while it runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

/* No fused multiply-add: pandas' update rounds the product and the sum apart. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define NO_CONTRACT
#endif
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#define MOMENTS(NAME, CT)                                                                                    \
    static NO_CONTRACT void NAME(const CT *codes, const int64_t *values, Py_ssize_t n, int64_t *count,        \
                                 uint64_t *total, int64_t *lo, int64_t *hi, double *mean, double *m2) {        \
        for (Py_ssize_t i = 0; i < n; i++) {                                                                 \
            int64_t s = (int64_t)codes[i] + 1;                                                               \
            int64_t v = values[i];                                                                           \
            double x = (double)v;                                                                            \
            int64_t c = ++count[s];                                                                          \
            total[s] += (uint64_t)v;                                                                         \
            if (v < lo[s]) lo[s] = v;                                                                        \
            if (v > hi[s]) hi[s] = v;                                                                        \
            double old = mean[s];                                                                            \
            double now = old + (x - old) / (double)c;                                                        \
            mean[s] = now;                                                                                   \
            m2[s] = m2[s] + (x - now) * (x - old);                                                           \
        }                                                                                                    \
    }

MOMENTS(moments16, int16_t)
MOMENTS(moments32, int32_t)
MOMENTS(moments64, int64_t)

static PyObject *group_moments(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    Py_buffer views[8];
    static const char *names[8] = {"codes", "values", "count", "total", "lo", "hi", "mean", "m2"};
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7]))
        return NULL;
    int got = 0;
    PyObject *result = NULL;
    for (; got < 8; got++) {
        int flags = got >= 2 ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS;
        if (PyObject_GetBuffer(objs[got], &views[got], flags) < 0) goto done;
        Py_ssize_t want = got == 0 ? views[0].itemsize : 8;
        if (views[got].itemsize != want || (got == 0 && want != 2 && want != 4 && want != 8)) {
            PyErr_Format(PyExc_TypeError, "%s: %s items expected", names[got],
                         got == 0 ? "int16, int32 or int64" : "8-byte");
            got++;
            goto done;
        }
    }
    Py_ssize_t n = views[0].len / views[0].itemsize, slots = views[2].len / 8;
    if (views[1].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "values must be as long as codes");
        goto done;
    }
    for (int k = 3; k < 8; k++)
        if (views[k].len / 8 != slots) {
            PyErr_SetString(PyExc_ValueError, "count, total, lo, hi, mean and m2 must be as long");
            goto done;
        }
    int64_t *count = views[2].buf, *lo = views[4].buf, *hi = views[5].buf;
    uint64_t *total = views[3].buf;
    double *mean = views[6].buf, *m2 = views[7].buf;
    /* every code in [-1, slots - 1): checked before any write */
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < slots; s++) {
        count[s] = 0;
        total[s] = 0;
        lo[s] = INT64_MAX;
        hi[s] = INT64_MIN;
        mean[s] = 0.0;
        m2[s] = 0.0;
    }
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        int64_t c = views[0].itemsize == 2   ? ((const int16_t *)views[0].buf)[i]
                    : views[0].itemsize == 4 ? ((const int32_t *)views[0].buf)[i]
                                             : ((const int64_t *)views[0].buf)[i];
        bad = c < -1 || c + 1 >= slots;
    }
    if (!bad) {
        if (views[0].itemsize == 2)
            moments16(views[0].buf, views[1].buf, n, count, total, lo, hi, mean, m2);
        else if (views[0].itemsize == 4)
            moments32(views[0].buf, views[1].buf, n, count, total, lo, hi, mean, m2);
        else
            moments64(views[0].buf, views[1].buf, n, count, total, lo, hi, mean, m2);
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a code outside [-1, slots - 1)");
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"group_moments", group_moments, METH_VARARGS,
     "group_moments(codes, values, count, total, lo, hi, mean, m2): per slot (code + 1) count, sum, min, max, "
     "Welford mean and m2"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel_stats", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernel_stats(void) { return PyModule_Create(&module); }
