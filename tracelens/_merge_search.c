/* np.searchsorted of ascending needles in a sorted haystack, by one walk through both (tracelens/intervals.py,
 * search_sorted).
 *
 * numpy searches each needle in the whole haystack (about log2(haystack) probes each, most missing the cache on
 * tens of millions of values); with the needles in ascending order every answer is at or after the previous one,
 * so each is found by galloping forward from there: probes 1, 2, 4, ... past the previous answer, then a binary
 * search inside the last step. O(needles * log(distance between answers)): a linear merge where the two arrays
 * interleave (a device's gaps and its host rows), a few probes per needle where the haystack is much longer.
 *
 * search_ascending(haystack, needles, out, right): haystack and needles int32 or int64 (haystack sorted ascending,
 * needles ascending), out int64 (as long as needles): out[i] = np.searchsorted(haystack, needles[i], side="right" if
 * right else "left"). search_near(haystack, needles, out, right): the same for needles in any order, each searched
 * from the previous one's answer. The GIL is released while they run.
 *
 * merge_runs(values, positions, bases, out_values, out_rank, out_base, origin): the stable merge of sorted runs
 * (tracelens/ingest/nsys/assembly.py: an Nsight export's tables, each sorted by start, into one time order).
 * values: int64 runs, each ascending; positions: per run None (its rows are bases[i], bases[i] + 1, ...) or an
 * int64 array (each value's row). Rows are ordered by (value, row): the order of a stable argsort of the rows.
 * Writes out_values[o] = the o-th value - origin and out_rank[row] = out_base + o (out_rank int32 or int64, indexed
 * by row). The runs are merged two at a time, the two shortest first (a Huffman tree: each value is moved about
 * log2(runs) times weighted by size, not once per run), with one branch-free comparison per value moved; the GIL
 * is released while they merge (two threads merge two ranges of values at once).
 *
 * first_seen(keys, codes, first_rows) -> count: the codes of integer keys in the order they first appear, by one pass
 * through a hash table (tracelens/values.py, first_seen_codes: pd.factorize's answer without pandas, whose import
 * costs 0.17 s; a sort-based factorize costs 4-5x pandas' hash on the analyses' arrays, 207K thread keys ~15 ms
 * against ~3.5 ms). The table holds the distinct keys only (open addressing, linear probing, doubled at half full).
 * keys int32 or int64, codes and first_rows int64, each as long as keys: codes[i] = the number of distinct keys
 * first seen before keys[i]'s first row, first_rows[c] = the c-th distinct key's first row (c < count). The GIL is
 * released while it runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_group_set.h"

static int get(PyObject *obj, Py_buffer *view, int writable, const char *name) {
    if (PyObject_GetBuffer(obj, view, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len != 0 && !(view->itemsize == 8 || (!writable && view->itemsize == 4))) {
        PyErr_Format(PyExc_TypeError, "%s: %s items expected", name, writable ? "int64" : "int32 or int64");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Whether the haystack value v lies before the needle x: v < x for side left, v <= x for side right. */
#define BEFORE(v, x) (right ? (int64_t)(v) <= (x) : (int64_t)(v) < (x))

/* Binary search in [lo, hi): lo becomes the first position whose haystack value does not lie before x (hi is
 * known not to, or is the end). */
#define FIRST_NOT_BEFORE(lo, hi)                                                                             \
    while (lo < hi) {                                                                                        \
        int64_t mid = lo + ((hi - lo) >> 1);                                                                 \
        if (BEFORE(hay[mid], x))                                                                             \
            lo = mid + 1;                                                                                    \
        else                                                                                                 \
            hi = mid;                                                                                        \
    }

/* Needles ascending: each answer found by galloping forward from the previous one. */
#define WALK(NAME, HT, NT)                                                                                   \
    static void NAME(const HT *hay, int64_t h, const NT *needles, int64_t n, int64_t *out, int right) {      \
        int64_t at = 0; /* every haystack value before `at` lies before the current needle */               \
        for (int64_t i = 0; i < n; i++) {                                                                    \
            int64_t x = needles[i];                                                                          \
            if (at < h && BEFORE(hay[at], x)) {                                                              \
                /* gallop: hay[lo] lies before x; find hi (or the end) that does not */                      \
                int64_t lo = at, step = 1, hi = at + 1;                                                      \
                while (hi < h && BEFORE(hay[hi], x)) {                                                       \
                    lo = hi;                                                                                 \
                    step <<= 1;                                                                              \
                    hi = lo + step;                                                                          \
                }                                                                                            \
                if (hi > h) hi = h;                                                                          \
                /* the first value not before x lies in (lo, hi] */                                          \
                lo += 1;                                                                                     \
                FIRST_NOT_BEFORE(lo, hi);                                                                    \
                at = lo;                                                                                     \
            }                                                                                                \
            out[i] = at;                                                                                     \
        }                                                                                                    \
    }

/* Needles in any order, each searched from the previous one's answer: galloping forward where the needle is past
 * the previous one, backward where it is below it. Cheap where the needles mostly ascend (the correlation ids of
 * GPU ops in start order), about twice numpy's probes where they are in random order. */
#define WALK_NEAR(NAME, HT, NT)                                                                              \
    static void NAME(const HT *hay, int64_t h, const NT *needles, int64_t n, int64_t *out, int right) {      \
        int64_t at = 0; /* the previous answer: hay[at - 1] lies before the previous needle, hay[at] not */  \
        for (int64_t i = 0; i < n; i++) {                                                                    \
            int64_t x = needles[i];                                                                          \
            int64_t lo, hi; /* the answer lies in [lo, hi] */                                                \
            if (at < h && BEFORE(hay[at], x)) {                                                              \
                int64_t step = 1;                                                                            \
                lo = at + 1;                                                                                 \
                hi = at + 1;                                                                                 \
                while (hi < h && BEFORE(hay[hi], x)) {                                                       \
                    lo = hi + 1;                                                                             \
                    step <<= 1;                                                                              \
                    hi = at + step;                                                                          \
                }                                                                                            \
                if (hi > h) hi = h;                                                                          \
            } else if (at > 0 && !BEFORE(hay[at - 1], x)) {                                                  \
                int64_t step = 1;                                                                            \
                hi = at - 1;                                                                                 \
                lo = at - 1;                                                                                 \
                while (lo > 0 && !BEFORE(hay[lo - 1], x)) {                                                  \
                    hi = lo - 1;                                                                             \
                    step <<= 1;                                                                              \
                    lo = at - step;                                                                          \
                    if (lo < 0) lo = 0;                                                                      \
                }                                                                                            \
            } else {                                                                                         \
                out[i] = at;                                                                                 \
                continue;                                                                                    \
            }                                                                                                \
            FIRST_NOT_BEFORE(lo, hi);                                                                        \
            at = lo;                                                                                         \
            out[i] = at;                                                                                     \
        }                                                                                                    \
    }

WALK(walk_64_64, int64_t, int64_t)
WALK(walk_64_32, int64_t, int32_t)
WALK(walk_32_64, int32_t, int64_t)
WALK(walk_32_32, int32_t, int32_t)
WALK_NEAR(near_64_64, int64_t, int64_t)
WALK_NEAR(near_64_32, int64_t, int32_t)
WALK_NEAR(near_32_64, int32_t, int64_t)
WALK_NEAR(near_32_32, int32_t, int32_t)

static PyObject *search(PyObject *args, int near) {
    PyObject *objs[3];
    int right;
    if (!PyArg_ParseTuple(args, "OOOp", &objs[0], &objs[1], &objs[2], &right)) return NULL;
    Py_buffer v[3];
    static const char *names[3] = {"haystack", "needles", "out"};
    int got = 0;
    PyObject *result = NULL;
    for (; got < 3; got++) {
        if (get(objs[got], &v[got], got == 2, names[got]) < 0) goto done;
    }
    int wide_hay = v[0].itemsize == 8, wide_needles = v[1].itemsize == 8;
    int64_t h = v[0].len / v[0].itemsize, n = v[1].len / v[1].itemsize;
    if (v[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "out: as long as needles expected");
        goto done;
    }
    {
        const void *hay = v[0].buf, *needles = v[1].buf;
        int64_t *out = v[2].buf;
        Py_BEGIN_ALLOW_THREADS
        if (near) {
            if (wide_hay && wide_needles) near_64_64(hay, h, needles, n, out, right);
            else if (wide_hay) near_64_32(hay, h, needles, n, out, right);
            else if (wide_needles) near_32_64(hay, h, needles, n, out, right);
            else near_32_32(hay, h, needles, n, out, right);
        } else {
            if (wide_hay && wide_needles) walk_64_64(hay, h, needles, n, out, right);
            else if (wide_hay) walk_64_32(hay, h, needles, n, out, right);
            else if (wide_needles) walk_32_64(hay, h, needles, n, out, right);
            else walk_32_32(hay, h, needles, n, out, right);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    return result;
}

static PyObject *search_ascending(PyObject *self, PyObject *args) { return search(args, 0); }

static PyObject *search_near(PyObject *self, PyObject *args) { return search(args, 1); }


/* One sorted run of the merge: values ascending, rows either listed (row) or implicit (base + i). */
typedef struct {
    const int64_t *value;
    const int64_t *row; /* NULL: row i is base + i */
    int64_t base, n;
    int64_t *own;       /* the merge's own buffer (values then rows), freed once merged */
} run_t;

#define ROW(r, i) ((r).row ? (r).row[i] : (r).base + (i))

/* Merges runs a and b: by (value, row), rows unique. Into vals/rows (an intermediate run) when rank is NULL, else
 * the final output: vals[o] = value - origin, rank[row] = out_base + o. */
#define MERGE2(NAME, RT)                                                                                     \
    static void NAME(run_t a, run_t b, int64_t *vals, int64_t *rows, RT *rank, int64_t out_base,             \
                     int64_t origin) {                                                                       \
        int64_t i = 0, j = 0, o = 0;                                                                         \
        while (i < a.n && j < b.n) {                                                                         \
            int64_t va = a.value[i], vb = b.value[j], ra = ROW(a, i), rb = ROW(b, j);                        \
            int take_b = (vb < va) | ((vb == va) & (rb < ra));                                               \
            int64_t v = take_b ? vb : va, r = take_b ? rb : ra;                                              \
            if (rank) {                                                                                      \
                vals[o] = v - origin;                                                                        \
                rank[r] = (RT)(out_base + o);                                                                \
            } else {                                                                                         \
                vals[o] = v;                                                                                 \
                rows[o] = r;                                                                                 \
            }                                                                                                \
            o++;                                                                                             \
            i += !take_b;                                                                                    \
            j += take_b;                                                                                     \
        }                                                                                                    \
        for (int pass = 0; pass < 2; pass++) {                                                               \
            run_t rest = pass ? b : a;                                                                       \
            for (int64_t k = pass ? j : i; k < rest.n; k++, o++) {                                           \
                if (rank) {                                                                                  \
                    vals[o] = rest.value[k] - origin;                                                        \
                    rank[ROW(rest, k)] = (RT)(out_base + o);                                                 \
                } else {                                                                                     \
                    vals[o] = rest.value[k];                                                                 \
                    rows[o] = ROW(rest, k);                                                                  \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }

MERGE2(merge2_32, int32_t)
MERGE2(merge2_64, int64_t)

/* Merges every run into the output; 0, or -1 when out of memory (runs' own buffers freed either way). */
static int merge_all(run_t *runs, int64_t k, int64_t *out_values, void *rank, int wide, int64_t out_base,
                     int64_t origin) {
    static const run_t empty = {NULL, NULL, 0, 0, NULL};
    int status = 0;
    if (k == 0) return 0;
    if (k == 1) { /* merged with an empty run: copied out */
        runs[1] = empty;
        k = 2;
    }
    while (k > 2) {
        /* the two shortest runs: swapped to the end, merged into one, which takes their place */
        for (int end = 1; end <= 2; end++) {
            int64_t m = 0;
            for (int64_t x = 1; x <= k - end; x++)
                if (runs[x].n < runs[m].n) m = x;
            run_t t = runs[m];
            runs[m] = runs[k - end];
            runs[k - end] = t;
        }
        run_t a = runs[k - 2], b = runs[k - 1];
        int64_t n = a.n + b.n;
        int64_t *buf = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof(int64_t));
        if (!buf) {
            status = -1;
            break;
        }
        if (wide) merge2_64(a, b, buf, buf + n, NULL, 0, 0);
        else merge2_32(a, b, buf, buf + n, NULL, 0, 0);
        free(a.own);
        free(b.own);
        run_t merged = {buf, buf + n, 0, n, buf};
        runs[k - 2] = merged;
        k--;
    }
    if (status == 0) {
        if (wide) merge2_64(runs[0], runs[1], out_values, NULL, rank, out_base, origin);
        else merge2_32(runs[0], runs[1], out_values, NULL, rank, out_base, origin);
    }
    for (int64_t x = 0; x < k; x++) free(runs[x].own);
    return status;
}

static PyObject *merge_runs(PyObject *self, PyObject *args) {
    PyObject *values, *positions, *bases, *out_values_obj, *rank_obj;
    long long out_base, origin;
    if (!PyArg_ParseTuple(args, "OOOOOLL", &values, &positions, &bases, &out_values_obj, &rank_obj, &out_base,
                          &origin))
        return NULL;
    if (!PyList_Check(values) || !PyList_Check(positions) || !PyList_Check(bases) ||
        PyList_GET_SIZE(positions) != PyList_GET_SIZE(values) || PyList_GET_SIZE(bases) != PyList_GET_SIZE(values)) {
        PyErr_SetString(PyExc_TypeError, "values, positions and bases: lists of the same length expected");
        return NULL;
    }
    Py_ssize_t k = PyList_GET_SIZE(values);
    Py_buffer *views = PyMem_Calloc((size_t)(2 * k + 2), sizeof(Py_buffer));
    run_t *runs = PyMem_Calloc((size_t)(k + 2), sizeof(run_t));
    Py_ssize_t got = 0; /* views[0 .. got) are held */
    PyObject *result = NULL;
    if (!views || !runs) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (get(PyList_GET_ITEM(values, i), &views[got], 0, "values") < 0) goto done;
        Py_buffer *v = &views[got++];
        if (v->len && v->itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "values: int64 runs expected");
            goto done;
        }
        runs[i].value = v->buf;
        runs[i].n = v->len / 8;
        runs[i].base = PyLong_AsLongLong(PyList_GET_ITEM(bases, i));
        if (runs[i].base == -1 && PyErr_Occurred()) goto done;
        PyObject *pos = PyList_GET_ITEM(positions, i);
        if (pos != Py_None) {
            if (get(pos, &views[got], 0, "positions") < 0) goto done;
            Py_buffer *p = &views[got++];
            if (p->len != v->len) {
                PyErr_SetString(PyExc_ValueError, "positions: int64, as long as their values expected");
                goto done;
            }
            runs[i].row = p->buf;
        }
        total += runs[i].n;
    }
    if (get(out_values_obj, &views[got], 1, "out_values") < 0) goto done;
    Py_buffer *out = &views[got++];
    if (PyObject_GetBuffer(rank_obj, &views[got], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
    Py_buffer *rank = &views[got++];
    if (out->len / 8 != total || (rank->itemsize != 4 && rank->itemsize != 8)) {
        PyErr_SetString(PyExc_ValueError, "out_values: as long as the runs; out_rank: int32 or int64 expected");
        goto done;
    }
    /* every row must index out_rank: checked before the merge writes there */
    int64_t rows = rank->len / rank->itemsize;
    for (Py_ssize_t i = 0; i < k; i++) {
        const run_t *r = &runs[i];
        for (int64_t j = 0; j < r->n; j += r->row ? 1 : (r->n > 1 ? r->n - 1 : 1)) {
            int64_t row = ROW(*r, j);
            if (row < 0 || row >= rows) {
                PyErr_SetString(PyExc_IndexError, "merge_runs: a row outside out_rank");
                goto done;
            }
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = merge_all(runs, k, out->buf, rank->buf, rank->itemsize == 8, out_base, origin);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(runs);
    return result;
}

/* cut_levels / take_level: defined at the end of the file (the host rows' level unions cut into windows). */
static PyObject *cut_levels(PyObject *self, PyObject *args);
static PyObject *take_level(PyObject *self, PyObject *args);
static PyObject *complement_pieces(PyObject *self, PyObject *args);
static PyObject *intersect_pieces(PyObject *self, PyObject *args);
static PyObject *kept_thread_runs(PyObject *self, PyObject *args);
static PyObject *level_coverage(PyObject *self, PyObject *args);
static PyObject *host_slots(PyObject *self, PyObject *args);
static PyObject *long_group_firsts(PyObject *self, PyObject *args);
static PyObject *id_rows(PyObject *self, PyObject *args);
static PyObject *busy_intervals(PyObject *self, PyObject *args);
static PyObject *busy_take(PyObject *self, PyObject *args);
static PyObject *busy_handover(PyObject *self, PyObject *args);
static PyObject *union_cover(PyObject *self, PyObject *args);
static PyObject *measure_before(PyObject *self, PyObject *args);
static PyObject *clipped_totals(PyObject *self, PyObject *args);
static PyObject *union_taken(PyObject *self, PyObject *args);
static PyObject *union_cover_taken(PyObject *self, PyObject *args);

typedef struct {
    int64_t key;
    int64_t code; /* -1: the slot is empty */
} slot_t;

static inline uint64_t slot_of(int64_t key, int shift) {
    return ((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> shift; /* Fibonacci hashing: the high bits */
}

/* Moves every key of a table into one twice as large; returns the new table or NULL (out of memory). */
static slot_t *grown(slot_t *table, int64_t size, int shift) {
    slot_t *bigger = malloc(sizeof(slot_t) * (size_t)size * 2);
    if (bigger == NULL) return NULL;
    for (int64_t s = 0; s < 2 * size; s++) bigger[s].code = -1;
    uint64_t mask = (uint64_t)(2 * size - 1);
    for (int64_t s = 0; s < size; s++) {
        if (table[s].code < 0) continue;
        uint64_t at = slot_of(table[s].key, shift - 1);
        while (bigger[at].code >= 0) at = (at + 1) & mask;
        bigger[at] = table[s];
    }
    free(table);
    return bigger;
}

static PyObject *first_seen(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    Py_buffer views[3];
    const char *names[3] = {"keys", "codes", "first_rows"};
    if (!PyArg_ParseTuple(args, "OOO", &objs[0], &objs[1], &objs[2])) return NULL;
    int got = 0;
    for (; got < 3; got++)
        if (get(objs[got], &views[got], got > 0, names[got]) < 0) break;
    PyObject *result = NULL;
    if (got < 3) goto done;
    Py_ssize_t n = views[0].len / (views[0].itemsize ? views[0].itemsize : 8);
    if (views[1].len / 8 != n || views[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "codes and first_rows must be as long as keys");
        goto done;
    }
    int64_t size = 1024;
    int shift = 64 - 10;
    slot_t *table = malloc(sizeof(slot_t) * (size_t)size);
    if (table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t s = 0; s < size; s++) table[s].code = -1;
    const int wide = views[0].itemsize == 8;
    const int64_t *keys64 = views[0].buf;
    const int32_t *keys32 = views[0].buf;
    int64_t *codes = views[1].buf, *first_rows = views[2].buf;
    int64_t count = 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t mask = (uint64_t)(size - 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t key = wide ? keys64[i] : (int64_t)keys32[i];
        uint64_t at = slot_of(key, shift);
        while (table[at].code >= 0 && table[at].key != key) at = (at + 1) & mask;
        if (table[at].code < 0) { /* a new key */
            table[at].key = key;
            table[at].code = count;
            first_rows[count] = i;
            codes[i] = count++;
            if (2 * count > size) {
                slot_t *bigger = grown(table, size, shift);
                if (bigger == NULL) {
                    failed = 1;
                    break;
                }
                table = bigger;
                size *= 2;
                shift -= 1;
                mask = (uint64_t)(size - 1);
            }
        } else {
            codes[i] = table[at].code;
        }
    }
    Py_END_ALLOW_THREADS
    free(table);
    if (failed)
        PyErr_NoMemory();
    else
        result = PyLong_FromLongLong(count);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"first_seen", first_seen, METH_VARARGS, "first_seen(keys, codes, first_rows) -> count"},
    {"search_ascending", search_ascending, METH_VARARGS, "search_ascending(haystack, needles, out, right)"},
    {"search_near", search_near, METH_VARARGS, "search_near(haystack, needles, out, right)"},
    {"merge_runs", merge_runs, METH_VARARGS,
     "merge_runs(values, positions, bases, out_values, out_rank, out_base, origin)"},
    {"cut_levels", cut_levels, METH_VARARGS,
     "cut_levels(start, end, rows, category, thread, chosen, levels, window_starts, window_ends)"},
    {"take_level", take_level, METH_VARARGS, "take_level(cut, level) -> (starts, ends, windows)"},
    {"union_taken", union_taken, METH_VARARGS,
     "union_taken(a_starts, a_ends, a_windows, b_starts, b_ends, b_windows) -> (starts, ends, windows)"},
    {"complement_pieces", complement_pieces, METH_VARARGS,
     "complement_pieces(starts, ends, windows, window_starts, window_ends, out_starts, out_ends) -> count"},
    {"intersect_pieces", intersect_pieces, METH_VARARGS,
     "intersect_pieces(starts, ends, windows, other_starts, other_ends, out_starts, out_ends, out_windows) -> count"},
    {"kept_thread_runs", kept_thread_runs, METH_VARARGS,
     "kept_thread_runs(category, startup_rows, startup, pid, tid, out_rows, out_category, out_runs) -> (kept, runs)"},
    {"level_coverage", level_coverage, METH_VARARGS,
     "level_coverage(start, end, rows, category, thread, chosen, levels, window_starts, window_ends, out) -> bool"},
    {"host_slots", host_slots, METH_VARARGS,
     "host_slots(kind, name, start, end, pid, tid, slot_base, limit, counts, totals, heads) -> (first, last, heads)"},
    {"long_group_firsts", long_group_firsts, METH_VARARGS,
     "long_group_firsts(rows, kind, category, name, pid, tid, start, end, allowed, categories, by_thread, min_first)"
     " -> (firsts, least)"},
    {"id_rows", id_rows, METH_VARARGS,
     "id_rows(rows, kind, ids, gpu_kinds, runtime, driver, gpu, out_op_ids, out_ids, out_rows, out_is_driver)"},
    {"busy_intervals", busy_intervals, METH_VARARGS, "busy_intervals(kind, device, start, end, gpu_kinds)"},
    {"busy_take", busy_take, METH_VARARGS, "busy_take(held, q, out_starts, out_ends)"},
    {"busy_handover", busy_handover, METH_VARARGS, "busy_handover(held, q) -> (starts, ends): buffers, no copy"},
    {"union_cover", union_cover, METH_VARARGS,
     "union_cover(a_starts, a_ends, a_windows, b_starts, b_ends, b_windows, which, which_slot, totals, "
     "window_starts, window_ends, out_starts, out_ends) -> count"},
    {"union_cover_taken", union_cover_taken, METH_VARARGS,
     "union_cover_taken(a_starts, a_ends, a_windows, b_starts, b_ends, b_windows, which, which_slot, totals, "
     "window_starts, window_ends) -> (hole_starts, hole_ends)"},
    {"measure_before", measure_before, METH_VARARGS,
     "measure_before(starts, ends, minus_starts, minus_ends, queries, inverse, out) -> int"},
    {"clipped_totals", clipped_totals, METH_VARARGS,
     "clipped_totals(starts, ends, windows, minus_starts, minus_ends, clip_starts, clip_ends, inside, which, "
     "which_slot, totals) -> bool"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_merge_search", NULL, -1, methods, NULL, NULL, NULL, NULL};

static PyTypeObject owned_type;

PyMODINIT_FUNC PyInit__merge_search(void) {
    if (PyType_Ready(&owned_type) < 0) return NULL;
    return PyModule_Create(&module);
}


/* ---- The host rows' per-level unions cut into sorted disjoint windows (tracelens/analyses/level_cut.py) ----
 *
 * cut_levels(start, end, rows, category, thread, chosen, levels, window_starts, window_ends): for each level
 * 0..levels-1, the union of the host rows of that category (rows[i]: event row into start/end, int32 or int64;
 * category[i]: int8; thread[i]: a thread code, 1, 2, 4 or 8 bytes; only the rows whose chosen[thread[i]] is true,
 * every row where chosen is None) cut into the windows (int64, sorted, disjoint, none ending before it starts):
 * the same pieces as window_split.cut(*intervals.merge(s, e), ws, we) (nonempty parts, each with its window).
 * One pass over the rows, each level's rows merged as they come (touching rows joined), each merged interval cut
 * into the windows from the first one ending after its start. Returns (cut, counts): counts the pieces per level,
 * cut a capsule holding them until take_level hands each level's over (int64 starts, ends, window indices);
 * None where a chosen row ends before it starts or a level's rows are not in start order (the caller's general
 * path then). The GIL is released during the pass. */

typedef struct {
    int64_t *s, *e, *w;
    int64_t n, cap;
} piece_buf_t;

typedef struct {
    int levels;
    piece_buf_t *buf;
} level_cut_t;

static void level_cut_free(level_cut_t *cut) {
    if (!cut) return;
    for (int i = 0; cut->buf && i < cut->levels; i++) {
        free(cut->buf[i].s);
        free(cut->buf[i].e);
        free(cut->buf[i].w);
    }
    free(cut->buf);
    free(cut);
}

static void level_cut_capsule_free(PyObject *capsule) {
    level_cut_free(PyCapsule_GetPointer(capsule, "tracelens.level_cut"));
}

/* first_cap: the first capacity (the count of windows: a level's pieces rarely pass it, so no regrowth copies; the
 * pages past the pieces are never touched) */
static int piece_push(piece_buf_t *b, int64_t s, int64_t e, int64_t w, int64_t first_cap) {
    if (b->n == b->cap) {
        int64_t cap = b->cap ? 2 * b->cap : (first_cap > 4096 ? first_cap : 4096);
        int64_t *ns = realloc(b->s, cap * sizeof(int64_t));
        if (ns) b->s = ns;
        int64_t *ne = realloc(b->e, cap * sizeof(int64_t));
        if (ne) b->e = ne;
        int64_t *nw = realloc(b->w, cap * sizeof(int64_t));
        if (nw) b->w = nw;
        if (!ns || !ne || !nw) return -1;
        b->cap = cap;
    }
    b->s[b->n] = s;
    b->e[b->n] = e;
    b->w[b->n] = w;
    b->n++;
    return 0;
}

/* A level's merge in progress: the current merged interval [gs, ge), the first window that may hold a piece of
 * it (all windows before end at or before its start), the start of the level's last row (order check). */
typedef struct {
    int64_t gs, ge, window, last_start;
    int open;
    int64_t row_window; /* level_cut_pass: the first window ending after the level's last row's start */
    int seen;           /* level_cut_pass: a row of the level was read */
} level_state_t;

/* The pieces of the merged interval [gs, ge) in the windows: from the first window ending after gs while the
 * windows start before ge. */
static int level_emit(level_state_t *st, piece_buf_t *b, const int64_t *ws, const int64_t *we, int64_t nw) {
    int64_t gs = st->gs, ge = st->ge, j = st->window;
    while (j < nw && we[j] <= gs) j++;
    st->window = j;
    for (; j < nw && ws[j] < ge; j++) {
        int64_t ps = gs > ws[j] ? gs : ws[j], pe = ge < we[j] ? ge : we[j];
        if (pe > ps && piece_push(b, ps, pe, j, nw) < 0) return -1;
    }
    return 0;
}

static inline int64_t read_code(const void *p, int size, int64_t i) {
    switch (size) {
    case 1: return ((const int8_t *)p)[i];
    case 2: return ((const int16_t *)p)[i];
    case 4: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

#define ROW_AT(i) (row_size == 4 ? (int64_t)((const int32_t *)rows)[i] : ((const int64_t *)rows)[i])
/* rows read ahead: their times prefetched this many rows before they are read */
#define CUT_PREFETCH 32
#define SKIP_ROW (-1)
#define BAD_ROW (-2)

/* The level passes' inputs: the event columns' times, the candidates (their event rows, categories and thread codes),
 * the chosen threads (NULL: every thread), the levels and the windows. */
typedef struct {
    const int64_t *start, *end;
    int64_t events;
    const void *rows;
    int row_size;
    const int8_t *category;
    const void *thread;
    int thread_size;
    const uint8_t *chosen;
    int64_t threads, n;
    int levels;
    const int64_t *ws, *we;
    int64_t nw;
} level_input_t;

/* The event row of the level passes' i-th candidate: SKIP_ROW where its category is outside the levels or its thread
 * is not chosen, BAD_ROW where the row is outside the event columns or its thread code outside chosen. The times of
 * the row CUT_PREFETCH ahead are asked for now: the passes wait on these loads (rows spread over the event columns),
 * not on their own work. */
static inline int64_t level_row(const level_input_t *in, int64_t i) {
    const void *rows = in->rows;
    int row_size = in->row_size;
    if (i + CUT_PREFETCH < in->n) {
        int64_t ahead = ROW_AT(i + CUT_PREFETCH);
        if (ahead >= 0 && ahead < in->events) {
            __builtin_prefetch(in->start + ahead);
            __builtin_prefetch(in->end + ahead);
        }
    }
    int c = in->category[i];
    if (c < 0 || c >= in->levels) return SKIP_ROW;
    if (in->chosen) {
        int64_t t = read_code(in->thread, in->thread_size, i);
        if (t < 0 || t >= in->threads) return BAD_ROW;
        if (!in->chosen[t]) return SKIP_ROW;
    }
    int64_t r = ROW_AT(i);
    return r < 0 || r >= in->events ? BAD_ROW : r;
}

#define LEVEL_ROW_FOUND 0
#define LEVEL_ROWS_DONE 3

/* The next chosen candidate from *i on (*i is then the one after it): its category and times in *c, *s, *e.
 * LEVEL_ROW_FOUND; LEVEL_ROWS_DONE where none is left; else the passes' status: 1 where the row ends before it
 * starts (rows that do not fit), -2 where a row is outside the event columns or a thread code outside chosen. */
static inline int level_next(const level_input_t *in, int64_t *i, int *c, int64_t *s, int64_t *e) {
    for (; *i < in->n; (*i)++) {
        int64_t r = level_row(in, *i);
        if (r == SKIP_ROW) continue;
        if (r == BAD_ROW) return -2;
        *c = in->category[*i];
        *s = in->start[r];
        *e = in->end[r];
        (*i)++;
        return *e < *s ? 1 : LEVEL_ROW_FOUND;
    }
    return LEVEL_ROWS_DONE;
}

#define LEVEL_CLOSED 1
#define LEVEL_OUT_OF_ORDER 2

/* Row [s, e) into a level's merged interval (its rows in start order): LEVEL_OUT_OF_ORDER where it starts before the
 * level's last row; LEVEL_CLOSED where it starts after the open interval's end, which is then closed: the caller
 * takes that interval (gs, ge) and opens [s, e) in its place; else 0 (the interval opened or extended). */
static inline int level_add(level_state_t *st, int64_t s, int64_t e) {
    if (st->open && s < st->last_start) return LEVEL_OUT_OF_ORDER;
    st->last_start = s;
    if (!st->open) {
        st->gs = s;
        st->ge = e;
        st->open = 1;
        return 0;
    }
    if (s > st->ge) return LEVEL_CLOSED;
    if (e > st->ge) st->ge = e;
    return 0;
}

/* level_cut_pass' loop, inlined into copies with the argument widths and the thread choice fixed (row4: int32 rows,
 * thread_size: the thread codes' width, has_chosen: some threads chosen; prefetch: the times read ahead, for rows
 * spread over the event columns): no per-row tests of what does not change, each level's window and last start in
 * arrays the loop keeps no pointer into. 0: cut; 1: rows that do not fit; -1: no memory; -2: a row outside the event
 * columns or a thread code outside chosen. */
static inline __attribute__((always_inline)) int level_cut_rows(const level_input_t *in, level_cut_t *cut,
                                                                level_state_t *state, int64_t *last_start,
                                                                int64_t *row_window, const int row4,
                                                                const int thread_size, const int has_chosen,
                                                                const int prefetch) {
    const int64_t *start = in->start, *end = in->end, *ws = in->ws, *we = in->we;
    const int8_t *category = in->category;
    const uint8_t *chosen = in->chosen;
    const void *rows = in->rows, *thread = in->thread;
    const int64_t n = in->n, nw = in->nw, events = in->events, threads = in->threads;
    const unsigned levels = (unsigned)in->levels;
    for (int64_t i = 0; i < n; i++) {
        if (prefetch && i + CUT_PREFETCH < n) {
            int64_t ahead = row4 ? ((const int32_t *)rows)[i + CUT_PREFETCH] : ((const int64_t *)rows)[i + CUT_PREFETCH];
            if (ahead >= 0 && ahead < events) {
                __builtin_prefetch(start + ahead);
                __builtin_prefetch(end + ahead);
            }
        }
        int c = category[i];
        if ((unsigned)c >= levels) continue;
        if (has_chosen) {
            int64_t t = read_code(thread, thread_size, i);
            if (t < 0 || t >= threads) return -2;
            if (!chosen[t]) continue;
        }
        int64_t r = row4 ? ((const int32_t *)rows)[i] : ((const int64_t *)rows)[i];
        if (r < 0 || r >= events) return -2;
        int64_t s = start[r], e = end[r];
        /* a row ending before it starts, or a level out of start order: rows that do not fit */
        if (e < s || s < last_start[c]) return 1;
        last_start[c] = s;
        /* A row meeting no window (inside a busy interval: most host rows of a GPU-bound trace) changes no level's
         * pieces: the union's part inside the windows is that of the rows meeting them. Only its start is kept for
         * the order check; the merge and the cut see the rows that meet a window. */
        int64_t j = row_window[c];
        if (j < nw && we[j] <= s) {
            do j++;
            while (j < nw && we[j] <= s);
            row_window[c] = j;
        }
        if (j == nw || ws[j] >= e) continue;
        level_state_t *st = &state[c];
        if (!st->open) {
            st->gs = s;
            st->ge = e;
            st->window = j; /* the first window ending after the interval's start: level_emit's first */
            st->open = 1;
        } else if (s > st->ge) { /* the merged interval closed: its pieces cut, the row's opened */
            if (level_emit(st, &cut->buf[c], ws, we, nw) < 0) return -1;
            st->gs = s;
            st->ge = e;
            st->window = j;
        } else if (e > st->ge) {
            st->ge = e;
        }
    }
    return 0;
}

/* 0: cut; 1: rows that do not fit (a row ending before it starts, a level out of start order); -1: no memory;
 * -2: a row outside the event columns or a thread code outside chosen. */
static int level_cut_pass(const level_input_t *in, level_cut_t *cut) {
    int levels = in->levels ? in->levels : 1;
    level_state_t *state = calloc(levels, sizeof(level_state_t));
    int64_t *last_start = malloc(levels * sizeof(int64_t)), *row_window = calloc(levels, sizeof(int64_t));
    int status = -1;
    if (state && last_start && row_window) {
        for (int k = 0; k < levels; k++) last_start[k] = INT64_MIN;
        /* the times read ahead only for rows spread over the event columns (Nsight's host rows among its kernels);
         * the rows of most events (a Kineto trace's) are read in order: the hardware prefetch is ahead */
        int prefetch = in->n < in->events / 2, row4 = in->row_size == 4, has_chosen = in->chosen != NULL;
        if (row4 && in->thread_size == 1 && has_chosen && !prefetch)
            status = level_cut_rows(in, cut, state, last_start, row_window, 1, 1, 1, 0);
        else if (row4 && !has_chosen && !prefetch)
            status = level_cut_rows(in, cut, state, last_start, row_window, 1, 1, 0, 0);
        else
            status = level_cut_rows(in, cut, state, last_start, row_window, row4, in->thread_size, has_chosen, 1);
    }
    for (int k = 0; k < in->levels && status == 0; k++) {
        if (state[k].open && level_emit(&state[k], &cut->buf[k], in->ws, in->we, in->nw) < 0) status = -1;
    }
    free(state);
    free(last_start);
    free(row_window);
    return status;
}

static int get_ints(PyObject *obj, Py_buffer *view, const char *name, int sizes) {
    /* sizes: a bit per accepted item size (1, 2, 4, 8 bytes: bits 0..3) */
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    int size = (int)view->itemsize;
    int bit = size == 1 ? 1 : size == 2 ? 2 : size == 4 ? 4 : size == 8 ? 8 : 0;
    if (!(bit & sizes)) {
        PyErr_Format(PyExc_TypeError, "%s: integers of another width expected", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The level passes' first eight arguments (start, end, rows, category, thread, chosen or None, window_starts,
 * window_ends) held in v (held[k] set for each one held: the caller releases them) and read into *in with levels.
 * -1 with an exception set where one is not the integers expected, levels is outside 0..127 or the lengths
 * disagree. */
static int level_input(PyObject **objs, int levels, const char *fname, Py_buffer *v, int *held, level_input_t *in) {
    static const char *names[8] = {"start", "end", "rows", "category", "thread", "chosen", "window_starts",
                                   "window_ends"};
    static const int sizes[8] = {8, 8, 4 | 8, 1, 1 | 2 | 4 | 8, 1, 8, 8};
    for (int k = 0; k < 8; k++) {
        if (k == 5 && objs[k] == Py_None) continue;
        if (get_ints(objs[k], &v[k], names[k], sizes[k]) < 0) return -1;
        held[k] = 1;
    }
    if (levels < 0 || levels > 127) {
        PyErr_SetString(PyExc_ValueError, "levels: 0 to 127 expected");
        return -1;
    }
    int64_t events = v[0].len / 8, n = v[3].len, nw = v[6].len / 8;
    if (v[1].len / 8 != events || v[2].len / v[2].itemsize != n || v[4].len / v[4].itemsize != n ||
        v[7].len / 8 != nw) {
        PyErr_Format(PyExc_ValueError, "%s: start/end, rows/category/thread, windows: equal lengths", fname);
        return -1;
    }
    *in = (level_input_t){v[0].buf, v[1].buf, events, v[2].buf, (int)v[2].itemsize, v[3].buf, v[4].buf,
                          (int)v[4].itemsize, held[5] ? v[5].buf : NULL, held[5] ? v[5].len : 0, n, levels,
                          v[6].buf, v[7].buf, nw};
    return 0;
}

static PyObject *cut_levels(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    int levels;
    if (!PyArg_ParseTuple(args, "OOOOOOiOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &levels,
                          &objs[6], &objs[7]))
        return NULL;
    Py_buffer v[8];
    int held[8] = {0};
    PyObject *result = NULL;
    level_cut_t *cut = NULL;
    level_input_t in;
    if (level_input(objs, levels, "cut_levels", v, held, &in) < 0) goto done;
    cut = calloc(1, sizeof(level_cut_t));
    if (cut) cut->buf = calloc(levels ? levels : 1, sizeof(piece_buf_t));
    if (!cut || !cut->buf) {
        PyErr_NoMemory();
        goto done;
    }
    cut->levels = levels;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = level_cut_pass(&in, cut);
    Py_END_ALLOW_THREADS
    if (status == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == -2) {
        PyErr_SetString(PyExc_IndexError, "cut_levels: a row outside the event columns or a thread outside chosen");
        goto done;
    }
    if (status == 1) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *counts = PyTuple_New(levels);
    if (!counts) goto done;
    for (int c = 0; c < levels; c++) {
        PyObject *count = PyLong_FromLongLong(cut->buf[c].n);
        if (!count) {
            Py_DECREF(counts);
            goto done;
        }
        PyTuple_SET_ITEM(counts, c, count);
    }
    PyObject *capsule = PyCapsule_New(cut, "tracelens.level_cut", level_cut_capsule_free);
    if (!capsule) {
        Py_DECREF(counts);
        goto done;
    }
    cut = NULL; /* the capsule's now */
    result = Py_BuildValue("(NN)", capsule, counts);
done:
    level_cut_free(cut);
    for (int k = 0; k < 8; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* take_level(cut, level) -> (starts, ends, windows): the level's pieces handed over as they are, no copy: each of
 * the three C arrays (shrunk to the count) becomes a buffer object that owns it (np.frombuffer reads it as int64;
 * freed with the last array on it), and the capsule lets it go. */

typedef struct {
    PyObject_HEAD void *data;
    Py_ssize_t len;
} owned_t;

static int owned_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    owned_t *o = (owned_t *)self;
    return PyBuffer_FillInfo(view, self, o->data ? o->data : (void *)&o->len, o->len, 0, flags);
}

static void owned_dealloc(PyObject *self) {
    free(((owned_t *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs owned_as_buffer = {owned_getbuffer, NULL};

static PyTypeObject owned_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracelens._merge_search.OwnedBuffer",
    .tp_basicsize = sizeof(owned_t),
    .tp_dealloc = owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "int64 values a compiled pass wrote, owned until the last reader lets go",
};

/* A buffer object owning *data (n int64 values; shrunk to them, freed where n is 0): *data is then NULL. */
static PyObject *owned(int64_t **data, int64_t n) {
    owned_t *o = PyObject_New(owned_t, &owned_type);
    if (!o) return NULL;
    if (n == 0) {
        free(*data);
        o->data = NULL;
    } else {
        int64_t *shrunk = realloc(*data, (size_t)n * sizeof(int64_t));
        o->data = shrunk ? shrunk : *data;
    }
    *data = NULL;
    o->len = (Py_ssize_t)n * (Py_ssize_t)sizeof(int64_t);
    return (PyObject *)o;
}

static PyObject *take_level(PyObject *self, PyObject *args) {
    PyObject *capsule;
    int level;
    if (!PyArg_ParseTuple(args, "Oi", &capsule, &level)) return NULL;
    level_cut_t *cut = PyCapsule_GetPointer(capsule, "tracelens.level_cut");
    if (!cut) return NULL;
    if (level < 0 || level >= cut->levels) {
        PyErr_SetString(PyExc_IndexError, "take_level: no such level");
        return NULL;
    }
    piece_buf_t *b = &cut->buf[level];
    int64_t n = b->n;
    PyObject *s = owned(&b->s, n), *e = s ? owned(&b->e, n) : NULL, *w = e ? owned(&b->w, n) : NULL;
    b->n = b->cap = 0;
    if (!w) {
        Py_XDECREF(s);
        Py_XDECREF(e);
        return NULL;
    }
    return Py_BuildValue("(NNN)", s, e, w);
}

/* union_taken(a_starts, a_ends, a_windows, b_starts, b_ends, b_windows) -> (starts, ends, windows): the union of two
 * piece lists (window_split.union: each int64, sorted by start, pieces inside their windows, not overlapping within
 * a list), merged inside each window: the lists merged by start (a's first on ties), a piece joined to the one
 * before where it starts at or before that one's end in the same window (union_pass).
 *
 * complement_pieces(starts, ends, windows, window_starts, window_ends, out_starts, out_ends): the parts of the
 * sorted disjoint windows that no piece covers (window_split.complement; the pieces merged inside each window):
 * per window, from its start to its first piece, between its pieces, from its last piece to its end, the
 * nonempty ones. Returns their count; writes them where the outs are given.
 *
 * Both one pass (no temporaries), the GIL released. */

/* One finished piece: written at o where the outs are given (else only counted); the next free slot. */
static inline int64_t put_piece(int64_t *os, int64_t *oe, int64_t *ow, int64_t o, int64_t s, int64_t e, int64_t w) {
    if (os) {
        os[o] = s;
        oe[o] = e;
        ow[o] = w;
    }
    return o + 1;
}

static int64_t union_pass(const int64_t *as, const int64_t *ae, const int64_t *aw, int64_t na, const int64_t *bs,
                          const int64_t *be, const int64_t *bw, int64_t nb, int64_t *os, int64_t *oe, int64_t *ow) {
    int64_t i = 0, j = 0, o = 0, cs = 0, ce = 0, cw = 0;
    int open = 0;
    while (i < na || j < nb) {
        int64_t s, e, w;
        if (j >= nb || (i < na && as[i] <= bs[j])) {
            s = as[i];
            e = ae[i];
            w = aw[i];
            i++;
        } else {
            s = bs[j];
            e = be[j];
            w = bw[j];
            j++;
        }
        if (open && w == cw && s <= ce) {
            if (e > ce) ce = e;
            continue;
        }
        if (open) o = put_piece(os, oe, ow, o, cs, ce, cw);
        cs = s;
        ce = e;
        cw = w;
        open = 1;
    }
    if (open) o = put_piece(os, oe, ow, o, cs, ce, cw);
    return o;
}

static int64_t complement_pass(const int64_t *s, const int64_t *e, const int64_t *w, int64_t n, const int64_t *ws,
                               const int64_t *we, int64_t nw, int64_t *os, int64_t *oe) {
    int64_t p = 0, o = 0;
    for (int64_t j = 0; j < nw; j++) {
        int64_t at = ws[j];
        for (; p < n && w[p] == j; p++) {
            if (s[p] > at) {
                if (os) {
                    os[o] = at;
                    oe[o] = s[p];
                }
                o++;
            }
            at = e[p];
        }
        if (we[j] > at) {
            if (os) {
                os[o] = at;
                oe[o] = we[j];
            }
            o++;
        }
    }
    return o;
}

/* The buffers of objs[0..count-1] (int64, C-contiguous; writable from `first_out` on); outs all None leave
 * those views unset (*outs 0). */
static int get_int64s(PyObject **objs, Py_buffer *v, int count, int first_out, int *held, int *outs) {
    *outs = 1;
    for (int k = 0; k < count; k++) {
        if (k >= first_out && objs[k] == Py_None) {
            *outs = 0;
            continue;
        }
        if (k >= first_out && !*outs) {
            PyErr_SetString(PyExc_TypeError, "outs: all None or all arrays expected");
            return -1;
        }
        if (get(objs[k], &v[k], k >= first_out, "pieces") < 0) return -1;
        held[k] = 1;
        if (v[k].len && v[k].itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "pieces: int64 expected");
            return -1;
        }
    }
    return 0;
}

/* union_taken: the union written in one pass into C arrays as long as both lists, shrunk to the count and handed over
 * as buffer objects (take_level's): no counting pass, no fresh numpy arrays. The GIL is released during the pass. */
static PyObject *union_taken(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5])) return NULL;
    Py_buffer v[6];
    int held[6] = {0}, outs;
    PyObject *result = NULL;
    int64_t *out[3] = {NULL, NULL, NULL};
    if (get_int64s(objs, v, 6, 6, held, &outs) < 0) goto done;
    int64_t na = v[0].len / 8, nb = v[3].len / 8;
    if (v[1].len / 8 != na || v[2].len / 8 != na || v[4].len / 8 != nb || v[5].len / 8 != nb) {
        PyErr_SetString(PyExc_ValueError, "union_taken: each list's arrays of equal length expected");
        goto done;
    }
    size_t cap = (size_t)(na + nb ? na + nb : 1) * sizeof(int64_t);
    for (int k = 0; k < 3; k++) {
        out[k] = malloc(cap);
        if (!out[k]) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int64_t count;
    Py_BEGIN_ALLOW_THREADS
    count = union_pass(v[0].buf, v[1].buf, v[2].buf, na, v[3].buf, v[4].buf, v[5].buf, nb, out[0], out[1], out[2]);
    Py_END_ALLOW_THREADS
    PyObject *s = owned(&out[0], count), *e = s ? owned(&out[1], count) : NULL, *w = e ? owned(&out[2], count) : NULL;
    if (!w) {
        Py_XDECREF(s);
        Py_XDECREF(e);
        goto done;
    }
    result = Py_BuildValue("(NNN)", s, e, w);
done:
    for (int k = 0; k < 3; k++) free(out[k]);
    for (int k = 0; k < 6; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

static PyObject *complement_pieces(PyObject *self, PyObject *args) {
    PyObject *objs[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6]))
        return NULL;
    Py_buffer v[7];
    int held[7] = {0}, outs;
    PyObject *result = NULL;
    if (get_int64s(objs, v, 7, 5, held, &outs) < 0) goto done;
    int64_t n = v[0].len / 8, nw = v[3].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n || v[4].len / 8 != nw) {
        PyErr_SetString(PyExc_ValueError, "complement_pieces: pieces, windows: arrays of equal length expected");
        goto done;
    }
    /* every piece's window must be one of the windows, in order (the pass reads them by it) */
    const int64_t *w = v[2].buf;
    for (int64_t p = 0; p < n; p++) {
        if (w[p] < 0 || w[p] >= nw || (p && w[p] < w[p - 1])) {
            PyErr_SetString(PyExc_ValueError, "complement_pieces: windows ascending, inside the windows expected");
            goto done;
        }
    }
    int64_t count;
    Py_BEGIN_ALLOW_THREADS
    count = complement_pass(v[0].buf, v[1].buf, v[2].buf, n, v[3].buf, v[4].buf, nw, NULL, NULL);
    Py_END_ALLOW_THREADS
    if (outs) {
        if (v[5].len / 8 != count || v[6].len / 8 != count) {
            PyErr_SetString(PyExc_ValueError, "complement_pieces: outs as long as the holes expected");
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        complement_pass(v[0].buf, v[1].buf, v[2].buf, n, v[3].buf, v[4].buf, nw, v[5].buf, v[6].buf);
        Py_END_ALLOW_THREADS
    }
    result = PyLong_FromLongLong(count);
done:
    for (int k = 0; k < 7; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}


/* ---- The parts of pieces inside a union of sorted disjoint intervals (tracelens/analyses/level_cut.py) ----
 *
 * intersect_pieces(starts, ends, windows, other_starts, other_ends, out_starts, out_ends, out_windows): for each
 * piece [starts[i], ends[i]) in order, its overlap with each of the other intervals it meets, in their order, where
 * nonempty, with the piece's window: window_split.intersect's (and intervals.intersect's) answer, which pairs each
 * piece with the others from the first ending after its start to the last starting before its end (two binary
 * searches a piece, then repeats and gathers of every pair). Here one walk: the pieces' starts ascend, so the first
 * other interval ending after a piece's start only moves forward. Returns the count (outs None: counted only), or
 * -1 where the pieces' starts or the other starts or ends do not ascend (the caller's numpy path then). */

static int ascending(const int64_t *x, int64_t n) {
    for (int64_t i = 1; i < n; i++)
        if (x[i] < x[i - 1]) return 0;
    return 1;
}

static int64_t intersect_pass(const int64_t *as, const int64_t *ae, const int64_t *aw, int64_t na, const int64_t *bs,
                              const int64_t *be, int64_t nb, int64_t *os, int64_t *oe, int64_t *ow) {
    int64_t first = 0, o = 0;
    for (int64_t i = 0; i < na; i++) {
        int64_t s = as[i], e = ae[i];
        while (first < nb && be[first] <= s) first++;
        for (int64_t j = first; j < nb && bs[j] < e; j++) {
            int64_t ps = s > bs[j] ? s : bs[j], pe = e < be[j] ? e : be[j];
            if (pe > ps) {
                if (os) {
                    os[o] = ps;
                    oe[o] = pe;
                    ow[o] = aw[i];
                }
                o++;
            }
        }
    }
    return o;
}

static PyObject *intersect_pieces(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7]))
        return NULL;
    Py_buffer v[8];
    int held[8] = {0}, outs;
    PyObject *result = NULL;
    if (get_int64s(objs, v, 8, 5, held, &outs) < 0) goto done;
    int64_t na = v[0].len / 8, nb = v[3].len / 8;
    if (v[1].len / 8 != na || v[2].len / 8 != na || v[4].len / 8 != nb) {
        PyErr_SetString(PyExc_ValueError, "intersect_pieces: each list's arrays of equal length expected");
        goto done;
    }
    int64_t count = -1;
    Py_BEGIN_ALLOW_THREADS
    if (ascending(v[0].buf, na) && ascending(v[3].buf, nb) && ascending(v[4].buf, nb))
        count = intersect_pass(v[0].buf, v[1].buf, v[2].buf, na, v[3].buf, v[4].buf, nb, NULL, NULL, NULL);
    Py_END_ALLOW_THREADS
    if (outs && count >= 0) {
        if (v[5].len / 8 != count || v[6].len / 8 != count || v[7].len / 8 != count) {
            PyErr_SetString(PyExc_ValueError, "intersect_pieces: outs as long as the intersection expected");
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        intersect_pass(v[0].buf, v[1].buf, v[2].buf, na, v[3].buf, v[4].buf, nb, v[5].buf, v[6].buf, v[7].buf);
        Py_END_ALLOW_THREADS
    }
    result = PyLong_FromLongLong(count);
done:
    for (int k = 0; k < 8; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- Each window's time covered by the union of the host rows through each level (tracelens/analyses/steps.py) --
 *
 * level_coverage(start, end, rows, category, thread, chosen, levels, window_starts, window_ends, out): the rows as
 * cut_levels takes them; out int64 of levels x len(windows), row-major: out[k, w] = the time of window w covered by
 * the union of the chosen rows of the categories 0..k (intervals.overlap_with_union(ws, we, *intervals.merge(s, e))
 * of those rows). One pass over the rows: a row of category c extends the merged interval of every level k >= c,
 * and a merged interval, once closed, adds its overlap with the windows from the first one ending after its start;
 * no pieces written, no union built. Returns True, or False where a chosen row ends before it starts or the rows
 * of the categories through some level are not in start order (nothing then is written to out: the caller's general
 * path). The GIL is released during the pass. */

static void coverage_add(level_state_t *st, int64_t *out, const int64_t *ws, const int64_t *we, int64_t nw) {
    int64_t gs = st->gs, ge = st->ge, j = st->window;
    while (j < nw && we[j] <= gs) j++;
    st->window = j;
    for (; j < nw && ws[j] < ge; j++) {
        int64_t ps = gs > ws[j] ? gs : ws[j], pe = ge < we[j] ? ge : we[j];
        if (pe > ps) out[j] += pe - ps;
    }
}

/* 0: done; 1: rows that do not fit; -1: no memory; -2: a row outside the event columns or a thread outside chosen */
static int level_coverage_pass(const level_input_t *in, int64_t *out) {
    level_state_t *state = calloc(in->levels ? in->levels : 1, sizeof(level_state_t));
    if (!state) return -1;
    int status, c = 0;
    int64_t i = 0, s = 0, e = 0;
    while ((status = level_next(in, &i, &c, &s, &e)) == LEVEL_ROW_FOUND) {
        for (int k = c; k < in->levels && status == LEVEL_ROW_FOUND; k++) { /* the unions through level c and later */
            level_state_t *st = &state[k];
            int added = level_add(st, s, e);
            if (added == LEVEL_OUT_OF_ORDER) status = 1;
            if (added == LEVEL_CLOSED) {
                coverage_add(st, out + (int64_t)k * in->nw, in->ws, in->we, in->nw);
                st->gs = s;
                st->ge = e;
            }
        }
        if (status != LEVEL_ROW_FOUND) break;
    }
    if (status == LEVEL_ROWS_DONE) status = 0;
    for (int k = 0; k < in->levels && status == 0; k++) {
        if (state[k].open) coverage_add(&state[k], out + (int64_t)k * in->nw, in->ws, in->we, in->nw);
    }
    free(state);
    return status;
}

static PyObject *level_coverage(PyObject *self, PyObject *args) {
    PyObject *objs[9];
    int levels;
    if (!PyArg_ParseTuple(args, "OOOOOOiOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &levels,
                          &objs[6], &objs[7], &objs[8]))
        return NULL;
    Py_buffer v[9];
    int held[9] = {0};
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    level_input_t in;
    if (level_input(objs, levels, "level_coverage", v, held, &in) < 0) goto done;
    if (PyObject_GetBuffer(objs[8], &v[8], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
    held[8] = 1;
    if (v[8].itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "out: int64 expected");
        goto done;
    }
    int64_t nw = in.nw;
    if (v[8].len / 8 != (int64_t)levels * nw) {
        PyErr_SetString(PyExc_ValueError, "level_coverage: out levels x windows expected");
        goto done;
    }
    /* the sums built in a scratch copy: out is written only where the pass completes */
    scratch = calloc((int64_t)levels * nw > 0 ? (size_t)((int64_t)levels * nw) : 1, sizeof(int64_t));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = level_coverage_pass(&in, scratch);
    Py_END_ALLOW_THREADS
    if (status == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == -2) {
        PyErr_SetString(PyExc_IndexError,
                        "level_coverage: a row outside the event columns or a thread outside chosen");
        goto done;
    }
    if (status == 0) memcpy(v[8].buf, scratch, (size_t)(levels * nw) * sizeof(int64_t));
    result = PyBool_FromLong(status == 0);
done:
    free(scratch);
    for (int k = 0; k < 9; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}


/* ---- The host rows, their categories and their runs of one thread, in one pass (tracelens/analyses/kept_runs.py) --
 *
 * kept_thread_runs(category, startup_rows, startup, pid, tid, out_rows, out_category, out_runs): the event rows
 * whose category (int8 per event row; `startup` instead at the ascending int64 rows startup_rows) is >= 0, in
 * order, written to out_rows (int32 or int64) with that category (out_category, int8), and the positions among them
 * (int64, into out_runs) where a run of rows of one (pid, tid) begins (pid, tid: 4 or 8 bytes per event row): the
 * first kept row, then each kept row whose pid or tid differs from the kept row before it. What attribution.host_rows
 * did by a flatnonzero of the categories, gathers of pid and tid at the 1.3M rows found (406 MB Kineto tile) and
 * comparisons of them; here each event row is read where it stands, once. outs None: nothing written, the rows
 * only counted. Returns (kept rows, runs); runs -1 where out_runs is too short for them (the rows are still all
 * written: the caller hashes their threads then). The GIL is released during the pass. */

static int64_t kept_runs_pass(const int8_t *category, int64_t n, const int64_t *startup_rows, int64_t ns, int8_t startup,
                              const void *pid, int pid_size, const void *tid, int tid_size, void *out_rows,
                              int row_size, int8_t *out_category, int64_t *out_runs, int64_t runs_cap,
                              int64_t *runs) {
    int64_t k = 0, r = 0, p = 0, last_pid = 0, last_tid = 0;
    for (int64_t i = 0; i < n; i++) {
        int8_t c = category[i];
        if (p < ns && startup_rows[p] == i) {
            c = startup;
            while (p < ns && startup_rows[p] == i) p++;
        }
        if (c < 0) continue;
        if (out_rows) {
            if (row_size == 4)
                ((int32_t *)out_rows)[k] = (int32_t)i;
            else
                ((int64_t *)out_rows)[k] = i;
            out_category[k] = c;
            int64_t a = read_code(pid, pid_size, i), b = read_code(tid, tid_size, i);
            if (k == 0 || a != last_pid || b != last_tid) {
                if (r < runs_cap) out_runs[r] = k;
                r++;
                last_pid = a;
                last_tid = b;
            }
        }
        k++;
    }
    *runs = r;
    return k;
}

static PyObject *kept_thread_runs(PyObject *self, PyObject *args) {
    PyObject *objs[7];
    int startup;
    if (!PyArg_ParseTuple(args, "OOiOOOOO", &objs[0], &objs[1], &startup, &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6]))
        return NULL;
    static const char *names[7] = {"category", "startup_rows", "pid", "tid", "out_rows", "out_category", "out_runs"};
    static const int sizes[7] = {1, 8, 4 | 8, 4 | 8, 4 | 8, 1, 8};
    Py_buffer v[7];
    int held[7] = {0};
    PyObject *result = NULL;
    int outs = objs[4] != Py_None;
    for (int k = 0; k < 7; k++) {
        if (k >= 4 && !outs) continue;
        if (get_ints(objs[k], &v[k], names[k], sizes[k]) < 0) goto done;
        held[k] = 1;
        if (k >= 4 && v[k].readonly) {
            PyErr_Format(PyExc_TypeError, "%s: a writable array expected", names[k]);
            goto done;
        }
    }
    if (startup < -128 || startup > 127) {
        PyErr_SetString(PyExc_ValueError, "startup: an int8 expected");
        goto done;
    }
    int64_t n = v[0].len, ns = v[1].len / 8;
    if (v[2].len / v[2].itemsize != n || v[3].len / v[3].itemsize != n) {
        PyErr_SetString(PyExc_ValueError, "kept_thread_runs: category, pid, tid: one value per event row expected");
        goto done;
    }
    const int64_t *startup_rows = v[1].buf;
    for (int64_t q = 1; q < ns; q++) {
        if (startup_rows[q] < startup_rows[q - 1]) {
            PyErr_SetString(PyExc_ValueError, "kept_thread_runs: startup rows ascending expected");
            goto done;
        }
    }
    int64_t kept, runs;
    if (!outs) {
        Py_BEGIN_ALLOW_THREADS
        kept = kept_runs_pass(v[0].buf, n, startup_rows, ns, (int8_t)startup, v[2].buf, (int)v[2].itemsize, v[3].buf,
                              (int)v[3].itemsize, NULL, 4, NULL, NULL, 0, &runs);
        Py_END_ALLOW_THREADS
        result = Py_BuildValue("(LL)", (long long)kept, (long long)0);
        goto done;
    }
    int64_t cap = v[4].len / v[4].itemsize;
    if (v[5].len != cap) {
        PyErr_SetString(PyExc_ValueError, "kept_thread_runs: out_rows and out_category of one length expected");
        goto done;
    }
    /* the rows are counted first: the outs must hold exactly that many */
    Py_BEGIN_ALLOW_THREADS
    kept = kept_runs_pass(v[0].buf, n, startup_rows, ns, (int8_t)startup, v[2].buf, (int)v[2].itemsize, v[3].buf,
                          (int)v[3].itemsize, NULL, 4, NULL, NULL, 0, &runs);
    Py_END_ALLOW_THREADS
    if (kept != cap) {
        PyErr_SetString(PyExc_ValueError, "kept_thread_runs: outs as long as the kept rows expected");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    kept = kept_runs_pass(v[0].buf, n, startup_rows, ns, (int8_t)startup, v[2].buf, (int)v[2].itemsize, v[3].buf,
                          (int)v[3].itemsize, v[4].buf, (int)v[4].itemsize, v[5].buf, v[6].buf, v[6].len / 8, &runs);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(LL)", (long long)kept, (long long)(runs > v[6].len / 8 ? -1 : runs));
done:
    for (int k = 0; k < 7; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- The host rows' counts and summed durations per (kind, name) slot, in one pass (tracelens/analyses/host.py) ----
 *
 * host_slots(kind, name, start, end, pid, tid, slot_base, limit, counts, totals, heads) -> (first, last, heads): for
 * every event row i, its slot slot_base[kind[i]] + name[i] + 1 (kind int8, -1 reading slot_base's last entry as
 * np.take does; name int32 or int64); the rows whose kind's base is below limit (the host rows) add 1 to counts[slot]
 * and end[i] - start[i] to totals[slot] (int64, limit long: exact integer sums), and their least start and largest
 * end are returned (first, last: INT64_MAX and INT64_MIN without host rows). heads (int64): the host rows whose
 * (pid, tid) (4 or 8 bytes each) differs from the host row before them, and the first: every thread of the host rows
 * is at one of them; their count is returned, -1 where heads is too short (the caller finds the threads in numpy
 * then). What host_summary did with a kind mask, a min and a max, a duration, a take and two adds per chunk, two
 * bincounts (one in float64) and run heads over pid, tid and the mask: one pass, each row read where it stands.
 * The GIL is released during the pass. */

static inline __attribute__((always_inline)) int64_t host_slots_pass(
    const int8_t *kind, const void *name, int name_size, const int64_t *start, const int64_t *end, const void *pid,
    int pid_size, const void *tid, int tid_size, int64_t n, const int64_t *slot_base, int64_t kinds, int64_t limit,
    int64_t *counts, int64_t *totals, int64_t *heads, int64_t cap, int64_t *first, int64_t *last, int *bad) {
    int64_t h = 0, lo = INT64_MAX, hi = INT64_MIN, last_pid = 0, last_tid = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = kind[i];
        int64_t base = slot_base[k >= 0 && k < kinds ? k : kinds];
        if (base >= limit) continue;
        int64_t slot = base + (name_size == 4 ? (int64_t)((const int32_t *)name)[i] : ((const int64_t *)name)[i]) + 1;
        if (slot < 0 || slot >= limit) {
            *bad = 1;
            return 0;
        }
        int64_t s = start[i], e = end[i];
        counts[slot]++;
        totals[slot] += e - s;
        if (s < lo) lo = s;
        if (e > hi) hi = e;
        int64_t a = read_code(pid, pid_size, i), b = read_code(tid, tid_size, i);
        if (h == 0 || a != last_pid || b != last_tid) {
            if (h < cap) heads[h] = i;
            h++;
            last_pid = a;
            last_tid = b;
        }
    }
    *first = lo;
    *last = hi;
    return h;
}

static PyObject *host_slots(PyObject *self, PyObject *args) {
    PyObject *objs[10];
    long long limit;
    if (!PyArg_ParseTuple(args, "OOOOOOOLOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &limit, &objs[7], &objs[8], &objs[9]))
        return NULL;
    static const char *names[10] = {"kind", "name", "start", "end", "pid", "tid", "slot_base", "counts", "totals",
                                    "heads"};
    static const int sizes[10] = {1, 4 | 8, 8, 8, 4 | 8, 4 | 8, 8, 8, 8, 8};
    Py_buffer v[10];
    int held[10] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 10; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k]) < 0) goto done;
        held[k] = 1;
        if (k >= 7 && v[k].readonly) {
            PyErr_Format(PyExc_TypeError, "%s: a writable array expected", names[k]);
            goto done;
        }
    }
    int64_t n = v[0].len, kinds = v[6].len / 8 - 1;
    if (v[1].len / v[1].itemsize != n || v[2].len / 8 != n || v[3].len / 8 != n || v[4].len / v[4].itemsize != n ||
        v[5].len / v[5].itemsize != n) {
        PyErr_SetString(PyExc_ValueError, "host_slots: kind, name, start, end, pid, tid: one value per event row");
        goto done;
    }
    if (kinds < 0 || limit < 0 || v[7].len / 8 != limit || v[8].len / 8 != limit) {
        PyErr_SetString(PyExc_ValueError, "host_slots: slot_base of one entry or more, counts and totals limit long");
        goto done;
    }
    int64_t first = 0, last = 0, h = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    if (v[1].itemsize == 4 && v[4].itemsize == 4 && v[5].itemsize == 8)
        h = host_slots_pass(v[0].buf, v[1].buf, 4, v[2].buf, v[3].buf, v[4].buf, 4, v[5].buf, 8, n, v[6].buf, kinds,
                            limit, v[7].buf, v[8].buf, v[9].buf, v[9].len / 8, &first, &last, &bad);
    else
        h = host_slots_pass(v[0].buf, v[1].buf, (int)v[1].itemsize, v[2].buf, v[3].buf, v[4].buf, (int)v[4].itemsize,
                            v[5].buf, (int)v[5].itemsize, n, v[6].buf, kinds, limit, v[7].buf, v[8].buf, v[9].buf,
                            v[9].len / 8, &first, &last, &bad);
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "host_slots: a host row's slot outside counts");
        goto done;
    }
    result = Py_BuildValue("(LLL)", (long long)first, (long long)last, (long long)(h > v[9].len / 8 ? -1 : h));
done:
    for (int k = 0; k < 10; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- The long first rows of (outer, name) groups, in one pass (tracelens/analyses/first_scan.py) ----
 *
 * long_group_firsts(rows, kind, category, name, pid, tid, start, end, allowed, categories, by_thread, min_first)
 * -> (firsts, least): the startup rules first_call and first_api look for the first row of each group of rows (a
 * name on a thread, an API name in a process) that lasts long; usually none does, and the numpy path found that
 * out by gathering every candidate's thread, name, start and end, numbering the groups by hashing and scattering
 * their first rows. The rows looked at are the event rows (rows: None, every event row; else int32 or int64 event
 * rows, ascending) whose allowed[kind' * (categories + 1) + category + 1] is set (kind' = kind, or the table's last
 * kind slot for a kind below 0; kind and category int8 per event row); the candidates among them are those whose
 * name (int32 or int64) and tid (int32 or int64) are >= 0. A candidate's group: (pid, name) where by_thread is 0,
 * (thread_key(pid, tid), name) else (the key's bits: pid's low 32 above tid's low 32, as columns.thread_key builds
 * it). firsts: the event rows (ascending) of the candidates first in their group whose end - start >= min_first;
 * least: the least end - start of the rows looked at (INT64_MAX without any). firsts is None where the starts of
 * the rows looked at do not ascend (a group's first row in start order may then not be its first in row order) or,
 * by thread, one of their tids is 2^32 or more (thread_key would fold it onto another).
 *
 * Two walks, no hashing of every candidate: the first reads each row's times (and tid) and collects the groups of
 * the candidates lasting min_first (a group whose first row is long is one of them; usually few or none), the second
 * finds those groups' first rows, testing only the rows of their names, and stops once each is found (first rows
 * come early). The GIL is released during the walks. */

/* The j-th row looked at's event row, or -1 where it is not one (outside the table, or its kind or category
 * outside the table of allowed pairs: -2) or not allowed. */
static inline int64_t allowed_row(const void *rows, int row_size, int64_t j, int64_t events, const int8_t *kind,
                                  const int8_t *category, const uint8_t *allowed, int64_t kinds, int64_t categories) {
    int64_t i = rows ? (row_size == 4 ? (int64_t)((const int32_t *)rows)[j] : ((const int64_t *)rows)[j]) : j;
    if (i < 0 || i >= events) return -2;
    int64_t k = kind[i], c = category[i];
    if (k >= kinds || c < -1 || c >= categories) return -2;
    return allowed[(k < 0 ? kinds : k) * (categories + 1) + c + 1] ? i : -1;
}

/* 0: done; 1: the starts do not ascend or a tid is too wide (no answer); -1: no memory; -2: a kind or category
 * outside the table, or a row outside the event columns. */
static int long_firsts_pass(const void *rows, int row_size, int64_t n_rows, int64_t events, const int8_t *kind,
                            const int8_t *category, const void *name, int name_size, const void *pid, int pid_size,
                            const void *tid, int tid_size, const int64_t *start, const int64_t *end,
                            const uint8_t *allowed, int64_t kinds, int64_t categories, int by_thread,
                            int64_t min_first, int64_t **firsts, int64_t *n_firsts, int64_t *least) {
    int64_t n = rows ? n_rows : events, last_start = INT64_MIN, lo = INT64_MAX, top_name = -1;
    int status = 0;
    group_set_t long_groups = {calloc(64, sizeof(group_slot_t)), 64, 0, 64 - 6};
    if (!long_groups.slot) return -1;
    /* first walk: order, durations, thread ids; the groups of the long candidates */
    for (int64_t j = 0; j < n && status == 0; j++) {
        int64_t i = allowed_row(rows, row_size, j, events, kind, category, allowed, kinds, categories);
        if (i == -1) continue;
        if (i == -2) {
            status = -2;
            break;
        }
        int64_t s = start[i], d = end[i] - s, t = read_code(tid, tid_size, i);
        if (s < last_start || (by_thread && t > (int64_t)UINT32_MAX)) status = 1;
        last_start = s;
        if (d < lo) lo = d;
        if (d < min_first || t < 0) continue;
        int64_t nm = read_code(name, name_size, i);
        if (nm < 0) continue;
        if (group_add(&long_groups, group_outer(by_thread, read_code(pid, pid_size, i), t), nm) < 0) status = -1;
        if (nm > top_name) top_name = nm;
    }
    int64_t *out = NULL, found = 0;
    uint8_t *long_name = NULL;
    if (status == 0 && long_groups.count) {
        out = malloc((size_t)long_groups.count * sizeof(int64_t));
        long_name = calloc((size_t)top_name + 1, 1);
        if (!out || !long_name) status = -1;
    }
    if (status == 0 && long_groups.count) {
        for (int64_t q = 0; q < long_groups.size; q++)
            if (long_groups.slot[q].used) long_name[long_groups.slot[q].inner] = 1;
        /* second walk: each long group's first row, the rows of other names passed over, until all are found */
        int64_t seen = 0;
        for (int64_t j = 0; j < n && seen < long_groups.count; j++) {
            int64_t i = allowed_row(rows, row_size, j, events, kind, category, allowed, kinds, categories);
            if (i < 0) continue;
            int64_t nm = read_code(name, name_size, i);
            if (nm < 0 || nm > top_name || !long_name[nm]) continue;
            int64_t t = read_code(tid, tid_size, i);
            if (t < 0) continue;
            group_slot_t *g = group_find(&long_groups, group_outer(by_thread, read_code(pid, pid_size, i), t), nm);
            if (!g->used || g->seen) continue;
            g->seen = 1;
            seen++;
            if (end[i] - start[i] >= min_first) out[found++] = i;
        }
    }
    free(long_groups.slot);
    free(long_name);
    if (status != 0) {
        free(out);
        return status;
    }
    *firsts = out;
    *n_firsts = found;
    *least = lo;
    return 0;
}

static PyObject *long_group_firsts(PyObject *self, PyObject *args) {
    PyObject *objs[9];
    long long categories, min_first;
    int by_thread;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOLiL", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8], &categories, &by_thread, &min_first))
        return NULL;
    static const char *names[9] = {"rows", "kind", "category", "name", "pid", "tid", "start", "end", "allowed"};
    static const int sizes[9] = {4 | 8, 1, 1, 4 | 8, 4 | 8, 4 | 8, 8, 8, 1};
    Py_buffer v[9];
    int held[9] = {0};
    PyObject *result = NULL;
    int64_t *firsts = NULL;
    for (int k = 0; k < 9; k++) {
        if (k == 0 && objs[k] == Py_None) continue;
        if (get_ints(objs[k], &v[k], names[k], sizes[k]) < 0) goto done;
        held[k] = 1;
    }
    int64_t events = v[1].len;
    if (v[2].len != events || v[3].len / v[3].itemsize != events || v[4].len / v[4].itemsize != events ||
        v[5].len / v[5].itemsize != events || v[6].len / 8 != events || v[7].len / 8 != events) {
        PyErr_SetString(PyExc_ValueError,
                        "long_group_firsts: kind, category, name, pid, tid, start, end: one value per event row");
        goto done;
    }
    if (categories < 0 || categories > 127 || v[8].len % (categories + 1) != 0 || v[8].len / (categories + 1) < 1) {
        PyErr_SetString(PyExc_ValueError, "long_group_firsts: allowed: (kinds + 1) x (categories + 1) entries");
        goto done;
    }
    int64_t kinds = v[8].len / (categories + 1) - 1, n_firsts = 0, least = INT64_MAX;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = long_firsts_pass(held[0] ? v[0].buf : NULL, held[0] ? (int)v[0].itemsize : 8,
                              held[0] ? v[0].len / v[0].itemsize : 0, events, v[1].buf, v[2].buf, v[3].buf,
                              (int)v[3].itemsize, v[4].buf, (int)v[4].itemsize, v[5].buf, (int)v[5].itemsize, v[6].buf,
                              v[7].buf, v[8].buf, kinds, categories, by_thread, min_first, &firsts, &n_firsts, &least);
    Py_END_ALLOW_THREADS
    if (status == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == -2) {
        PyErr_SetString(PyExc_IndexError, "long_group_firsts: a row, kind or category outside its table");
        goto done;
    }
    PyObject *found;
    if (status == 1) {
        found = Py_None;
        Py_INCREF(found);
    } else {
        found = PyList_New(n_firsts);
        if (!found) goto done;
        for (int64_t q = 0; q < n_firsts; q++) {
            PyObject *row = PyLong_FromLongLong(firsts[q]);
            if (!row) {
                Py_DECREF(found);
                goto done;
            }
            PyList_SET_ITEM(found, q, row);
        }
    }
    result = Py_BuildValue("(NL)", found, (long long)least);
done:
    free(firsts);
    for (int k = 0; k < 9; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- The rows carrying a correlation id told apart: GPU ops and API calls (tracelens/analyses/id_split.py) ----
 *
 * id_rows(rows, kind, ids, gpu_kinds, runtime, driver, gpu, out_op_ids, out_ids, out_rows, out_is_driver): rows
 * (int32 or int64, ascending) are the event rows carrying a correlation id, ids (int32 or int64) their ids (-1 where
 * null), kind the event rows' kinds (int8). A carrying row is a GPU op where gpu_kinds[kind] is set (kind in 0..
 * len(gpu_kinds) - 1), an API call where its kind is runtime or driver. What launch._join_ids did by a gather of
 * the kinds at the carrying rows, comparisons, boolean selections of the rows, ids and kinds, and two table-long
 * kind counts: one pass over the carrying rows (and one over the kinds).
 * Outs None: returns (GPU ops, API calls among the carrying rows, runtime rows, driver rows of the table). Else
 * (out_op_ids None where gpu is None; the outs a slot longer than those counts): writes each GPU op's id (out_op_ids), each
 * call's id, row and whether a driver call (out_ids, out_rows: int32 or int64; out_is_driver: a byte), in row order,
 * and returns whether the GPU ops' rows are exactly gpu's (int32 or int64); out_op_ids is then written only where
 * they are. The GIL is released during the passes. */

static inline void put_int(void *p, int size, int64_t i, int64_t v) {
    if (size == 4)
        ((int32_t *)p)[i] = (int32_t)v;
    else
        ((int64_t *)p)[i] = v;
}

/* -2 where a carrying row is outside the table, -3 where (writing) the GPU ops or the calls outnumber their outs
 * (op_cap, call_cap); else 0, *ops, *calls and *same set. Branch-free where writing: the GPU ops and the calls
 * interleave, so each row is written to both outs' next slot and only its own count moves on (the outs hold one slot
 * more than their counts: the last row's other write lands there). */
static int id_rows_pass(const void *rows, int row_size, int64_t n, const int8_t *kind, int64_t events, const void *ids,
                        int id_size, const uint8_t *gpu_kinds, int64_t kinds, int runtime, int driver, const void *gpu,
                        int gpu_size, int64_t n_gpu, void *op_ids, int op_size, int64_t op_cap, void *out_ids,
                        int out_id_size, void *out_rows, int out_row_size, uint8_t *is_driver, int64_t call_cap,
                        int64_t *ops, int64_t *calls, int *same) {
    int64_t o = 0, c = 0;
    int differ = 0;
    uint8_t table[256];
    /* per kind byte: 1 a GPU op, 2 a runtime call, 6 a driver call (bit 2: driver), 0 neither */
    for (int k = 0; k < 256; k++) {
        int8_t code = (int8_t)k;
        table[k] = code >= 0 && code < kinds && gpu_kinds[code] ? 1 : code == runtime ? 2 : code == driver ? 6 : 0;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t r = read_code(rows, row_size, j);
        if (r < 0 || r >= events) return -2;
        int t = table[(uint8_t)kind[r]];
        int64_t is_op = t & 1, is_call = (t >> 1) & 1;
        if (out_ids) {
            if ((op_ids && o > op_cap) || c > call_cap) return -3;
            int64_t id = read_code(ids, id_size, j);
            if (gpu) {
                int64_t want = o < n_gpu ? read_code(gpu, gpu_size, o) : -1;
                differ |= (int)is_op & (want != r);
                if (op_ids) put_int(op_ids, op_size, o, id);
            }
            put_int(out_ids, out_id_size, c, id);
            put_int(out_rows, out_row_size, c, r);
            is_driver[c] = (uint8_t)(t >> 2);
        }
        o += is_op;
        c += is_call;
    }
    if (out_ids && ((op_ids && o > op_cap) || c > call_cap)) return -3;
    *ops = o;
    *calls = c;
    *same = !differ && o == n_gpu;
    return 0;
}

static PyObject *id_rows(PyObject *self, PyObject *args) {
    PyObject *objs[10];
    int runtime, driver;
    if (!PyArg_ParseTuple(args, "OOOOiiOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &runtime, &driver, &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8]))
        return NULL;
    static const char *names[9] = {"rows", "kind", "ids", "gpu_kinds", "gpu", "out_op_ids", "out_ids", "out_rows",
                                   "out_is_driver"};
    static const int sizes[9] = {4 | 8, 1, 4 | 8, 1, 4 | 8, 4 | 8, 4 | 8, 4 | 8, 1};
    Py_buffer v[9];
    int held[9] = {0};
    PyObject *result = NULL;
    int write = objs[6] != Py_None;
    for (int k = 0; k < 9; k++) {
        if ((k == 4 || k == 5) && objs[k] == Py_None) continue;
        if (k >= 6 && !write) continue;
        if (get_ints(objs[k], &v[k], names[k], sizes[k]) < 0) goto done;
        held[k] = 1;
        if (k >= 5 && v[k].readonly) {
            PyErr_Format(PyExc_TypeError, "%s: a writable array expected", names[k]);
            goto done;
        }
    }
    int64_t n = v[0].len / v[0].itemsize, events = v[1].len;
    if (v[2].len / v[2].itemsize != n) {
        PyErr_SetString(PyExc_ValueError, "id_rows: an id per carrying row expected");
        goto done;
    }
    int64_t ops = 0, calls = 0, runtimes = 0, drivers = 0;
    int same = 0, status;
    if (!write) {
        Py_BEGIN_ALLOW_THREADS
        status = id_rows_pass(v[0].buf, (int)v[0].itemsize, n, v[1].buf, events, v[2].buf, (int)v[2].itemsize,
                              v[3].buf, v[3].len, runtime, driver, NULL, 8, 0, NULL, 8, 0, NULL, 8, NULL, 8, NULL, 0,
                              &ops, &calls, &same);
        const int8_t *kind = v[1].buf;
        for (int64_t i = 0; i < events; i++) {
            runtimes += kind[i] == runtime;
            drivers += kind[i] == driver;
        }
        Py_END_ALLOW_THREADS
        if (status == -2) goto outside;
        result = Py_BuildValue("(LLLL)", (long long)ops, (long long)calls, (long long)runtimes, (long long)drivers);
        goto done;
    }
    /* the outs hold a slot more than the counts (the branch-free writes' last spare) */
    int64_t call_cap = v[6].len / v[6].itemsize - 1;
    if (call_cap < 0 || v[7].len / v[7].itemsize != call_cap + 1 || v[8].len != call_cap + 1 ||
        (held[5] && v[5].len / v[5].itemsize < 1)) {
        PyErr_SetString(PyExc_ValueError, "id_rows: out_ids, out_rows, out_is_driver of one length expected");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    status = id_rows_pass(v[0].buf, (int)v[0].itemsize, n, v[1].buf, events, v[2].buf, (int)v[2].itemsize, v[3].buf,
                          v[3].len, runtime, driver, held[4] ? v[4].buf : NULL, held[4] ? (int)v[4].itemsize : 8,
                          held[4] ? v[4].len / v[4].itemsize : 0, held[5] ? v[5].buf : NULL,
                          held[5] ? (int)v[5].itemsize : 8, held[5] ? v[5].len / v[5].itemsize - 1 : 0, v[6].buf,
                          (int)v[6].itemsize, v[7].buf, (int)v[7].itemsize, v[8].buf, call_cap, &ops, &calls, &same);
    Py_END_ALLOW_THREADS
    if (status == -2) goto outside;
    if (status == -3 || calls != call_cap || (held[5] && v[5].len / v[5].itemsize - 1 != ops)) {
        PyErr_SetString(PyExc_ValueError, "id_rows: outs as long as the GPU ops and the calls expected");
        goto done;
    }
    result = PyBool_FromLong(same);
    goto done;
outside:
    PyErr_SetString(PyExc_IndexError, "id_rows: a carrying row outside the table");
done:
    for (int k = 0; k < 9; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- Each GPU's merged busy intervals, in one pass over the event rows (tracelens/analyses/busy_scan.py) ----
 *
 * busy_intervals(kind, device, start, end, gpu_kinds) -> (held, [(device, count, first_start, last_end), ...]) or
 * None: the rows whose kind k (int8) has gpu_kinds[k] set (k in 0..len(gpu_kinds) - 1) and whose device (1, 2, 4
 * or 8 bytes) is >= 0, each device's rows merged as intervals.merge merges them (rows in start order; a new merged
 * interval where a row starts after every end before it: touching rows joined), devices in the order they first
 * appear: count merged intervals, the least start, the largest end; held (a capsule) keeps each device's merged
 * starts and ends until busy_take(held, q, out_starts, out_ends) copies the q-th device's into int64 arrays count
 * long. What columns.device_busy did by a kind mask, a flatnonzero, three gathers, a np.unique and per device a
 * selection and a merge: one pass (the GPU ops lie among the host rows: each pass over their times reads all of
 * the columns' memory). None where a device's rows are not in start order (the merge would sort them: the caller's
 * numpy path) or there are more than BUSY_DEVICES devices. The GIL is released during the pass. */

#define BUSY_DEVICES 64
/* rows whose kinds are read at once before their GPU rows are (a stack buffer of their offsets) */
#define BUSY_BLOCK 4096

typedef struct {
    int64_t device, count, least, last_start, open_start, reach, cap;
    int64_t *s, *e;
} busy_state_t;

typedef struct {
    int devices;
    busy_state_t st[BUSY_DEVICES];
} busy_held_t;

static void busy_free(busy_held_t *h) {
    if (!h) return;
    for (int q = 0; q < h->devices; q++) {
        free(h->st[q].s);
        free(h->st[q].e);
    }
    free(h);
}

static void busy_capsule_free(PyObject *capsule) { busy_free(PyCapsule_GetPointer(capsule, "tracelens.busy")); }

/* The merged interval [s, e) appended to the device's lists: 0, or -1 (no memory). */
static int busy_push(busy_state_t *b, int64_t s, int64_t e) {
    if (b->count == b->cap) {
        int64_t cap = b->cap ? 2 * b->cap : 4096;
        int64_t *ns = realloc(b->s, (size_t)cap * sizeof(int64_t));
        if (ns) b->s = ns;
        int64_t *ne = realloc(b->e, (size_t)cap * sizeof(int64_t));
        if (ne) b->e = ne;
        if (!ns || !ne) return -1;
        b->cap = cap;
    }
    b->s[b->count] = s;
    b->e[b->count] = e;
    b->count++;
    return 0;
}

/* 0: done; 1: a device's rows out of start order, or too many devices; -1: no memory. Each device's open interval
 * is [open_start, reach) while its rows come (count: the intervals closed so far). */
static int busy_pass(const int8_t *kind, const void *device, int device_size, const int64_t *start, const int64_t *end,
                     int64_t n, const uint8_t *gpu_kinds, int64_t kinds, busy_held_t *h) {
    int last = -1;
    uint8_t is_gpu[256];
    for (int k = 0; k < 256; k++) is_gpu[k] = (int8_t)k >= 0 && (int8_t)k < kinds && gpu_kinds[(int8_t)k];
    int32_t picked[BUSY_BLOCK];
    for (int64_t lo = 0; lo < n; lo += BUSY_BLOCK) {
        /* the block's GPU rows first, without a branch per row (they lie among the host rows at random: a branch
         * on each row's kind mispredicts), then each of those few read */
        int64_t hi = lo + BUSY_BLOCK < n ? lo + BUSY_BLOCK : n, m = 0;
        for (int64_t i = lo; i < hi; i++) {
            picked[m] = (int32_t)(i - lo);
            m += is_gpu[(uint8_t)kind[i]];
        }
        for (int64_t p = 0; p < m; p++) {
        int64_t i = lo + picked[p];
        int64_t d = read_code(device, device_size, i);
        if (d < 0) continue;
        int at = last >= 0 && h->st[last].device == d ? last : -1;
        for (int q = 0; at < 0 && q < h->devices; q++)
            if (h->st[q].device == d) at = q;
        int64_t s = start[i], e = end[i];
        if (at < 0) { /* a new device: its first row opens its first interval */
            if (h->devices == BUSY_DEVICES) return 1;
            at = h->devices++;
            h->st[at] = (busy_state_t){d, 0, s, s, s, e, 0, NULL, NULL};
            last = at;
            continue;
        }
        last = at;
        busy_state_t *b = &h->st[at];
        if (s < b->last_start) return 1;
        b->last_start = s;
        if (s > b->reach) { /* past every end so far: the open interval closes, this row opens the next */
            if (busy_push(b, b->open_start, b->reach) < 0) return -1;
            b->open_start = s;
        }
        if (e > b->reach) b->reach = e;
        }
    }
    for (int q = 0; q < h->devices; q++)
        if (busy_push(&h->st[q], h->st[q].open_start, h->st[q].reach) < 0) return -1;
    return 0;
}

static PyObject *busy_intervals(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4])) return NULL;
    static const char *names[5] = {"kind", "device", "start", "end", "gpu_kinds"};
    static const int sizes[5] = {1, 1 | 2 | 4 | 8, 8, 8, 1};
    Py_buffer v[5];
    int held[5] = {0};
    PyObject *result = NULL;
    busy_held_t *h = NULL;
    for (int k = 0; k < 5; k++) {
        if (get_ints(objs[k], &v[k], names[k], sizes[k]) < 0) goto done;
        held[k] = 1;
    }
    int64_t n = v[0].len;
    if (v[1].len / v[1].itemsize != n || v[2].len / 8 != n || v[3].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "busy_intervals: kind, device, start, end: one value per event row");
        goto done;
    }
    h = calloc(1, sizeof(busy_held_t));
    if (!h) {
        PyErr_NoMemory();
        goto done;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = busy_pass(v[0].buf, v[1].buf, (int)v[1].itemsize, v[2].buf, v[3].buf, n, v[4].buf, v[4].len, h);
    Py_END_ALLOW_THREADS
    if (status == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == 1) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *found = PyList_New(h->devices);
    if (!found) goto done;
    for (int q = 0; q < h->devices; q++) {
        PyObject *item = Py_BuildValue("(LLLL)", (long long)h->st[q].device, (long long)h->st[q].count,
                                       (long long)h->st[q].least, (long long)h->st[q].reach);
        if (!item) {
            Py_DECREF(found);
            goto done;
        }
        PyList_SET_ITEM(found, q, item);
    }
    PyObject *capsule = PyCapsule_New(h, "tracelens.busy", busy_capsule_free);
    if (!capsule) {
        Py_DECREF(found);
        goto done;
    }
    h = NULL; /* the capsule's now */
    result = Py_BuildValue("(NN)", capsule, found);
done:
    busy_free(h);
    for (int k = 0; k < 5; k++)
        if (held[k]) PyBuffer_Release(&v[k]);
    return result;
}

/* busy_take(held, q, out_starts, out_ends): copies the q-th device's merged intervals into the int64 arrays (as
 * long as its count). */
static PyObject *busy_take(PyObject *self, PyObject *args) {
    PyObject *capsule, *objs[2];
    int q;
    if (!PyArg_ParseTuple(args, "OiOO", &capsule, &q, &objs[0], &objs[1])) return NULL;
    busy_held_t *h = PyCapsule_GetPointer(capsule, "tracelens.busy");
    if (!h) return NULL;
    if (q < 0 || q >= h->devices) {
        PyErr_SetString(PyExc_IndexError, "busy_take: no such device");
        return NULL;
    }
    Py_buffer v[2];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 2; got++)
        if (get(objs[got], &v[got], 1, got ? "out_ends" : "out_starts") < 0) break;
    if (got < 2) goto done;
    int64_t count = h->st[q].count;
    if (v[0].len / 8 != count || v[1].len / 8 != count) {
        PyErr_SetString(PyExc_ValueError, "busy_take: outs as long as the device's count expected");
        goto done;
    }
    if (count) {
        memcpy(v[0].buf, h->st[q].s, (size_t)count * sizeof(int64_t));
        memcpy(v[1].buf, h->st[q].e, (size_t)count * sizeof(int64_t));
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* busy_handover(held, q) -> (starts, ends): the q-th device's merged intervals handed over as they are, no copy
 * (take_level's buffer objects: np.frombuffer reads each as int64, freed with the last array on it); the device's
 * lists are then empty (a second hand-over gives empty buffers). busy_take copied them into fresh numpy arrays: a
 * second write of ~3.3 MB (the 406 MB Kineto tile's 207K intervals) into pages faulted in anew. */
static PyObject *busy_handover(PyObject *self, PyObject *args) {
    PyObject *capsule;
    int q;
    if (!PyArg_ParseTuple(args, "Oi", &capsule, &q)) return NULL;
    busy_held_t *h = PyCapsule_GetPointer(capsule, "tracelens.busy");
    if (!h) return NULL;
    if (q < 0 || q >= h->devices) {
        PyErr_SetString(PyExc_IndexError, "busy_handover: no such device");
        return NULL;
    }
    busy_state_t *b = &h->st[q];
    int64_t count = b->count;
    PyObject *s = owned(&b->s, count), *e = s ? owned(&b->e, count) : NULL;
    b->count = b->cap = 0;
    if (!e) {
        Py_XDECREF(s);
        return NULL;
    }
    return Py_BuildValue("(NN)", s, e);
}

/* ---- A union of two piece lists measured, and its holes in the windows, without building it (level_cut.py) ----
 *
 * union_cover(a_starts, a_ends, a_windows, b_starts, b_ends, b_windows, which, which_slot, totals, window_starts,
 * window_ends, out_starts, out_ends): the union of the two lists as union_taken merges it (each int64, sorted by
 * start, pieces inside their windows), not written: totals (int64, 1 + len(which)) gets window_split.totals' answer
 * of it (totals[0]: the pieces' summed length; totals[1 + which_slot[k]]: the covered length of window which[k],
 * which ascending int64, which_slot its positions in the caller's order); with the windows given (else None:
 * returns 0), the union's holes in them as complement_pieces gives them, written where the outs are given (else
 * counted). Returns the holes' count, or -1 where a piece's window is outside the windows or the windows descend
 * (the caller's path then). One pass, the GIL released. */

typedef struct {
    const int64_t *which, *slot;
    int64_t k, p;
    int64_t *totals;
    const int64_t *ws, *we;
    int64_t nw, j, at, o;
    int64_t *os, *oe, cap;
    int bad;
} cover_t;

static inline void hole(cover_t *c, int64_t s, int64_t e) {
    if (c->os && c->o < c->cap) {
        c->os[c->o] = s;
        c->oe[c->o] = e;
    }
    c->o++;
}

/* The windows before w closed (their last hole written), window w opened at its start. */
static inline void cover_reach(cover_t *c, int64_t w) {
    if (c->j < 0) {
        c->j = 0;
        c->at = c->ws[0];
    }
    while (c->j < w) {
        if (c->we[c->j] > c->at) hole(c, c->at, c->we[c->j]);
        c->j++;
        c->at = c->ws[c->j];
    }
}

static inline void cover_piece(cover_t *c, int64_t s, int64_t e, int64_t w) {
    c->totals[0] += e - s;
    while (c->p < c->k && c->which[c->p] < w) c->p++;
    for (int64_t q = c->p; q < c->k && c->which[q] == w; q++) c->totals[1 + c->slot[q]] += e - s;
    if (!c->ws) return;
    if (w < c->j || w >= c->nw) {
        c->bad = 1;
        return;
    }
    cover_reach(c, w);
    if (s > c->at) hole(c, c->at, s);
    c->at = e;
}

static void cover_pass(const int64_t *as, const int64_t *ae, const int64_t *aw, int64_t na, const int64_t *bs,
                       const int64_t *be, const int64_t *bw, int64_t nb, cover_t *c) {
    int64_t i = 0, j = 0, cs = 0, ce = 0, cw = 0;
    int open = 0;
    while (i < na || j < nb) {
        int64_t s, e, w;
        if (j >= nb || (i < na && as[i] <= bs[j])) {
            s = as[i];
            e = ae[i];
            w = aw[i];
            i++;
        } else {
            s = bs[j];
            e = be[j];
            w = bw[j];
            j++;
        }
        if (open && w == cw && s <= ce) {
            if (e > ce) ce = e;
            continue;
        }
        if (open) cover_piece(c, cs, ce, cw);
        cs = s;
        ce = e;
        cw = w;
        open = 1;
    }
    if (open) cover_piece(c, cs, ce, cw);
    if (c->ws && c->nw && !c->bad) { /* the last windows closed */
        cover_reach(c, c->nw - 1);
        if (c->we[c->j] > c->at) hole(c, c->at, c->we[c->j]);
    }
}

static PyObject *union_cover(PyObject *self, PyObject *args) {
    PyObject *objs[13];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &objs[12]))
        return NULL;
    Py_buffer v[13];
    int held[13] = {0};
    PyObject *result = NULL;
    /* 0..7 read, 8 (totals) written, 9..10 read or None, 11..12 written or None */
    for (int k = 0; k < 13; k++) {
        if (k >= 9 && objs[k] == Py_None) continue;
        if (get(objs[k], &v[k], k == 8 || k >= 11, "union_cover") < 0) goto done;
        held[k] = 1;
        if (v[k].len && v[k].itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "union_cover: int64 expected");
            goto done;
        }
    }
    int64_t na = v[0].len / 8, nb = v[3].len / 8, k = v[6].len / 8;
    if (v[1].len / 8 != na || v[2].len / 8 != na || v[4].len / 8 != nb || v[5].len / 8 != nb ||
        v[7].len / 8 != k || v[8].len / 8 != 1 + k || held[9] != held[10] || held[11] != held[12] ||
        (held[11] && !held[9]) || (held[9] && v[10].len != v[9].len)) {
        PyErr_SetString(PyExc_ValueError, "union_cover: arrays of matching lengths expected");
        goto done;
    }
    const int64_t *slot = v[7].buf;
    for (int64_t q = 0; q < k; q++) {
        if (slot[q] < 0 || slot[q] >= k || (q && ((const int64_t *)v[6].buf)[q] < ((const int64_t *)v[6].buf)[q - 1])) {
            PyErr_SetString(PyExc_ValueError, "union_cover: which ascending, slots inside it expected");
            goto done;
        }
    }
    int64_t *totals = v[8].buf;
    for (int64_t q = 0; q <= k; q++) totals[q] = 0;
    cover_t c = {v[6].buf, slot, k, 0, totals, held[9] ? v[9].buf : NULL, held[9] ? v[10].buf : NULL,
                 held[9] ? v[9].len / 8 : 0, -1, 0, 0, held[11] ? v[11].buf : NULL, held[11] ? v[12].buf : NULL,
                 0, 0};
    c.cap = held[11] ? v[11].len / 8 : 0;
    Py_BEGIN_ALLOW_THREADS
    cover_pass(v[0].buf, v[1].buf, v[2].buf, na, v[3].buf, v[4].buf, v[5].buf, nb, &c);
    Py_END_ALLOW_THREADS
    if (c.os && !c.bad && c.o != c.cap) {
        PyErr_SetString(PyExc_ValueError, "union_cover: outs as long as the holes expected");
        goto done;
    }
    result = PyLong_FromLongLong(c.bad ? -1 : c.o);
done:
    for (int q = 0; q < 13; q++)
        if (held[q]) PyBuffer_Release(&v[q]);
    return result;
}

/* ---- The sync echo's figures without the echo built (tracelens/analyses/level_cut.py) ----
 *
 * measure_before(starts, ends, minus_starts, minus_ends, queries, inverse, out): over the union of the intervals
 * (starts, ends) less the union of (minus_starts, minus_ends) (each list sorted by start, none overlapping the next;
 * minus may be empty), for ascending queries: inverse false, out[k] = its length before queries[k]
 * (intervals.covered_before); inverse true, out[k] = the first instant by which queries[k] of it has passed, int64
 * max where it is shorter (intervals.time_covered). One walk through both lists as far as the last query, the
 * difference taken as it is read (no cumulative sums of the whole lists). Returns 1 where the difference is not
 * empty, 0 where it is, -1 where a list or the queries are out of order (nothing written). The GIL is released.
 * clipped_totals: below. */

/* The intervals less the minus intervals, a part at a time. */
typedef struct {
    const int64_t *s, *e, *ms, *me;
    int64_t n, nm, i, k, at;
    int resumed; /* at: where the i-th interval's rest begins */
} minus_stream_t;

/* The next nonempty part into *ps, *pe (0 once none is left); *from: the interval it is a part of. */
static inline int minus_next(minus_stream_t *m, int64_t *ps, int64_t *pe, int64_t *from) {
    while (m->i < m->n) {
        int64_t s = m->resumed ? m->at : m->s[m->i], e = m->e[m->i];
        *from = m->i;
        while (m->k < m->nm && m->me[m->k] <= s) m->k++;
        if (m->k < m->nm && m->ms[m->k] <= s) { /* s inside a minus interval: the rest from its end */
            m->at = m->me[m->k];
            m->resumed = 1;
            if (m->at >= e) {
                m->i++;
                m->resumed = 0;
            }
            continue;
        }
        int64_t stop = m->k < m->nm && m->ms[m->k] < e ? m->ms[m->k] : e;
        if (stop < e) { /* the rest from that minus interval's start on */
            m->at = stop;
            m->resumed = 1;
        } else {
            m->i++;
            m->resumed = 0;
        }
        if (stop > s) {
            *ps = s;
            *pe = stop;
            return 1;
        }
    }
    return 0;
}

static int disjoint_ascending(const int64_t *s, const int64_t *e, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (e[i] < s[i] || (i && s[i] < e[i - 1])) return 0;
    return 1;
}

static int measure_pass(minus_stream_t *m, const int64_t *queries, int64_t nq, int inverse, int64_t *out) {
    int64_t ps = 0, pe = 0, from = 0, cum = 0; /* cum: the length of the parts before the current one [ps, pe) */
    int has = minus_next(m, &ps, &pe, &from), any = has;
    for (int64_t q = 0; q < nq; q++) {
        int64_t t = queries[q];
        if (inverse) {
            while (has && cum + (pe - ps) < t) {
                cum += pe - ps;
                has = minus_next(m, &ps, &pe, &from);
            }
            out[q] = has ? ps + (t - cum) : INT64_MAX;
        } else {
            while (has && pe <= t) {
                cum += pe - ps;
                has = minus_next(m, &ps, &pe, &from);
            }
            out[q] = cum + (has && ps < t ? t - ps : 0);
        }
    }
    return any;
}

static PyObject *measure_before(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    int inverse;
    if (!PyArg_ParseTuple(args, "OOOOOpO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &inverse, &objs[5]))
        return NULL;
    Py_buffer v[6];
    int held[6] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 6; k++) {
        if (get(objs[k], &v[k], k == 5, "measure_before") < 0) goto done;
        held[k] = 1;
        if (v[k].len && v[k].itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "measure_before: int64 expected");
            goto done;
        }
    }
    int64_t n = v[0].len / 8, nm = v[2].len / 8, nq = v[4].len / 8;
    if (v[1].len / 8 != n || v[3].len / 8 != nm || v[5].len / 8 != nq) {
        PyErr_SetString(PyExc_ValueError, "measure_before: arrays of matching lengths expected");
        goto done;
    }
    int status = -1;
    Py_BEGIN_ALLOW_THREADS
    if (disjoint_ascending(v[0].buf, v[1].buf, n) && disjoint_ascending(v[2].buf, v[3].buf, nm) &&
        ascending(v[4].buf, nq)) {
        minus_stream_t m = {v[0].buf, v[1].buf, v[2].buf, v[3].buf, n, nm, 0, 0, 0, 0};
        status = measure_pass(&m, v[4].buf, nq, inverse, v[5].buf);
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLong(status);
done:
    for (int q = 0; q < 6; q++)
        if (held[q]) PyBuffer_Release(&v[q]);
    return result;
}

/* clipped_totals(starts, ends, windows, minus_starts, minus_ends, clip_starts, clip_ends, inside, which, which_slot,
 * totals): union_cover's totals (window_split.totals) of the pieces (int64, sorted by start, inside their windows,
 * none overlapping the next) less the minus intervals, then inside the clip intervals (inside true) or outside them
 * (false); minus and clip sorted, none overlapping the next. The sync echo's gains measured from what they add: the
 * host work's time in the echoes' spans that the levels before do not cover, the launch level's time outside both.
 * One walk through the three lists, nothing written but totals. Returns True, or False where a list is out of order
 * or which/slots do not fit (nothing counted: the caller's path). The GIL is released. */

static void clipped_pass(minus_stream_t *m, const int64_t *w, const int64_t *cs, const int64_t *ce, int64_t nc,
                         int inside, cover_t *c) {
    int64_t ps = 0, pe = 0, from = 0, k = 0;
    while (minus_next(m, &ps, &pe, &from)) {
        int64_t window = w[from];
        while (k < nc && ce[k] <= ps) k++;
        int64_t at = ps; /* outside: the part from here on not yet counted */
        for (int64_t q = k; q < nc && cs[q] < pe; q++) {
            if (inside) {
                int64_t a = ps > cs[q] ? ps : cs[q], b = pe < ce[q] ? pe : ce[q];
                if (b > a) cover_piece(c, a, b, window);
            } else {
                if (cs[q] > at) cover_piece(c, at, cs[q], window);
                if (ce[q] > at) at = ce[q];
            }
        }
        if (!inside && pe > at) cover_piece(c, at, pe, window);
    }
}

static PyObject *clipped_totals(PyObject *self, PyObject *args) {
    PyObject *objs[10];
    int inside;
    if (!PyArg_ParseTuple(args, "OOOOOOOpOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &inside, &objs[7], &objs[8], &objs[9]))
        return NULL;
    Py_buffer v[10];
    int held[10] = {0};
    PyObject *result = NULL;
    for (int k = 0; k < 10; k++) {
        if (get(objs[k], &v[k], k == 9, "clipped_totals") < 0) goto done;
        held[k] = 1;
        if (v[k].len && v[k].itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "clipped_totals: int64 expected");
            goto done;
        }
    }
    int64_t n = v[0].len / 8, nm = v[3].len / 8, nc = v[5].len / 8, k = v[7].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n || v[4].len / 8 != nm || v[6].len / 8 != nc || v[8].len / 8 != k ||
        v[9].len / 8 != 1 + k) {
        PyErr_SetString(PyExc_ValueError, "clipped_totals: arrays of matching lengths expected");
        goto done;
    }
    const int64_t *which = v[7].buf, *slot = v[8].buf;
    int fits = 1;
    for (int64_t q = 0; q < k && fits; q++) fits = slot[q] >= 0 && slot[q] < k && (!q || which[q] >= which[q - 1]);
    Py_BEGIN_ALLOW_THREADS
    fits = fits && disjoint_ascending(v[0].buf, v[1].buf, n) && disjoint_ascending(v[3].buf, v[4].buf, nm) &&
           disjoint_ascending(v[5].buf, v[6].buf, nc);
    if (fits) {
        int64_t *totals = v[9].buf;
        for (int64_t q = 0; q <= k; q++) totals[q] = 0;
        cover_t c = {which, slot, k, 0, totals, NULL, NULL, 0, -1, 0, 0, NULL, NULL, 0, 0};
        minus_stream_t m = {v[0].buf, v[1].buf, v[3].buf, v[4].buf, n, nm, 0, 0, 0, 0};
        clipped_pass(&m, v[2].buf, v[5].buf, v[6].buf, nc, inside, &c);
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(fits);
done:
    for (int q = 0; q < 10; q++)
        if (held[q]) PyBuffer_Release(&v[q]);
    return result;
}

/* union_cover_taken(a_starts, a_ends, a_windows, b_starts, b_ends, b_windows, which, which_slot, totals,
 * window_starts, window_ends) -> (hole_starts, hole_ends) or None: union_cover with the windows, the holes written in
 * the same pass into C arrays as long as they can be (the pieces and the windows: a hole before each piece and at
 * each window's end), shrunk and handed over as take_level's buffer objects (no counting pass first); None where a
 * piece's window is outside the windows or the windows descend. */
static PyObject *union_cover_taken(PyObject *self, PyObject *args) {
    PyObject *objs[11];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8], &objs[9], &objs[10]))
        return NULL;
    Py_buffer v[11];
    int held[11] = {0};
    PyObject *result = NULL;
    int64_t *out[2] = {NULL, NULL};
    for (int k = 0; k < 11; k++) {
        if (get(objs[k], &v[k], k == 8, "union_cover_taken") < 0) goto done;
        held[k] = 1;
        if (v[k].len && v[k].itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "union_cover_taken: int64 expected");
            goto done;
        }
    }
    int64_t na = v[0].len / 8, nb = v[3].len / 8, k = v[6].len / 8, nw = v[9].len / 8;
    if (v[1].len / 8 != na || v[2].len / 8 != na || v[4].len / 8 != nb || v[5].len / 8 != nb ||
        v[7].len / 8 != k || v[8].len / 8 != 1 + k || v[10].len / 8 != nw) {
        PyErr_SetString(PyExc_ValueError, "union_cover_taken: arrays of matching lengths expected");
        goto done;
    }
    const int64_t *slot = v[7].buf, *which = v[6].buf;
    for (int64_t q = 0; q < k; q++) {
        if (slot[q] < 0 || slot[q] >= k || (q && which[q] < which[q - 1])) {
            PyErr_SetString(PyExc_ValueError, "union_cover_taken: which ascending, slots inside it expected");
            goto done;
        }
    }
    int64_t cap = na + nb + nw;
    for (int q = 0; q < 2; q++) {
        out[q] = malloc((size_t)(cap ? cap : 1) * sizeof(int64_t));
        if (!out[q]) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int64_t *totals = v[8].buf;
    for (int64_t q = 0; q <= k; q++) totals[q] = 0;
    cover_t c = {which, slot, k, 0, totals, v[9].buf, v[10].buf, nw, -1, 0, 0, out[0], out[1], cap, 0};
    Py_BEGIN_ALLOW_THREADS
    cover_pass(v[0].buf, v[1].buf, v[2].buf, na, v[3].buf, v[4].buf, v[5].buf, nb, &c);
    Py_END_ALLOW_THREADS
    if (c.bad) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    if (c.o > cap) {
        PyErr_SetString(PyExc_RuntimeError, "union_cover_taken: more holes than room");
        goto done;
    }
    PyObject *s = owned(&out[0], c.o), *e = s ? owned(&out[1], c.o) : NULL;
    if (!e) {
        Py_XDECREF(s);
        goto done;
    }
    result = Py_BuildValue("(NN)", s, e);
done:
    free(out[0]);
    free(out[1]);
    for (int q = 0; q < 11; q++)
        if (held[q]) PyBuffer_Release(&v[q]);
    return result;
}
