/* The replay's one pass: every point of a dependency graph at the earliest time its chain predecessor and its
 * cross edges allow, visited once in a topological order (tracelens/replay/engine.py, solve).
 *
 * The recurrence is the one engine._solve_batches solves batch by batch with numpy (a few numpy calls per
 * batch; batches are as many as the graph's blocking calls and wake-ups in sequence, so their fixed cost, not
 * the points, set its time). numpy cannot walk a dependency chain faster than one batch per link; this walks
 * it at a few nanoseconds per point and edge, and gives the same integers (max and + on int64, no rounding):
 *
 *     t[p] = max(t[p - 1] + lag[p] (or NONE + lag[p] on a chain's first point), anchor[p],
 *                max over the edges k into p of src_time(k) + e_lag[k])
 *
 * src_time(k) is the source's replayed time, or its recorded time where the edge is ``stale`` (its source is
 * not scheduled before its target: a cycle from inconsistent clocks, which the batches read as recorded too).
 *
 * solve_sorted_edges(order, chain_first, lag, anchor, recorded, e_pos, e_src, e_lag, e_stale, out): all int64
 * buffers but order (int32 or int64) and chain_first and e_stale (one byte each); the edges sorted by their target's position in ``order``
 * (``e_pos``, ascending): the edges into the point at position i are the run of e_pos equal to i, read by one
 * cursor (no per-point index array of n + 1: the edges are a few per cent of the points). ``out`` (n int64)
 * receives the times; returns (earliest, latest) of them (() for no point). The GIL is released while it runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define NONE_TIME (-(((int64_t)1) << 62))

/* an item size of INDEX_ITEMS: point indices as 4- or 8-byte integers (a plan's order and positions are int32 where
 * the points fit: half the bytes each solve reads), read and written through index_at / index_put */
#define INDEX_ITEMS ((Py_ssize_t)-8)

static int get(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize, const char *name) {
    if (PyObject_GetBuffer(obj, view, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    int fits = itemsize == INDEX_ITEMS ? (view->itemsize == 4 || view->itemsize == 8) : view->itemsize == itemsize;
    if (!fits && !(view->len == 0)) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes expected", name, itemsize == INDEX_ITEMS ? 8 : itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* the items of an INDEX_ITEMS buffer: their count, the i-th, writing the i-th */
static Py_ssize_t index_count(const Py_buffer *view) {
    return view->len / (view->itemsize == 4 ? 4 : 8);
}

static int64_t index_at(const Py_buffer *view, Py_ssize_t i) {
    return view->itemsize == 4 ? (int64_t)((const int32_t *)view->buf)[i] : ((const int64_t *)view->buf)[i];
}

static void index_put(Py_buffer *view, Py_ssize_t i, int64_t value) {
    if (view->itemsize == 4) {
        ((int32_t *)view->buf)[i] = (int32_t)value;
    } else {
        ((int64_t *)view->buf)[i] = value;
    }
}

static PyObject *solve_sorted_edges(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[10];
    static const char *names[10] = {"order", "chain_first", "lag", "anchor", "recorded",
                                    "e_pos", "e_src", "e_lag", "e_stale", "out"};
    static const Py_ssize_t sizes[10] = {INDEX_ITEMS, 1, 8, 8, 8, 8, 8, 8, 1, 8};
    Py_buffer views[10];
    int got = 0;
    PyObject *result = NULL;
    /* optional: e_order (int64 per edge slot): e_lag is then the graph's edge_lag, read at e_order[k] (no gather of
     * it into the plan's order first) */
    PyObject *order_obj = NULL;
    Py_buffer order_view;
    int got_order = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO|O", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9], &order_obj)) {
        return NULL;
    }
    for (; got < 10; got++) {
        if (get(objs[got], &views[got], got == 9, sizes[got], names[got]) < 0) {
            goto done;
        }
    }
    if (order_obj != NULL && order_obj != Py_None) {
        if (get(order_obj, &order_view, 0, 8, "e_order") < 0) {
            goto done;
        }
        got_order = 1;
    }
    Py_ssize_t n = index_count(&views[0]);
    Py_ssize_t n_edges = views[6].len / 8;
    if (views[1].len != n || views[2].len / 8 != n || views[3].len / 8 != n || views[4].len / 8 != n ||
        views[5].len / 8 != n_edges || views[7].len / 8 != n_edges || views[8].len != n_edges ||
        views[9].len / 8 != n || (got_order && order_view.len / 8 != n_edges)) {
        PyErr_SetString(PyExc_ValueError, "solve_sorted_edges: array lengths disagree");
        goto done;
    }
    const int64_t *e_order = got_order ? order_view.buf : NULL;
    /* the order as it is held: int32 (the points fit) or int64 */
    const int32_t *order32 = views[0].itemsize == 4 ? views[0].buf : NULL;
    const int64_t *order64 = views[0].itemsize == 4 ? NULL : views[0].buf;
    const int64_t *lag = views[2].buf, *anchor = views[3].buf, *recorded = views[4].buf;
    const int64_t *e_pos = views[5].buf, *e_src = views[6].buf, *e_lag = views[7].buf;
    const unsigned char *first = views[1].buf, *stale = views[8].buf;
    int64_t *t = views[9].buf;
    /* the replay's earliest and latest time (its span); read only where n > 0 */
    int64_t lowest = INT64_MAX, highest = INT64_MIN;
    /* every index is checked before it is read: a bad plan raises instead of reading out of bounds; edges whose
     * positions do not ascend, or lie past the last point, are left unread and raise too */
    int bad = 0;
    Py_ssize_t k = 0;
    /* the point solved just before and its time: a chain's stretch is solved point after point, so the chain
     * predecessor's time is mostly this one, kept in a register rather than read back from t */
    int64_t last_p = -2, last_t = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        int64_t p = order32 != NULL ? (int64_t)order32[i] : order64[i];
        if (p < 0 || p >= n || (!first[p] && p == 0)) {
            bad = 1;
            break;
        }
        int64_t before = first[p] ? NONE_TIME : (p == last_p + 1 ? last_t : t[p - 1]);
        int64_t best = before + lag[p];
        if (anchor[p] > best) {
            best = anchor[p];
        }
        for (; k < n_edges && e_pos[k] == i; k++) {
            int64_t s = e_src[k];
            int64_t slot = e_order != NULL ? e_order[k] : (int64_t)k;
            if (s < 0 || s >= n || slot < 0 || slot >= n_edges) {
                bad = 1;
                break;
            }
            int64_t ready = (stale[k] ? recorded[s] : t[s]) + e_lag[slot];
            if (ready > best) {
                best = ready;
            }
        }
        if (k < n_edges && e_pos[k] <= i) {
            bad = 1;
            break;
        }
        t[p] = best;
        last_p = p;
        last_t = best;
        lowest = best < lowest ? best : lowest;
        highest = best > highest ? best : highest;
        /* then the run of points that follow it in both the order and its chain, up to the next position with
         * edges: each is its predecessor's time + its lag, or its anchor (the step above without its tests: the
         * same integers, in a loop of a few registers) */
        Py_ssize_t stop = k < n_edges ? (Py_ssize_t)e_pos[k] : n;
        stop = stop < n ? stop : n;
        int64_t q = p + 1;
        while (i + 1 < stop && q < n && !first[q] &&
               (order32 != NULL ? (int64_t)order32[i + 1] : order64[i + 1]) == q) {
            int64_t next = last_t + lag[q];
            next = anchor[q] > next ? anchor[q] : next;
            t[q] = next;
            last_t = next;
            lowest = next < lowest ? next : lowest;
            highest = next > highest ? next : highest;
            q++;
            i++;
        }
        last_p = q - 1;
    }
    if (k != n_edges) {
        bad = 1;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "solve_sorted_edges: an index out of range");
        goto done;
    }
    result = n > 0 ? Py_BuildValue("(LL)", (long long)lowest, (long long)highest) : Py_BuildValue("()");
done:
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    if (got_order) {
        PyBuffer_Release(&order_view);
    }
    return result;
}

/* ---- the plan (engine.plan): each point's batch key, the points in key order, the edges by target ----------
 *
 * The same integers as engine.schedule_keys / engine.plan_by_numpy compute with numpy (tests compare them):
 *
 * schedule_keys(time, gpu, chain_first, boundary_time, boundary_point, boundary_rank, edge_src, edge_dst, key,
 *               min_rounds, rounds): key[p] = 3 x (boundary times before time[p], ascending) + gpu[p], each boundary
 *   point (ascending) 3 x its rank among the boundary times + 2,
 *   then a running max along each chain; then rounds in which every edge whose target's key is not above its
 *   source's raises it to the source's + 1 (all of a round's raises read the keys as the round began, as
 *   numpy's maximum.at does), each followed by the chain running max, until no edge is late, ``rounds`` rounds
 *   were made, or (from round ``min_rounds`` on) a raise passes the highest first key + n (a cycle). Returns the
 *   rounds that raised something.
 * order_by_key(key, low, span, order, position): the points by key, then by index (a stable counting sort of
 *   keys in [low, low + span)), and each point's position in that order.
 * edges_by_position(position, key, edge_src, edge_dst, e_order, e_pos, e_src, e_stale): the edges by their
 *   target's position (stable: a least-significant-digit radix sort of the positions, 16 bits a pass, whose
 *   buffers are the edges' own, nothing of the points' size), each edge's source and
 *   whether it is read as recorded (key[src] >= key[dst]).
 */

/* the first ``count`` arguments' buffers (those from ``writable_from`` on writable); released again on failure */
static int get_all(PyObject *args, int count, PyObject **objs, Py_buffer *views, const Py_ssize_t *sizes,
                   const char *const *names, int writable_from) {
    if (PyTuple_GET_SIZE(args) < count) {
        PyErr_SetString(PyExc_TypeError, "too few arguments");
        return -1;
    }
    int got = 0;
    for (; got < count; got++) {
        objs[got] = PyTuple_GET_ITEM(args, got);
        if (get(objs[got], &views[got], got >= writable_from, sizes[got], names[got]) < 0) {
            for (int i = 0; i < got; i++) {
                PyBuffer_Release(&views[i]);
            }
            return -1;
        }
    }
    return 0;
}

static void release_all(Py_buffer *views, int count) {
    for (int i = 0; i < count; i++) {
        PyBuffer_Release(&views[i]);
    }
}

static PyObject *schedule_keys(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 9 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"time",          "gpu",           "chain_first", "boundary_time",
                                             "boundary_point", "boundary_rank", "edge_src",    "edge_dst",
                                             "key"};
    static const Py_ssize_t sizes[COUNT] = {8, 1, 1, 8, 8, 8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT + 2) {
        PyErr_SetString(PyExc_TypeError, "schedule_keys: 11 arguments expected");
        return NULL;
    }
    long long min_rounds = PyLong_AsLongLong(PyTuple_GET_ITEM(args, COUNT));
    long long rounds = PyLong_AsLongLong(PyTuple_GET_ITEM(args, COUNT + 1));
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, COUNT - 1) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, n_bounds = views[3].len / 8, n_edges = views[6].len / 8;
    if (views[1].len != n || views[2].len != n || views[4].len / 8 != n_bounds || views[5].len / 8 != n_bounds ||
        views[7].len / 8 != n_edges || views[8].len / 8 != n) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "schedule_keys: array lengths disagree");
        return NULL;
    }
    const int64_t *time = views[0].buf, *bt = views[3].buf, *bp = views[4].buf, *rank = views[5].buf;
    const int64_t *src = views[6].buf, *dst = views[7].buf;
    const unsigned char *gpu = views[1].buf, *first = views[2].buf;
    int64_t *key = views[8].buf;
    int bad = 0;
    long long done = 0;
    int64_t *late_dst = NULL, *late_need = NULL;
    if (n_edges > 0) {
        late_dst = PyMem_RawMalloc((size_t)n_edges * sizeof(int64_t));
        late_need = PyMem_RawMalloc((size_t)n_edges * sizeof(int64_t));
        if (late_dst == NULL || late_need == NULL) {
            PyMem_RawFree(late_dst);
            PyMem_RawFree(late_need);
            release_all(views, COUNT);
            return PyErr_NoMemory();
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n_bounds; k++) {
        /* ascending points, ranks among the boundaries */
        if (bp[k] < 0 || bp[k] >= n || (k > 0 && bp[k] <= bp[k - 1]) || rank[k] < 0 || rank[k] >= n_bounds) {
            bad = 1;
        }
    }
    for (Py_ssize_t k = 0; k < n_edges && !bad; k++) {
        if (src[k] < 0 || src[k] >= n || dst[k] < 0 || dst[k] >= n) {
            bad = 1;
        }
    }
    if (!bad && n > 0) {
        /* one pass: each point's 3 x (boundary times before its time: searchsorted, side left; consecutive points
         * mostly share one segment, so the last answer is tried first) + its phase, a boundary's 3 x its rank + 2,
         * the running max along its chain, and the highest key */
        Py_ssize_t j = 0, b = 0;
        int64_t run = 0, ceiling = 0;
        for (Py_ssize_t p = 0; p < n; p++) {
            int64_t value;
            if (b < n_bounds && bp[b] == p) {
                value = 3 * rank[b] + 2;
                b++;
            } else {
                int64_t t = time[p];
                if (!((j == 0 || bt[j - 1] < t) && (j == n_bounds || bt[j] >= t))) {
                    Py_ssize_t lo = 0, hi = n_bounds;
                    while (lo < hi) {
                        Py_ssize_t mid = lo + (hi - lo) / 2;
                        if (bt[mid] < t) {
                            lo = mid + 1;
                        } else {
                            hi = mid;
                        }
                    }
                    j = lo;
                }
                value = 3 * (int64_t)j + (gpu[p] ? 1 : 0);
            }
            if (p == 0 || first[p] || value > run) {
                run = value;
            }
            key[p] = run;
            if (p == 0 || run > ceiling) {
                ceiling = run;
            }
            /* then the points after it up to the next boundary point whose time lies in this same segment: the
             * step above without the search and the boundary test (the same keys, in a loop of a few registers) */
            Py_ssize_t next_b = b < n_bounds ? (Py_ssize_t)bp[b] : n;
            next_b = next_b < n ? next_b : n;
            int64_t low_t = j > 0 ? bt[j - 1] : 0, high_t = j < n_bounds ? bt[j] : 0, base = 3 * (int64_t)j;
            int has_low = j > 0, has_high = j < n_bounds;
            while (p + 1 < next_b) {
                int64_t t = time[p + 1];
                if ((has_low && !(low_t < t)) || (has_high && !(high_t >= t))) {
                    break;
                }
                int64_t value = base + (gpu[p + 1] ? 1 : 0);
                if (first[p + 1] || value > run) {
                    run = value;
                }
                key[p + 1] = run;
                ceiling = run > ceiling ? run : ceiling;
                p++;
            }
        }
        ceiling += (int64_t)n;
        for (long long r = 0; r < rounds; r++) {
            Py_ssize_t count = 0;
            int64_t most = 0;
            for (Py_ssize_t k = 0; k < n_edges; k++) {
                int64_t need = key[src[k]] + 1;
                if (need > key[dst[k]]) {
                    late_dst[count] = dst[k];
                    late_need[count] = need;
                    if (count == 0 || need > most) {
                        most = need;
                    }
                    count++;
                }
            }
            if (count == 0) {
                break;
            }
            if (r >= min_rounds && most > ceiling) {
                break;
            }
            for (Py_ssize_t i = 0; i < count; i++) {
                if (late_need[i] > key[late_dst[i]]) {
                    key[late_dst[i]] = late_need[i];
                }
            }
            /* the running max along each chain again: the keys were one before the raises, so each raised key
             * carries forward only until a key at least as high */
            for (Py_ssize_t i = 0; i < count; i++) {
                int64_t d = late_dst[i], carried = key[d];
                for (int64_t q = d + 1; q < n && !first[q] && key[q] < carried; q++) {
                    key[q] = carried;
                }
            }
            done++;
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(late_dst);
    PyMem_RawFree(late_need);
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "schedule_keys: an index out of range");
        return NULL;
    }
    return PyLong_FromLongLong(done);
}

static PyObject *order_by_key(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 3 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"key", "order", "position"};
    static const Py_ssize_t sizes[COUNT] = {8, INDEX_ITEMS, INDEX_ITEMS};
    PyObject *key_obj, *order_obj, *position_obj;
    long long low, span;
    if (!PyArg_ParseTuple(args, "OLLOO", &key_obj, &low, &span, &order_obj, &position_obj)) {
        return NULL;
    }
    PyObject *packed = PyTuple_Pack(3, key_obj, order_obj, position_obj);
    if (packed == NULL) {
        return NULL;
    }
    int failed = get_all(packed, COUNT, objs, views, sizes, names, 1);
    Py_DECREF(packed);
    if (failed < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8;
    if (index_count(&views[1]) != n || index_count(&views[2]) != n || span < 1) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "order_by_key: array lengths disagree");
        return NULL;
    }
    int64_t *count = PyMem_RawCalloc((size_t)span + 1, sizeof(int64_t));
    if (count == NULL) {
        release_all(views, COUNT);
        return PyErr_NoMemory();
    }
    const int64_t *key = views[0].buf;
    Py_buffer *order = &views[1], *position = &views[2];
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t p = 0; p < n; p++) {
        int64_t k = key[p] - low;
        if (k < 0 || k >= span) {
            bad = 1;
            break;
        }
        count[k + 1]++;
    }
    if (!bad) {
        for (long long k = 0; k < span; k++) {
            count[k + 1] += count[k];
        }
        for (Py_ssize_t p = 0; p < n; p++) {
            int64_t at = count[key[p] - low]++;
            index_put(order, at, p);
            index_put(position, p, at);
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(count);
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "order_by_key: a key outside [low, low + span)");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* order_by_chains(key, heads, order, position): what order_by_key gives, for keys that ascend along each chain
 * (chains stored one after another, ``heads``: each one's first point, then n): the chains merged, a stretch at
 * a time (the points of the chain with the lowest (key, chain) up to the next chain's key), each point read and
 * written once. Returns 0, or -1 where a chain's keys step down (nothing usable written). */
static PyObject *order_by_chains(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 4 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"key", "heads", "order", "position"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, INDEX_ITEMS, INDEX_ITEMS};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "order_by_chains: 4 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, 2) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, chains = views[1].len / 8 - 1;
    const int64_t *key = views[0].buf, *heads = views[1].buf;
    Py_buffer *order = &views[2], *position = &views[3];
    int bad = chains < 0 || index_count(order) != n || index_count(position) != n;
    for (Py_ssize_t c = 0; c <= chains && !bad; c++) {
        if (heads[c] < 0 || heads[c] > n || (c > 0 && heads[c] < heads[c - 1]) || (c == chains && heads[c] != n) ||
            (c == 0 && heads[c] != 0)) {
            bad = 1;
        }
    }
    if (bad) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "order_by_chains: bad chain heads or array lengths");
        return NULL;
    }
    int64_t *cur = PyMem_RawMalloc(((size_t)chains + 1) * sizeof(int64_t));
    if (cur == NULL) {
        release_all(views, COUNT);
        return PyErr_NoMemory();
    }
    int stepped_down = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t c = 0; c < chains; c++) {
        cur[c] = heads[c];
    }
    int64_t at = 0;
    for (;;) {
        /* the chain holding the lowest (key, chain), and the next lowest of the others */
        Py_ssize_t best = -1, second = -1;
        for (Py_ssize_t c = 0; c < chains; c++) {
            if (cur[c] >= heads[c + 1]) {
                continue;
            }
            if (best < 0 || key[cur[c]] < key[cur[best]]) {
                second = best;
                best = c;
            } else if (second < 0 || key[cur[c]] < key[cur[second]]) {
                second = c;
            }
        }
        if (best < 0) {
            break;
        }
        int64_t stop = heads[best + 1], p = cur[best];
        int64_t limit = second >= 0 ? key[cur[second]] : 0;
        int64_t last = key[p];
        /* (key, chain) below the other chain's: a lower key, or the same key on an earlier chain */
        while (p < stop && (second < 0 || key[p] < limit || (key[p] == limit && best < second))) {
            if (key[p] < last) {
                stepped_down = 1;
                break;
            }
            last = key[p];
            index_put(order, at, p);
            index_put(position, p, at);
            at++;
            p++;
        }
        if (stepped_down) {
            break;
        }
        cur[best] = p;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(cur);
    release_all(views, COUNT);
    return PyLong_FromLong(stepped_down ? -1 : 0);
}

#define RADIX_BITS 16
#define RADIX_SIZE (((Py_ssize_t)1) << RADIX_BITS)

/* unsorted tails up to this long are sorted by sorted_tail_order (by insertion; the rest are few comparisons) */
#define SORTED_TAIL_MAX 1024

/* The stable order of the n items by key[i] (the lower index first among equal keys), written into order (n items),
 * where the keys ascend but for a tail of at most SORTED_TAIL_MAX items and an eighth of them (a graph's edges: the
 * launch edges come first, by ascending target, the few others after them): the ascending prefix as it is, the tail's indices
 * insertion-sorted in scratch (room for SORTED_TAIL_MAX), the two merged (an item of the prefix first where keys tie:
 * its index is the lower). Returns 0, or -1 (nothing written) where the tail is longer: a radix sort then. */
static int sorted_tail_order(const int64_t *key, Py_ssize_t n, int64_t *order, int64_t *scratch) {
    Py_ssize_t prefix = n > 0 ? 1 : 0;
    while (prefix < n && key[prefix] >= key[prefix - 1]) {
        prefix++;
    }
    Py_ssize_t tail = n - prefix;
    if (tail > SORTED_TAIL_MAX || tail * 8 > n) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < tail; i++) {
        int64_t item = (int64_t)(prefix + i), k = key[item];
        Py_ssize_t j = i;
        while (j > 0 && key[scratch[j - 1]] > k) {
            scratch[j] = scratch[j - 1];
            j--;
        }
        scratch[j] = item;
    }
    Py_ssize_t a = 0, b = 0, o = 0;
    while (a < prefix && b < tail) {
        order[o++] = key[scratch[b]] < key[a] ? scratch[b++] : (int64_t)a++;
    }
    while (a < prefix) {
        order[o++] = (int64_t)a++;
    }
    while (b < tail) {
        order[o++] = scratch[b++];
    }
    return 0;
}

static PyObject *edges_by_position(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 8 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"position", "key", "edge_src", "edge_dst",
                                             "e_order",  "e_pos", "e_src",    "e_stale"};
    static const Py_ssize_t sizes[COUNT] = {INDEX_ITEMS, 8, 8, 8, 8, 8, 8, 1};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "edges_by_position: 8 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, 4) < 0) {
        return NULL;
    }
    Py_ssize_t n = index_count(&views[0]), n_edges = views[2].len / 8;
    if (views[1].len / 8 != n || views[3].len / 8 != n_edges || views[4].len / 8 != n_edges ||
        views[5].len / 8 != n_edges || views[6].len / 8 != n_edges || views[7].len != n_edges) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "edges_by_position: array lengths disagree");
        return NULL;
    }
    const Py_buffer *position = &views[0];
    const int64_t *key = views[1].buf, *src = views[2].buf, *dst = views[3].buf;
    int64_t *e_order = views[4].buf, *e_pos = views[5].buf, *e_src = views[6].buf;
    unsigned char *e_stale = views[7].buf;
    /* the other half of each radix pass's (position, edge) pairs, and a digit's counts */
    int64_t *spare = n_edges ? PyMem_RawMalloc((size_t)n_edges * 2 * sizeof(int64_t)) : NULL;
    Py_ssize_t *count = PyMem_RawMalloc((size_t)(RADIX_SIZE + 1) * sizeof(Py_ssize_t));
    if ((n_edges && spare == NULL) || count == NULL) {
        PyMem_RawFree(spare);
        PyMem_RawFree(count);
        release_all(views, COUNT);
        return PyErr_NoMemory();
    }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t highest = 0;
    for (Py_ssize_t k = 0; k < n_edges; k++) {
        if (src[k] < 0 || src[k] >= n || dst[k] < 0 || dst[k] >= n) {
            bad = 1;
            break;
        }
        int64_t at = index_at(position, dst[k]);
        if (at < 0 || at >= n) {
            bad = 1;
            break;
        }
        e_pos[k] = at;
        e_order[k] = k;
        if (e_pos[k] > highest) {
            highest = e_pos[k];
        }
    }
    if (!bad && n_edges > 0 && sorted_tail_order(e_pos, n_edges, spare, spare + n_edges) == 0) {
        /* the positions ascend but for a short tail: the merged order, then the positions in it */
        for (Py_ssize_t j = 0; j < n_edges; j++) {
            e_order[j] = spare[j];
            spare[n_edges + j] = e_pos[spare[j]];
        }
        memcpy(e_pos, spare + n_edges, (size_t)n_edges * sizeof(int64_t));
    } else if (!bad) {
        /* stable passes from the lowest digit up: equal positions keep their edges in index order */
        int64_t *pos_in = e_pos, *edge_in = e_order, *pos_out = spare, *edge_out = spare + n_edges;
        for (int shift = 0; shift < 64 && (highest >> shift) > 0; shift += RADIX_BITS) {
            for (Py_ssize_t d = 0; d <= RADIX_SIZE; d++) {
                count[d] = 0;
            }
            for (Py_ssize_t k = 0; k < n_edges; k++) {
                count[((pos_in[k] >> shift) & (RADIX_SIZE - 1)) + 1]++;
            }
            for (Py_ssize_t d = 0; d < RADIX_SIZE; d++) {
                count[d + 1] += count[d];
            }
            for (Py_ssize_t k = 0; k < n_edges; k++) {
                Py_ssize_t at = count[(pos_in[k] >> shift) & (RADIX_SIZE - 1)]++;
                pos_out[at] = pos_in[k];
                edge_out[at] = edge_in[k];
            }
            int64_t *swap = pos_in;
            pos_in = pos_out;
            pos_out = swap;
            swap = edge_in;
            edge_in = edge_out;
            edge_out = swap;
        }
        if (pos_in != e_pos) { /* an odd number of passes: the sorted pairs are in the spare buffer */
            memcpy(e_pos, pos_in, (size_t)n_edges * sizeof(int64_t));
            memcpy(e_order, edge_in, (size_t)n_edges * sizeof(int64_t));
        }
    }
    if (!bad) {
        for (Py_ssize_t j = 0; j < n_edges; j++) {
            int64_t k = e_order[j];
            e_src[j] = src[k];
            e_stale[j] = key[src[k]] >= key[dst[k]];
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(spare);
    PyMem_RawFree(count);
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "edges_by_position: an index out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- the critical path's walk (critical.path_points) ---------------------------------------------------------
 *
 * critical_walk(t, lag, chain_first, edge_src, edge_dst, edge_lag, start, bottoms, tops, head_sources): from point
 * ``start`` back through what set each point's time, as engine.setters names it (the binding cross edge, the last
 * of equal ones, where one reaches the point's time; else the chain predecessor where it does; else none), one
 * stretch of a chain at a time: each stretch's lowest and highest point and what set its lowest point (-1: none)
 * written in walk order (the last stretch first), at most n stretches. Only the points walked through are read.
 * Returns the stretches written, or -1 where they are more than bottoms, tops and head_sources hold (each of the
 * same length, 1 to n: the caller sizes them for the few stretches of most walks and asks again with n).
 */

/* the edges' radix sort by target: digits of this many bits */
#define WALK_RADIX_BITS 11
#define WALK_RADIX_SIZE ((Py_ssize_t)1 << WALK_RADIX_BITS)

static PyObject *critical_walk(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 9 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"t",     "lag",     "chain_first", "edge_src",    "edge_dst",
                                             "edge_lag", "bottoms", "tops",        "head_sources"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, 1, 8, 8, 8, 8, 8, 8};
    PyObject *items[COUNT];
    PyObject *t_obj, *lag_obj, *first_obj, *src_obj, *dst_obj, *elag_obj, *bottoms_obj, *tops_obj, *heads_obj;
    long long start;
    if (!PyArg_ParseTuple(args, "OOOOOOLOOO", &t_obj, &lag_obj, &first_obj, &src_obj, &dst_obj, &elag_obj, &start,
                          &bottoms_obj, &tops_obj, &heads_obj)) {
        return NULL;
    }
    items[0] = t_obj, items[1] = lag_obj, items[2] = first_obj, items[3] = src_obj, items[4] = dst_obj;
    items[5] = elag_obj, items[6] = bottoms_obj, items[7] = tops_obj, items[8] = heads_obj;
    PyObject *packed = PyTuple_New(COUNT);
    if (packed == NULL) {
        return NULL;
    }
    for (int i = 0; i < COUNT; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(packed, i, items[i]);
    }
    int failed = get_all(packed, COUNT, objs, views, sizes, names, 6);
    Py_DECREF(packed);
    if (failed < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, n_edges = views[3].len / 8;
    if (views[1].len / 8 != n || views[2].len != n || views[4].len / 8 != n_edges || views[5].len / 8 != n_edges ||
        views[6].len / 8 < 1 || views[6].len / 8 > n || views[7].len != views[6].len || views[8].len != views[6].len ||
        start < 0 || start >= n) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "critical_walk: array lengths disagree");
        return NULL;
    }
    const int64_t *t = views[0].buf, *lag = views[1].buf, *src = views[3].buf, *dst = views[4].buf;
    const int64_t *elag = views[5].buf;
    const unsigned char *first = views[2].buf;
    int64_t *bottoms = views[6].buf, *tops = views[7].buf, *heads = views[8].buf;
    /* the edges by target: their indices sorted by edge_dst, stably (edge order within one target), by a radix
     * sort of n_edges items (11-bit digits of the targets): two arrays of the edges, not a per-point index of
     * n + 1 whose pages the walk's few points would not repay (3.6k page faults and two passes over it at 1.45M
     * points) */
    int64_t *into = PyMem_RawMalloc(((size_t)n_edges + 1) * sizeof(int64_t));
    int64_t *spare = PyMem_RawMalloc(((size_t)n_edges + 1) * sizeof(int64_t));
    Py_ssize_t *digits = PyMem_RawMalloc(((size_t)WALK_RADIX_SIZE + 1) * sizeof(Py_ssize_t));
    if (into == NULL || spare == NULL || digits == NULL) {
        PyMem_RawFree(into);
        PyMem_RawFree(spare);
        PyMem_RawFree(digits);
        release_all(views, COUNT);
        return PyErr_NoMemory();
    }
    int bad = 0, full = 0;
    Py_ssize_t count = 0, room = views[6].len / 8;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n_edges; k++) {
        if (src[k] < 0 || src[k] >= n || dst[k] < 0 || dst[k] >= n) {
            bad = 1;
            break;
        }
        into[k] = k;
    }
    /* the targets ascend but for a short tail (the launch edges first): merged, no radix passes */
    int merged = !bad && sorted_tail_order(dst, n_edges, spare, into) == 0;
    if (merged) {
        memcpy(into, spare, (size_t)n_edges * sizeof(int64_t));
    }
    if (!bad) {
        /* one pass per digit of the highest target (n - 1), at least one */
        for (int shift = 0; !merged && (shift == 0 || (shift < 63 && ((uint64_t)(n - 1) >> shift) != 0));
             shift += WALK_RADIX_BITS) {
            memset(digits, 0, ((size_t)WALK_RADIX_SIZE + 1) * sizeof(Py_ssize_t));
            for (Py_ssize_t j = 0; j < n_edges; j++) {
                digits[(((uint64_t)dst[into[j]] >> shift) & (WALK_RADIX_SIZE - 1)) + 1]++;
            }
            for (Py_ssize_t d = 0; d < WALK_RADIX_SIZE; d++) {
                digits[d + 1] += digits[d];
            }
            for (Py_ssize_t j = 0; j < n_edges; j++) {
                spare[digits[((uint64_t)dst[into[j]] >> shift) & (WALK_RADIX_SIZE - 1)]++] = into[j];
            }
            int64_t *swap = into;
            into = spare;
            spare = swap;
        }
        int64_t p = start;
        while (count < n) {
            int64_t h = p, source;
            /* the sorted edges into the points below h + 1 end at ``below`` (a search once per stretch; then moved
             * down as h does) */
            Py_ssize_t lo_j = 0, hi_j = n_edges;
            while (lo_j < hi_j) {
                Py_ssize_t mid = lo_j + (hi_j - lo_j) / 2;
                if (dst[into[mid]] <= h) {
                    lo_j = mid + 1;
                } else {
                    hi_j = mid;
                }
            }
            Py_ssize_t below = lo_j;
            for (;;) {
                /* what set h: the binding edge (the latest source + lag, the last of equal ones), where it reaches
                 * t[h]; else the chain predecessor where it reaches t[h]; else none */
                int64_t reach = NONE_TIME, chosen = -1;
                Py_ssize_t first_j = below;
                while (first_j > 0 && dst[into[first_j - 1]] == h) {
                    first_j--;
                }
                for (Py_ssize_t j = first_j; j < below; j++) {
                    int64_t k = into[j];
                    int64_t ready = t[src[k]] + elag[k];
                    if (ready >= reach) {
                        if (ready > reach) {
                            reach = ready;
                        }
                        chosen = k;
                    }
                }
                below = first_j;
                if (chosen >= 0 && reach >= t[h] && reach > NONE_TIME / 2) {
                    source = src[chosen];
                } else if (h > 0 && !first[h] && t[h - 1] + lag[h] >= t[h]) {
                    source = h - 1;
                } else {
                    source = -1;
                }
                if (source != h - 1 || h == 0) {
                    break;
                }
                h--;
            }
            if (count == room) {
                full = 1;
                break;
            }
            bottoms[count] = h;
            tops[count] = p;
            heads[count] = source;
            count++;
            if (source < 0 || source == h) {
                break;
            }
            p = source;
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(into);
    PyMem_RawFree(spare);
    PyMem_RawFree(digits);
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "critical_walk: an index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(full ? -1 : count);
}

/* ---- the range running at each time (intervals.running_at), for times that mostly ascend -----------------------
 *
 * running_at(starts, ends, t, out): out[i] = the last range (starts ascending) starting at or before t[i] if
 * t[i] < its end, else -1; each time searched from the previous one's answer first (the host points of a thread
 * come in time order), a binary search where that misses.
 */

static PyObject *running_at(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 4 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"starts", "ends", "t", "out"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "running_at: 4 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, 3) < 0) {
        return NULL;
    }
    Py_ssize_t m = views[0].len / 8, n = views[2].len / 8;
    if (views[1].len / 8 != m || views[3].len / 8 != n) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "running_at: array lengths disagree");
        return NULL;
    }
    const int64_t *starts = views[0].buf, *ends = views[1].buf, *t = views[2].buf;
    int64_t *out = views[3].buf;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t j = 0; /* the ranges starting at or before the last time */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t v = t[i];
        if (!((j == 0 || starts[j - 1] <= v) && (j == m || starts[j] > v))) {
            if (j < m && starts[j] <= v && (j + 1 == m || starts[j + 1] > v)) {
                j++; /* the next range */
            } else {
                Py_ssize_t lo = 0, hi = m;
                while (lo < hi) {
                    Py_ssize_t mid = lo + (hi - lo) / 2;
                    if (starts[mid] <= v) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                j = lo;
            }
        }
        out[i] = (j > 0 && v < ends[j - 1]) ? (int64_t)(j - 1) : -1;
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    Py_RETURN_NONE;
}

/* ---- a thread's idle gaps against its own rows (graph._wake_edges) ---------------------------------------------
 *
 * union_overlap(mask, start, end, lo, hi, out): out[i] = how much of [lo[i], hi[i]) the union of the rows where
 * mask is set covers (intervals.merge, then intervals.overlap_with_union), in one pass over the rows: the union
 * grown row by row, each merged interval added to the gaps it meets. Needs the masked rows in start order and the
 * gaps in order, each at or after the one before (returns -1, nothing usable written, where not); else 0.
 */

static void add_union_interval(int64_t us, int64_t ue, const int64_t *lo, const int64_t *hi, int64_t *out,
                               Py_ssize_t n_gaps, Py_ssize_t *q) {
    while (*q < n_gaps && hi[*q] <= us) {
        (*q)++;
    }
    for (Py_ssize_t i = *q; i < n_gaps && lo[i] < ue; i++) {
        int64_t a = lo[i] > us ? lo[i] : us, b = hi[i] < ue ? hi[i] : ue;
        if (b > a) {
            out[i] += b - a;
        }
    }
}

static PyObject *union_overlap(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 6 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"mask", "start", "end", "lo", "hi", "out"};
    static const Py_ssize_t sizes[COUNT] = {1, 8, 8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "union_overlap: 6 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, 5) < 0) {
        return NULL;
    }
    Py_ssize_t rows = views[0].len, n_gaps = views[3].len / 8;
    if (views[1].len / 8 != rows || views[2].len / 8 != rows || views[4].len / 8 != n_gaps ||
        views[5].len / 8 != n_gaps) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "union_overlap: array lengths disagree");
        return NULL;
    }
    const unsigned char *mask = views[0].buf;
    const int64_t *start = views[1].buf, *end = views[2].buf, *lo = views[3].buf, *hi = views[4].buf;
    int64_t *out = views[5].buf;
    int unordered = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_gaps; i++) {
        out[i] = 0;
        if (hi[i] < lo[i] || (i > 0 && lo[i] < hi[i - 1])) {
            unordered = 1;
        }
    }
    Py_ssize_t q = 0;
    int open = 0;
    int64_t us = 0, ue = 0, last_start = 0;
    for (Py_ssize_t r = 0; r < rows && !unordered; r++) {
        if (!mask[r]) {
            continue;
        }
        int64_t s = start[r], e = end[r];
        if (open && s < last_start) {
            unordered = 1;
            break;
        }
        last_start = s;
        if (!open) {
            us = s, ue = e, open = 1;
        } else if (s > ue) { /* past every end so far: the merged interval closes (touching ones join) */
            add_union_interval(us, ue, lo, hi, out, n_gaps, &q);
            us = s, ue = e;
        } else if (e > ue) {
            ue = e;
        }
    }
    if (open && !unordered) {
        add_union_interval(us, ue, lo, hi, out, n_gaps, &q);
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    return PyLong_FromLong(unordered ? -1 : 0);
}

/* ---- the steps of the points (remedies.Context.step_of, _step_reading) -----------------------------------------
 *
 * launched_steps(step_of, op_launch_call, call_start, op_start, op_end): each launched op's start and end point
 * (op_launch_call >= 0) take the step of its launch call's start point (step_of int64, written in place; the
 * unlaunched ops' points are left as they are). Returns the ops written.
 * worked_step_span(step_of, skip): the lowest and highest step (>= 0) of the points not in ``skip`` (ascending
 * point indices: the step markers' points); (-1, -1) where no such point has a step.
 */
static PyObject *launched_steps(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 5 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"step_of", "op_launch_call", "call_start", "op_start", "op_end"};
    Py_ssize_t sizes[COUNT] = {8, 8, 0, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "launched_steps: 5 arguments expected");
        return NULL;
    }
    /* call_start: 4- or 8-byte point indices (the graph's are int32 where the points fit) */
    Py_buffer probe;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 2), &probe, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    sizes[2] = probe.itemsize;
    PyBuffer_Release(&probe);
    if (sizes[2] != 4 && sizes[2] != 8) {
        PyErr_SetString(PyExc_TypeError, "call_start: items of 4 or 8 bytes expected");
        return NULL;
    }
    /* step_of first, the one written: get_all's writable ones come last, so it is asked for on its own */
    if (get(PyTuple_GET_ITEM(args, 0), &views[0], 1, 8, names[0]) < 0) {
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 1, COUNT);
    if (rest == NULL) {
        PyBuffer_Release(&views[0]);
        return NULL;
    }
    int failed = get_all(rest, COUNT - 1, objs + 1, views + 1, sizes + 1, names + 1, COUNT);
    Py_DECREF(rest);
    if (failed < 0) {
        PyBuffer_Release(&views[0]);
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, n_ops = views[1].len / 8, n_calls = views[2].len / sizes[2];
    if (views[3].len / 8 != n_ops || views[4].len / 8 != n_ops) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "launched_steps: array lengths disagree");
        return NULL;
    }
    int64_t *step = views[0].buf;
    const int64_t *call = views[1].buf, *start = views[3].buf, *end = views[4].buf;
    const char *call_start = views[2].buf;
    Py_ssize_t call_size = sizes[2], written = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t o = 0; o < n_ops; o++) {
        int64_t c = call[o];
        if (c < 0) {
            continue;
        }
        if (c >= n_calls || start[o] < 0 || start[o] >= n || end[o] < 0 || end[o] >= n) {
            bad = 1;
            break;
        }
        int64_t p = call_size == 4 ? (int64_t)((const int32_t *)call_start)[c] : ((const int64_t *)call_start)[c];
        if (p < 0 || p >= n) {
            bad = 1;
            break;
        }
        step[start[o]] = step[end[o]] = step[p];
        written++;
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "launched_steps: an index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(written);
}

static PyObject *worked_step_span(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 2 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"step_of", "skip"};
    static const Py_ssize_t sizes[COUNT] = {8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "worked_step_span: 2 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, COUNT) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, n_skip = views[1].len / 8;
    const int64_t *step = views[0].buf, *skip = views[1].buf;
    int64_t lowest = -1, highest = -1;
    int unordered = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 1; k < n_skip; k++) {
        unordered |= skip[k] < skip[k - 1];
    }
    /* the stretches between the skipped points, each a tight min/max loop */
    int64_t low = INT64_MAX, high = -1;
    Py_ssize_t p = 0;
    for (Py_ssize_t k = 0; k <= n_skip && !unordered; k++) {
        Py_ssize_t stop = k < n_skip ? (skip[k] < 0 ? 0 : (skip[k] < n ? (Py_ssize_t)skip[k] : n)) : n;
        for (; p < stop; p++) {
            int64_t s = step[p];
            if (s >= 0) {
                low = s < low ? s : low;
                high = s > high ? s : high;
            }
        }
        if (k < n_skip && skip[k] >= p && skip[k] < n) {
            p = (Py_ssize_t)skip[k] + 1;
        }
    }
    if (high >= 0) {
        lowest = low;
        highest = high;
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    if (unordered) {
        PyErr_SetString(PyExc_ValueError, "worked_step_span: skip must ascend");
        return NULL;
    }
    return Py_BuildValue("(LL)", (long long)lowest, (long long)highest);
}

/* ---- idle-gap coverage of several threads at once (graph._wake_edges) -----------------------------------------
 *
 * thread_union_overlap(kind, own_kind, tid, pid, start, end, keys, gap_from, lo, hi, out): union_overlap for each
 * of the threads ``keys`` (K thread keys, (pid << 32) ^ (tid & 0xFFFFFFFF) as analyses.columns.thread_key packs
 * them), in one pass over the event rows instead of a mask and a pass per thread: a row counts for thread k where
 * own_kind[its kind as a byte] is set, its tid is not negative and its (pid, tid) key is keys[k]. Thread k's gaps
 * are lo/hi[gap_from[k] .. gap_from[k + 1]) (each at or after the one before); out receives each gap's covered
 * ns. tid and pid: 4- or 8-byte integers. Returns 0, or -1 (nothing usable written) where a thread's rows do not
 * come in start order or its gaps are out of order.
 */
static int64_t int_at(const char *buf, Py_ssize_t i, Py_ssize_t size) {
    return size == 4 ? (int64_t)((const int32_t *)buf)[i] : ((const int64_t *)buf)[i];
}

static PyObject *thread_union_overlap(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 11 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"kind", "own_kind", "tid", "pid", "start", "end",
                                             "keys", "gap_from", "lo", "hi",  "out"};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "thread_union_overlap: 11 arguments expected");
        return NULL;
    }
    /* tid and pid: their own item size (4 or 8), checked below */
    Py_ssize_t sizes[COUNT] = {1, 1, 0, 0, 8, 8, 8, 8, 8, 8, 8};
    for (int i = 2; i < 4; i++) {
        Py_buffer probe;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, i), &probe, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            return NULL;
        }
        sizes[i] = probe.itemsize;
        PyBuffer_Release(&probe);
        if (sizes[i] != 4 && sizes[i] != 8) {
            PyErr_Format(PyExc_TypeError, "%s: items of 4 or 8 bytes expected", names[i]);
            return NULL;
        }
    }
    if (get_all(args, COUNT, objs, views, sizes, names, COUNT - 1) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len, k_threads = views[6].len / 8, n_gaps = views[8].len / 8;
    if (views[1].len != 256 || views[2].len / sizes[2] != n || views[3].len / sizes[3] != n ||
        views[4].len / 8 != n || views[5].len / 8 != n || views[7].len / 8 != k_threads + 1 ||
        views[9].len / 8 != n_gaps || views[10].len / 8 != n_gaps) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "thread_union_overlap: array lengths disagree");
        return NULL;
    }
    const signed char *kind = views[0].buf;
    const unsigned char *own = views[1].buf;
    const char *tid = views[2].buf, *pid = views[3].buf;
    Py_ssize_t tid_size = sizes[2], pid_size = sizes[3];
    const int64_t *start = views[4].buf, *end = views[5].buf, *keys = views[6].buf, *from = views[7].buf;
    const int64_t *lo = views[8].buf, *hi = views[9].buf;
    int64_t *out = views[10].buf;
    int bad = 0;
    for (Py_ssize_t k = 0; k < k_threads && !bad; k++) {
        bad = from[k] < 0 || from[k + 1] < from[k] || from[k + 1] > n_gaps || (k == 0 && from[k] != 0);
    }
    bad |= k_threads > 0 && from[k_threads] != n_gaps;
    int64_t *state = bad ? NULL : PyMem_RawCalloc((size_t)(k_threads > 0 ? k_threads : 1), 5 * sizeof(int64_t));
    if (bad || state == NULL) {
        release_all(views, COUNT);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "thread_union_overlap: bad gap offsets");
            return NULL;
        }
        return PyErr_NoMemory();
    }
    /* per thread: open, us, ue, last_start, q (its gap cursor, from its first gap) */
    int64_t *open = state, *us = state + k_threads, *ue = state + 2 * k_threads;
    int64_t *last_start = state + 3 * k_threads, *q = state + 4 * k_threads;
    int unordered = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < k_threads; k++) {
        q[k] = from[k];
        for (Py_ssize_t i = from[k]; i < from[k + 1]; i++) {
            out[i] = 0;
            if (hi[i] < lo[i] || (i > from[k] && lo[i] < hi[i - 1])) {
                unordered = 1;
            }
        }
    }
    for (Py_ssize_t r = 0; r < n && !unordered; r++) {
        if (!own[(unsigned char)kind[r]]) {
            continue;
        }
        int64_t t = int_at(tid, r, tid_size);
        if (t < 0) {
            continue;
        }
        int64_t key = (int64_t)(((uint64_t)int_at(pid, r, pid_size) << 32) ^ ((uint64_t)t & 0xFFFFFFFFu));
        Py_ssize_t k = 0;
        while (k < k_threads && keys[k] != key) {
            k++;
        }
        if (k == k_threads) {
            continue;
        }
        int64_t s = start[r], e = end[r];
        if (open[k] && s < last_start[k]) {
            unordered = 1;
            break;
        }
        last_start[k] = s;
        if (!open[k]) {
            us[k] = s, ue[k] = e, open[k] = 1;
        } else if (s > ue[k]) { /* past every end so far: the merged interval closes (touching ones join) */
            Py_ssize_t cursor = (Py_ssize_t)q[k];
            add_union_interval(us[k], ue[k], lo, hi, out, (Py_ssize_t)from[k + 1], &cursor);
            q[k] = cursor;
            us[k] = s, ue[k] = e;
        } else if (e > ue[k]) {
            ue[k] = e;
        }
    }
    for (Py_ssize_t k = 0; k < k_threads && !unordered; k++) {
        if (open[k]) {
            Py_ssize_t cursor = (Py_ssize_t)q[k];
            add_union_interval(us[k], ue[k], lo, hi, out, (Py_ssize_t)from[k + 1], &cursor);
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(state);
    release_all(views, COUNT);
    return PyLong_FromLong(unordered ? -1 : 0);
}

/* ---- the host calls of the graph (graph._host_calls): outermost rows per thread in time order -----------------
 *
 * host_calls(rows, thread, start, end, kind, call_of, offset, call_row, call_thread, call_start, call_end,
 * marker_kind, n_threads): ``rows`` (n ascending event rows: the host API rows and step markers), ``thread`` (each
 * one's thread code in [0, n_threads)); ``start``, ``end`` and ``kind`` (int8) the whole event columns, read at the
 * rows (a step marker, kind ``marker_kind``, ends where it starts). In (thread, start, longest first, row) order
 * (np.lexsort((-end, start, thread))), a row is *outer* unless an earlier row of its thread ends at or after its
 * end (then it is nested in the last outer row before it). Per row (in ``rows`` order): call_of, the index of its
 * outer call (calls numbered in that order), and offset, its start - that call's start (not written where offset
 * is empty); per call: its event row,
 * thread, start and end (the first ``returned`` items written). The rows' starts must ascend (the event table's
 * order): a counting sort by thread, equal starts of a thread ordered by a few comparisons; returns -1, nothing
 * usable written, where they do not ascend or a thread has more than HOST_TIES rows at one start (then numpy).
 */

#define HOST_TIES 64

/* a before b in the calls' order among rows of one thread and start: the longer first, then the lower row */
static int host_before(int64_t end_a, int64_t row_a, int64_t end_b, int64_t row_b) {
    return end_a > end_b || (end_a == end_b && row_a < row_b);
}

static PyObject *host_calls(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 11, INPUTS = 5 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"rows",    "thread",      "start",      "end",     "kind",
                                             "call_of", "offset",      "call_row",   "call_thread",
                                             "call_start", "call_end"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, 8, 8, 1, 8, 8, 8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT + 2) {
        PyErr_SetString(PyExc_TypeError, "host_calls: 13 arguments expected");
        return NULL;
    }
    long long marker_kind = PyLong_AsLongLong(PyTuple_GET_ITEM(args, COUNT));
    Py_ssize_t n_threads = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, COUNT + 1));
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, INPUTS) < 0) {
        return NULL;
    }
    Py_buffer *in = views, *out = views + INPUTS;
    Py_ssize_t n = in[0].len / 8, n_rows = in[2].len / 8;
    int bad = in[1].len / 8 != n || in[3].len / 8 != n_rows || in[4].len != n_rows || n_threads < 0;
    for (int i = 0; i < 6; i++) { /* (offset may be empty: not written) */
        bad |= out[i].len / 8 != n && !(i == 1 && out[i].len == 0);
    }
    if (bad) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "host_calls: array lengths disagree");
        return NULL;
    }
    const int64_t *rows = in[0].buf, *thread = in[1].buf, *start = in[2].buf, *end = in[3].buf;
    const signed char *kind = in[4].buf;
    int64_t *call_of = out[0].buf, *offset = out[1].len ? out[1].buf : NULL, *call_row = out[2].buf;
    int64_t *call_thread = out[3].buf;
    int64_t *call_start = out[4].buf, *call_end = out[5].buf;
    int64_t *order = PyMem_RawMalloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    int64_t *next = PyMem_RawCalloc((size_t)n_threads + 1, sizeof(int64_t));
    if (order == NULL || next == NULL) {
        PyMem_RawFree(order);
        PyMem_RawFree(next);
        release_all(views, COUNT);
        return PyErr_NoMemory();
    }
    Py_ssize_t n_calls = 0;
    int status = 0; /* 1: out of range, -1: not usable here (numpy) */
    Py_BEGIN_ALLOW_THREADS
    /* the checks, and the rows per thread */
    for (Py_ssize_t i = 0; i < n && !status; i++) {
        if (rows[i] < 0 || rows[i] >= n_rows || thread[i] < 0 || thread[i] >= n_threads) {
            status = 1;
        } else if (i > 0 && (rows[i] <= rows[i - 1] || start[rows[i]] < start[rows[i - 1]])) {
            status = -1;
        } else {
            next[thread[i] + 1]++;
        }
    }
    if (!status) {
        for (Py_ssize_t k = 0; k < n_threads; k++) {
            next[k + 1] += next[k];
        }
        for (Py_ssize_t i = 0; i < n; i++) { /* stable: each thread's rows stay in start order */
            order[next[thread[i]]++] = i;
        }
    }
    /* equal starts of a thread (adjacent now): the longest first, then the lower row (insertion sort) */
    for (Py_ssize_t a = 0; a < n && !status;) {
        Py_ssize_t b = a + 1;
        int64_t s = start[rows[order[a]]];
        while (b < n && thread[order[b]] == thread[order[a]] && start[rows[order[b]]] == s) {
            b++;
        }
        if (b - a > HOST_TIES) {
            status = -1;
            break;
        }
        for (Py_ssize_t i = a + 1; i < b; i++) {
            int64_t item = order[i];
            int64_t r = rows[item];
            int64_t e = kind[r] == marker_kind ? start[r] : end[r];
            Py_ssize_t j = i;
            while (j > a) {
                int64_t other = order[j - 1], q = rows[other];
                int64_t f = kind[q] == marker_kind ? start[q] : end[q];
                if (!host_before(e, r, f, q)) {
                    break;
                }
                order[j] = other;
                j--;
            }
            order[j] = item;
        }
        a = b;
    }
    /* one walk: a row inside the running latest end of its thread's rows before it is nested */
    int64_t run_end = NONE_TIME, outer_start = 0;
    for (Py_ssize_t i = 0; i < n && !status; i++) {
        int64_t item = order[i], r = rows[item];
        int64_t s = start[r], e = kind[r] == marker_kind ? s : end[r];
        if (i == 0 || thread[item] != thread[order[i - 1]]) {
            run_end = NONE_TIME;
        }
        if (!(run_end >= e)) {
            call_row[n_calls] = r;
            call_thread[n_calls] = thread[item];
            call_start[n_calls] = s;
            call_end[n_calls] = e;
            outer_start = s;
            n_calls++;
        }
        call_of[item] = (int64_t)n_calls - 1;
        if (offset != NULL) {
            offset[item] = s - outer_start;
        }
        if (e > run_end) {
            run_end = e;
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(order);
    PyMem_RawFree(next);
    release_all(views, COUNT);
    if (status > 0) {
        PyErr_SetString(PyExc_ValueError, "host_calls: an index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(status < 0 ? -1 : n_calls);
}

/* ---- the host calls by runs of one thread (graph.build where the host rows come in few runs per thread) -------
 *
 * thread_runs_at(rows, pid, tid, heads): the first position of each run of rows[i] with one (pid[row], tid[row])
 * (pid and tid 4- or 8-byte integers, read at the rows: no gathered copies); returns the runs written, or -1 where
 * they are more than heads holds (the caller reads the rows one by one then).
 *
 * host_calls_by_runs(rows, heads, run_thread, start, end, kind, call_of, call_row, call_thread, call_start,
 * call_end, marker_kind, n_threads): host_calls with each row's thread given per run (heads: the runs' first
 * positions, ascending from 0; run_thread: each run's thread code in [0, n_threads)), and no offsets: the same
 * calls and call_of. The threads are walked in code order through their runs (a counting sort of the runs, not of
 * the rows: no per-row order or thread array); equal starts of a thread ordered as host_calls orders them. Returns
 * the calls, or -1 (nothing usable written) where the rows' starts do not ascend or a thread has more than
 * HOST_TIES rows at one start.
 *
 * host_points_by_runs(the same 13 arguments, time, lag, anchor, chain, row, point_kind, chain_first, is_marker,
 * start_kind, end_kind): host_calls_by_runs writing the graph's host points instead of call_start and call_end
 * (those may be empty, and call_row and call_thread together: the points' row and chain at 2c hold them):
 * call c's start and end at points 2c and 2c + 1 of time (int64), lag (the host gap before the start, 0 on its
 * thread's first call, never negative; the duration), anchor (a thread's first start keeps its time, else NONE),
 * chain (the thread) and row (4- or 8-byte integers), point_kind (start_kind, end_kind) and chain_first (a byte:
 * the thread's first start), and is_marker[c] (a byte: the call's row is a step marker); room for 2n points, the
 * first 2 x returned written (graph.build: no call-sized start and end arrays, no passes to spread them).
 */

static PyObject *thread_runs_at(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 4 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"rows", "pid", "tid", "heads"};
    static const Py_ssize_t sizes[COUNT] = {8, INDEX_ITEMS, INDEX_ITEMS, 8};
    if (get_all(args, COUNT, objs, views, sizes, names, 3) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, n_rows = index_count(&views[1]), room = views[3].len / 8;
    if (index_count(&views[2]) != n_rows) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "thread_runs_at: array lengths disagree");
        return NULL;
    }
    const int64_t *rows = views[0].buf;
    int64_t *heads = views[3].buf;
    Py_ssize_t count = 0;
    int status = 0; /* 1: out of range, -1: more runs than room */
    Py_BEGIN_ALLOW_THREADS
    int64_t last_pid = 0, last_tid = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t r = rows[i];
        if (r < 0 || r >= n_rows) {
            status = 1;
            break;
        }
        int64_t p = index_at(&views[1], r), t = index_at(&views[2], r);
        if (i == 0 || p != last_pid || t != last_tid) {
            if (count == room) {
                status = -1;
                break;
            }
            heads[count++] = i;
            last_pid = p;
            last_tid = t;
        }
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    if (status > 0) {
        PyErr_SetString(PyExc_ValueError, "thread_runs_at: an index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(status < 0 ? -1 : count);
}

struct host_walk {
    const int64_t *rows, *start, *end;
    const signed char *kind;
    long long marker_kind;
    int64_t *call_of, *call_row, *call_thread, *call_start, *call_end;
    Py_ssize_t n_calls;
    int64_t run_end;
    /* the graph's host points, where written (p_time not NULL; call_start and call_end are then not written) */
    int64_t *p_time, *p_lag, *p_anchor;
    Py_buffer *p_chain, *p_row;
    signed char *p_kind;
    unsigned char *p_first, *p_marker;
    signed char start_kind, end_kind;
    int64_t last_thread, last_end;
};

/* call c's two points (graph.build's host part): times, chain lags (the host gap before the start, 0 on a
 * thread's first call and never negative; the duration), anchors (a thread's first start keeps its time), chain,
 * event row, kinds, chain head; and whether the call is a step marker */
static void host_points_of_call(struct host_walk *w, Py_ssize_t c, int64_t r, int64_t thread, int64_t s, int64_t e) {
    Py_ssize_t p = 2 * c;
    int first = c == 0 || thread != w->last_thread;
    int64_t gap = first ? 0 : s - w->last_end;
    w->p_time[p] = s;
    w->p_time[p + 1] = e;
    w->p_lag[p] = gap > 0 ? gap : 0;
    w->p_lag[p + 1] = e - s;
    w->p_anchor[p] = first ? s : NONE_TIME;
    w->p_anchor[p + 1] = NONE_TIME;
    index_put(w->p_chain, p, thread);
    index_put(w->p_chain, p + 1, thread);
    index_put(w->p_row, p, r);
    index_put(w->p_row, p + 1, r);
    w->p_kind[p] = w->start_kind;
    w->p_kind[p + 1] = w->end_kind;
    w->p_first[p] = (unsigned char)first;
    w->p_first[p + 1] = 0;
    w->p_marker[c] = w->kind[r] == w->marker_kind;
    w->last_thread = thread;
    w->last_end = e;
}

/* the walk's step for a group of rows of one thread at one start (positions ``group``): ordered the longest
 * first, then the lower row (insertion sort), each then nested in the calls before it or a call of its own */
static void host_walk_group(struct host_walk *w, int64_t *group, Py_ssize_t size, int64_t thread) {
    for (Py_ssize_t i = 1; i < size; i++) {
        int64_t item = group[i], r = w->rows[item];
        int64_t e = w->kind[r] == w->marker_kind ? w->start[r] : w->end[r];
        Py_ssize_t j = i;
        while (j > 0) {
            int64_t other = group[j - 1], q = w->rows[other];
            int64_t f = w->kind[q] == w->marker_kind ? w->start[q] : w->end[q];
            if (!host_before(e, r, f, q)) {
                break;
            }
            group[j] = other;
            j--;
        }
        group[j] = item;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        int64_t item = group[i], r = w->rows[item];
        int64_t s = w->start[r], e = w->kind[r] == w->marker_kind ? s : w->end[r];
        if (!(w->run_end >= e)) {
            if (w->call_row != NULL) {
                w->call_row[w->n_calls] = r;
                w->call_thread[w->n_calls] = thread;
            }
            if (w->p_time != NULL) {
                host_points_of_call(w, w->n_calls, r, thread, s, e);
            } else {
                w->call_start[w->n_calls] = s;
                w->call_end[w->n_calls] = e;
            }
            w->n_calls++;
        }
        w->call_of[item] = (int64_t)w->n_calls - 1;
        if (e > w->run_end) {
            w->run_end = e;
        }
    }
}

/* host_calls_by_runs, and with ``points`` host_points_by_runs */
static PyObject *walk_runs(PyObject *args, int points) {
    /* the 11 buffers, then (with the points) the 8 point buffers after marker_kind and n_threads */
    enum { CALLS = 11, POINTS = 8, COUNT = CALLS + POINTS, INPUTS = 6 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {
        "rows",        "heads",    "run_thread", "start",   "end",   "kind",     "call_of",
        "call_row",    "call_thread", "call_start", "call_end", "time", "lag",   "anchor",
        "chain",       "row",      "point_kind", "chain_first", "is_marker"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, 8, 8, 8, 1, 8, 8, 8, 8, 8, 8, 8, 8, INDEX_ITEMS, INDEX_ITEMS, 1, 1, 1};
    if (PyTuple_GET_SIZE(args) != (points ? COUNT + 4 : CALLS + 2)) {
        PyErr_SetString(PyExc_TypeError, points ? "host_points_by_runs: 23 arguments expected"
                                                : "host_calls_by_runs: 13 arguments expected");
        return NULL;
    }
    long long marker_kind = PyLong_AsLongLong(PyTuple_GET_ITEM(args, CALLS));
    Py_ssize_t n_threads = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, CALLS + 1));
    long long start_kind = points ? PyLong_AsLongLong(PyTuple_GET_ITEM(args, COUNT + 2)) : 0;
    long long end_kind = points ? PyLong_AsLongLong(PyTuple_GET_ITEM(args, COUNT + 3)) : 0;
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *packed = PyTuple_New(points ? COUNT : CALLS); /* the buffers without the two integers between */
    if (packed == NULL) {
        return NULL;
    }
    for (int i = 0; i < (points ? COUNT : CALLS); i++) {
        PyObject *item = PyTuple_GET_ITEM(args, i < CALLS ? i : i + 2);
        Py_INCREF(item);
        PyTuple_SET_ITEM(packed, i, item);
    }
    int failed = get_all(packed, points ? COUNT : CALLS, objs, views, sizes, names, INPUTS);
    Py_DECREF(packed);
    if (failed < 0) {
        return NULL;
    }
    int count = points ? COUNT : CALLS;
    Py_buffer *in = views, *out = views + INPUTS;
    Py_ssize_t n = in[0].len / 8, k = in[1].len / 8, n_rows = in[3].len / 8;
    int bad = in[2].len / 8 != k || in[4].len / 8 != n_rows || in[5].len != n_rows || n_threads < 0 ||
              (n > 0 && k == 0) || start_kind < -128 || start_kind > 127 || end_kind < -128 || end_kind > 127;
    /* (with the points, call_start and call_end are not written: may be empty; call_row and call_thread may be
     * empty together: the points' rows and chains hold them) */
    int no_call_rows = points && out[1].len == 0 && out[2].len == 0;
    for (int i = 0; i < 5; i++) {
        bad |= out[i].len / 8 != n && !(points && i >= 3 && out[i].len == 0) && !(no_call_rows && (i == 1 || i == 2));
    }
    if (points) { /* the points of at most n calls: room for 2n */
        Py_buffer *p = views + CALLS;
        bad |= p[0].len / 8 < 2 * n || p[1].len / 8 < 2 * n || p[2].len / 8 < 2 * n || index_count(&p[3]) < 2 * n ||
               index_count(&p[4]) < 2 * n || p[5].len < 2 * n || p[6].len < 2 * n || p[7].len < n;
    }
    if (bad) {
        release_all(views, count);
        PyErr_SetString(PyExc_ValueError, "host_calls_by_runs: array lengths disagree");
        return NULL;
    }
    const int64_t *rows = in[0].buf, *heads = in[1].buf, *run_thread = in[2].buf, *start = in[3].buf;
    int64_t *run_order = PyMem_RawMalloc((size_t)(k > 0 ? k : 1) * sizeof(int64_t));
    int64_t *next = PyMem_RawCalloc((size_t)n_threads + 1, sizeof(int64_t));
    if (run_order == NULL || next == NULL) {
        PyMem_RawFree(run_order);
        PyMem_RawFree(next);
        release_all(views, count);
        return PyErr_NoMemory();
    }
    struct host_walk w = {rows,      start,     in[4].buf, in[5].buf,  marker_kind, out[0].buf,
                          out[1].buf, out[2].buf, out[3].buf, out[4].buf, 0,          NONE_TIME};
    if (no_call_rows) {
        w.call_row = NULL;
        w.call_thread = NULL;
    }
    if (points) {
        Py_buffer *p = views + CALLS;
        w.p_time = p[0].buf;
        w.p_lag = p[1].buf;
        w.p_anchor = p[2].buf;
        w.p_chain = &p[3];
        w.p_row = &p[4];
        w.p_kind = p[5].buf;
        w.p_first = p[6].buf;
        w.p_marker = p[7].buf;
        w.start_kind = (signed char)start_kind;
        w.end_kind = (signed char)end_kind;
    }
    int status = 0; /* 1: out of range, -1: not usable here */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < k && !status; r++) {
        if (run_thread[r] < 0 || run_thread[r] >= n_threads || heads[r] < 0 || heads[r] >= n ||
            (r == 0 ? heads[r] != 0 : heads[r] <= heads[r - 1])) {
            status = 1;
        } else {
            next[run_thread[r] + 1]++;
        }
    }
    for (Py_ssize_t i = 0; i < n && !status; i++) {
        if (rows[i] < 0 || rows[i] >= n_rows) {
            status = 1;
        } else if (i > 0 && (rows[i] <= rows[i - 1] || start[rows[i]] < start[rows[i - 1]])) {
            status = -1;
        }
    }
    if (!status) {
        for (Py_ssize_t t = 0; t < n_threads; t++) {
            next[t + 1] += next[t];
        }
        for (Py_ssize_t r = 0; r < k; r++) { /* stable: each thread's runs stay in row order */
            run_order[next[run_thread[r]]++] = r;
        }
        int64_t group[HOST_TIES];
        Py_ssize_t size = 0;
        int64_t thread = -1, group_start = 0;
        for (Py_ssize_t o = 0; o < k && !status; o++) {
            Py_ssize_t r = (Py_ssize_t)run_order[o];
            if (run_thread[r] != thread) { /* a thread's first run: the last thread's group walked, no call open */
                host_walk_group(&w, group, size, thread);
                size = 0;
                thread = run_thread[r];
                w.run_end = NONE_TIME;
            }
            Py_ssize_t stop = r + 1 < k ? (Py_ssize_t)heads[r + 1] : n;
            for (Py_ssize_t i = (Py_ssize_t)heads[r]; i < stop; i++) {
                int64_t s = start[rows[i]];
                if (size > 0 && s != group_start) {
                    host_walk_group(&w, group, size, thread);
                    size = 0;
                }
                if (size == HOST_TIES) {
                    status = -1;
                    break;
                }
                group[size++] = i;
                group_start = s;
            }
        }
        if (!status) {
            host_walk_group(&w, group, size, thread);
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(run_order);
    PyMem_RawFree(next);
    release_all(views, count);
    if (status > 0) {
        PyErr_SetString(PyExc_ValueError, "host_calls_by_runs: an index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(status < 0 ? -1 : w.n_calls);
}

static PyObject *host_calls_by_runs(PyObject *self, PyObject *args) {
    (void)self;
    return walk_runs(args, 0);
}

static PyObject *host_points_by_runs(PyObject *self, PyObject *args) {
    (void)self;
    return walk_runs(args, 1);
}

/* ---- the GPU ops' launch calls (graph.build) in one pass over the ops ------------------------------------------
 *
 * launch_calls(found, at, launch_row, call_of, start, call_start, none, op_launch_call, op_launch_start,
 * op_offset[, step]): per op i with found[i] (a byte): its launch call call_of[at[i]] (at: the launch row's position
 * among the host rows), that row's start start[launch_row[i]] and its offset in the call (that start - call c's
 * start, call_start[c * step]; step 1 unless given); else -1, ``none`` and 0. launch_row as 4- or 8-byte integers,
 * the rest int64.
 */

static PyObject *launch_calls(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 9 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"found",      "at",             "launch_row",      "call_of",  "start",
                                             "call_start", "op_launch_call", "op_launch_start", "op_offset"};
    static const Py_ssize_t sizes[COUNT] = {1, 8, INDEX_ITEMS, 8, 8, 8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT + 1 && PyTuple_GET_SIZE(args) != COUNT + 2) {
        PyErr_SetString(PyExc_TypeError, "launch_calls: 10 or 11 arguments expected");
        return NULL;
    }
    /* call c's start at call_start[c * step] (step 2: the graph's host point times, starts and ends in turn) */
    Py_ssize_t step = PyTuple_GET_SIZE(args) == COUNT + 2 ? PyLong_AsSsize_t(PyTuple_GET_ITEM(args, COUNT + 1)) : 1;
    if (step == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (step < 1) {
        PyErr_SetString(PyExc_ValueError, "launch_calls: step below 1");
        return NULL;
    }
    PyObject *packed = PyTuple_New(COUNT);
    if (packed == NULL) {
        return NULL;
    }
    for (int i = 0; i < COUNT; i++) { /* (the buffers without ``none``, the 7th argument) */
        PyObject *item = PyTuple_GET_ITEM(args, i < 6 ? i : i + 1);
        Py_INCREF(item);
        PyTuple_SET_ITEM(packed, i, item);
    }
    long long none = PyLong_AsLongLong(PyTuple_GET_ITEM(args, 6));
    if (PyErr_Occurred()) {
        Py_DECREF(packed);
        return NULL;
    }
    int failed = get_all(packed, COUNT, objs, views, sizes, names, 6);
    Py_DECREF(packed);
    if (failed < 0) {
        return NULL;
    }
    Py_ssize_t n_ops = views[0].len, n_host = views[3].len / 8, n_rows = views[4].len / 8;
    Py_ssize_t n_calls = (views[5].len / 8 + step - 1) / step;
    if (views[1].len / 8 != n_ops || index_count(&views[2]) != n_ops || views[6].len / 8 != n_ops ||
        views[7].len / 8 != n_ops || views[8].len / 8 != n_ops) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "launch_calls: array lengths disagree");
        return NULL;
    }
    const unsigned char *found = views[0].buf;
    const int64_t *at = views[1].buf, *call_of = views[3].buf, *start = views[4].buf, *call_start = views[5].buf;
    int64_t *out_call = views[6].buf, *out_start = views[7].buf, *out_offset = views[8].buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_ops; i++) {
        if (!found[i]) {
            out_call[i] = -1;
            out_start[i] = none;
            out_offset[i] = 0;
            continue;
        }
        int64_t a = at[i], r = index_at(&views[2], i);
        if (a < 0 || a >= n_host || r < 0 || r >= n_rows || call_of[a] < 0 || call_of[a] >= n_calls) {
            bad = 1;
            break;
        }
        int64_t c = call_of[a], s = start[r];
        out_call[i] = c;
        out_start[i] = s;
        out_offset[i] = s - call_start[c * step];
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "launch_calls: an index out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- what the critical path's points add up to (critical.critical_path), in one pass over its stretches --------
 *
 * path_sums(t, kind, row, waited, event_kind, event_name, collective, kinds, step_of, lo, hi, head, by, steps,
 * step_counts, kernels, host_calls): the path is the stretches lo[i]..hi[i] (path order; each point's setter the
 * point before it, the stretch's first one's head[i], -1: none). Per path point p with setter s: its time
 * seg = t[p] - t[s] (0 without a setter) and its category (critical.CATEGORIES: host 0; sync_waits 1, a host end
 * (kinds[1]) among ``waited`` (ascending); kernels 2, a GPU point (kinds[2], kinds[3]) not launched by a host start
 * (kinds[0]) it is the start of; copies 3, such a point whose event row's kind is not kinds[4] (a kernel);
 * communication 4, such a point whose row's name code passes ``collective`` (a byte per code and a last one for
 * code -1; empty: none passes)). Summed as doubles in path order (numpy's bincount with weights adds so): by[category];
 * steps[(step_of[p] + 1) * 5 + category] (and step_counts there +1) where step_of is given (not empty: its steps
 * -1 up to steps' rows - 2); kernels[name + 1] over the GPU ends whose row is a kernel, host_calls[name + 1] over
 * the host ends (name: the row's name code, -1 none). ``row`` and ``event_name`` as 4- or 8-byte integers.
 * Returns the sum of seg (int64). The GIL is released while it runs.
 */

#define PATH_CATEGORIES 5

static PyObject *path_sums(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 17, INPUTS = 12 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"t",    "kind",    "row",         "waited",  "event_kind", "event_name",
                                             "collective", "kinds", "step_of", "lo",      "hi",         "head",
                                             "by",   "steps",   "step_counts", "kernels", "host_calls"};
    static const Py_ssize_t sizes[COUNT] = {8, 1, INDEX_ITEMS, 8, 1, INDEX_ITEMS, 1, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "path_sums: 17 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, INPUTS) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, n_waited = views[3].len / 8, n_rows = views[4].len;
    Py_ssize_t n_codes = views[6].len, n_stretches = views[9].len / 8;
    Py_ssize_t step_rows = views[13].len / 8 / PATH_CATEGORIES, n_names = views[15].len / 8 - 1;
    int has_steps = views[8].len > 0;
    int bad = views[1].len != n || index_count(&views[2]) != n || index_count(&views[5]) != n_rows ||
              views[7].len / 8 != 5 || (has_steps && views[8].len / 8 != n) || views[10].len / 8 != n_stretches ||
              views[11].len / 8 != n_stretches || views[12].len / 8 != PATH_CATEGORIES ||
              views[13].len / 8 != step_rows * PATH_CATEGORIES || views[14].len != views[13].len ||
              n_names < 0 || views[16].len != views[15].len || (n_codes != 0 && n_codes != n_names + 1);
    if (bad) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "path_sums: array lengths disagree");
        return NULL;
    }
    const int64_t *t = views[0].buf, *waited = views[3].buf, *kinds = views[7].buf, *step_of = views[8].buf;
    const int64_t *lo = views[9].buf, *hi = views[10].buf, *head = views[11].buf;
    const signed char *kind = views[1].buf, *event_kind = views[4].buf;
    const unsigned char *collective = views[6].buf;
    double *by = views[12].buf, *steps = views[13].buf, *kernels = views[15].buf, *host = views[16].buf;
    int64_t *step_counts = views[14].buf;
    const int64_t host_start = kinds[0], host_end = kinds[1], gpu_start = kinds[2], gpu_end = kinds[3];
    const int64_t kernel_kind = kinds[4];
    int64_t total = 0;
    int out_of_range = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_stretches && !out_of_range; i++) {
        if (lo[i] < 0 || hi[i] >= n || lo[i] > hi[i] || head[i] >= n) {
            out_of_range = 1;
            break;
        }
        for (int64_t p = lo[i]; p <= hi[i]; p++) {
            int64_t s = p == lo[i] ? head[i] : p - 1;
            int64_t seg = s < 0 ? 0 : t[p] - t[s];
            int64_t r = index_at(&views[2], p);
            if (r < 0 || r >= n_rows) {
                out_of_range = 1;
                break;
            }
            int64_t code = index_at(&views[5], r);
            if (code < -1 || code >= n_names) {
                out_of_range = 1;
                break;
            }
            int64_t k = kind[p];
            int category = 0;
            if (k == host_end && n_waited) {
                Py_ssize_t a = 0, b = n_waited; /* p among the waited calls' ends: a binary search */
                while (a < b) {
                    Py_ssize_t m = a + (b - a) / 2;
                    if (waited[m] < p) {
                        a = m + 1;
                    } else {
                        b = m;
                    }
                }
                category = a < n_waited && waited[a] == p;
            } else if ((k == gpu_start || k == gpu_end) && !(k == gpu_start && s >= 0 && kind[s] == host_start)) {
                category = event_kind[r] == kernel_kind ? 2 : 3;
                if (n_codes && collective[code >= 0 ? code : n_names]) {
                    category = 4;
                }
            }
            total += seg;
            by[category] += (double)seg;
            if (has_steps) {
                int64_t step = step_of[p];
                if (step < -1 || step + 1 >= step_rows) {
                    out_of_range = 1;
                    break;
                }
                steps[(step + 1) * PATH_CATEGORIES + category] += (double)seg;
                step_counts[(step + 1) * PATH_CATEGORIES + category]++;
            }
            if (k == gpu_end && event_kind[r] == kernel_kind) {
                kernels[code + 1] += (double)seg;
            } else if (k == host_end) {
                host[code + 1] += (double)seg;
            }
        }
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    if (out_of_range) {
        PyErr_SetString(PyExc_ValueError, "path_sums: an index out of range");
        return NULL;
    }
    return PyLong_FromLongLong(total);
}

/* stretch_range(values, lo, hi): (lowest, highest) of values (int64) over the stretches lo[i]..hi[i]; (0, -1) for
 * none */
static PyObject *stretch_range(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 3 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"values", "lo", "hi"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, 8};
    if (get_all(args, COUNT, objs, views, sizes, names, COUNT) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, k = views[1].len / 8;
    const int64_t *values = views[0].buf, *lo = views[1].buf, *hi = views[2].buf;
    int bad = views[2].len / 8 != k;
    for (Py_ssize_t i = 0; i < k && !bad; i++) {
        bad = lo[i] < 0 || hi[i] >= n || lo[i] > hi[i];
    }
    int64_t low = 0, high = -1;
    int any = 0;
    if (!bad) {
        for (Py_ssize_t i = 0; i < k; i++) {
            for (int64_t p = lo[i]; p <= hi[i]; p++) {
                int64_t v = values[p];
                if (!any || v < low) {
                    low = v;
                }
                if (!any || v > high) {
                    high = v;
                }
                any = 1;
            }
        }
    }
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "stretch_range: an index out of range");
        return NULL;
    }
    return Py_BuildValue("(LL)", (long long)low, (long long)high);
}

/* ---- the diagnosis's top host names (diagnosis/cause.py _top_host_names_of) ---------------------------------
 *
 * slot_sums(category, base, name, start, end, flagged, count, total, lo): for each row i of a chunk (its first
 * row lo in the table), slot = base[category[i]] (category -1: base's last entry, as np.take reads it), or
 * base's last entry where row lo + i is one of ``flagged`` (ascending rows: the one-time rows), plus name[i] + 1;
 * count[slot] += 1 and total[slot] += end[i] - start[i] (as a double, in row order: np.bincount's sums). One pass
 * instead of the gathers, the durations and two bincounts. Returns 0, or -1 (count and total then partly
 * written: not to be used) where a category, a slot or the flagged rows are out of range or order: numpy then.
 */
static PyObject *slot_sums(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 6, OUT = 2 };
    PyObject *objs[COUNT + OUT];
    Py_buffer views[COUNT + OUT];
    static const char *const names[COUNT + OUT] = {"category", "base", "name",  "start",
                                                   "end",      "flagged", "count", "total"};
    static const Py_ssize_t sizes[COUNT + OUT] = {1, 8, 4, 8, 8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT + OUT + 1) {
        PyErr_SetString(PyExc_TypeError, "slot_sums: 9 arguments expected");
        return NULL;
    }
    long long lo = PyLong_AsLongLong(PyTuple_GET_ITEM(args, COUNT + OUT));
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (get_all(args, COUNT + OUT, objs, views, sizes, names, COUNT) < 0) {
        return NULL;
    }
    const int8_t *category = views[0].buf;
    const int64_t *base = views[1].buf, *start = views[3].buf, *end = views[4].buf, *flagged = views[5].buf;
    const int32_t *name = views[2].buf;
    int64_t *count = views[6].buf;
    double *total = views[7].buf;
    Py_ssize_t n = views[0].len, n_base = views[1].len / 8, n_flagged = views[5].len / 8;
    Py_ssize_t slots = views[6].len / 8;
    int bad = views[2].len / 4 != n || views[3].len / 8 != n || views[4].len / 8 != n || views[7].len / 8 != slots ||
              n_base == 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 1; k < n_flagged && !bad; k++) {
        bad = flagged[k] < flagged[k - 1];
    }
    /* the flagged rows of this chunk: from the first at or past lo */
    Py_ssize_t f = 0;
    while (!bad && f < n_flagged && flagged[f] < lo) {
        f++;
    }
    const int64_t other = bad ? 0 : base[n_base - 1];
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        int64_t c = category[i];
        if (c < 0) {
            c += n_base;
        }
        if (c < 0 || c >= n_base) {
            bad = 1;
            break;
        }
        int64_t slot = base[c];
        while (f < n_flagged && flagged[f] < lo + i) { /* (repeated rows passed too) */
            f++;
        }
        if (f < n_flagged && flagged[f] == lo + i) {
            slot = other;
        }
        slot += (int64_t)name[i] + 1;
        if (slot < 0 || slot >= slots) {
            bad = 1;
            break;
        }
        count[slot] += 1;
        total[slot] += (double)(end[i] - start[i]);
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT + OUT);
    return PyLong_FromLong(bad ? -1 : 0);
}

/* ---- unexplained_idle's host rows reaching into the idle union (diagnosis/unexplained_idle.py _reaching_rows) --
 *
 * reaching_rows(start, end, mask, union_start, union_end, out): the rows i (start ascending) where mask[i] is set
 * and the first union interval ending after start[i] (union_end ascending) begins before end[i], written into
 * out in row order; returns how many, or -1 where the starts or the union's ends do not ascend (numpy then). One
 * walk through the rows and the union together instead of the placing, the repeat and the mask.
 */
static PyObject *reaching_rows(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 6 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"start", "end", "mask", "union_start", "union_end", "out"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, 1, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "reaching_rows: 6 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, COUNT - 1) < 0) {
        return NULL;
    }
    const int64_t *start = views[0].buf, *end = views[1].buf, *u_start = views[3].buf, *u_end = views[4].buf;
    const uint8_t *mask = views[2].buf;
    int64_t *out = views[5].buf;
    Py_ssize_t n = views[0].len / 8, m = views[4].len / 8;
    int bad = views[1].len / 8 != n || views[2].len != n || views[3].len / 8 != m || views[5].len / 8 < n;
    Py_ssize_t written = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 1; k < m && !bad; k++) {
        bad = u_end[k] < u_end[k - 1];
    }
    Py_ssize_t j = 0; /* the union intervals ending at or before the row's start */
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        int64_t s = start[i];
        if (i > 0 && s < start[i - 1]) {
            bad = 1;
            break;
        }
        while (j < m && u_end[j] <= s) {
            j++;
        }
        int64_t reach = j < m ? u_start[j] : INT64_MAX;
        if (mask[i] && reach < end[i]) {
            out[written++] = (int64_t)i;
        }
    }
    Py_END_ALLOW_THREADS
    release_all(views, COUNT);
    return PyLong_FromSsize_t(bad ? -1 : written);
}

/* ---- the launch regions (remedies.host_launch_overhead): each region's first launching call ---------------------
 *
 * launch_regions(op_launch_call, call_start, chain, step_of, call_waits, seen, out, bounds): the calls launching an
 * op (op_launch_call >= 0; each counted once: ``seen``, one zeroed byte per call, marks them), in call order, each
 * at its start point: its thread (chain), its step (step_of) and the blocking calls before it (call_waits set at a
 * lower call). A region is a run of equal (thread, step, blocking calls before); its first call's start point is
 * written to ``out`` (one int64 slot per call at most). bounds (5 int64) receives the lowest and highest thread,
 * the lowest and highest step, and the highest blocking count, for the caller's packing test. Returns the points
 * written; -1 where the triples do not ascend in call order (the caller then sorts: remedies.region_heads_by_numpy).
 * call_start and chain: 4- or 8-byte integers.
 */
static PyObject *launch_regions(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 8 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {"op_launch_call", "call_start", "chain", "step_of",
                                             "call_waits",     "seen",       "out",   "bounds"};
    static const Py_ssize_t sizes[COUNT] = {8, INDEX_ITEMS, INDEX_ITEMS, 8, 1, 1, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "launch_regions: 8 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, 5) < 0) {
        return NULL;
    }
    Py_ssize_t n_ops = views[0].len / 8, n_calls = index_count(&views[1]), n = views[3].len / 8;
    if (index_count(&views[2]) != n || views[4].len != n_calls || views[5].len != n_calls ||
        views[6].len / 8 < n_calls || views[7].len / 8 < 5) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "launch_regions: array lengths disagree");
        return NULL;
    }
    const int64_t *call = views[0].buf, *step_of = views[3].buf;
    const unsigned char *waits = views[4].buf;
    unsigned char *seen = views[5].buf;
    int64_t *out = views[6].buf, *bounds = views[7].buf;
    int bad = 0, unsorted = 0;
    Py_ssize_t written = 0;
    int64_t lo_thread = 0, hi_thread = 0, lo_step = 0, hi_step = 0, hi_blocks = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t o = 0; o < n_ops; o++) {
        int64_t c = call[o];
        if (c >= n_calls) {
            bad = 1;
            break;
        }
        if (c >= 0) {
            seen[c] = 1;
        }
    }
    int64_t blocks = 0, last_thread = 0, last_step = 0, last_blocks = 0;
    for (Py_ssize_t c = 0; c < n_calls && !bad && !unsorted; c++) {
        if (seen[c]) {
            int64_t p = index_at(&views[1], c);
            if (p < 0 || p >= n) {
                bad = 1;
                break;
            }
            int64_t thread = index_at(&views[2], p), step = step_of[p];
            int head = written == 0;
            if (!head) {
                /* (thread, step, blocks) against the call before: equal, or above it in that order */
                if (thread != last_thread) {
                    unsorted = thread < last_thread;
                    head = 1;
                } else if (step != last_step) {
                    unsorted = step < last_step;
                    head = 1;
                } else if (blocks != last_blocks) {
                    head = 1; /* blocks only grow with the call */
                }
            }
            if (head) {
                out[written++] = p;
            }
            if (written == 1 || thread < lo_thread) {
                lo_thread = thread;
            }
            if (written == 1 || thread > hi_thread) {
                hi_thread = thread;
            }
            if (written == 1 || step < lo_step) {
                lo_step = step;
            }
            if (written == 1 || step > hi_step) {
                hi_step = step;
            }
            hi_blocks = blocks;
            last_thread = thread;
            last_step = step;
            last_blocks = blocks;
        }
        if (waits[c]) {
            blocks++;
        }
    }
    Py_END_ALLOW_THREADS
    bounds[0] = lo_thread;
    bounds[1] = hi_thread;
    bounds[2] = lo_step;
    bounds[3] = hi_step;
    bounds[4] = hi_blocks;
    release_all(views, COUNT);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "launch_regions: an index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(unsorted ? -1 : written);
}

/* ---- the kernels' fill (occupancy_model.kernel_model) -----------------------------------------------------------
 *
 * op_fill(op_row, kernel_rows, kernel_config, name, excluded, config_fill, config_finite, op_start, op_end, time,
 *         fill, under, recorded, counts): per graph op, its kernel among ``kernel_rows`` (ascending event rows:
 * np.searchsorted's left position, the last kernel past the end; a hit where that kernel's row is the op's) and its
 * fill: config_fill of the kernel's configuration for a hit whose name (``name`` at the op's row: int32 dictionary
 * codes, a negative one counted from the end as numpy indexes) is not ``excluded``, else 1. Writes fill (float64
 * per op), the ops whose fill is below 1 (``under``, ascending) and their recorded time (time at the op's end
 * point - at its start point), and counts: of those ops, with a finite (config_finite) and a not finite
 * wave-quantized fill. Returns how many are under; -1 where an index is out of range (the caller then takes the
 * numpy path). Each op's kernel is searched from the previous op's answer (the ops' rows mostly ascend): a gallop,
 * not a binary search over all kernels per op.
 */
static Py_ssize_t lower_bound_from(const int64_t *a, Py_ssize_t m, int64_t x, Py_ssize_t hint) {
    Py_ssize_t lo, hi;
    if (hint > m) {
        hint = m;
    }
    if (hint > 0 && a[hint - 1] >= x) {
        lo = 0;
        hi = hint - 1; /* a[hi] >= x: the answer is at most hi */
    } else {
        lo = hint; /* every a[k] < x for k < lo */
        hi = lo;
        Py_ssize_t step = 1;
        while (hi < m && a[hi] < x) {
            lo = hi + 1;
            hi += step;
            step *= 2;
        }
        if (hi > m) {
            hi = m;
        }
    }
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static PyObject *op_fill(PyObject *self, PyObject *args) {
    (void)self;
    enum { COUNT = 14 };
    PyObject *objs[COUNT];
    Py_buffer views[COUNT];
    static const char *const names[COUNT] = {
        "op_row",   "kernel_rows", "kernel_config", "name", "excluded", "config_fill", "config_finite",
        "op_start", "op_end",      "time",          "fill", "under",    "recorded",    "counts"};
    static const Py_ssize_t sizes[COUNT] = {8, 8, 8, 4, 1, 8, 1, 8, 8, 8, 8, 8, 8, 8};
    if (PyTuple_GET_SIZE(args) != COUNT) {
        PyErr_SetString(PyExc_TypeError, "op_fill: 14 arguments expected");
        return NULL;
    }
    if (get_all(args, COUNT, objs, views, sizes, names, 10) < 0) {
        return NULL;
    }
    Py_ssize_t n = views[0].len / 8, m = views[1].len / 8, n_rows = views[3].len / 4, n_names = views[4].len;
    Py_ssize_t n_configs = views[5].len / 8, n_points = views[9].len / 8;
    if (views[2].len / 8 != m || views[6].len != n_configs || views[7].len / 8 != n || views[8].len / 8 != n ||
        views[10].len / 8 != n || views[11].len / 8 != n || views[12].len / 8 != n || views[13].len / 8 < 2) {
        release_all(views, COUNT);
        PyErr_SetString(PyExc_ValueError, "op_fill: array lengths disagree");
        return NULL;
    }
    const int64_t *op_row = views[0].buf, *rows = views[1].buf, *config = views[2].buf;
    const int32_t *name = views[3].buf;
    const unsigned char *excluded = views[4].buf, *finite = views[6].buf;
    const double *config_fill = views[5].buf;
    const int64_t *op_start = views[7].buf, *op_end = views[8].buf, *time = views[9].buf;
    double *fill = views[10].buf;
    int64_t *under = views[11].buf, *recorded = views[12].buf, *counts = views[13].buf;
    Py_ssize_t written = 0, j = 0;
    int64_t quantized = 0, sm_only = 0;
    int bad = m == 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        int64_t r = op_row[i];
        j = lower_bound_from(rows, m, r, j);
        Py_ssize_t at = j < m ? j : m - 1;
        double value = 1.0;
        if (rows[at] == r) {
            if (r < 0 || r >= n_rows) {
                bad = 1;
                break;
            }
            int64_t code = name[r];
            code = code < 0 ? code + n_names : code;
            int64_t c = config[at];
            if (code < 0 || code >= n_names || c < 0 || c >= n_configs) {
                bad = 1;
                break;
            }
            if (!excluded[code]) {
                value = config_fill[c];
                if (value < 1.0) {
                    int64_t s = op_start[i], e = op_end[i];
                    if (s < 0 || s >= n_points || e < 0 || e >= n_points) {
                        bad = 1;
                        break;
                    }
                    recorded[written] = time[e] - time[s];
                    under[written++] = (int64_t)i;
                    if (finite[c]) {
                        quantized++;
                    } else {
                        sm_only++;
                    }
                }
            }
        }
        fill[i] = value;
    }
    Py_END_ALLOW_THREADS
    counts[0] = quantized;
    counts[1] = sm_only;
    release_all(views, COUNT);
    return PyLong_FromSsize_t(bad ? -1 : written);
}

static PyMethodDef methods[] = {
    {"solve_sorted_edges", solve_sorted_edges, METH_VARARGS,
     "solve_sorted_edges(order, chain_first, lag, anchor, recorded, e_pos, e_src, e_lag, e_stale, out[, e_order]): "
     "the replayed time of every point, written into out (e_order given: e_lag read at e_order[k]); returns "
     "(earliest, latest) of them (see tracelens/replay/_replay_solve.c)."},
    {"schedule_keys", schedule_keys, METH_VARARGS,
     "schedule_keys(time, gpu, chain_first, boundary_time, boundary_point, boundary_rank, edge_src, edge_dst, "
     "key, min_rounds, rounds): each point's batch key, written into key; returns the rounds that raised keys."},
    {"order_by_key", order_by_key, METH_VARARGS,
     "order_by_key(key, low, span, order, position): the points in (key, index) order and their positions."},
    {"order_by_chains", order_by_chains, METH_VARARGS,
     "order_by_chains(key, heads, order, position): order_by_key for keys ascending along each chain; -1 where "
     "they do not."},
    {"edges_by_position", edges_by_position, METH_VARARGS,
     "edges_by_position(position, key, edge_src, edge_dst, e_order, e_pos, e_src, e_stale): the edges by "
     "their target's position (stable)."},
    {"critical_walk", critical_walk, METH_VARARGS,
     "critical_walk(t, lag, chain_first, edge_src, edge_dst, edge_lag, start, bottoms, tops, head_sources): the "
     "critical path's stretches from point start back; returns how many were written."},
    {"running_at", running_at, METH_VARARGS,
     "running_at(starts, ends, t, out): the range running at each time (-1: none), as intervals.running_at."},
    {"union_overlap", union_overlap, METH_VARARGS,
     "union_overlap(mask, start, end, lo, hi, out): how much of each gap the union of the masked rows covers; -1 "
     "where the rows or gaps are out of order."},
    {"thread_union_overlap", thread_union_overlap, METH_VARARGS,
     "thread_union_overlap(kind, own_kind, tid, pid, start, end, keys, gap_from, lo, hi, out): union_overlap of "
     "several threads' own rows in one pass over the rows; returns 0, or -1 where not usable (see "
     "tracelens/replay/_replay_solve.c)."},
    {"launched_steps", launched_steps, METH_VARARGS,
     "launched_steps(step_of, op_launch_call, call_start, op_start, op_end): each launched op's points take its "
     "launch call's step, in place; returns the ops written (see tracelens/replay/_replay_solve.c)."},
    {"worked_step_span", worked_step_span, METH_VARARGS,
     "worked_step_span(step_of, skip): (lowest, highest) step >= 0 of the points not in skip; (-1, -1) where none."},
    {"host_calls", host_calls, METH_VARARGS,
     "host_calls(rows, thread, start, end, kind, call_of, offset, call_row, call_thread, call_start, call_end, "
     "marker_kind, n_threads): the outer host calls per thread in time order; -1 where the rows' starts do not "
     "ascend."},
    {"path_sums", path_sums, METH_VARARGS,
     "path_sums(t, kind, row, waited, event_kind, event_name, collective, kinds, step_of, lo, hi, head, by, "
     "steps, step_counts, kernels, host_calls): the critical path's time per category, step and name; returns "
     "its length (see tracelens/replay/_replay_solve.c)."},
    {"stretch_range", stretch_range, METH_VARARGS,
     "stretch_range(values, lo, hi): (lowest, highest) of values over the stretches lo..hi."},
    {"thread_runs_at", thread_runs_at, METH_VARARGS,
     "thread_runs_at(rows, pid, tid, heads): the first position of each run of rows on one (pid, tid); -1 where "
     "more than heads holds."},
    {"host_calls_by_runs", host_calls_by_runs, METH_VARARGS,
     "host_calls_by_runs(rows, heads, run_thread, start, end, kind, call_of, call_row, call_thread, call_start, "
     "call_end, marker_kind, n_threads): host_calls with the threads given per run; -1 where not usable."},
    {"host_points_by_runs", host_points_by_runs, METH_VARARGS,
     "host_points_by_runs(rows, heads, run_thread, start, end, kind, call_of, call_row, call_thread, call_start, "
     "call_end, marker_kind, n_threads, time, lag, anchor, chain, row, point_kind, chain_first, is_marker, "
     "start_kind, end_kind): host_calls_by_runs writing the graph's host points; -1 where not usable."},
    {"launch_calls", launch_calls, METH_VARARGS,
     "launch_calls(found, at, launch_row, call_of, start, call_start, none, op_launch_call, op_launch_start, "
     "op_offset[, step]): each found op's launch call, its start and its offset in the call."},
    {"slot_sums", slot_sums, METH_VARARGS,
     "slot_sums(category, base, name, start, end, flagged, count, total, lo): per (category, name) slot the rows "
     "and their summed durations, added into count and total; -1 where not usable (see "
     "tracelens/replay/_replay_solve.c)."},
    {"reaching_rows", reaching_rows, METH_VARARGS,
     "reaching_rows(start, end, mask, union_start, union_end, out): the masked rows reaching into a union of "
     "intervals, written into out; returns how many, -1 where not usable (see tracelens/replay/_replay_solve.c)."},
    {"launch_regions", launch_regions, METH_VARARGS,
     "launch_regions(op_launch_call, call_start, chain, step_of, call_waits, seen, out, bounds): the first "
     "launching call's start point of each (thread, step, blocking calls before) region; -1 where they do not "
     "ascend (see tracelens/replay/_replay_solve.c)."},
    {"op_fill", op_fill, METH_VARARGS,
     "op_fill(op_row, kernel_rows, kernel_config, name, excluded, config_fill, config_finite, op_start, op_end, "
     "time, fill, under, recorded, counts): each graph op's kernel fill, the ops under 1, their recorded times and "
     "counts; -1 where not usable (see tracelens/replay/_replay_solve.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_replay_solve",
    "The replay's one topological pass (tracelens/replay/engine.py uses it where it was built).", -1, methods,
};

PyMODINIT_FUNC PyInit__replay_solve(void) { return PyModule_Create(&module); }
