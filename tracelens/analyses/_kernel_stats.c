/* Compiled passes of the analyses, each with a numpy path beside it (where the module is not built, or declines):
 * the kernels' per-name moments (below), the launch join's call keys (pack_call_keys, split_call_keys,
 * join_sorted_keys: analyses/call_join.py), the startup rules' long first rows (first_rule_scans:
 * analyses/startup_first.py), long matched launch calls (long_matched: analyses/long_launches.py), the launch
 * queue's depth per stream (stream_depth: analyses/stream_depth.py) and the threads that launched a device's ops
 * (launch_threads: analyses/thread_codes.py), each described where it is defined.
 *
 * Per-name moments of the kernels' durations in one pass (tracelens/analyses/kernels.py), the numbers pandas'
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
#include <stdlib.h>
#include <string.h>

#include "../_group_set.h"

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

/* split_call_keys(rows, kind, ids, gpu_kinds, runtime, driver, gpu, row_bits, shift, out_op_ids, out_call_ids,
 * out_keys) -> (ops, calls, keyed, same, runtimes, drivers, descents) or None: the rows carrying a correlation id
 * (rows: int32 or int64, ascending; ids: theirs, int32 or int64, -1 where null) told apart as
 * _merge_search.id_rows does (a GPU op where gpu_kinds[kind] is set, a call where the kind is runtime or driver;
 * kind int8 per event row), and the calls' packed keys written at once: per GPU op its id (out_op_ids, int32 or
 * int64, gpu's length + 1), per call its id (out_call_ids, int32 or int64), per call with an id >= 0 its key
 * id << shift | driver << row_bits | row (out_keys, int64; out_call_ids and out_keys as long, a slot more than the
 * calls they hold). ops, calls: the GPU ops and calls among the carrying rows; keyed: the keys written; same:
 * whether the GPU ops' rows are exactly gpu's (out_op_ids holds their ids only then); runtimes, drivers: the
 * table's runtime and driver rows; descents: neighbour keys that descend. None where the calls outnumber the outs.
 * What id_split's two passes (a count, then the split) and pack_call_keys did: one pass, branch-free (each row
 * written to both outs' next slot, only its own count moving on). The GIL is released. */

/* The pass, for rows of type RT, ids IT, GPU rows GT and out ids OT (each int32_t or int64_t). Returns whether a
 * carrying row is outside the table; sets the counts. */
#define SPLIT_PASS(NAME, RT, IT, GT, OT)                                                                               \
    static int NAME(const RT *rows, int64_t n, const int8_t *kind, int64_t events, const IT *ids,                      \
                    const uint8_t *table, const GT *gpu, int64_t n_gpu, OT *op_ids, OT *call_ids, int64_t *keys,       \
                    int64_t cap, int row_bits, int shift, int64_t *counts) {                                           \
        int64_t o = 0, c = 0, kc = 0, descents = 0, prev = INT64_MIN;                                                  \
        int differ = 0;                                                                                                \
        for (int64_t j = 0; j < n; j++) {                                                                              \
            int64_t r = rows[j];                                                                                       \
            if (r < 0 || r >= events) return 1;                                                                        \
            unsigned t = table[(uint8_t)kind[r]];                                                                      \
            int64_t id = ids[j], is_op = t & 1, is_call = (t >> 1) & 1;                                                \
            int64_t ow = o < n_gpu ? o : n_gpu, cw = c < cap ? c : cap, kw = kc < cap ? kc : cap;                      \
            int64_t want = n_gpu ? (int64_t)gpu[ow < n_gpu ? ow : n_gpu - 1] : -1;                                     \
            differ |= (int)(is_op & ((ow == n_gpu) | (want != r)));                                                    \
            op_ids[ow] = (OT)id;                                                                                       \
            call_ids[cw] = (OT)id;                                                                                     \
            int64_t key = (int64_t)((uint64_t)id << shift) | (int64_t)(t >> 2) << row_bits | r;                        \
            int64_t keyed = is_call & (id >= 0);                                                                       \
            keys[kw] = key;                                                                                            \
            descents += keyed & (key < prev);                                                                          \
            prev = keyed ? key : prev;                                                                                 \
            o += is_op;                                                                                                \
            c += is_call;                                                                                              \
            kc += keyed;                                                                                               \
        }                                                                                                              \
        counts[0] = o;                                                                                                 \
        counts[1] = c;                                                                                                 \
        counts[2] = kc;                                                                                                \
        counts[3] = descents;                                                                                          \
        counts[4] = !differ && o == n_gpu;                                                                             \
        return 0;                                                                                                      \
    }

SPLIT_PASS(split_4844, int32_t, int64_t, int32_t, int32_t)
SPLIT_PASS(split_4444, int32_t, int32_t, int32_t, int32_t)
SPLIT_PASS(split_4848, int32_t, int64_t, int32_t, int64_t)
SPLIT_PASS(split_8888, int64_t, int64_t, int64_t, int64_t)

static PyObject *split_call_keys(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    int runtime, driver, row_bits, shift;
    if (!PyArg_ParseTuple(args, "OOOOiiOiiOOO", &objs[0], &objs[1], &objs[2], &objs[3], &runtime, &driver, &objs[4],
                          &row_bits, &shift, &objs[5], &objs[6], &objs[7]))
        return NULL;
    static const char *names[8] = {"rows", "kind", "ids", "gpu_kinds", "gpu", "out_op_ids", "out_call_ids",
                                   "out_keys"};
    static const int sizes[8] = {4 | 8, 1, 4 | 8, 1, 4 | 8, 4 | 8, 4 | 8, 8};
    Py_buffer v[8];
    int held[8] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 8; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k], k >= 5) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len / v[0].itemsize, events = v[1].len, n_gpu = v[4].len / v[4].itemsize;
    int64_t cap = v[6].len / v[6].itemsize - 1;
    if (v[2].len / v[2].itemsize != n || v[5].len / v[5].itemsize != n_gpu + 1 || cap < 0 || v[7].len / 8 != cap + 1) {
        PyErr_SetString(PyExc_ValueError, "split_call_keys: the outs' lengths do not fit the rows and GPU ops");
        goto done;
    }
    if (row_bits < 0 || shift <= row_bits || shift > 62) {
        PyErr_SetString(PyExc_ValueError, "split_call_keys: 0 <= row_bits < shift <= 62 expected");
        goto done;
    }
    uint8_t table[256];
    /* per kind byte: 1 a GPU op, 2 a runtime call, 6 a driver call (bit 2: driver), 0 neither */
    for (int k = 0; k < 256; k++) {
        int8_t code = (int8_t)k;
        table[k] = code >= 0 && code < v[3].len && ((const uint8_t *)v[3].buf)[code] ? 1
                   : code == runtime                                                 ? 2
                   : code == driver                                                  ? 6
                                                                                     : 0;
    }
    const int8_t *kind = v[1].buf;
    int sizes_key = (int)(v[0].itemsize * 1000 + v[2].itemsize * 100 + v[4].itemsize * 10 + v[5].itemsize);
    if (v[6].itemsize != v[5].itemsize ||
        (sizes_key != 4844 && sizes_key != 4444 && sizes_key != 4848 && sizes_key != 8888)) {
        PyErr_SetString(PyExc_TypeError,
                        "split_call_keys: rows, ids, gpu and the out ids as int32, int64, int32, int32 (or int64 ids "
                        "out), all int32 or all int64; out_op_ids and out_call_ids of one type");
        goto done;
    }
    int64_t counts[5] = {0}, runtimes = 0, drivers = 0;
    int outside = 0;
    Py_BEGIN_ALLOW_THREADS
    if (sizes_key == 4844)
        outside = split_4844(v[0].buf, n, kind, events, v[2].buf, table, v[4].buf, n_gpu, v[5].buf, v[6].buf,
                             v[7].buf, cap, row_bits, shift, counts);
    else if (sizes_key == 4444)
        outside = split_4444(v[0].buf, n, kind, events, v[2].buf, table, v[4].buf, n_gpu, v[5].buf, v[6].buf,
                             v[7].buf, cap, row_bits, shift, counts);
    else if (sizes_key == 4848)
        outside = split_4848(v[0].buf, n, kind, events, v[2].buf, table, v[4].buf, n_gpu, v[5].buf, v[6].buf,
                             v[7].buf, cap, row_bits, shift, counts);
    else
        outside = split_8888(v[0].buf, n, kind, events, v[2].buf, table, v[4].buf, n_gpu, v[5].buf, v[6].buf,
                             v[7].buf, cap, row_bits, shift, counts);
    for (int64_t i = 0; i < events; i++) {
        runtimes += kind[i] == runtime;
        drivers += kind[i] == driver;
    }
    Py_END_ALLOW_THREADS
    int64_t o = counts[0], c = counts[1], kc = counts[2], descents = counts[3];
    int same = (int)counts[4];
    if (outside) {
        PyErr_SetString(PyExc_IndexError, "split_call_keys: a carrying row outside the table");
        goto done;
    }
    if (c > cap) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    result = Py_BuildValue("(LLLNLLL)", (long long)o, (long long)c, (long long)kc, PyBool_FromLong(same),
                           (long long)runtimes, (long long)drivers, (long long)descents);
done:
    for (int k = 0; k < 8; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- The startup rules' long first rows, both rules in one walk (tracelens/analyses/startup_first.py) ----
 *
 * first_rule_scans(kind, category, name, pid, tid, start, end, allowed, categories, min_call, min_api)
 * -> ((firsts, negative), (firsts, negative)): what _merge_search.long_group_firsts tells for the first_call rule
 * (rows whose allowed byte has bit 0, grouped by (thread_key(pid, tid), name), min_call) and for the first_api rule
 * (bit 1, grouped by (pid, name), min_api), each over every event row: firsts the event rows (ascending) of the
 * candidates (name and tid >= 0) first in their group that last the rule's minimum; negative whether a row the rule
 * looks at ends before it starts (long_group_firsts' least duration below 0); firsts None where those rows' starts do
 * not ascend or (first calls) a thread id is 2^32 or more. allowed: a byte per (kind, category) pair as
 * first_scan.allowed_table lays them out ((kinds + 1) x (categories + 1)); kind and category int8, name, pid and
 * tid int32 or int64, start and end int64. IndexError where a kind or category is outside the table.
 *
 * long_group_firsts walks the table once per rule, each row behind a branch on its kind (interleaved ops, calls and
 * frames: often mispredicted). Here, where every row's start ascends and every thread id is below 2^32 (a table
 * build_store sorted), a block of rows at a time: a tight walk over the times only notes the rows that last the
 * lesser minimum or end before they start (8% of the 406 MB Kineto tile's rows), and only those are looked up in
 * the rules' table; else one walk keeps each rule's order check and least duration by selects. A second walk finds
 * the long groups' first rows (none without long rows), both rules at once. The GIL is released. */

typedef struct {
    int by_thread, bad, negative;
    int64_t min_first, top_name, found, seen;
    group_set_t groups;
    uint8_t *long_name;
    int64_t *out;
} fr_rule_t;

/* The rule's long groups emptied (a quick walk given up for the general one). */
static void fr_reset(fr_rule_t *r) {
    memset(r->groups.slot, 0, (size_t)r->groups.size * sizeof(group_slot_t));
    r->groups.count = 0;
    r->top_name = -1;
    r->bad = r->negative = 0;
}

/* Whether the rule still looks for first rows in the second walk. */
static inline int fr_open(const fr_rule_t *r) { return !r->bad && r->seen < r->groups.count; }

/* A long row of a rule (long0, long1: for which) on thread t: its group added to the rule's long groups (a row
 * without a name or a thread is no candidate). 0, or -1 (no memory). Out of the walks' loops: few rows come here. */
static __attribute__((noinline)) int fr_long_row(fr_rule_t *rule, int64_t i, int long0, int long1, int64_t t,
                                                 const void *name, int name_size, const void *pid, int pid_size) {
    int64_t nm = int_at(name, name_size, i);
    if (nm < 0 || t < 0) return 0;
    int64_t p = int_at(pid, pid_size, i);
    for (int r = 0; r < 2; r++) {
        if (!(r ? long1 : long0)) continue;
        if (group_add(&rule[r].groups, group_outer(rule[r].by_thread, p, t), nm) < 0) return -1;
        if (nm > rule[r].top_name) rule[r].top_name = nm;
    }
    return 0;
}

/* Rows a quick walk notes per block (their offsets in an int32 each, on the stack). */
#define FR_BLOCK 4096

/* The quick first walk, for a table whose starts ascend and thread ids are below 2^32 (else 1 at once: the general
 * walk answers): per block, the rows lasting the lesser minimum or less than 0 noted by a walk over the times alone
 * (branch-free), then those looked up in `pair`. 0; 1: declined; -1: no memory; -2: a kind or category outside. */
#define QUICK_WALK(NAME, TT)                                                                                           \
    static int NAME(int64_t n, const int8_t *kind, const int8_t *category, const TT *tid, const int64_t *start,        \
                    const int64_t *end, const uint8_t *pair, fr_rule_t *rule, const void *name, int name_size,         \
                    const void *pid, int pid_size) {                                                                   \
        const int64_t min0 = rule[0].min_first, min1 = rule[1].min_first, low = min0 < min1 ? min0 : min1;             \
        int64_t prev = INT64_MIN, top_tid = INT64_MIN;                                                                 \
        int unordered = 0, top_kind = INT8_MIN, least_category = INT8_MAX, top_category = INT8_MIN;                    \
        int32_t at[FR_BLOCK];                                                                                          \
        for (int64_t lo = 0; lo < n; lo += FR_BLOCK) {                                                                 \
            int64_t hi = lo + FR_BLOCK < n ? lo + FR_BLOCK : n, m = 0;                                                 \
            for (int64_t i = lo; i < hi; i++) {                                                                        \
                int64_t s = start[i], d = end[i] - s, t = (int64_t)tid[i];                                             \
                int k = kind[i], c = category[i];                                                                      \
                unordered |= s < prev;                                                                                 \
                prev = s;                                                                                              \
                top_tid = t > top_tid ? t : top_tid;                                                                   \
                top_kind = k > top_kind ? k : top_kind;                                                                \
                least_category = c < least_category ? c : least_category;                                              \
                top_category = c > top_category ? c : top_category;                                                    \
                at[m] = (int32_t)(i - lo);                                                                             \
                m += (d >= low) | (d < 0);                                                                             \
            }                                                                                                          \
            if (unordered || top_tid > (int64_t)UINT32_MAX) return 1;                                                  \
            /* a kind past the table's, or a category outside it: 4 at (that kind, any category) or (any kind, it) */ \
            if ((pair[(unsigned)(uint8_t)top_kind << 8 | (uint8_t)least_category] |                                    \
                 pair[(unsigned)(uint8_t)top_kind << 8 | (uint8_t)top_category]) &                                     \
                4)                                                                                                     \
                return -2;                                                                                             \
            for (int64_t q = 0; q < m; q++) {                                                                          \
                int64_t i = lo + at[q], d = end[i] - start[i];                                                         \
                unsigned b = pair[(unsigned)(uint8_t)kind[i] << 8 | (uint8_t)category[i]];                             \
                unsigned on0 = b & 1, on1 = (b >> 1) & 1;                                                              \
                rule[0].negative |= on0 & (d < 0);                                                                     \
                rule[1].negative |= on1 & (d < 0);                                                                     \
                unsigned long0 = on0 & (d >= min0), long1 = on1 & (d >= min1);                                         \
                if ((long0 | long1) &&                                                                                 \
                    fr_long_row(rule, i, long0, long1, (int64_t)tid[i], name, name_size, pid, pid_size) < 0)           \
                    return -1;                                                                                         \
            }                                                                                                          \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

/* The general first walk: each rule's order check (and, by thread, thread ids below 2^32), least duration and long
 * groups, the state in locals and kept by selects (no branch on the row's kind). `pair`: a byte per (kind byte,
 * category byte) pair, both as unsigned: the rules' bits (1, 2), or 4 for a pair outside the allowed table. 0; -1:
 * no memory; -2: a kind or category outside the table. */
#define FIRST_WALK(NAME, TT)                                                                                           \
    static int NAME(int64_t n, const int8_t *kind, const int8_t *category, const TT *tid, const int64_t *start,        \
                    const int64_t *end, const uint8_t *pair, fr_rule_t *rule, const void *name, int name_size,         \
                    const void *pid, int pid_size) {                                                                   \
        const int64_t min0 = rule[0].min_first, min1 = rule[1].min_first;                                              \
        int64_t last0 = INT64_MIN, last1 = INT64_MIN, least0 = INT64_MAX, least1 = INT64_MAX;                          \
        unsigned flags = 0; /* bit 0: rule 0 has no answer, bit 1: rule 1 has none, bit 2: outside the table */        \
        for (int64_t i = 0; i < n; i++) {                                                                              \
            unsigned b = pair[(unsigned)(uint8_t)kind[i] << 8 | (uint8_t)category[i]];                                 \
            int64_t s = start[i], d = end[i] - s, t = (int64_t)tid[i];                                                 \
            unsigned on0 = b & 1, on1 = (b >> 1) & 1;                                                                  \
            flags |= (b & 4) | (on0 & ((s < last0) | (t > (int64_t)UINT32_MAX))) | ((on1 & (s < last1)) << 1);        \
            last0 = on0 ? s : last0;                                                                                   \
            last1 = on1 ? s : last1;                                                                                   \
            least0 = on0 & (d < least0) ? d : least0;                                                                  \
            least1 = on1 & (d < least1) ? d : least1;                                                                  \
            unsigned long0 = on0 & (d >= min0), long1 = on1 & (d >= min1);                                             \
            if (__builtin_expect(long0 | long1, 0)) {                                                                  \
                if (flags & 4) break;                                                                                  \
                if (fr_long_row(rule, i, long0, long1, (int64_t)t, name, name_size, pid, pid_size) < 0) return -1;    \
            }                                                                                                          \
        }                                                                                                              \
        rule[0].bad = flags & 1;                                                                                       \
        rule[1].bad = (flags >> 1) & 1;                                                                                \
        rule[0].negative = least0 < 0;                                                                                 \
        rule[1].negative = least1 < 0;                                                                                 \
        return flags & 4 ? -2 : 0;                                                                                     \
    }

QUICK_WALK(quick_walk32, int32_t)
QUICK_WALK(quick_walk64, int64_t)
FIRST_WALK(first_walk32, int32_t)
FIRST_WALK(first_walk64, int64_t)

/* 0: done; -1: no memory; -2: a kind or category outside the table. */
static int first_rules_pass(int64_t n, const int8_t *kind, const int8_t *category, const void *name, int name_size,
                            const void *pid, int pid_size, const void *tid, int tid_size, const int64_t *start,
                            const int64_t *end, const uint8_t *allowed, int64_t kinds, int64_t categories,
                            fr_rule_t *rule) {
    const int64_t width = categories + 1;
    /* the allowed table spread over every (kind byte, category byte) pair: no bounds test per row */
    uint8_t *pair = malloc(1 << 16);
    if (!pair) return -1;
    for (int k = 0; k < 256; k++)
        for (int c = 0; c < 256; c++) {
            int64_t kk = (int8_t)k, cc = (int8_t)c;
            int outside = kk >= kinds || cc < -1 || cc >= categories;
            pair[k << 8 | c] = outside ? 4 : allowed[(kk < 0 ? kinds : kk) * width + cc + 1];
        }
    int status = tid_size == 4 ? quick_walk32(n, kind, category, tid, start, end, pair, rule, name, name_size, pid,
                                              pid_size)
                               : quick_walk64(n, kind, category, tid, start, end, pair, rule, name, name_size, pid,
                                              pid_size);
    if (status == 1) { /* declined: the general walk, from an empty start */
        fr_reset(&rule[0]);
        fr_reset(&rule[1]);
        status = tid_size == 4 ? first_walk32(n, kind, category, tid, start, end, pair, rule, name, name_size, pid,
                                              pid_size)
                               : first_walk64(n, kind, category, tid, start, end, pair, rule, name, name_size, pid,
                                              pid_size);
    }
    free(pair);
    if (status) return status;
    for (int r = 0; r < 2; r++) {
        if (rule[r].bad || !rule[r].groups.count) continue;
        rule[r].out = malloc((size_t)rule[r].groups.count * sizeof(int64_t));
        rule[r].long_name = calloc((size_t)rule[r].top_name + 1, 1);
        if (!rule[r].out || !rule[r].long_name) return -1;
        for (int64_t q = 0; q < rule[r].groups.size; q++)
            if (rule[r].groups.slot[q].used) rule[r].long_name[rule[r].groups.slot[q].inner] = 1;
    }
    /* second walk: each long group's first row, the rows of other names passed over, until all are found */
    for (int64_t i = 0; i < n && (fr_open(&rule[0]) || fr_open(&rule[1])); i++) {
        unsigned b = allowed[(kind[i] < 0 ? kinds : kind[i]) * width + category[i] + 1];
        if (!b) continue;
        int64_t nm = int_at(name, name_size, i);
        if (nm < 0) continue;
        int want[2];
        for (int r = 0; r < 2; r++)
            want[r] = ((b >> r) & 1) && fr_open(&rule[r]) && nm <= rule[r].top_name && rule[r].long_name[nm];
        if (!(want[0] | want[1])) continue;
        int64_t t = int_at(tid, tid_size, i);
        if (t < 0) continue;
        int64_t p = int_at(pid, pid_size, i);
        for (int r = 0; r < 2; r++) {
            if (!want[r]) continue;
            group_slot_t *g = group_find(&rule[r].groups, group_outer(rule[r].by_thread, p, t), nm);
            if (!g->used || g->seen) continue;
            g->seen = 1;
            rule[r].seen++;
            if (end[i] - start[i] >= rule[r].min_first) rule[r].out[rule[r].found++] = i;
        }
    }
    return 0;
}

/* (firsts or None, negative) of one rule, as a new reference. */
static PyObject *fr_answer(const fr_rule_t *r) {
    PyObject *found;
    if (r->bad) {
        found = Py_None;
        Py_INCREF(found);
    } else {
        found = PyList_New(r->found);
        if (!found) return NULL;
        for (int64_t q = 0; q < r->found; q++) {
            PyObject *row = PyLong_FromLongLong(r->out[q]);
            if (!row) {
                Py_DECREF(found);
                return NULL;
            }
            PyList_SET_ITEM(found, q, row);
        }
    }
    return Py_BuildValue("(NN)", found, PyBool_FromLong(r->negative));
}

static PyObject *first_rule_scans(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    long long categories, min_call, min_api;
    if (!PyArg_ParseTuple(args, "OOOOOOOOLLL", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &categories, &min_call, &min_api))
        return NULL;
    static const char *names[8] = {"kind", "category", "name", "pid", "tid", "start", "end", "allowed"};
    static const int sizes[8] = {1, 1, 4 | 8, 4 | 8, 4 | 8, 8, 8, 1};
    Py_buffer v[8];
    int held[8] = {0};
    PyObject *result = NULL;
    fr_rule_t rule[2] = {{1, 0, 0, min_call, -1, 0, 0, {NULL, 64, 0, 64 - 6}, NULL, NULL},
                         {0, 0, 0, min_api, -1, 0, 0, {NULL, 64, 0, 64 - 6}, NULL, NULL}};
    for (int k = 0; k < 8; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k], 0) < 0) goto done;
        held[k] = 1;
    }
    int64_t events = v[0].len;
    if (v[1].len != events || v[2].len / v[2].itemsize != events || v[3].len / v[3].itemsize != events ||
        v[4].len / v[4].itemsize != events || v[5].len / 8 != events || v[6].len / 8 != events) {
        PyErr_SetString(PyExc_ValueError,
                        "first_rule_scans: kind, category, name, pid, tid, start, end: one value per event row");
        goto done;
    }
    if (categories < 0 || categories > 127 || v[7].len % (categories + 1) != 0 || v[7].len / (categories + 1) < 1) {
        PyErr_SetString(PyExc_ValueError, "first_rule_scans: allowed: (kinds + 1) x (categories + 1) entries");
        goto done;
    }
    for (int r = 0; r < 2; r++) {
        rule[r].groups.slot = calloc(64, sizeof(group_slot_t));
        if (!rule[r].groups.slot) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int64_t kinds = v[7].len / (categories + 1) - 1;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = first_rules_pass(events, v[0].buf, v[1].buf, v[2].buf, (int)v[2].itemsize, v[3].buf, (int)v[3].itemsize,
                              v[4].buf, (int)v[4].itemsize, v[5].buf, v[6].buf, v[7].buf, kinds, categories, rule);
    Py_END_ALLOW_THREADS
    if (status == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == -2) {
        PyErr_SetString(PyExc_IndexError, "first_rule_scans: a kind or category outside the table");
        goto done;
    }
    PyObject *call = fr_answer(&rule[0]);
    if (!call) goto done;
    PyObject *api = fr_answer(&rule[1]);
    if (!api) {
        Py_DECREF(call);
        goto done;
    }
    result = Py_BuildValue("(NN)", call, api);
done:
    for (int r = 0; r < 2; r++) {
        free(rule[r].groups.slot);
        free(rule[r].long_name);
        free(rule[r].out);
    }
    for (int k = 0; k < 8; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* long_matched(rows, matched, start, end, min_ns, out) -> count: the positions i (ascending) where matched[i] and
 * end[rows[i]] - start[rows[i]] >= min_ns, written to out (int64, as long as rows); rows int32 or int64 (any value
 * where not matched: not read there, and checked to lie inside start/end where read), matched a byte each, start and
 * end int64. The startup rule long_launch's long matched calls (analyses/long_launches.py): the times read at the
 * few hundred thousand launch rows, no gathered columns. The GIL is released during the pass. */

#define LONG_MATCHED(NAME, RT)                                                                                    \
    static int64_t NAME(const RT *rows, const uint8_t *matched, const int64_t *start, const int64_t *end,         \
                        int64_t n, int64_t size, int64_t min_ns, int64_t *out) {                                  \
        int64_t count = 0;                                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            if (!matched[i]) continue;                                                                            \
            int64_t r = (int64_t)rows[i];                                                                         \
            if (r < 0 || r >= size) return -1;                                                                    \
            out[count] = i;                                                                                       \
            count += end[r] - start[r] >= min_ns;                                                                 \
        }                                                                                                         \
        return count;                                                                                             \
    }

LONG_MATCHED(long_matched32, int32_t)
LONG_MATCHED(long_matched64, int64_t)

static PyObject *long_matched(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    long long min_ns;
    if (!PyArg_ParseTuple(args, "OOOOLO", &objs[0], &objs[1], &objs[2], &objs[3], &min_ns, &objs[4])) return NULL;
    static const char *names[5] = {"rows", "matched", "start", "end", "out"};
    static const int sizes[5] = {4 | 8, 1, 8, 8, 8};
    Py_buffer v[5];
    int held[5] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 5; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k], k == 4) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len / v[0].itemsize, size = v[2].len / 8;
    if (v[1].len != n || v[4].len / 8 != n || v[3].len / 8 != size) {
        PyErr_SetString(PyExc_ValueError, "long_matched: rows, matched and out of one length, start and end of one "
                                          "length expected");
        goto done;
    }
    int64_t count;
    Py_BEGIN_ALLOW_THREADS
    count = v[0].itemsize == 4
                ? long_matched32(v[0].buf, v[1].buf, v[2].buf, v[3].buf, n, size, (int64_t)min_ns, v[4].buf)
                : long_matched64(v[0].buf, v[1].buf, v[2].buf, v[3].buf, n, size, (int64_t)min_ns, v[4].buf);
    Py_END_ALLOW_THREADS
    if (count < 0) {
        PyErr_SetString(PyExc_IndexError, "long_matched: a matched row outside start and end");
        goto done;
    }
    result = PyLong_FromLongLong(count);
done:
    for (int k = 0; k < 5; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* stream_depth(codes, launch_end, gpu_end, order, out_max, out_first, out_last) -> merged: launch.queue_depth's
 * figures per stream code (codes int32 or int64 in [0, streams), streams = len(out_max); launch_end and gpu_end
 * int64, one per op; order int64 scratch, one per op): each op +1 at its launch end and -1 at its GPU end, the events
 * of a stream in time order with the ends before the launches at one instant; out_max the largest depth after an
 * event, out_first / out_last the first and last event's time. Where every stream's ops carry ascending launch ends
 * and ascending GPU ends in op order (a PyTorch profile's one stream: its ops in order), the two runs of a stream are
 * merged by one walk (no sort of packed keys, no cumulative sum): returns True; else False and nothing is written
 * (the packed keys' sort, numpy). The GIL is released during the walk. */

static int stream_depth_pass(const void *codes, int code_size, const int64_t *launch, const int64_t *gpu, int64_t n,
                             int64_t streams, int64_t *order, int64_t *out_max, int64_t *out_first,
                             int64_t *out_last) {
    int64_t *offset = calloc((size_t)streams + 1, sizeof(int64_t));
    if (!offset) return -2;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = int_at(codes, code_size, i);
        if (c < 0 || c >= streams) {
            free(offset);
            return -1;
        }
        offset[c + 1]++;
    }
    for (int64_t s = 0; s < streams; s++) offset[s + 1] += offset[s];
    for (int64_t i = 0; i < n; i++) order[offset[int_at(codes, code_size, i)]++] = i; /* offset[s]: stream s's end */
    int ok = 1;
    for (int64_t s = 0, lo = 0; s < streams && ok; lo = offset[s], s++) {
        for (int64_t k = lo + 1; k < offset[s]; k++)
            if (launch[order[k]] < launch[order[k - 1]] || gpu[order[k]] < gpu[order[k - 1]]) {
                ok = 0;
                break;
            }
    }
    if (ok) {
        for (int64_t s = 0, lo = 0; s < streams; lo = offset[s], s++) {
            int64_t hi = offset[s], i = lo, j = lo, depth = 0, best = INT64_MIN, t = 0, first = 0;
            while (i < hi || j < hi) {
                if (j < hi && (i >= hi || gpu[order[j]] <= launch[order[i]])) { /* an end first at one instant */
                    t = gpu[order[j++]];
                    depth--;
                } else {
                    t = launch[order[i++]];
                    depth++;
                }
                if (depth > best) best = depth;
                if (i + j == 2 * lo + 1) first = t;
            }
            out_max[s] = best;
            out_first[s] = first;
            out_last[s] = t;
        }
    }
    free(offset);
    return ok;
}

static PyObject *stream_depth(PyObject *self, PyObject *args) {
    PyObject *objs[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6]))
        return NULL;
    static const char *names[7] = {"codes", "launch_end", "gpu_end", "order", "out_max", "out_first", "out_last"};
    static const int sizes[7] = {4 | 8, 8, 8, 8, 8, 8, 8};
    Py_buffer v[7];
    int held[7] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 7; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k], k >= 3) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len / v[0].itemsize, streams = v[4].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n || v[3].len / 8 != n || v[5].len / 8 != streams ||
        v[6].len / 8 != streams) {
        PyErr_SetString(PyExc_ValueError, "stream_depth: codes, launch_end, gpu_end and order of one length, the "
                                          "outs of one length expected");
        goto done;
    }
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = stream_depth_pass(v[0].buf, (int)v[0].itemsize, v[1].buf, v[2].buf, n, streams, v[3].buf, v[4].buf,
                           v[5].buf, v[6].buf);
    Py_END_ALLOW_THREADS
    if (ok == -2) {
        PyErr_NoMemory();
        goto done;
    }
    if (ok == -1) {
        PyErr_SetString(PyExc_ValueError, "stream_depth: a code outside [0, streams)");
        goto done;
    }
    result = PyBool_FromLong(ok);
done:
    for (int k = 0; k < 7; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* launch_threads(ops, rows, pid, tid, out_pid, out_tid) -> count: the distinct (pid, tid) pairs read at rows[i] where
 * ops[i] (a byte each; rows int32 or int64, read only there and checked to lie inside pid/tid; pid and tid int32 or
 * int64, one per event row), in order of first appearance, written to out_pid and out_tid (int64, of one length);
 * -1 where there are more pairs than the outs hold. The threads that launched a device's ops
 * (attribution.launching_threads): consecutive ops are mostly launched by one thread, so a pair is compared with the
 * last one first, then with the few seen; no gathers of every op's pid and tid, no key of each, no hashing. The GIL is
 * released during the pass. */

static int64_t launch_threads_pass(const uint8_t *ops, const void *rows, int row_size, int64_t n, const void *pid,
                                   int pid_size, const void *tid, int tid_size, int64_t size, int64_t *out_pid,
                                   int64_t *out_tid, int64_t room) {
    int64_t count = 0, last_pid = 0, last_tid = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!ops[i]) continue;
        int64_t r = int_at(rows, row_size, i);
        if (r < 0 || r >= size) return -2;
        int64_t p = int_at(pid, pid_size, r), t = int_at(tid, tid_size, r);
        if (count && p == last_pid && t == last_tid) continue;
        last_pid = p;
        last_tid = t;
        int64_t k = 0;
        while (k < count && (out_pid[k] != p || out_tid[k] != t)) k++;
        if (k < count) continue;
        if (count == room) return -1;
        out_pid[count] = p;
        out_tid[count] = t;
        count++;
    }
    return count;
}

static PyObject *launch_threads(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5])) return NULL;
    static const char *names[6] = {"ops", "rows", "pid", "tid", "out_pid", "out_tid"};
    static const int sizes[6] = {1, 4 | 8, 4 | 8, 4 | 8, 8, 8};
    Py_buffer v[6];
    int held[6] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 6; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k], k >= 4) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len, size = v[2].len / v[2].itemsize, room = v[4].len / 8;
    if (v[1].len / v[1].itemsize != n || v[3].len / v[3].itemsize != size || v[5].len / 8 != room) {
        PyErr_SetString(PyExc_ValueError, "launch_threads: ops and rows of one length, pid and tid of one length, the "
                                          "outs of one length expected");
        goto done;
    }
    int64_t count;
    Py_BEGIN_ALLOW_THREADS
    count = launch_threads_pass(v[0].buf, v[1].buf, (int)v[1].itemsize, n, v[2].buf, (int)v[2].itemsize, v[3].buf,
                                (int)v[3].itemsize, size, v[4].buf, v[5].buf, room);
    Py_END_ALLOW_THREADS
    if (count == -2) {
        PyErr_SetString(PyExc_IndexError, "launch_threads: a row outside pid and tid");
        goto done;
    }
    result = PyLong_FromLongLong(count);
done:
    for (int k = 0; k < 6; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* late_launch(op_start, op_pos, matched, launch_row, end, gap_starts, gap_ends, out) -> done: per gap, whether the
 * earliest op starting at or after the gap's end (op_start int64, the device's ops; op_pos int64 their positions in
 * matched / launch_row, or None: the ops are all of them, in order; the last op where none starts so late) is matched
 * and its launch call (its event row launch_row, int32 or int64) ends (end, int64 per event row) after the gap
 * begins: out a byte per gap. What attribution._late_launch did by a search, a clip, three gathers and a comparison:
 * one walk over the gaps (their ends ascending) and the ops. False (out partly written) where the ops' starts or the
 * gap ends descend somewhere, or there is no op: the caller's numpy path (which sorts the ops). The GIL is released
 * during the walk. */

/* ops ahead of the walk whose calls' ends are prefetched */
#define LATE_AHEAD 16

#define LATE_LAUNCH(NAME, RT)                                                                                     \
    static int NAME(const int64_t *op_start, const int64_t *op_pos, int64_t n, const uint8_t *matched,           \
                    const RT *rows, int64_t pairs, const int64_t *end, int64_t size, const int64_t *gs,          \
                    const int64_t *ge, int64_t g, uint8_t *out) {                                                 \
        for (int64_t j = 1; j < n; j++)                                                                           \
            if (op_start[j] < op_start[j - 1]) return 1;                                                          \
        int64_t j = 0;                                                                                            \
        for (int64_t i = 0; i < g; i++) {                                                                         \
            if (i && ge[i] < ge[i - 1]) return 1;                                                                 \
            while (j < n && op_start[j] < ge[i]) j++;                                                             \
            /* the call's end LATE_AHEAD ops on asked for now: the launch rows lie spread over the event rows */  \
            int64_t a = j + LATE_AHEAD < n ? j + LATE_AHEAD : n - 1, pa = op_pos ? op_pos[a] : a;                  \
            if (pa >= 0 && pa < pairs) {                                                                          \
                int64_t ra = (int64_t)rows[pa];                                                                   \
                if (ra >= 0 && ra < size) __builtin_prefetch(end + ra);                                           \
            }                                                                                                     \
            int64_t k = j < n ? j : n - 1, p = op_pos ? op_pos[k] : k;                                            \
            if (p < 0 || p >= pairs) return -1;                                                                   \
            uint8_t late = 0;                                                                                     \
            if (matched[p]) {                                                                                     \
                int64_t r = (int64_t)rows[p];                                                                     \
                if (r < 0 || r >= size) return -1;                                                                \
                late = end[r] > gs[i];                                                                            \
            }                                                                                                     \
            out[i] = late;                                                                                        \
        }                                                                                                         \
        return 0;                                                                                                 \
    }

LATE_LAUNCH(late_launch32, int32_t)
LATE_LAUNCH(late_launch64, int64_t)

static PyObject *late_launch(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7]))
        return NULL;
    static const char *names[8] = {"op_start", "op_pos", "matched", "launch_row", "end", "gap_starts", "gap_ends",
                                   "out"};
    static const int sizes[8] = {8, 8, 1, 4 | 8, 8, 8, 8, 1};
    Py_buffer v[8];
    int held[8] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 8; k++) {
        if (k == 1 && objs[k] == Py_None) continue; /* op_pos None: every op, in order */
        if (get_ints(objs[k], &v[k], names[k], sizes[k], k == 7) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len / 8, pairs = v[2].len, size = v[4].len / 8, g = v[5].len / 8;
    const int64_t *op_pos = held[1] ? v[1].buf : NULL;
    if ((held[1] ? v[1].len / 8 != n : n != pairs) || v[3].len / v[3].itemsize != pairs || v[6].len / 8 != g ||
        v[7].len != g) {
        PyErr_SetString(PyExc_ValueError, "late_launch: op_start and op_pos (or matched), matched and launch_row, the "
                                          "gaps and out of one length each expected");
        goto done;
    }
    int status = 1;
    if (n > 0) {
        Py_BEGIN_ALLOW_THREADS
        status = v[3].itemsize == 4 ? late_launch32(v[0].buf, op_pos, n, v[2].buf, v[3].buf, pairs, v[4].buf, size,
                                                    v[5].buf, v[6].buf, g, v[7].buf)
                                    : late_launch64(v[0].buf, op_pos, n, v[2].buf, v[3].buf, pairs, v[4].buf, size,
                                                    v[5].buf, v[6].buf, g, v[7].buf);
        Py_END_ALLOW_THREADS
    }
    if (status < 0) {
        PyErr_SetString(PyExc_IndexError, "late_launch: an op position or a matched launch row out of range");
        goto done;
    }
    result = PyBool_FromLong(status == 0);
done:
    for (int k = 0; k < 8; k++)
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
    {"split_call_keys", split_call_keys, METH_VARARGS,
     "split_call_keys(rows, kind, ids, gpu_kinds, runtime, driver, gpu, row_bits, shift, out_op_ids, out_call_ids, "
     "out_keys) -> (ops, calls, keyed, same, runtimes, drivers, descents) or None: the carrying rows split, the calls "
     "keyed"},
    {"first_rule_scans", first_rule_scans, METH_VARARGS,
     "first_rule_scans(kind, category, name, pid, tid, start, end, allowed, categories, min_call, min_api) -> "
     "((firsts, negative), (firsts, negative)): the first_call and first_api rules' long first rows in one walk"},
    {"long_matched", long_matched, METH_VARARGS,
     "long_matched(rows, matched, start, end, min_ns, out) -> count: the matched positions whose row lasts min_ns "
     "or more"},
    {"stream_depth", stream_depth, METH_VARARGS,
     "stream_depth(codes, launch_end, gpu_end, order, out_max, out_first, out_last) -> merged: the queue depth per "
     "stream by one merge walk where each stream's ops are in order"},
    {"launch_threads", launch_threads, METH_VARARGS,
     "launch_threads(ops, rows, pid, tid, out_pid, out_tid) -> count: the distinct (pid, tid) pairs at the ops' rows "
     "(-1: more than the outs hold)"},
    {"late_launch", late_launch, METH_VARARGS,
     "late_launch(op_start, op_pos, matched, launch_row, end, gap_starts, gap_ends, out) -> done: per gap, whether "
     "its next op was launched after it began"},
    {NULL, NULL, 0, NULL},
};


static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel_stats", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernel_stats(void) { return PyModule_Create(&module); }
