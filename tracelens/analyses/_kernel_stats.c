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

/* ---- The launch join's packed call keys (tracelens/analyses/call_join.py, launch_rows) ----
 *
 * pack_call_keys(ids, rows, is_driver, row_bits, shift, out) -> descents: writes each call's key
 * ids[i] << shift | is_driver[i] << row_bits | rows[i] to out (int64, as long as ids), as call_join._sorted_keys
 * packs them a block at a time by numpy (ids and rows int32 or int64, ids >= 0 and the keys within 63 bits: checked
 * by the caller; is_driver a byte each, or None: no driver bit), and returns how many neighbours descend (the sort's
 * choice). One pass, no int64 temporaries.
 *
 * join_sorted_keys(key, shift, row_bits, op_ids, out_matched, out_rows) -> (unique, matched): key (int64, ascending)
 * the packed keys sorted; per op id (int32 or int64; the ops' ids mostly ascend), out_matched (a byte) whether a key
 * carries its id and out_rows (int32 or int64) the row of the first key of the id (the first call by driver after
 * runtime, then row), -1 where none; unique: no two keys share an id. What match_calls did by a pass over neighbour
 * pairs, a shifted copy of the ops' ids, a search, a gather and comparisons, and launch._rows_or by a scatter: one
 * walk over the keys and one over the ops, each op's id searched from the previous op's place (galloping). The GIL is
 * released during the passes. */

static inline int64_t int_at(const void *p, int size, int64_t i) {
    return size == 4 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

static int get_ints(PyObject *obj, Py_buffer *view, const char *name, int sizes, int writable) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    char f = view->format ? view->format[0] : 'B';
    if (f == '<' || f == '=' || f == '@') f = view->format[1];
    int ok = view->ndim == 1 && (view->itemsize & sizes) && view->itemsize == (view->itemsize & sizes);
    if (ok && view->itemsize == 1)
        ok = f == '?' || f == 'b' || f == 'B';
    else if (ok)
        ok = f == 'i' || f == 'l' || f == 'q';
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: a 1-D array of %s expected", name,
                     sizes == 1 ? "bytes" : sizes == 8 ? "int64" : "int32 or int64");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int64_t pack_pass(const void *ids, int id_size, const void *rows, int row_size, const uint8_t *driver, int64_t n,
                         int row_bits, int shift, int64_t *out) {
    int64_t descents = 0, prev = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (int64_t)((uint64_t)int_at(ids, id_size, i) << shift) | int_at(rows, row_size, i);
        if (driver) k |= (int64_t)(driver[i] != 0) << row_bits;
        out[i] = k;
        descents += k < prev;
        prev = k;
    }
    return descents;
}

static PyObject *pack_call_keys(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    int row_bits, shift;
    if (!PyArg_ParseTuple(args, "OOOiiO", &objs[0], &objs[1], &objs[2], &row_bits, &shift, &objs[3])) return NULL;
    static const char *names[4] = {"ids", "rows", "is_driver", "out"};
    static const int sizes[4] = {4 | 8, 4 | 8, 1, 8};
    Py_buffer v[4];
    int held[4] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 4; k++) {
        if (k == 2 && objs[k] == Py_None) continue;
        if (get_ints(objs[k], &v[k], names[k], sizes[k], k == 3) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len / v[0].itemsize;
    if (v[1].len / v[1].itemsize != n || v[3].len / 8 != n || (held[2] && v[2].len != n)) {
        PyErr_SetString(PyExc_ValueError, "pack_call_keys: ids, rows, is_driver and out of one length expected");
        goto done;
    }
    if (row_bits < 0 || shift < row_bits || shift > 62) {
        PyErr_SetString(PyExc_ValueError, "pack_call_keys: 0 <= row_bits <= shift <= 62 expected");
        goto done;
    }
    int64_t descents;
    Py_BEGIN_ALLOW_THREADS
    descents = pack_pass(v[0].buf, (int)v[0].itemsize, v[1].buf, (int)v[1].itemsize, held[2] ? v[2].buf : NULL, n,
                         row_bits, shift, v[3].buf);
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(descents);
done:
    for (int k = 0; k < 4; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* The first position j in [0, n] whose key's id (key >> shift) is >= id, searched from `hint` (the previous
 * answer) outwards by doubling steps, then by halving. */
static inline int64_t lower_bound_near(const int64_t *key, int64_t n, int shift, int64_t id, int64_t hint) {
    int64_t lo, hi, step = 1;
    if (hint < n && (key[hint] >> shift) < id) {
        lo = hint + 1; /* every key before lo is below id */
        int64_t p = lo;
        while (p < n && (key[p] >> shift) < id) {
            lo = p + 1;
            p = lo + step;
            step <<= 1;
        }
        hi = p < n ? p : n;
    } else {
        hi = hint; /* every key from hi on is id or above */
        int64_t p = hi - 1;
        while (p >= 0 && (key[p] >> shift) >= id) {
            hi = p;
            p = hi - step;
            step <<= 1;
        }
        lo = p < 0 ? 0 : p + 1;
    }
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((key[mid] >> shift) < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static PyObject *join_sorted_keys(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    int shift, row_bits;
    if (!PyArg_ParseTuple(args, "OiiOOO", &objs[0], &shift, &row_bits, &objs[1], &objs[2], &objs[3])) return NULL;
    static const char *names[4] = {"key", "op_ids", "out_matched", "out_rows"};
    static const int sizes[4] = {8, 4 | 8, 1, 4 | 8};
    Py_buffer v[4];
    int held[4] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 4; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k], k >= 2) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len / 8, ops = v[1].len / v[1].itemsize;
    if (v[2].len != ops || v[3].len / v[3].itemsize != ops) {
        PyErr_SetString(PyExc_ValueError, "join_sorted_keys: out_matched and out_rows as long as op_ids expected");
        goto done;
    }
    if (row_bits < 0 || shift < row_bits || shift > 62) {
        PyErr_SetString(PyExc_ValueError, "join_sorted_keys: 0 <= row_bits <= shift <= 62 expected");
        goto done;
    }
    const int64_t *key = v[0].buf;
    const void *op = v[1].buf;
    int op_size = (int)v[1].itemsize, out_size = (int)v[3].itemsize;
    uint8_t *matched = v[2].buf;
    void *rows = v[3].buf;
    int64_t mask = ((int64_t)1 << row_bits) - 1, found = 0, unique = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t j = 0; j + 1 < n && unique; j++) unique = ((key[j] ^ key[j + 1]) >> shift) != 0;
    int64_t at = 0;
    for (int64_t i = 0; i < ops; i++) {
        int64_t id = int_at(op, op_size, i), row = -1;
        if (id >= 0 && n) {
            at = lower_bound_near(key, n, shift, id, at);
            if (at < n && (key[at] >> shift) == id) row = key[at] & mask;
        }
        matched[i] = row >= 0;
        found += row >= 0;
        if (out_size == 4)
            ((int32_t *)rows)[i] = (int32_t)row;
        else
            ((int64_t *)rows)[i] = row;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(NL)", PyBool_FromLong((long)unique), (long long)found);
done:
    for (int k = 0; k < 4; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"group_moments", group_moments, METH_VARARGS,
     "group_moments(codes, values, count, total, lo, hi, mean, m2): per slot (code + 1) count, sum, min, max, "
     "Welford mean and m2"},
    {"pack_call_keys", pack_call_keys, METH_VARARGS,
     "pack_call_keys(ids, rows, is_driver, row_bits, shift, out) -> descents: the calls' packed keys"},
    {"join_sorted_keys", join_sorted_keys, METH_VARARGS,
     "join_sorted_keys(key, shift, row_bits, op_ids, out_matched, out_rows) -> (unique, matched): each op's first "
     "call row"},
    {NULL, NULL, 0, NULL},
};


static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel_stats", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernel_stats(void) { return PyModule_Create(&module); }
