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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

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

static PyMethodDef methods[] = {
    {"search_ascending", search_ascending, METH_VARARGS, "search_ascending(haystack, needles, out, right)"},
    {"search_near", search_near, METH_VARARGS, "search_near(haystack, needles, out, right)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_merge_search", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__merge_search(void) { return PyModule_Create(&module); }
