/* The op tree's per-thread pass (tracelens/analyses/ops/tree.py, _compute_op_tree), in one walk per thread.
 *
 * The numpy path sorts each thread's ends and searches them (the nesting depth), then searches each nesting
 * level's ops once per level for the launches (the outermost and the deepest op holding each launch): several
 * passes over tens of millions of op ranges at an emit_nvtx export's size. This gives the same three results
 * in one walk per thread over its ops, its launches (sorted by time first) visited within it:
 *
 *   depth[i]  = how many ops ordered before op i (by start, longest first) end after op i's start, capped at
 *               32767 (tree.py's _sorted_depth): a min-heap of the earlier ops' ends, popped down to the start;
 *   outer     = whether depth[i] == 0 (the outermost ops);
 *   at each launch time t (answered once the walk has passed every op starting at or before t, before the next
 *   op: each op's start and end read once, not again in a sweep of its own): per nesting
 *   level the last op started at or before t (intervals.running_at per level), the outermost op the level-0
 *   one if t < its end, the innermost the deepest level's that still runs at t, else the outermost.
 *
 * op_tree(start, end, bounds, t, edges, outer, outermost, innermost): start/end int64 (the ops in thread
 * order), bounds int64 (threads + 1: each thread's ops), t int64 (launch times grouped by thread), edges int64
 * (threads + 1: each thread's launches), outer uint8 (ops), outermost/innermost int64 (launches; positions into
 * the ops, -1: none). With ``rows`` (int32 or int64, one per op), ``end`` is the whole end column and an op's end
 * is read at its row: no gathered copy of the ops' ends (tens of millions of int64 on an emit_nvtx export). With
 * ``rows`` and a true ``starts_by_row`` (an optional last argument: OP_TREE_START_ROWS), ``start`` is the whole
 * start column too, each op's start read at its row: no gathered copy of the starts either.
 * Returns False where an op ends before it starts (the readers clamp those; tree.py's numpy path counts them its
 * own way, and reads none of the outputs, which are then partly written: each op is checked as the pass reads it,
 * not in a pass of its own over the ops' starts and ends). The GIL is released while it runs.
 *
 * group_rows(pid, tid, start, rows, candidates, rows_out, start_out, bounds): the op rows grouped by thread ahead of
 * that pass (tree.py's _by_thread): a stable counting sort of the event ``rows`` (ascending) by their thread's key
 * (columns.thread_key: pid in the high 32 bits, tid in the low), the keys in the order of ``candidates`` (int64,
 * ascending, distinct, at most 255), written with each row's start. Two passes over the rows (each row's pid, tid
 * and start read, its candidate found, the counts; then each row and start written to its place) instead of a
 * gather of each column, a comparison and a gather per thread. pid, tid: int32 or int64 columns (or int8/int16:
 * the store's thread codes, passed as both, which order as their threads' keys do); start: int64;
 * rows and rows_out: int32 or int64; start_out: int64; bounds: int64, candidates + 1. Returns 0; or 1 where a key
 * is not among the candidates, 2 where the rows' starts are not ascending (the outputs then unspecified: tree.py
 * sorts instead). An empty ``start_out`` (OP_TREE_START_ROWS) asks for no starts: op_tree reads them at the rows.
 * With an optional ``ties`` (int64, one item: GROUP_ROWS_TIES), writes there how many rows start when the previous
 * row of their thread does (0: no tie for tree.py to order, and no pass of its own over the rows' starts to find
 * them).
 * The GIL is released while it runs.
 *
 * names_of_kind(kind, name, code, seen): the names the rows of one kind take (tree.py's op names: the annotations'),
 * in one pass over the kind and name columns instead of a compressed copy of the names and a count of it. kind:
 * int8; name: int32 or int64 codes, -1 for none; seen: bool, the dictionary's size + 1 (the last slot: no name),
 * set where a row of kind ``code`` has that name. Returns False where a name is outside the dictionary (seen then
 * partly written). The GIL is released while it runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVEL 32767

static int get(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize, const char *name) {
    if (PyObject_GetBuffer(obj, view, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize && view->len != 0) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes expected", name, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The buffers of objs[0..n) (C-contiguous, with their formats): the first ``first_writable`` read, the rest also
 * written. Returns how many it took: n, or fewer where one could not be had (an exception set then); release the
 * ones taken either way (release_buffers). */
static int take_buffers(PyObject **objs, Py_buffer *v, int n, int first_writable) {
    int got = 0;
    for (; got < n; got++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got >= first_writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[got], &v[got], flags) < 0) break;
    }
    return got;
}

static void release_buffers(Py_buffer *v, int got) {
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
}

static void heap_push(int64_t *heap, int64_t *size, int64_t value) {
    int64_t i = (*size)++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (heap[parent] <= value) break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = value;
}

static void heap_pop(int64_t *heap, int64_t *size) {
    int64_t last = heap[--(*size)], n = *size, i = 0;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && heap[child + 1] < heap[child]) child++;
        if (heap[child] >= last) break;
        heap[i] = heap[child];
        i = child;
    }
    if (n > 0) heap[i] = last;
}

/* order[0..n) := 0..n-1 sorted by key (stable), using tmp (n) as scratch: a natural merge sort. A thread's launch
 * times come nearly in order (a few descents a step), so each pass merges the runs already in order pairwise (no
 * pass at all where they are sorted): log2(runs) passes, not log2(n). */
static void sort_by_key(const int64_t *key, int64_t *order, int64_t *tmp, int64_t n) {
    for (int64_t i = 0; i < n; i++) order[i] = i;
    int64_t *src = order, *dst = tmp;
    for (;;) {
        int64_t lo = 0, merged = 0;
        while (lo < n) {
            int64_t mid = lo + 1;
            while (mid < n && key[src[mid]] >= key[src[mid - 1]]) mid++;
            if (mid >= n) { /* the last run has no partner this pass */
                if (merged) memcpy(dst + lo, src + lo, (size_t)(n - lo) * sizeof *dst);
                break;
            }
            int64_t hi = mid + 1;
            while (hi < n && key[src[hi]] >= key[src[hi - 1]]) hi++;
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) dst[k++] = key[src[b]] < key[src[a]] ? src[b++] : src[a++];
            while (a < mid) dst[k++] = src[a++];
            while (b < hi) dst[k++] = src[b++];
            merged++;
            lo = hi;
        }
        if (!merged) break; /* one run: src is in order */
        int64_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != order) memcpy(order, src, (size_t)n * sizeof *order);
}

static inline int64_t read_int(const void *buf, Py_ssize_t size, int64_t i) {
    return size == 4 ? (int64_t)((const int32_t *)buf)[i] : ((const int64_t *)buf)[i];
}

/* A pid or tid: read_int, or (items of 1 or 2 bytes) a thread's code, as an Nsight export's store holds them. */
static inline int64_t read_id(const void *buf, Py_ssize_t size, int64_t i) {
    if (size == 1) return ((const int8_t *)buf)[i];
    if (size == 2) return ((const int16_t *)buf)[i];
    return read_int(buf, size, i);
}

/* An op's end: end[i], or, with rows (items of rows_size bytes), the end column at the op's row. */
static inline int64_t end_of(const int64_t *end, const void *rows, Py_ssize_t rows_size, int64_t i) {
    return rows == NULL ? end[i] : end[read_int(rows, rows_size, i)];
}

/* An op's start: start[i], or, with start_rows (the rows, items of rows_size bytes), the start column at its row. */
static inline int64_t start_of(const int64_t *start, const void *start_rows, Py_ssize_t rows_size, int64_t i) {
    return start_rows == NULL ? start[i] : start[read_int(start_rows, rows_size, i)];
}

/* A launch at ``time``, once every op starting at or before it has been passed: the outermost op the last one of
 * level 0 where it still runs then, the innermost the deepest level's last one that still runs then (else the
 * outermost). */
static inline void answer(const int64_t *end, const void *rows, Py_ssize_t rows_size, const int64_t *last,
                          int64_t top, int64_t time, int64_t base, int64_t *outermost, int64_t *innermost) {
    int64_t out = last[0] >= 0 && time < end_of(end, rows, rows_size, last[0]) ? last[0] : -1, in = out;
    for (int64_t l = top; l >= 1; l--) {
        if (last[l] >= 0 && time < end_of(end, rows, rows_size, last[l])) {
            in = last[l];
            break;
        }
    }
    *outermost = out >= 0 ? base + out : -1;
    *innermost = in >= 0 ? base + in : -1;
}

/* One thread: ops [0, n), launches [0, m); ``starts`` and ``ends``: the columns' sizes, where read at rows. The
 * launches are visited in time order within the one walk over the ops (each launch answered before the first op
 * starting after it): each op's start and end read once. Returns 0; 1 where an op ends before it starts, 2 where
 * a row is outside a column (then stopped, its outputs partly written; the launches before that op answered). */
static int one_thread(const int64_t *start, const void *start_rows, const int64_t *end, const void *rows,
                      Py_ssize_t rows_size, int64_t starts, int64_t ends, int64_t n, const int64_t *t, int64_t m,
                      uint8_t *outer, int64_t *outermost, int64_t *innermost, int64_t base, int64_t *heap,
                      int64_t *last, int64_t *order, int64_t *tmp) {
    int64_t size = 0, top = 0, j = 0;
    if (m > 0) sort_by_key(t, order, tmp, m);
    last[0] = -1; /* last[l]: the last op passed at nesting level l (-1: none yet), for l <= top */
    for (int64_t i = 0; i < n; i++) {
        if (rows != NULL) { /* every row inside the columns read at it (checked here: one read of each op) */
            int64_t row = read_int(rows, rows_size, i);
            if (row < 0 || row >= ends || (start_rows != NULL && row >= starts)) return 2;
        }
        int64_t begin = start_of(start, start_rows, rows_size, i), finish = end_of(end, rows, rows_size, i);
        if (finish < begin) return 1; /* the depth of tree.py counts such ops differently: its path serves */
        for (; j < m && t[order[j]] < begin; j++)
            answer(end, rows, rows_size, last, top, t[order[j]], base, outermost + order[j], innermost + order[j]);
        while (size > 0 && heap[0] <= begin) heap_pop(heap, &size);
        int64_t depth = size < MAX_LEVEL ? size : MAX_LEVEL;
        outer[i] = depth == 0;
        for (; top < depth; top++) last[top + 1] = -1;
        last[depth] = i;
        heap_push(heap, &size, finish);
    }
    for (; j < m; j++)
        answer(end, rows, rows_size, last, top, t[order[j]], base, outermost + order[j], innermost + order[j]);
    return 0;
}

static PyObject *op_tree(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[9] = {NULL};
    int starts_by_row = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOO|Op", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8], &starts_by_row))
        return NULL;
    static const char *names[8] = {"start", "end", "bounds", "t", "edges", "outer", "outermost", "innermost"};
    static const Py_ssize_t sizes[8] = {8, 8, 8, 8, 8, 1, 8, 8};
    Py_buffer v[9];
    int got = 0, with_rows = objs[8] != NULL && objs[8] != Py_None;
    for (; got < 8; got++)
        if (get(objs[got], &v[got], got >= 5, sizes[got], names[got]) < 0) break;
    PyObject *result = NULL;
    if (got < 8) goto done;
    if (with_rows) {
        if (PyObject_GetBuffer(objs[8], &v[8], PyBUF_C_CONTIGUOUS) < 0) goto done;
        got = 9;
        if (v[8].len != 0 && v[8].itemsize != 4 && v[8].itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "rows: items of 4 or 8 bytes expected");
            goto done;
        }
    }
    const void *rows = with_rows ? v[8].buf : NULL;
    Py_ssize_t rows_size = with_rows ? v[8].itemsize : 8;
    starts_by_row = starts_by_row && with_rows;
    const void *start_rows = starts_by_row ? rows : NULL;
    int64_t starts = v[0].len / 8, threads = v[2].len / 8 - 1, m = v[3].len / 8, ends = v[1].len / 8;
    int64_t n = with_rows ? v[8].len / rows_size : starts;
    const int64_t *bounds = v[2].buf, *edges = v[4].buf;
    if ((!with_rows && ends != n) || (!starts_by_row && starts != n) || v[5].len != n ||
        v[4].len / 8 != threads + 1 || v[6].len / 8 != m || v[7].len / 8 != m || threads < 0) {
        PyErr_SetString(PyExc_ValueError, "op_tree: inconsistent sizes");
        goto done;
    }
    int64_t longest = 0, most = 0;
    for (int64_t i = 0; i < threads; i++) {
        if (bounds[i] < 0 || bounds[i] > bounds[i + 1] || bounds[i + 1] > n || edges[i] < 0 ||
            edges[i] > edges[i + 1] || edges[i + 1] > m) {
            PyErr_SetString(PyExc_ValueError, "op_tree: bounds out of order");
            goto done;
        }
        if (bounds[i + 1] - bounds[i] > longest) longest = bounds[i + 1] - bounds[i];
        if (edges[i + 1] - edges[i] > most) most = edges[i + 1] - edges[i];
    }
    int64_t *heap = malloc((size_t)(longest + 1) * sizeof *heap);
    int64_t *last = malloc((MAX_LEVEL + 1) * sizeof *last);
    int64_t *order = malloc((size_t)(most + 1) * sizeof *order);
    int64_t *tmp = malloc((size_t)(most + 1) * sizeof *tmp);
    if (!heap || !last || !order || !tmp) {
        PyErr_NoMemory();
    } else {
        const int64_t *start = v[0].buf, *end = v[1].buf, *t = v[3].buf;
        uint8_t *outer = v[5].buf;
        int64_t *outermost = v[6].buf, *innermost = v[7].buf;
        int status = 0;
        Py_BEGIN_ALLOW_THREADS for (int64_t i = 0; i < threads && !status; i++) {
            int64_t lo = bounds[i], hi = bounds[i + 1], a = edges[i], b = edges[i + 1];
            const void *r = rows == NULL ? NULL : (const char *)rows + lo * rows_size;
            status = one_thread(start_rows == NULL ? start + lo : start, start_rows == NULL ? NULL : r,
                                rows == NULL ? end + lo : end, r, rows_size, starts, ends, hi - lo, t + a, b - a,
                                outer + lo, outermost + a, innermost + a, lo, heap, last, order, tmp);
        }
        Py_END_ALLOW_THREADS;
        if (status == 2) {
            PyErr_SetString(PyExc_ValueError, "op_tree: a row outside the end column");
        } else {
            result = status ? Py_False : Py_True;
            Py_INCREF(result);
        }
    }
    free(heap);
    free(last);
    free(order);
    free(tmp);
done:
    release_buffers(v, got);
    return result;
}

/* Pass 1 over rows of type T: each row's candidate (linear: a handful of threads; the last one found tried first),
 * the counts, the starts' order checked, the rows starting with the previous row of their thread counted. */
#define CLASSIFY(T)                                                                                                \
    do {                                                                                                           \
        const T *r = rows;                                                                                         \
        int64_t j = 0, previous = INT64_MIN;                                                                       \
        for (int64_t i = 0; i < n && !status; i++) {                                                               \
            int64_t row = (int64_t)r[i], begin = start[row];                                                       \
            int64_t value = (int64_t)(((uint64_t)(uint32_t)read_id(pid, pid_size, row) << 32) |                    \
                                      (uint64_t)(uint32_t)read_id(tid, tid_size, row));                            \
            if (begin < previous) status = 2;                                                                      \
            previous = begin;                                                                                      \
            if (j >= k || cand[j] != value) {                                                                      \
                for (j = 0; j < k && cand[j] != value; j++) {                                                      \
                }                                                                                                  \
                if (j == k) {                                                                                      \
                    if (discover && k < 255)                                                                       \
                        cand[k++] = value; /* a thread not seen before (group_rows_found) */                       \
                    else                                                                                           \
                        status = 1;                                                                                \
                }                                                                                                  \
            }                                                                                                      \
            code[i] = (uint8_t)j;                                                                                  \
            int64_t tie = counts[j] > 0 && latest[j] == begin; /* the thread's previous row starts with it */      \
            if (tie_pos != NULL && tie) tie_pos[ties] = i; /* its input position, made an output one in pass 2 */  \
            ties += tie;                                                                                           \
            latest[j] = begin;                                                                                     \
            counts[j]++;                                                                                           \
        }                                                                                                          \
    } while (0)

/* Pass 2: each row and its start written to its place. */
#define SCATTER(T)                                                                                                 \
    do {                                                                                                           \
        const T *in = rows;                                                                                        \
        T *out = rows_out;                                                                                         \
        int64_t tied_ = 0;                                                                                         \
        for (int64_t i = 0; i < n; i++) {                                                                          \
            int64_t at = next[code[i]]++;                                                                          \
            out[at] = in[i];                                                                                       \
            if (with_starts) start_out[at] = start[(int64_t)in[i]];                                                \
            /* a row tied with its thread's previous one, written just before it: that one's position */           \
            if (tie_pos != NULL && tied_ < ties && tie_pos[tied_] == i) tie_pos[tied_++] = at - 1;                 \
        }                                                                                                          \
    } while (0)

static PyObject *group_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[9] = {NULL};
    if (!PyArg_ParseTuple(args, "OOOOOOOO|O", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8]))
        return NULL;
    Py_buffer v[9];
    int wanted = objs[8] != NULL && objs[8] != Py_None ? 9 : 8;
    int got = take_buffers(objs, v, wanted, 5);
    PyObject *result = NULL;
    if (got < wanted) goto done;
    Py_ssize_t row_size = v[3].itemsize, pid_size = v[0].itemsize, tid_size = v[1].itemsize;
    int64_t table = v[2].len / 8, n = v[3].len / (row_size ? row_size : 1), k = v[4].len / 8;
    if ((pid_size != 1 && pid_size != 2 && pid_size != 4 && pid_size != 8) ||
        (tid_size != 1 && tid_size != 2 && tid_size != 4 && tid_size != 8) || v[2].itemsize != 8 ||
        (row_size != 4 && row_size != 8) ||
        v[4].itemsize != 8 || v[5].itemsize != row_size || v[6].itemsize != 8 || v[7].itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "group_rows: unexpected item sizes");
        goto done;
    }
    int with_starts = v[6].len != 0;
    if (k < 1 || k > 255 || v[0].len / pid_size != table || v[1].len / tid_size != table || v[5].len / row_size != n ||
        (with_starts && v[6].len / 8 != n) || v[7].len / 8 != k + 1 ||
        (wanted == 9 && (v[8].itemsize != 8 || v[8].len != 8))) {
        PyErr_SetString(PyExc_ValueError, "group_rows: inconsistent sizes");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) { /* every row inside the table (the reads below are not checked) */
        int64_t row = row_size == 4 ? (int64_t)((const int32_t *)v[3].buf)[i] : ((const int64_t *)v[3].buf)[i];
        if (row < 0 || row >= table) {
            PyErr_SetString(PyExc_IndexError, "group_rows: a row outside the table");
            goto done;
        }
    }
    uint8_t *code = malloc((size_t)(n + 1));
    int64_t *counts = calloc((size_t)k + 1, sizeof *counts), *next = malloc(((size_t)k + 1) * sizeof *next);
    int64_t *latest = malloc(((size_t)k + 1) * sizeof *latest), ties = 0; /* each thread's last start seen */
    if (!code || !counts || !next || !latest) {
        PyErr_NoMemory();
    } else {
        const void *pid = v[0].buf, *tid = v[1].buf;
        const int64_t *start = v[2].buf;
        int64_t *cand = v[4].buf, *tie_pos = NULL; /* (not written here: no discovery, no tie positions) */
        const int discover = 0;
        const void *rows = v[3].buf;
        void *rows_out = v[5].buf;
        int64_t *start_out = v[6].buf, *bounds = v[7].buf;
        long status = 0;
        Py_BEGIN_ALLOW_THREADS if (row_size == 4) CLASSIFY(int32_t);
        else CLASSIFY(int64_t);
        if (!status) {
            next[0] = 0;
            for (int64_t j = 0; j < k; j++) next[j + 1] = next[j] + counts[j];
            memcpy(bounds, next, ((size_t)k + 1) * sizeof *bounds);
            if (row_size == 4)
                SCATTER(int32_t);
            else
                SCATTER(int64_t);
        }
        Py_END_ALLOW_THREADS result = PyLong_FromLong(status);
        if (wanted == 9) *(int64_t *)v[8].buf = ties;
    }
    free(code);
    free(counts);
    free(next);
    free(latest);
done:
    release_buffers(v, got);
    return result;
}

/* group_rows_found(pid, tid, start, rows, rows_out, start_out, keys, bounds, found, tie_positions): group_rows with
 * the threads found by its first pass (no candidates sampled and sorted ahead of it) and the tied rows' positions.
 * keys: int64, 255 items, and bounds: int64, 256 items, written with the threads' keys (ascending) and where each
 * thread's rows begin (and the last end) in their first found[0] + 1 items; found: int64, 2 items, written with
 * (threads, ties); tie_positions: int64, one per row, its first ``ties`` items written with each position p of
 * rows_out whose row starts when the next row (the same thread's) does, ascending within each thread (the
 * threads' interleaved). Returns 0; 1 where the rows have more than 255 threads, 2 where their starts are not
 * ascending (the outputs then unspecified: tree.py sorts instead). The GIL is released while it runs. */
static PyObject *group_rows_found(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[10];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8], &objs[9]))
        return NULL;
    Py_buffer v[10];
    int got = take_buffers(objs, v, 10, 4);
    PyObject *result = NULL;
    if (got < 10) goto done;
    Py_ssize_t row_size = v[3].itemsize, pid_size = v[0].itemsize, tid_size = v[1].itemsize;
    int64_t table = v[2].len / 8, n = v[3].len / (row_size ? row_size : 1);
    if ((pid_size != 1 && pid_size != 2 && pid_size != 4 && pid_size != 8) ||
        (tid_size != 1 && tid_size != 2 && tid_size != 4 && tid_size != 8) || v[2].itemsize != 8 ||
        (row_size != 4 && row_size != 8) || v[4].itemsize != row_size || v[5].itemsize != 8 || v[6].itemsize != 8 ||
        v[7].itemsize != 8 || v[8].itemsize != 8 || v[9].itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "group_rows_found: unexpected item sizes");
        goto done;
    }
    int with_starts = v[5].len != 0;
    if (v[0].len / pid_size != table || v[1].len / tid_size != table || v[4].len / row_size != n ||
        (with_starts && v[5].len / 8 != n) || v[6].len != 255 * 8 || v[7].len != 256 * 8 || v[8].len != 2 * 8 ||
        v[9].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "group_rows_found: inconsistent sizes");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) { /* every row inside the table (the reads below are not checked) */
        int64_t row = row_size == 4 ? (int64_t)((const int32_t *)v[3].buf)[i] : ((const int64_t *)v[3].buf)[i];
        if (row < 0 || row >= table) {
            PyErr_SetString(PyExc_IndexError, "group_rows_found: a row outside the table");
            goto done;
        }
    }
    uint8_t *code = malloc((size_t)(n + 1));
    int64_t *counts = calloc(256, sizeof *counts), *next = malloc(256 * sizeof *next);
    int64_t *latest = malloc(256 * sizeof *latest), ties = 0, k = 0; /* each thread's last start seen */
    int64_t cand[256] = {0};                                            /* the threads in order of first row */
    if (!code || !counts || !next || !latest) {
        PyErr_NoMemory();
    } else {
        const void *pid = v[0].buf, *tid = v[1].buf;
        const int64_t *start = v[2].buf;
        const int discover = 1;
        const void *rows = v[3].buf;
        void *rows_out = v[4].buf;
        int64_t *start_out = v[5].buf, *keys = v[6].buf, *bounds = v[7].buf, *found = v[8].buf, *tie_pos = v[9].buf;
        long status = 0;
        Py_BEGIN_ALLOW_THREADS if (row_size == 4) CLASSIFY(int32_t);
        else CLASSIFY(int64_t);
        if (!status) {
            /* the threads by key (insertion sort of at most 255), each one's rows placed in that order */
            int64_t order[256];
            for (int64_t j = 0; j < k; j++) {
                int64_t at = j;
                while (at > 0 && cand[order[at - 1]] > cand[j]) {
                    order[at] = order[at - 1];
                    at--;
                }
                order[at] = j;
            }
            bounds[0] = 0;
            for (int64_t j = 0; j < k; j++) {
                keys[j] = cand[order[j]];
                next[order[j]] = bounds[j];
                bounds[j + 1] = bounds[j] + counts[order[j]];
            }
            if (row_size == 4)
                SCATTER(int32_t);
            else
                SCATTER(int64_t);
            found[0] = k;
            found[1] = ties;
        }
        Py_END_ALLOW_THREADS result = PyLong_FromLong(status);
    }
    free(code);
    free(counts);
    free(next);
    free(latest);
done:
    release_buffers(v, got);
    return result;
}

static PyObject *names_of_kind(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[3];
    long code;
    if (!PyArg_ParseTuple(args, "OOlO", &objs[0], &objs[1], &code, &objs[2])) return NULL;
    Py_buffer v[3];
    int got = take_buffers(objs, v, 3, 2);
    PyObject *result = NULL;
    if (got < 3) goto done;
    Py_ssize_t name_size = v[1].itemsize;
    int64_t n = v[0].len, size = v[2].len - 1;
    if (v[0].itemsize != 1 || (name_size != 4 && name_size != 8) || v[2].itemsize != 1 || size < 0 ||
        v[1].len / name_size != n) {
        PyErr_SetString(PyExc_ValueError, "names_of_kind: unexpected sizes");
        goto done;
    }
    const int8_t *kind = v[0].buf;
    const void *name = v[1].buf;
    uint8_t *seen = v[2].buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS for (int64_t i = 0; i < n; i++) {
        if (kind[i] != code) continue;
        int64_t value = read_int(name, name_size, i);
        if (value < -1 || value >= size) {
            bad = 1;
            break;
        }
        seen[value < 0 ? size : value] = 1;
    }
    Py_END_ALLOW_THREADS result = bad ? Py_False : Py_True;
    Py_INCREF(result);
done:
    release_buffers(v, got);
    return result;
}

/* kind_rows' pass over names of type NT and threads of type TT: branch-free per row (the kinds interleave: a branch
 * per row mispredicts), every row's name and thread read, the tables read at a clamped slot (a row outside them
 * sets ``bad`` where it is of the kind); each row's position written, the count advanced where it is taken. */
#define KIND_ROWS(NT, TT)                                                                                          \
    do {                                                                                                           \
        const NT *names_ = name;                                                                                   \
        const TT *threads_ = tid;                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                                          \
            int64_t take = kind[i] == code;                                                                        \
            if (named) {                                                                                           \
                int64_t value = (int64_t)names_[i], slot = value < 0 ? table - 1 : value;                          \
                int64_t inside = value >= -1 && value < table - 1;                                                 \
                bad |= take & !inside;                                                                             \
                take &= nvtx[inside ? slot : 0];                                                                   \
            }                                                                                                      \
            int64_t thread = (int64_t)threads_[i];                                                                 \
            if (coded) {                                                                                           \
                int64_t inside = thread >= 0 && thread < codes;                                                    \
                bad |= take & !inside;                                                                             \
                take &= tid_ok[inside ? thread : 0];                                                               \
            } else {                                                                                               \
                take &= thread >= 0;                                                                               \
            }                                                                                                      \
            if (room > 0) {                                                                                        \
                if (count >= room) { /* more rows than room: stopped (the caller sees the count differ) */         \
                    count += take;                                                                                 \
                    if (take) break;                                                                               \
                    continue;                                                                                      \
                }                                                                                                  \
                if (out_size == 4)                                                                                 \
                    ((int32_t *)out)[count] = (int32_t)i;                                                          \
                else                                                                                               \
                    ((int64_t *)out)[count] = i;                                                                   \
            }                                                                                                      \
            count += take;                                                                                         \
        }                                                                                                          \
    } while (0)

/* kind_rows(kind, name, tid, tid_ok, code, nvtx, out): the rows of one kind on a thread whose name an optional table
 * picks (tree.py's emit_nvtx op ranges), in one pass over the kind, name and thread columns: no mask of the whole
 * table, no block of positions to narrow and join. kind: int8; name: int32 or int64 codes (-1: none); tid: int8 or
 * int16 thread codes with ``tid_ok`` (bool, a slot per code: whether its tid is >= 0), or an int32/int64 tid with
 * an empty ``tid_ok`` (tid >= 0 tested); nvtx: bool, the dictionary's size + 1 (the last slot: no name), or empty
 * (every name taken); out: int32 or int64, or empty. With an empty ``out``, returns the number of such rows (a pass
 * that counts them); else writes them there in row order and returns how many it wrote, or more than its size where
 * there are more (then stopped); -1 where a name or a thread code of such a row is outside its table. The GIL is
 * released while it runs. */
static PyObject *kind_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[6];
    long code;
    if (!PyArg_ParseTuple(args, "OOOOlOO", &objs[0], &objs[1], &objs[2], &objs[3], &code, &objs[4], &objs[5]))
        return NULL;
    Py_buffer v[6];
    int got = take_buffers(objs, v, 6, 5);
    PyObject *result = NULL;
    if (got < 6) goto done;
    Py_ssize_t name_size = v[1].itemsize, tid_size = v[2].itemsize, out_size = v[5].itemsize;
    int64_t n = v[0].len, codes = v[3].len, table = v[4].len, room = v[5].len / (out_size ? out_size : 1);
    int coded = codes > 0, named = table > 0;
    if (v[0].itemsize != 1 || (name_size != 4 && name_size != 8) || v[1].len / name_size != n ||
        v[2].len / (tid_size ? tid_size : 1) != n || (coded && tid_size != 1 && tid_size != 2) ||
        (!coded && tid_size != 4 && tid_size != 8) || v[3].itemsize != 1 || v[4].itemsize != 1 ||
        (out_size != 4 && out_size != 8) || (out_size == 4 && n > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "kind_rows: unexpected sizes");
        goto done;
    }
    const int8_t *kind = v[0].buf;
    const void *name = v[1].buf, *tid = v[2].buf;
    const uint8_t *tid_ok = v[3].buf, *nvtx = v[4].buf;
    void *out = v[5].buf;
    int64_t count = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (name_size == 4) {
        if (tid_size == 1) KIND_ROWS(int32_t, int8_t);
        else if (tid_size == 2) KIND_ROWS(int32_t, int16_t);
        else if (tid_size == 4) KIND_ROWS(int32_t, int32_t);
        else KIND_ROWS(int32_t, int64_t);
    } else {
        if (tid_size == 1) KIND_ROWS(int64_t, int8_t);
        else if (tid_size == 2) KIND_ROWS(int64_t, int16_t);
        else if (tid_size == 4) KIND_ROWS(int64_t, int32_t);
        else KIND_ROWS(int64_t, int64_t);
    }
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLongLong(bad ? -1 : count);
done:
    release_buffers(v, got);
    return result;
}

/* classify_kind_rows' pass over pid items of type PT and tid items of type TT: every row's kind, thread, and start
 * read in order (sequential reads, branch-free per row but for a thread other than the last one's), its thread's
 * code (discovery order) written, or KIND_NONE where it is not of the kind on a thread; a row starting when its
 * thread's previous row does gets KIND_TIE added. */
#define KIND_NONE 127
#define KIND_TIE 128
#define CLASSIFY_KIND(PT, TT)                                                                                      \
    do {                                                                                                           \
        const PT *pids = pid;                                                                                      \
        const TT *tids = tid;                                                                                      \
        int64_t j = 0, previous = INT64_MIN;                                                                       \
        for (int64_t i = 0; i < table; i++) {                                                                      \
            int64_t thread = (int64_t)tids[i], begin = start[i];                                                   \
            int64_t take = (kind[i] == code) & (thread >= 0);                                                      \
            int64_t value = (int64_t)(((uint64_t)(uint32_t)(int64_t)pids[i] << 32) | (uint64_t)(uint32_t)thread); \
            if (take && (j >= k || cand[j] != value)) {                                                            \
                for (j = 0; j < k && cand[j] != value; j++) {                                                      \
                }                                                                                                  \
                if (j == k) {                                                                                      \
                    if (k == KIND_NONE - 1) {                                                                      \
                        status = 1;                                                                                \
                        break;                                                                                     \
                    }                                                                                              \
                    cand[k++] = value; /* a thread not seen before */                                              \
                }                                                                                                  \
            }                                                                                                      \
            int64_t slot = take ? j : KIND_NONE; /* (slot KIND_NONE: a scratch count, never read) */             \
            bad |= take & (begin < previous);                                                                      \
            previous = take ? begin : previous;                                                                    \
            int64_t tie = take & (counts[slot] > 0) & (latest[slot] == begin);                                     \
            ties += tie;                                                                                           \
            latest[slot] = begin;                                                                                  \
            counts[slot]++;                                                                                        \
            row_code[i] = (uint8_t)(slot + (tie ? KIND_TIE : 0));                                                  \
        }                                                                                                          \
    } while (0)

/* classify_kind_rows(kind, code, pid, tid, start, row_code, keys, bounds, next, found): the first pass of
 * tree.py's op rows of one kind grouped by thread straight from the table (ops/thread_groups.py group_kind_rows):
 * the rows of kind ``code`` on a thread (tid >= 0), the threads found as they come (at most 126), without the rows'
 * positions gathered first and their columns read at them. kind: int8; pid, tid: int32 or int64 (thread ids, not
 * codes); start: int64 (the table's rows in start order: the kind's rows' starts are checked ascending);
 * row_code: uint8, one per row, written (the thread's code in discovery order, KIND_NONE where not taken, plus
 * KIND_TIE where the row starts when its thread's previous row does); keys: int64, 126 items, and bounds: int64,
 * 127 items, written with the threads' keys (columns.thread_key, ascending) and where each one's rows begin (and
 * the last end); next: int64, 126 items, each discovery code's first output position; found: int64, 3 items:
 * (threads, ties, rows). Returns 0; 1 where more than 126 threads, 2 where the rows' starts are not ascending
 * (outputs then unspecified: the caller takes the other path). The GIL is released while it runs.
 *
 * place_kind_rows(row_code, next, rows_out, tie_positions): the second pass: each taken row's position written
 * at its thread's next place (rows_out: int32 or int64, ``found[2]`` items), and for each tied row the position
 * just before it (its thread's previous row: tie_positions, int64, ``found[1]`` items, in row order: sort them).
 * next is advanced. Returns how many rows it placed (the caller checks it). The GIL is released while it runs. */
static PyObject *classify_kind_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[9];
    long code;
    if (!PyArg_ParseTuple(args, "OlOOOOOOOO", &objs[0], &code, &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8]))
        return NULL;
    Py_buffer v[9];
    int got = take_buffers(objs, v, 9, 4);
    PyObject *result = NULL;
    if (got < 9) goto done;
    Py_ssize_t pid_size = v[1].itemsize, tid_size = v[2].itemsize;
    int64_t table = v[0].len;
    if (v[0].itemsize != 1 || (pid_size != 4 && pid_size != 8) || (tid_size != 4 && tid_size != 8) ||
        v[3].itemsize != 8 || v[4].itemsize != 1 || v[5].itemsize != 8 || v[6].itemsize != 8 || v[7].itemsize != 8 ||
        v[8].itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "classify_kind_rows: unexpected item sizes");
        goto done;
    }
    if (v[1].len / pid_size != table || v[2].len / tid_size != table || v[3].len / 8 != table || v[4].len != table ||
        v[5].len != (KIND_NONE - 1) * 8 || v[6].len != KIND_NONE * 8 || v[7].len != (KIND_NONE - 1) * 8 ||
        v[8].len != 3 * 8) {
        PyErr_SetString(PyExc_ValueError, "classify_kind_rows: inconsistent sizes");
        goto done;
    }
    const int8_t *kind = v[0].buf;
    const void *pid = v[1].buf, *tid = v[2].buf;
    const int64_t *start = v[3].buf;
    uint8_t *row_code = v[4].buf;
    int64_t *keys = v[5].buf, *bounds = v[6].buf, *next = v[7].buf, *found = v[8].buf;
    int64_t cand[KIND_NONE + 1] = {0}, counts[KIND_NONE + 1] = {0}, latest[KIND_NONE + 1] = {0};
    int64_t k = 0, ties = 0, bad = 0;
    long status = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (pid_size == 4 && tid_size == 4) CLASSIFY_KIND(int32_t, int32_t);
    else if (pid_size == 4) CLASSIFY_KIND(int32_t, int64_t);
    else if (tid_size == 4) CLASSIFY_KIND(int64_t, int32_t);
    else CLASSIFY_KIND(int64_t, int64_t);
    if (!status && bad) status = 2;
    if (!status) {
        /* the threads by key (insertion sort of at most 126), each one's rows placed in that order */
        int64_t order[KIND_NONE], rows = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t at = j;
            while (at > 0 && cand[order[at - 1]] > cand[j]) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = j;
        }
        bounds[0] = 0;
        for (int64_t j = 0; j < k; j++) {
            keys[j] = cand[order[j]];
            next[order[j]] = bounds[j];
            bounds[j + 1] = bounds[j] + counts[order[j]];
            rows += counts[order[j]];
        }
        found[0] = k;
        found[1] = ties;
        found[2] = rows;
    }
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLong(status);
done:
    release_buffers(v, got);
    return result;
}

#define PLACE_KIND(T)                                                                                              \
    do {                                                                                                           \
        T *out = rows_out, scratch = 0;                                                                            \
        for (int64_t i = 0; i < table; i++) {                                                                      \
            int64_t c = row_code[i], slot = c & (KIND_TIE - 1), take = slot != KIND_NONE;                          \
            int64_t at = next[take ? slot : 0];                                                                    \
            if (take && (at < 0 || at >= n)) { /* a code the first pass did not give: stopped */                   \
                placed = -1;                                                                                       \
                break;                                                                                             \
            }                                                                                                      \
            T *into = take ? out + at : &scratch;                                                                  \
            *into = (T)i;                                                                                          \
            next[take ? slot : 0] = at + take;                                                                     \
            placed += take;                                                                                        \
            if (c & KIND_TIE) {                                                                                    \
                if (tied >= m) {                                                                                   \
                    placed = -1;                                                                                   \
                    break;                                                                                         \
                }                                                                                                  \
                tie_pos[tied++] = at - 1;                                                                          \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)

static PyObject *place_kind_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    Py_buffer v[4];
    int got = take_buffers(objs, v, 4, 1);
    PyObject *result = NULL;
    if (got < 4) goto done;
    Py_ssize_t row_size = v[2].itemsize;
    int64_t table = v[0].len, n = v[2].len / (row_size ? row_size : 1), m = v[3].len / 8;
    if (v[0].itemsize != 1 || v[1].itemsize != 8 || v[1].len != (KIND_NONE - 1) * 8 ||
        (row_size != 4 && row_size != 8) || (row_size == 4 && table > INT32_MAX) || v[3].itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "place_kind_rows: unexpected sizes");
        goto done;
    }
    const uint8_t *row_code = v[0].buf;
    int64_t *next = v[1].buf, *tie_pos = v[3].buf, placed = 0, tied = 0;
    void *rows_out = v[2].buf;
    Py_BEGIN_ALLOW_THREADS;
    if (row_size == 4) PLACE_KIND(int32_t);
    else PLACE_KIND(int64_t);
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLongLong(placed >= 0 && tied == m ? placed : -1);
done:
    release_buffers(v, got);
    return result;
}

/* place_rows(found, rows, at, into): into[at[j]] = rows[found[j]] where found[j] >= 0 (the op tree's outermost and
 * innermost op of each launch, written at the launch's GPU op as its event row: no masks, compressions and gathers
 * of the launches in numpy). found, at: int64, one per launch; rows, into: int32 or int64. Returns False where a
 * position is outside ``rows`` or ``into`` (then partly written). The GIL is released while it runs. */
#define PLACE_ROWS(RT, OT)                                                                                         \
    do {                                                                                                           \
        const RT *rows_ = rows;                                                                                    \
        OT *into_ = into;                                                                                          \
        for (int64_t j = 0; j < m; j++) {                                                                          \
            int64_t f = found[j], a = at[j];                                                                       \
            if (f < 0) continue;                                                                                   \
            if (f >= n || a < 0 || a >= size) {                                                                    \
                bad = 1;                                                                                           \
                break;                                                                                             \
            }                                                                                                      \
            into_[a] = (OT)rows_[f];                                                                               \
        }                                                                                                          \
    } while (0)

static PyObject *place_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    Py_buffer v[4];
    int got = take_buffers(objs, v, 4, 3);
    PyObject *result = NULL;
    if (got < 4) goto done;
    Py_ssize_t row_size = v[1].itemsize, into_size = v[3].itemsize;
    int64_t m = v[0].len / 8, n = v[1].len / (row_size ? row_size : 1), size = v[3].len / (into_size ? into_size : 1);
    if (v[0].itemsize != 8 || v[2].itemsize != 8 || v[2].len != v[0].len || (row_size != 4 && row_size != 8) ||
        (into_size != 4 && into_size != 8)) {
        PyErr_SetString(PyExc_ValueError, "place_rows: unexpected sizes");
        goto done;
    }
    const int64_t *found = v[0].buf, *at = v[2].buf;
    const void *rows = v[1].buf;
    void *into = v[3].buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (row_size == 4 && into_size == 4) PLACE_ROWS(int32_t, int32_t);
    else if (row_size == 4) PLACE_ROWS(int32_t, int64_t);
    else if (into_size == 4) PLACE_ROWS(int64_t, int32_t);
    else PLACE_ROWS(int64_t, int64_t);
    Py_END_ALLOW_THREADS;
    result = bad ? Py_False : Py_True;
    Py_INCREF(result);
done:
    release_buffers(v, got);
    return result;
}

/* launch_groups' passes over pid items of type PT and tid items of type TT: each launch's thread found among the
 * keys (linear: a handful of threads; the last one found tried first), counted; then each kept launch's position
 * and time written at its thread's next place. */
#define LAUNCH_GROUPS(PT, TT)                                                                                      \
    do {                                                                                                           \
        const PT *pids = pid;                                                                                      \
        const TT *tids = tid;                                                                                      \
        int64_t j = 0;                                                                                             \
        for (int64_t i = 0; i < m; i++) {                                                                          \
            int64_t value =                                                                                        \
                (int64_t)(((uint64_t)(uint32_t)(int64_t)pids[i] << 32) | (uint64_t)(uint32_t)(int64_t)tids[i]);    \
            if (j >= k || keys[j] != value) {                                                                      \
                for (j = 0; j < k && keys[j] != value; j++) {                                                      \
                }                                                                                                  \
            }                                                                                                      \
            code[i] = (int16_t)(j < k ? j : -1); /* (j == k: on no thread with ops, left out) */                   \
            counts[j < k ? j + 1 : 0]++;                                                                           \
        }                                                                                                          \
    } while (0)

/* launch_groups(keys, pid, tid, t, at, t_out, edges): the launches grouped by their call's thread for op_tree (tree.py:
 * the pairs' matched GPU ops), in one pass finding each launch's thread among ``keys`` and one writing them: no
 * thread key, search and mask per launch, no stable sort of the codes and no gathers by it. keys: int64, the op
 * threads' keys (columns.thread_key, at most 32767); pid, tid: int32 or int64, per launch; t: int64, each launch's
 * time; at, t_out: int64, one per launch, their first ``kept`` items written with the positions (into the launches)
 * and times of the launches on one of the threads, by thread, in launch order within each; edges: int64, keys + 1,
 * where each thread's begin (edges[0] = 0) and the last end. Returns kept. The GIL is released while it runs. */
static PyObject *launch_groups(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6]))
        return NULL;
    Py_buffer v[7];
    int got = take_buffers(objs, v, 7, 4);
    PyObject *result = NULL;
    if (got < 7) goto done;
    Py_ssize_t pid_size = v[1].itemsize, tid_size = v[2].itemsize;
    int64_t k = v[0].len / 8, m = v[3].len / 8;
    if (v[0].itemsize != 8 || (pid_size != 4 && pid_size != 8) || (tid_size != 4 && tid_size != 8) ||
        v[3].itemsize != 8 || v[4].itemsize != 8 || v[5].itemsize != 8 || v[6].itemsize != 8 || k > 32767 ||
        v[1].len / pid_size != m || v[2].len / tid_size != m || v[4].len / 8 != m || v[5].len / 8 != m ||
        v[6].len / 8 != k + 1) {
        PyErr_SetString(PyExc_ValueError, "launch_groups: unexpected sizes");
        goto done;
    }
    const int64_t *keys = v[0].buf, *t = v[3].buf;
    const void *pid = v[1].buf, *tid = v[2].buf;
    int64_t *at = v[4].buf, *t_out = v[5].buf, *edges = v[6].buf;
    int16_t *code = malloc((size_t)(m + 1) * sizeof *code);
    int64_t *counts = calloc((size_t)k + 2, sizeof *counts);
    if (!code || !counts) {
        PyErr_NoMemory();
    } else {
        Py_BEGIN_ALLOW_THREADS;
        if (pid_size == 4 && tid_size == 4) LAUNCH_GROUPS(int32_t, int32_t);
        else if (pid_size == 4) LAUNCH_GROUPS(int32_t, int64_t);
        else if (tid_size == 4) LAUNCH_GROUPS(int64_t, int32_t);
        else LAUNCH_GROUPS(int64_t, int64_t);
        edges[0] = 0;
        for (int64_t j = 0; j < k; j++) edges[j + 1] = edges[j] + counts[j + 1];
        for (int64_t j = 0; j < k; j++) counts[j + 1] = edges[j]; /* each thread's next place */
        for (int64_t i = 0; i < m; i++) {
            int64_t c = code[i];
            if (c < 0) continue;
            int64_t place = counts[c + 1]++;
            at[place] = i;
            t_out[place] = t[i];
        }
        Py_END_ALLOW_THREADS;
        result = PyLong_FromLongLong(edges[k]);
    }
    free(code);
    free(counts);
done:
    release_buffers(v, got);
    return result;
}

/* row_thread_codes' pass over pid items of type PT and tid items of type TT. */
#define ROW_THREAD_CODES(PT, TT, RT)                                                                               \
    do {                                                                                                           \
        const PT *pids = pid;                                                                                      \
        const TT *tids = tid;                                                                                      \
        const RT *rows_ = rows;                                                                                    \
        int64_t j = 0;                                                                                             \
        for (int64_t i = 0; i < m; i++) {                                                                          \
            int64_t row = (int64_t)rows_[i];                                                                       \
            if (row < 0 || row >= n) {                                                                             \
                status = -1;                                                                                       \
                break;                                                                                             \
            }                                                                                                      \
            int64_t value =                                                                                        \
                (int64_t)(((uint64_t)(uint32_t)(int64_t)pids[row] << 32) | (uint64_t)(uint32_t)(int64_t)tids[row]); \
            if (j >= k || cand[j] != value) {                                                                      \
                for (j = 0; j < k && cand[j] != value; j++) {                                                      \
                }                                                                                                  \
                if (j == k) {                                                                                      \
                    if (k == KIND_NONE - 1) {                                                                      \
                        status = 1;                                                                                \
                        break;                                                                                     \
                    }                                                                                              \
                    cand[k++] = value;                                                                             \
                }                                                                                                  \
            }                                                                                                      \
            code[i] = (int8_t)j;                                                                                   \
        }                                                                                                          \
    } while (0)

/* row_thread_codes(pid, tid, rows, codes, keys, found): ``values.dense_codes(thread_key(pid[rows], tid[rows]))``
 * (sync.py's API calls: each row's position among the sorted distinct thread keys of the rows) in one pass reading
 * pid and tid at the rows, no pid, tid and key gathered per row. pid, tid: int32 or int64 columns; rows: int32 or
 * int64 positions; codes: int8, one per row, written; keys: int64, 126 items, the first found[0] written with the
 * keys (ascending). Returns 0; 1 where the rows hold more than 126 threads (codes then unspecified). IndexError
 * where a row is outside the columns. The GIL is released while it runs. */
static PyObject *row_thread_codes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5])) return NULL;
    Py_buffer v[6];
    int got = take_buffers(objs, v, 6, 3);
    PyObject *result = NULL;
    if (got < 6) goto done;
    Py_ssize_t pid_size = v[0].itemsize, tid_size = v[1].itemsize, row_size = v[2].itemsize;
    int64_t n = v[0].len / (pid_size ? pid_size : 1), m = v[2].len / (row_size ? row_size : 1);
    if ((pid_size != 4 && pid_size != 8) || (tid_size != 4 && tid_size != 8) || (row_size != 4 && row_size != 8) ||
        v[1].len / tid_size != n || v[3].itemsize != 1 || v[3].len != m || v[4].itemsize != 8 ||
        v[4].len != (KIND_NONE - 1) * 8 || v[5].itemsize != 8 || v[5].len != 8) {
        PyErr_SetString(PyExc_ValueError, "row_thread_codes: unexpected sizes");
        goto done;
    }
    const void *pid = v[0].buf, *tid = v[1].buf, *rows = v[2].buf;
    int8_t *code = v[3].buf;
    int64_t *keys = v[4].buf, *found = v[5].buf;
    int64_t cand[KIND_NONE] = {0}, k = 0;
    long status = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (row_size == 8) {
        if (pid_size == 4 && tid_size == 4) ROW_THREAD_CODES(int32_t, int32_t, int64_t);
        else if (pid_size == 4) ROW_THREAD_CODES(int32_t, int64_t, int64_t);
        else if (tid_size == 4) ROW_THREAD_CODES(int64_t, int32_t, int64_t);
        else ROW_THREAD_CODES(int64_t, int64_t, int64_t);
    } else {
        if (pid_size == 4 && tid_size == 4) ROW_THREAD_CODES(int32_t, int32_t, int32_t);
        else if (pid_size == 4) ROW_THREAD_CODES(int32_t, int64_t, int32_t);
        else if (tid_size == 4) ROW_THREAD_CODES(int64_t, int32_t, int32_t);
        else ROW_THREAD_CODES(int64_t, int64_t, int32_t);
    }
    if (!status) {
        /* the keys sorted (insertion sort of at most 126), each row's code made its key's rank */
        int64_t order[KIND_NONE], rank[KIND_NONE];
        for (int64_t j = 0; j < k; j++) {
            int64_t at = j;
            while (at > 0 && cand[order[at - 1]] > cand[j]) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = j;
        }
        for (int64_t j = 0; j < k; j++) {
            keys[j] = cand[order[j]];
            rank[order[j]] = j;
        }
        for (int64_t i = 0; i < m; i++) code[i] = (int8_t)rank[code[i]];
        found[0] = k;
    }
    Py_END_ALLOW_THREADS;
    if (status < 0) {
        PyErr_SetString(PyExc_IndexError, "row_thread_codes: a row outside the columns");
    } else {
        result = PyLong_FromLong(status);
    }
done:
    release_buffers(v, got);
    return result;
}

/* covered_times(first, last, union_starts, union_ends, cover_first, cover_last, steps): ranges.py's _Launches._covered
 * for launches all on one device: for each launch, the length of the device's busy union (sorted, disjoint) lying
 * before its first op's start and before its last op's end (intervals.covered_before: with i the union intervals
 * starting at or before t, cum[i] - (max(end[i - 1], t) - t), 0 for i = 0), each found from the previous launch's
 * answer (launches in thread and time order: an ascending run per thread), and steps[k] the count of the places
 * j < k where first or last steps back (first[j + 1] < first[j] or last[j + 1] < last[j]). One walk: no copies of
 * first and last, no prefix arrays of the union, no search arrays, masks or running-sum temporaries. first, last,
 * union_starts, union_ends, cover_first, cover_last: int64; steps: int32 or int64, one per launch. Returns True;
 * False where the union's running length does not fit int64 (the caller then takes the numpy path). The GIL is
 * released while it runs. */
static int64_t covered_at(const int64_t *us, const int64_t *ue, const int64_t *cum, int64_t m, int64_t *pos, int64_t t) {
    /* i: the union intervals starting at or before t, searched from the previous answer by doubling steps */
    int64_t i = *pos;
    if (i < m && us[i] <= t) {
        int64_t step = 1, lo = i + 1, hi;
        for (;;) {
            hi = i + step;
            if (hi >= m) { hi = m; break; }
            if (us[hi] > t) break;
            lo = hi + 1;
            step <<= 1;
        }
        while (lo < hi) { /* first in [lo, hi) with us > t, else hi */
            int64_t mid = lo + (hi - lo) / 2;
            if (us[mid] <= t) lo = mid + 1; else hi = mid;
        }
        i = lo;
    } else if (i > 0 && us[i - 1] > t) {
        int64_t step = 1, lo, hi = i - 1;
        for (;;) {
            lo = i - 1 - step;
            if (lo <= 0) { lo = 0; break; }
            if (us[lo] <= t) { lo = lo + 1; break; }
            hi = lo;
            step <<= 1;
        }
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (us[mid] <= t) lo = mid + 1; else hi = mid;
        }
        i = lo;
    }
    *pos = i;
    if (i == 0) return 0;
    int64_t before = ue[i - 1] > t ? ue[i - 1] : t;
    return (int64_t)((uint64_t)cum[i] - ((uint64_t)before - (uint64_t)t));
}

static PyObject *covered_times(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6]))
        return NULL;
    Py_buffer v[7];
    int got = take_buffers(objs, v, 7, 4);
    PyObject *result = NULL;
    if (got < 7) goto done;
    int64_t n = v[0].len / 8, m = v[2].len / 8;
    Py_ssize_t step_size = v[6].itemsize;
    for (int k = 0; k < 6; k++) {
        if (v[k].itemsize != 8) goto sizes;
    }
    if (v[1].len != n * 8 || v[3].len != m * 8 || v[4].len != n * 8 || v[5].len != n * 8 ||
        (step_size != 4 && step_size != 8) || v[6].len != n * step_size)
        goto sizes;
    const int64_t *first = v[0].buf, *last = v[1].buf, *us = v[2].buf, *ue = v[3].buf;
    int64_t *cover_first = v[4].buf, *cover_last = v[5].buf;
    int64_t *cum = malloc((size_t)(m + 1) * sizeof *cum);
    if (cum == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int fits = 1;
    Py_BEGIN_ALLOW_THREADS;
    cum[0] = 0;
    for (int64_t k = 0; k < m && fits; k++) {
        if (__builtin_sub_overflow(ue[k], us[k], &cum[k + 1]) || __builtin_add_overflow(cum[k], cum[k + 1], &cum[k + 1]))
            fits = 0;
    }
    if (fits) {
        int64_t pos_first = 0, pos_last = 0, count = 0;
        for (int64_t k = 0; k < n; k++) {
            cover_first[k] = covered_at(us, ue, cum, m, &pos_first, first[k]);
            cover_last[k] = covered_at(us, ue, cum, m, &pos_last, last[k]);
            if (k > 0) count += (first[k] < first[k - 1]) | (last[k] < last[k - 1]);
            if (step_size == 4)
                ((int32_t *)v[6].buf)[k] = (int32_t)count;
            else
                ((int64_t *)v[6].buf)[k] = count;
        }
    }
    Py_END_ALLOW_THREADS;
    free(cum);
    result = PyBool_FromLong(fits);
    goto done;
sizes:
    PyErr_SetString(PyExc_ValueError, "covered_times: unexpected sizes");
done:
    release_buffers(v, got);
    return result;
}

/* time_span(a, b): (the least, the greatest) value of two int64 arrays together, in one pass reading both (ranges.py's
 * packing bounds over the table's start and end columns: four numpy reductions read each column twice). (0, -1)
 * where both are empty. The GIL is released while it runs. */
static PyObject *time_span(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a_obj, *b_obj;
    if (!PyArg_ParseTuple(args, "OO", &a_obj, &b_obj)) return NULL;
    Py_buffer a, b;
    if (get(a_obj, &a, 0, 8, "a") < 0) return NULL;
    if (get(b_obj, &b, 0, 8, "b") < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    const int64_t *x = a.buf, *y = b.buf;
    int64_t na = a.len / 8, nb = b.len / 8, lo = INT64_MAX, hi = INT64_MIN;
    Py_BEGIN_ALLOW_THREADS;
    int64_t lo2 = INT64_MAX, hi2 = INT64_MIN;
    int64_t k = 0;
    for (; k < na && k < nb; k++) { /* both columns at once, two independent pairs of running bounds */
        int64_t p = x[k], q = y[k];
        lo = p < lo ? p : lo;
        hi = p > hi ? p : hi;
        lo2 = q < lo2 ? q : lo2;
        hi2 = q > hi2 ? q : hi2;
    }
    for (int64_t j = k; j < na; j++) {
        lo = x[j] < lo ? x[j] : lo;
        hi = x[j] > hi ? x[j] : hi;
    }
    for (int64_t j = k; j < nb; j++) {
        lo2 = y[j] < lo2 ? y[j] : lo2;
        hi2 = y[j] > hi2 ? y[j] : hi2;
    }
    lo = lo2 < lo ? lo2 : lo;
    hi = hi2 > hi ? hi2 : hi;
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    if (na == 0 && nb == 0) return Py_BuildValue("LL", (long long)0, (long long)-1);
    return Py_BuildValue("LL", (long long)lo, (long long)hi);
}

/* launched_calls(kind, code_a, code_b, call_corr, wanted, rows_out, corr_out): memcpy.py's calls that launched a
 * copy, found in one walk over the kind column: the k-th row of kind code_a or code_b is the k-th call, whose
 * correlation id is call_corr[k]; where that id is among ``wanted`` (the copies' ids, int64, held in an
 * open-addressing hash set built here: one probe or a few per call), its event row and id are written to rows_out
 * and corr_out (int64), up to their size. Replaces member_ids' flag table blocks and searches, the flags'
 * flatnonzero, rows_of_kind_at's block masks and the ids' gather. kind: int8; call_corr: int32 or int64 (one per
 * call). Returns how many calls are wanted (more than rows_out holds: the caller asks again with room for all);
 * -1 where the calls in the kind column are not call_corr's size. The GIL is released while it runs. */
static inline uint64_t id_slot(int64_t id, int bits) {
    return ((uint64_t)id * 0x9E3779B97F4A7C15ULL) >> (64 - bits);
}

static PyObject *launched_calls(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *kind_obj, *corr_obj, *wanted_obj, *rows_obj, *out_obj;
    int code_a, code_b;
    if (!PyArg_ParseTuple(args, "OiiOOOO", &kind_obj, &code_a, &code_b, &corr_obj, &wanted_obj, &rows_obj, &out_obj))
        return NULL;
    Py_buffer v[5];
    PyObject *objs[5] = {kind_obj, corr_obj, wanted_obj, rows_obj, out_obj};
    const Py_ssize_t sizes[5] = {1, 8, 8, 8, 8};
    int got = 0;
    for (; got < 5; got++) {
        if (got == 1) { /* the ids: int32 or int64 */
            if (PyObject_GetBuffer(objs[1], &v[1], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) break;
            if (v[1].itemsize != 4 && v[1].itemsize != 8) {
                PyErr_SetString(PyExc_TypeError, "launched_calls: call_corr of 4 or 8 bytes expected");
                PyBuffer_Release(&v[1]);
                break;
            }
            continue;
        }
        if (get(objs[got], &v[got], got >= 3, sizes[got], "launched_calls") < 0) break;
    }
    PyObject *result = NULL;
    if (got < 5) goto done;
    if (v[3].len != v[4].len) {
        PyErr_SetString(PyExc_ValueError, "launched_calls: rows_out and corr_out differ in size");
        goto done;
    }
    const int8_t *kind = v[0].buf;
    const int64_t *corr = v[1].buf, *wanted = v[2].buf;
    const int32_t *corr32 = v[1].buf;
    int wide = v[1].itemsize == 8;
    int64_t *rows_out = v[3].buf, *corr_out = v[4].buf;
    int64_t n = v[0].len, calls = v[1].len / v[1].itemsize, w = v[2].len / 8, room = v[3].len / 8, k = 0, found = 0;
    int bits = 4;
    while (((int64_t)1 << bits) < 2 * w) bits++; /* at most half full */
    int64_t slots = (int64_t)1 << bits;
    /* a filter first: a bit per low-bits value of the wanted ids (about 32 bits an id, at most 2^24: 2 MB), so
     * that most calls (not wanted) are told by one bit in cache, not a probe of the set */
    int fbits = 16;
    while (fbits < 24 && ((int64_t)1 << fbits) < 32 * w) fbits++;
    uint64_t fmask = ((uint64_t)1 << fbits) - 1;
    int64_t *set = malloc((size_t)slots * sizeof *set);
    uint8_t *used = calloc((size_t)slots, 1);
    uint64_t *filter = calloc((size_t)1 << (fbits - 6), sizeof *filter);
    int64_t *block = malloc(4096 * sizeof *block);
    if (set == NULL || used == NULL || filter == NULL || block == NULL) {
        free(set);
        free(used);
        free(filter);
        free(block);
        PyErr_NoMemory();
        goto done;
    }
    int8_t a = (int8_t)code_a, b = (int8_t)code_b;
    Py_BEGIN_ALLOW_THREADS;
    for (int64_t j = 0; j < w; j++) {
        uint64_t at = id_slot(wanted[j], bits), low = (uint64_t)wanted[j] & fmask;
        while (used[at] && set[at] != wanted[j]) at = (at + 1) & (uint64_t)(slots - 1);
        used[at] = 1;
        set[at] = wanted[j];
        filter[low >> 6] |= (uint64_t)1 << (low & 63);
    }
    for (int64_t lo = 0; lo < n; lo += 4096) {
        /* the calls' rows of a block of rows, written without a branch per row (kinds interleave) */
        int64_t hi = lo + 4096 < n ? lo + 4096 : n, count = 0;
        for (int64_t r = lo; r < hi; r++) {
            block[count] = r;
            count += (kind[r] == a) | (kind[r] == b);
        }
        for (int64_t j = 0; j < count; j++, k++) {
            if (k >= calls) continue;
            int64_t id = wide ? corr[k] : (int64_t)corr32[k];
            uint64_t low = (uint64_t)id & fmask;
            if (!((filter[low >> 6] >> (low & 63)) & 1)) continue;
            uint64_t at = id_slot(id, bits);
            while (used[at] && set[at] != id) at = (at + 1) & (uint64_t)(slots - 1);
            if (used[at]) {
                if (found < room) {
                    rows_out[found] = block[j];
                    corr_out[found] = id;
                }
                found++;
            }
        }
    }
    Py_END_ALLOW_THREADS;
    free(set);
    free(used);
    free(filter);
    free(block);
    result = PyLong_FromLongLong(k == calls ? (long long)found : -1LL);
done:
    release_buffers(v, got);
    return result;
}

/* call_columns(kind, code_a, code_b, name, start, pid, tid, rows_out, name_out, start_out, codes_out, keys, found):
 * sync.py's API calls (the rows of kind code_a or code_b) in one walk over the kind column: each call's event row
 * (int32), name code (int32) and start (int64) written, and its thread code as in row_thread_codes (the rank of
 * its (pid, tid) key among the sorted distinct keys of the calls, int8, at most KIND_NONE - 1 threads; keys and
 * found as there). Replaces a kind mask, its flatnonzero, the rows' int32 copy, the name and start gathers and
 * row_thread_codes' own pass. kind: int8; name: int32; start: int64; pid, tid: int32 or int64; the outputs hold
 * exactly the calls (count_kinds). Returns 0; 1 where the calls hold more threads (the outputs then unspecified);
 * -1 where the outputs are not the calls' count. The GIL is released while it runs. With only the first three
 * arguments, returns the calls' count. */
static PyObject *call_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[13] = {NULL};
    int code_a, code_b;
    if (!PyArg_ParseTuple(args, "Oii|OOOOOOOOOO", &objs[0], &code_a, &code_b, &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10]))
        return NULL;
    int8_t a = (int8_t)code_a, b = (int8_t)code_b;
    if (objs[1] == NULL) { /* the count only */
        Py_buffer kv;
        if (get(objs[0], &kv, 0, 1, "kind") < 0) return NULL;
        const int8_t *kind = kv.buf;
        int64_t n = kv.len, count = 0;
        Py_BEGIN_ALLOW_THREADS;
        for (int64_t r = 0; r < n; r++) count += (kind[r] == a) | (kind[r] == b);
        Py_END_ALLOW_THREADS;
        PyBuffer_Release(&kv);
        return PyLong_FromLongLong((long long)count);
    }
    for (int i = 1; i <= 10; i++) {
        if (objs[i] == NULL) {
            PyErr_SetString(PyExc_TypeError, "call_columns: 3 or 13 arguments");
            return NULL;
        }
    }
    Py_buffer v[11];
    int got = take_buffers(objs, v, 11, 5);
    PyObject *result = NULL;
    if (got < 11) goto done;
    int64_t n = v[0].len, m = v[5].len / 4;
    Py_ssize_t pid_size = v[3].itemsize, tid_size = v[4].itemsize;
    if (v[0].itemsize != 1 || v[1].itemsize != 4 || v[1].len != n * 4 || v[2].itemsize != 8 || v[2].len != n * 8 ||
        (pid_size != 4 && pid_size != 8) || (tid_size != 4 && tid_size != 8) || v[3].len != n * pid_size ||
        v[4].len != n * tid_size || v[5].itemsize != 4 || v[6].itemsize != 4 || v[6].len != m * 4 ||
        v[7].itemsize != 8 || v[7].len != m * 8 || v[8].itemsize != 1 || v[8].len != m || v[9].itemsize != 8 ||
        v[9].len != (KIND_NONE - 1) * 8 || v[10].itemsize != 8 || v[10].len != 8) {
        PyErr_SetString(PyExc_ValueError, "call_columns: unexpected sizes");
        goto done;
    }
    const int8_t *kind = v[0].buf;
    const int32_t *name = v[1].buf, *pid32 = v[3].buf, *tid32 = v[4].buf;
    const int64_t *start = v[2].buf, *pid64 = v[3].buf, *tid64 = v[4].buf;
    int32_t *rows_out = v[5].buf, *name_out = v[6].buf;
    int64_t *start_out = v[7].buf, *keys = v[9].buf, *found = v[10].buf;
    int8_t *code = v[8].buf;
    int64_t cand[KIND_NONE] = {0}, k = 0, j = 0, i = 0;
    long status = 0;
    int64_t block[1024];
    Py_BEGIN_ALLOW_THREADS;
    for (int64_t lo = 0; lo < n && !status; lo += 1024) {
        /* the calls' rows of a block of rows, written without a branch per row (kinds interleave) */
        int64_t hi = lo + 1024 < n ? lo + 1024 : n, count = 0;
        for (int64_t r = lo; r < hi; r++) {
            block[count] = r;
            count += (kind[r] == a) | (kind[r] == b);
        }
        if (i + count > m) {
            status = -1;
            break;
        }
        for (int64_t c = 0; c < count; c++) {
            int64_t r = block[c];
            int64_t p = pid_size == 4 ? (int64_t)pid32[r] : pid64[r];
            int64_t t = tid_size == 4 ? (int64_t)tid32[r] : tid64[r];
            int64_t value = (int64_t)(((uint64_t)(uint32_t)p << 32) | (uint64_t)(uint32_t)t);
            if (j >= k || cand[j] != value) {
                for (j = 0; j < k && cand[j] != value; j++) {
                }
                if (j == k) {
                    if (k == KIND_NONE - 1) {
                        status = 1;
                        break;
                    }
                    cand[k++] = value;
                }
            }
            rows_out[i] = (int32_t)r;
            name_out[i] = name[r];
            start_out[i] = start[r];
            code[i++] = (int8_t)j;
        }
    }
    if (!status && i != m) status = -1;
    if (!status) {
        int64_t order[KIND_NONE], rank[KIND_NONE];
        for (int64_t x = 0; x < k; x++) {
            int64_t at = x;
            while (at > 0 && cand[order[at - 1]] > cand[x]) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = x;
        }
        for (int64_t x = 0; x < k; x++) {
            keys[x] = cand[order[x]];
            rank[order[x]] = x;
        }
        for (int64_t x = 0; x < m; x++) code[x] = (int8_t)rank[code[x]];
        found[0] = k;
    }
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLong(status);
done:
    for (int x = 0; x < got; x++) PyBuffer_Release(&v[x]);
    return result;
}

static PyMethodDef methods[] = {
    {"op_tree", op_tree, METH_VARARGS,
     "op_tree(start, end, bounds, t, edges, outer, outermost, innermost[, rows[, starts_by_row]])"},
    {"names_of_kind", names_of_kind, METH_VARARGS, "names_of_kind(kind, name, code, seen)"},
    {"kind_rows", kind_rows, METH_VARARGS, "kind_rows(kind, name, tid, tid_ok, code, nvtx, out)"},
    {"group_rows", group_rows, METH_VARARGS,
     "group_rows(pid, tid, start, rows, candidates, rows_out, start_out, bounds[, ties])"},
    {"group_rows_found", group_rows_found, METH_VARARGS,
     "group_rows_found(pid, tid, start, rows, rows_out, start_out, keys, bounds, found, tie_positions)"},
    {"classify_kind_rows", classify_kind_rows, METH_VARARGS,
     "classify_kind_rows(kind, code, pid, tid, start, row_code, keys, bounds, next, found)"},
    {"place_kind_rows", place_kind_rows, METH_VARARGS, "place_kind_rows(row_code, next, rows_out, tie_positions)"},
    {"place_rows", place_rows, METH_VARARGS, "place_rows(found, rows, at, into)"},
    {"launch_groups", launch_groups, METH_VARARGS, "launch_groups(keys, pid, tid, t, at, t_out, edges)"},
    {"row_thread_codes", row_thread_codes, METH_VARARGS, "row_thread_codes(pid, tid, rows, codes, keys, found)"},
    {"covered_times", covered_times, METH_VARARGS,
     "covered_times(first, last, union_starts, union_ends, cover_first, cover_last, steps)"},
    {"time_span", time_span, METH_VARARGS, "time_span(a, b)"},
    {"call_columns", call_columns, METH_VARARGS,
     "call_columns(kind, code_a, code_b[, name, start, pid, tid, rows_out, name_out, start_out, codes_out, keys, found])"},
    {"launched_calls", launched_calls, METH_VARARGS,
     "launched_calls(kind, code_a, code_b, call_corr, wanted, rows_out, corr_out)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_op_tree", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__op_tree(void) {
    PyObject *m = PyModule_Create(&module);
    /* op_tree reads ends through rows (its optional last argument): tree.py asks before passing them */
    if (m != NULL && PyModule_AddIntConstant(m, "OP_TREE_ROWS", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* op_tree reads starts through rows too (starts_by_row), group_rows writes no starts given an empty start_out */
    if (m != NULL && PyModule_AddIntConstant(m, "OP_TREE_START_ROWS", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* group_rows counts the rows tied with their thread's previous one (its optional ``ties``) */
    if (m != NULL && PyModule_AddIntConstant(m, "GROUP_ROWS_TIES", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
