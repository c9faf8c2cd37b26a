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
 * solve_in_order(order, chain_first, lag, anchor, recorded, e_ptr, e_src, e_lag, e_stale, out): all int64
 * buffers but chain_first and e_stale (one byte each); the edges into the point at position i of ``order`` are
 * e_ptr[i] .. e_ptr[i + 1] - 1. ``out`` (n int64) receives the times. The GIL is released while it runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#define NONE_TIME (-(((int64_t)1) << 62))

static int get(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize, const char *name) {
    if (PyObject_GetBuffer(obj, view, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    if (view->itemsize != itemsize && !(view->len == 0)) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes expected", name, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *solve_in_order(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[10];
    static const char *names[10] = {"order", "chain_first", "lag", "anchor", "recorded",
                                    "e_ptr", "e_src", "e_lag", "e_stale", "out"};
    static const Py_ssize_t sizes[10] = {8, 1, 8, 8, 8, 8, 8, 8, 1, 8};
    Py_buffer views[10];
    int got = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9])) {
        return NULL;
    }
    for (; got < 10; got++) {
        if (get(objs[got], &views[got], got == 9, sizes[got], names[got]) < 0) {
            goto done;
        }
    }
    Py_ssize_t n = views[0].len / 8;
    Py_ssize_t n_edges = views[6].len / 8;
    if (views[1].len != n || views[2].len / 8 != n || views[3].len / 8 != n || views[4].len / 8 != n ||
        views[5].len / 8 != n + 1 || views[7].len / 8 != n_edges || views[8].len != n_edges ||
        views[9].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "solve_in_order: array lengths disagree");
        goto done;
    }
    const int64_t *order = views[0].buf, *lag = views[2].buf, *anchor = views[3].buf, *recorded = views[4].buf;
    const int64_t *e_ptr = views[5].buf, *e_src = views[6].buf, *e_lag = views[7].buf;
    const unsigned char *first = views[1].buf, *stale = views[8].buf;
    int64_t *t = views[9].buf;
    /* every index is checked before it is read: a bad plan raises instead of reading out of bounds */
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        int64_t p = order[i];
        if (p < 0 || p >= n || (!first[p] && p == 0)) {
            bad = 1;
            break;
        }
        int64_t best = (first[p] ? NONE_TIME : t[p - 1]) + lag[p];
        if (anchor[p] > best) {
            best = anchor[p];
        }
        int64_t lo = e_ptr[i], hi = e_ptr[i + 1];
        if (lo < 0 || hi > n_edges || lo > hi) {
            bad = 1;
            break;
        }
        for (int64_t k = lo; k < hi; k++) {
            int64_t s = e_src[k];
            if (s < 0 || s >= n) {
                bad = 1;
                break;
            }
            int64_t ready = (stale[k] ? recorded[s] : t[s]) + e_lag[k];
            if (ready > best) {
                best = ready;
            }
        }
        t[p] = best;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "solve_in_order: an index out of range");
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"solve_in_order", solve_in_order, METH_VARARGS,
     "solve_in_order(order, chain_first, lag, anchor, recorded, e_ptr, e_src, e_lag, e_stale, out): the replayed "
     "time of every point, written into out (see tracelens/replay/_replay_solve.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_replay_solve",
    "The replay's one topological pass (tracelens/replay/engine.py uses it where it was built).", -1, methods,
};

PyMODINIT_FUNC PyInit__replay_solve(void) { return PyModule_Create(&module); }
