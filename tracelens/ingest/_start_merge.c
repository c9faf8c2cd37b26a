/* The Kineto table's row order by start (tracelens/ingest/kineto/start_order.py): the host rows and the GPU rows
 * of a trace are each nearly in start order in the file (a few hundred runs each), but they interleave, so one
 * stable sort of all the starts meets a descent at every GPU row (numpy's timsort finds no runs: ~14 ms for the
 * 406 MB tile's 1.5M rows, then a gather of the starts in that order).
 *
 * Here each row becomes one int64 key, (start - origin) << shift | row (pack: origin the least start, shift the
 * row's bits; where the span fits), the host rows' keys written at the end of the order's buffer and the GPU
 * rows' at the end of the relative starts' buffer; numpy sorts each kind's keys in place (few long runs), and
 * merge walks both into the two buffers (row = key's low bits, relative start = key >> shift). Keys are unique
 * and ordered as (start, row): their merge is exactly the stable order of all rows. No array besides the two
 * outputs: the table build is short of cached pages here (memory.py), a fresh page costs more than the sort.
 *
 * A GPU row's key holds its index among the GPU rows (j: gpu_rows[j] is its row) instead of its row as pack
 * writes it: the GPU rows ascend, so (start, j) orders them as (start, row) does. Before the walk, merge notes
 * each sorted GPU key's j (``kept``) and turns the key back into (start, row); the walk writes where each GPU
 * row lands (``at``, ascending) as it takes it: the GPU rows placed in table order (placing.in_table_order)
 * without a pass over the table.
 *
 * In place: a kind's unread keys lie at or after the position written next (the host keys fill [g, n) of
 * ``order`` and g GPU rows come before them at most; the GPU keys [n - g, n) of ``relative``, likewise).
 *
 * Also the launch index of the same table build (ingest/kineto/placing.py, below: exact_int64, id_keys,
 * split_keys, pid_lookup): one pass each where numpy made a cast, a comparison, an argsort and gathers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A C-contiguous int64 buffer (writable when asked). */
static int get(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->itemsize != 8 || !view->format || (strcmp(view->format, "l") && strcmp(view->format, "q"))) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s: a contiguous int64 array expected", what);
        return -1;
    }
    return 0;
}

/* pack(start, gpu_rows, order, relative, shift) -> origin or None: the keys (above: a GPU row's with its index j)
 * of the rows not in gpu_rows into order[g:] and of the GPU rows into relative[n - g:], each kind in row order; None (nothing meant) where
 * gpu_rows is not strictly ascending within the rows, a row needs more than ``shift`` bits or the starts' span
 * more than 63 - shift. */
static PyObject *pack(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    int shift;
    static const char *what[4] = {"start", "gpu_rows", "order", "relative"};
    if (!PyArg_ParseTuple(args, "OOOOi", &objs[0], &objs[1], &objs[2], &objs[3], &shift)) return NULL;
    Py_buffer v[4];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 4; got++)
        if (get(objs[got], &v[got], got >= 2, what[got]) < 0) goto done;
    int64_t n = v[0].len / 8, g = v[1].len / 8;
    if (g > n || v[2].len / 8 != n || v[3].len / 8 != n || shift < 1 || shift > 62) {
        PyErr_SetString(PyExc_ValueError, "pack: order and relative as long as start, shift in [1, 62]");
        goto done;
    }
    if (n == 0 || n - 1 > (INT64_MAX >> (63 - shift))) { /* a row past shift bits */
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    const int64_t *start = v[0].buf, *gpu = v[1].buf;
    int64_t *host_keys = (int64_t *)v[2].buf + g, *gpu_keys = (int64_t *)v[3].buf + (n - g);
    int ok = 1;
    int64_t origin = start[0];
    Py_BEGIN_ALLOW_THREADS
    int64_t high = start[0];
    for (int64_t r = 1; r < n; r++) {
        int64_t s = start[r];
        origin = s < origin ? s : origin;
        high = s > high ? s : high;
    }
    /* the span, unsigned: high - origin may pass INT64_MAX */
    if ((uint64_t)high - (uint64_t)origin > ((uint64_t)1 << (63 - shift)) - 1) ok = 0;
    int64_t h = 0, row = 0;
    for (int64_t j = 0; j < g && ok; j++) {
        int64_t next = gpu[j];
        if (next < row || next >= n) {
            ok = 0;
            break;
        }
        for (; row < next; row++) host_keys[h++] = ((start[row] - origin) << shift) | row;
        gpu_keys[j] = ((start[next] - origin) << shift) | j;
        row = next + 1;
    }
    for (; ok && row < n; row++) host_keys[h++] = ((start[row] - origin) << shift) | row;
    Py_END_ALLOW_THREADS
    result = ok ? PyLong_FromLongLong(origin) : (Py_INCREF(Py_None), Py_None);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* The host keys host[i:e] written at order[o:] (rows) and relative[o:] (relative starts). In place: o <= i + g,
 * so each key is read before its place in order is written (host = order + g). */
static inline void write_keys(int64_t *order, int64_t *relative, const int64_t *host, int64_t i, int64_t e, int64_t o,
                              int shift, int64_t mask) {
    for (int64_t k = 0; k < e - i; k++) {
        int64_t key = host[i + k];
        order[o + k] = key & mask;
        relative[o + k] = key >> shift;
    }
}

/* merge(order, relative, shift, gpu_rows, kept, at): the host keys order[g:] and the GPU keys relative[n - g:]
 * (g: the GPU rows), each sorted, merged in place into order (each key's row) and relative (its start less the
 * origin); the j-th GPU row taken lands at table row at[j] and is GPU row kept[j] (its index into gpu_rows). */
static PyObject *merge(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[5];
    int shift;
    static const char *what[5] = {"order", "relative", "gpu_rows", "kept", "at"};
    if (!PyArg_ParseTuple(args, "OOiOOO", &objs[0], &objs[1], &shift, &objs[2], &objs[3], &objs[4])) return NULL;
    Py_buffer v[5];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 5; got++)
        if (get(objs[got], &v[got], got != 2, what[got]) < 0) goto done;
    int64_t n = v[0].len / 8, g = v[2].len / 8;
    if (v[1].len / 8 != n || g > n || v[3].len / 8 != g || v[4].len / 8 != g || shift < 1 || shift > 62) {
        PyErr_SetString(PyExc_ValueError, "merge: order and relative of one length, kept and at as long as gpu_rows");
        goto done;
    }
    int64_t *order = v[0].buf, *relative = v[1].buf, *kept = v[3].buf, *at = v[4].buf;
    const int64_t *rows = v[2].buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    const int64_t mask = ((int64_t)1 << shift) - 1;
    int64_t nh = n - g, i = 0, j = 0, o = 0;
    int64_t *host = order + g, *gpu = relative + nh; /* read ahead of (or at) every write below */
    /* The GPU keys, sorted by (start, index), become (start, row) keys, the same order (the GPU rows ascend):
     * each one's index noted in kept, so that the merge below compares keys only (no row looked up there). */
    for (int64_t k = 0; k < g; k++) {
        int64_t index = gpu[k] & mask;
        if ((uint64_t)index >= (uint64_t)g) { /* pack wrote every index below g; a caller's keys may not */
            bad = 1;
            break;
        }
        kept[k] = index;
        gpu[k] = (gpu[k] & ~mask) | rows[index];
    }
    if (!bad) {
        /* Each GPU key in turn: the host keys before it (a run, found by steps of 8 then 1) written by a plain
         * loop, then the GPU key. (A walk choosing between the two heads at every key is bound by that choice's
         * latency, ~2x slower at the tile: the host rows come in runs of ~6 between GPU rows.) */
        for (; j < g; j++) {
            int64_t b = gpu[j], e = i;
            while (e + 8 <= nh && host[e + 7] <= b) e += 8; /* (equal keys, which pack never makes: host first) */
            while (e < nh && host[e] <= b) e++;
            write_keys(order, relative, host, i, e, o, shift, mask);
            o += e - i;
            i = e;
            order[o] = b & mask;
            relative[o] = b >> shift;
            at[j] = o++;
        }
        write_keys(order, relative, host, i, nh, o, shift, mask);
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "merge: a GPU key's index past gpu_rows");
    else
        result = (Py_INCREF(Py_None), Py_None);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* A C-contiguous float64 buffer (writable when asked). */
static int get_floats(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->itemsize != 8 || !view->format || strcmp(view->format, "d")) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s: a contiguous float64 array expected", what);
        return -1;
    }
    return 0;
}

/* The int64 that float v is exactly, or 0 with *exact cleared (NaN, a fraction, beyond int64). */
static inline int64_t exactly(double v, int *exact) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
        *exact = 0;
        return 0;
    }
    int64_t x = (int64_t)v;
    *exact = (double)x == v;
    return x;
}

/* The Kineto launch index's correlation ids (ingest/kineto/placing.py: integer_ids, launch_pid), in one pass each
 * instead of numpy's cast, comparison and gathers with their temporaries. */

/* exact_int64(floats, out) -> bool: out[k] = floats[k] as int64 where every one is an integer int64 holds (True);
 * False at the first that is not (out then partly written). */
static PyObject *exact_int64(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *floats_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OO", &floats_obj, &out_obj)) return NULL;
    Py_buffer f, o;
    if (get_floats(floats_obj, &f, 0, "floats") < 0) return NULL;
    if (get(out_obj, &o, 1, "out") < 0) {
        PyBuffer_Release(&f);
        return NULL;
    }
    const int same = f.len == o.len;
    int ok = same;
    if (same) {
        const double *src = f.buf;
        int64_t *dst = o.buf, n = f.len / 8;
        Py_BEGIN_ALLOW_THREADS
        /* in chunks, each tested as a whole (a loop the compiler vectorizes), stopping after a failed chunk */
        for (int64_t first = 0; first < n && ok; first += 4096) {
            int64_t end = n - first < 4096 ? n : first + 4096;
            int chunk_ok = 1;
            for (int64_t k = first; k < end; k++) {
                double v = src[k];
                int in_range = (v >= -9223372036854775808.0) & (v < 9223372036854775808.0);
                int64_t x = in_range ? (int64_t)v : 0;
                chunk_ok &= in_range & ((double)x == v);
                dst[k] = x;
            }
            ok = chunk_ok;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&f);
    PyBuffer_Release(&o);
    if (!same) {
        PyErr_SetString(PyExc_ValueError, "exact_int64: out as long as floats");
        return NULL;
    }
    return PyBool_FromLong(ok);
}

/* id_keys(floats, keys, shift) -> bool: keys[k] = floats[k] * 2**shift + k, where every float is an integer of
 * fewer than 62 - shift bits (True; False at the first that is not): the ids and their file positions in one
 * int64 each, which sort as the ids stably (an argsort and two gathers replaced by a sort of the keys). */
static PyObject *id_keys(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *floats_obj, *keys_obj;
    int shift;
    if (!PyArg_ParseTuple(args, "OOi", &floats_obj, &keys_obj, &shift)) return NULL;
    Py_buffer f, o;
    if (get_floats(floats_obj, &f, 0, "floats") < 0) return NULL;
    if (get(keys_obj, &o, 1, "keys") < 0) {
        PyBuffer_Release(&f);
        return NULL;
    }
    const int fits = f.len == o.len && shift >= 1 && shift <= 40 && f.len / 8 <= ((int64_t)1 << shift);
    int ok = fits;
    if (fits) {
        const double *src = f.buf;
        int64_t *dst = o.buf, n = f.len / 8;
        const double bound = (double)((int64_t)1 << (62 - shift));
        Py_BEGIN_ALLOW_THREADS
        for (int64_t first = 0; first < n && ok; first += 4096) { /* (as in exact_int64) */
            int64_t end = n - first < 4096 ? n : first + 4096;
            int chunk_ok = 1;
            for (int64_t k = first; k < end; k++) {
                double v = src[k];
                int in_range = (v >= -bound) & (v < bound);
                int64_t x = in_range ? (int64_t)v : 0;
                chunk_ok &= in_range & ((double)x == v);
                dst[k] = x * ((int64_t)1 << shift) + k;
            }
            ok = chunk_ok;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&f);
    PyBuffer_Release(&o);
    if (!fits && !(f.len == o.len && shift >= 1 && shift <= 40)) {
        PyErr_SetString(PyExc_ValueError, "id_keys: keys as long as floats, shift in [1, 40]");
        return NULL;
    }
    return PyBool_FromLong(ok);
}

/* split_keys(keys, pid, pids, shift) -> bool: the sorted id_keys made the ids in place (keys[k] >> shift) and
 * pids[k] = pid[the file position of keys[k]]; False (the rest not done) at the first id equal to the one before. */
static PyObject *split_keys(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *keys_obj, *pid_obj, *pids_obj;
    int shift;
    if (!PyArg_ParseTuple(args, "OOOi", &keys_obj, &pid_obj, &pids_obj, &shift)) return NULL;
    Py_buffer k, p, q;
    if (get(keys_obj, &k, 1, "keys") < 0) return NULL;
    if (get_floats(pid_obj, &p, 0, "pid") < 0) {
        PyBuffer_Release(&k);
        return NULL;
    }
    if (get_floats(pids_obj, &q, 1, "pids") < 0) {
        PyBuffer_Release(&k);
        PyBuffer_Release(&p);
        return NULL;
    }
    int64_t n = k.len / 8;
    const int fits = p.len == k.len && q.len == k.len && shift >= 1 && shift <= 40;
    int distinct = 1;
    if (fits) {
        int64_t *keys = k.buf;
        const double *pid = p.buf;
        double *pids = q.buf;
        const int64_t mask = ((int64_t)1 << shift) - 1;
        Py_BEGIN_ALLOW_THREADS
        for (int64_t j = 0; j < n; j++) {
            int64_t key = keys[j], position = key & mask;
            if (position >= n) { /* not an id_keys key: called wrongly */
                distinct = -1;
                break;
            }
            keys[j] = key >> shift; /* (arithmetic: negative ids too) */
            pids[j] = pid[position];
            if (j && keys[j] == keys[j - 1]) {
                distinct = 0;
                break;
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&k);
    PyBuffer_Release(&p);
    PyBuffer_Release(&q);
    if (!fits || distinct < 0) {
        PyErr_SetString(PyExc_ValueError, "split_keys: id_keys' sorted keys, pid and pids as long, shift in [1, 40]");
        return NULL;
    }
    return PyBool_FromLong(distinct);
}

/* The first i in [0, n) with a[i] >= x (n where none), a ascending, searched outwards from ``hint`` (the previous
 * needle's: the device rows' ids mostly ascend in table order) by doubling steps, then by bisection. */
static int64_t lower_bound_near(const int64_t *a, int64_t n, int64_t x, int64_t hint) {
    int64_t lo, hi;
    if (hint < n && a[hint] < x) { /* after hint */
        lo = hint + 1;
        for (int64_t step = 1;; step <<= 1) {
            int64_t probe = lo + step - 1;
            if (probe >= n) {
                hi = n;
                break;
            }
            if (a[probe] >= x) {
                hi = probe;
                break;
            }
            lo = probe + 1;
        }
    } else { /* at or before hint */
        hi = hint;
        lo = 0;
        for (int64_t step = 1; hi > 0; step <<= 1) {
            int64_t probe = hi - step;
            if (probe < 0) break;
            if (a[probe] < x) {
                lo = probe + 1;
                break;
            }
            hi = probe;
        }
    }
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* pid_lookup(ids, pids, needles, out) -> the needles found: out[k] = pids[i] for the first i with ids[i] equal to
 * needles[k] (ids: int64 ascending; pids and needles float64), NaN where none is (a needle NaN, a fraction, beyond
 * int64 or absent). */
static PyObject *pid_lookup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    Py_buffer v[4];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 4; got++) {
        static const char *what[4] = {"ids", "pids", "needles", "out"};
        int r = got == 0 ? get(objs[0], &v[0], 0, what[0]) : get_floats(objs[got], &v[got], got == 3, what[got]);
        if (r < 0) goto done;
    }
    int64_t n = v[0].len / 8, m = v[2].len / 8, found = 0;
    if (v[1].len / 8 != n || v[3].len / 8 != m) {
        PyErr_SetString(PyExc_ValueError, "pid_lookup: pids as long as ids, out as long as needles");
        goto done;
    }
    const int64_t *ids = v[0].buf;
    const double *pids = v[1].buf, *needles = v[2].buf;
    double *out = v[3].buf;
    Py_BEGIN_ALLOW_THREADS
    int64_t at = 0;
    for (int64_t k = 0; k < m; k++) {
        int exact;
        int64_t x = exactly(needles[k], &exact);
        out[k] = NAN;
        if (!exact) continue;
        at = lower_bound_near(ids, n, x, at);
        if (at < n && ids[at] == x) {
            out[k] = pids[at];
            found++;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(found);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_VARARGS,
     "pack(start, gpu_rows, order, relative, shift) -> origin or None: each kind's (start, row) keys"},
    {"merge", merge, METH_VARARGS,
     "merge(order, relative, shift, gpu_rows, kept, at): both kinds' sorted keys, in place; the GPU rows placed"},
    {"exact_int64", exact_int64, METH_VARARGS, "exact_int64(floats, out) -> whether every float is an int64 (out)"},
    {"id_keys", id_keys, METH_VARARGS, "id_keys(floats, keys, shift) -> whether every float is a small integer"},
    {"split_keys", split_keys, METH_VARARGS, "split_keys(keys, pid, pids, shift) -> whether the ids are distinct"},
    {"pid_lookup", pid_lookup, METH_VARARGS, "pid_lookup(ids, pids, needles, out) -> needles found: their pids"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_start_merge", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__start_merge(void) { return PyModule_Create(&module); }
