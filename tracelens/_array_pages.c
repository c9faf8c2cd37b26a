/* A numpy memory handler that hands the pages of freed big arrays to the next big arrays (tracelens/memory.py,
 * reusing_array_pages).
 *
 * Why: an analysis allocates and frees event-sized temporaries (hundreds of MB each at tens of millions of
 * events) again and again. numpy's default handler maps each from the OS and unmaps it when freed, so every
 * new array's pages are faulted in and zeroed by the kernel again: on the 41M-row benchmark export the kernel's
 * page clearing was a fifth of analyze's CPU. Here a freed array of 4 MiB or more keeps its pages in a cache,
 * and the next big array takes them: the best-fitting cached block (split when much bigger), else cached
 * blocks moved with mremap into one contiguous range (page tables move, no bytes are copied), with fresh
 * pages only for what the cache lacks.
 *
 * Memory: fresh pages are mapped only once the cache is empty, so the big arrays never take more than their
 * live size (rounded up to 2 MiB): the cache only holds pages that were already
 * resident. What other allocators take while it holds pages does add to the process (tracelens/memory.py).
 * flush() unmaps the cache; free() unmaps instead of caching while no scope is open (enable(0)).
 *
 * From 1 MiB on where set_min_big says so (memory.reusing_array_pages, for an analysis of 1M events and more:
 * the masks, a byte per event, then share the cache with the wider arrays instead of glibc's per-thread heaps).
 *
 * Smaller arrays go to the handler that was current before (numpy's default, with its own small
 * block cache). Big blocks are 2 MiB aligned and advised for transparent huge pages, as numpy's default
 * handler advises its big arrays. Linux only (mremap); elsewhere available() is False and nothing changes.
 *
 * The handler layout (PyDataMem_Handler, version 1) and the C-API slots of PyDataMem_SetHandler (304) and
 * PyDataMem_GetHandler (305) are numpy's stable ABI since 1.22; swap() checks that the slot it calls gives a
 * "mem_handler" capsule before setting anything.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} DataAllocator;

typedef struct {
    char name[127];
    uint8_t version;
    DataAllocator allocator;
} DataHandler;

#define SLOT_SET_HANDLER 304
#define SLOT_GET_HANDLER 305

#if defined(__linux__)
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)
#define MIN_BIG ((size_t)4 << 20) /* numpy's default handler advises huge pages from this size on too */
#define MAX_CACHED 1024

typedef struct {
    char *p;
    size_t cap;
} Block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t behind_done = PTHREAD_COND_INITIALIZER; /* release_behind: its threads' ends */
static long behind;                                            /* its threads still running */
static DataAllocator small;       /* the handler current before: small arrays */
static PyObject *small_capsule;   /* keeps it alive */
static int small_ready;

static Block cached[MAX_CACHED];
static int n_cached;
static size_t cached_bytes;
static long scopes; /* open reusing scopes: 0 means free() unmaps */
static size_t min_big = MIN_BIG; /* set_min_big: an analysis of many events, and the tests, lower it */

/* Live big blocks: pointer -> capacity, open addressing with linear probing (backward-shift deletion). */
static uintptr_t *live_key;
static size_t *live_cap;
static size_t live_slots, live_used;

static struct {
    unsigned long long allocations, reused_bytes, fresh_bytes, fresh_while_cached, moves, splits, unmapped, donated;
} stats;

static size_t slot_of(uintptr_t key) {
    return (size_t)((key >> 21) * 0x9E3779B97F4A7C15ull) & (live_slots - 1);
}

static int live_grow(void) {
    size_t slots = live_slots ? live_slots * 2 : 1024;
    uintptr_t *keys = calloc(slots, sizeof *keys);
    size_t *caps = calloc(slots, sizeof *caps);
    if (!keys || !caps) {
        free(keys);
        free(caps);
        return -1;
    }
    uintptr_t *old_keys = live_key;
    size_t *old_caps = live_cap;
    size_t old_slots = live_slots;
    live_key = keys;
    live_cap = caps;
    live_slots = slots;
    for (size_t i = 0; i < old_slots; i++) {
        if (old_keys[i]) {
            size_t s = slot_of(old_keys[i]);
            while (live_key[s]) s = (s + 1) & (live_slots - 1);
            live_key[s] = old_keys[i];
            live_cap[s] = old_caps[i];
        }
    }
    free(old_keys);
    free(old_caps);
    return 0;
}

static int live_add(char *p, size_t cap) {
    if ((live_used + 1) * 2 > live_slots && live_grow() < 0) return -1;
    size_t s = slot_of((uintptr_t)p);
    while (live_key[s]) s = (s + 1) & (live_slots - 1);
    live_key[s] = (uintptr_t)p;
    live_cap[s] = cap;
    live_used++;
    return 0;
}

/* Removes p and returns its capacity; 0 when p is not a live big block. */
static size_t live_take(void *p) {
    if (!live_slots) return 0;
    size_t s = slot_of((uintptr_t)p);
    while (live_key[s] && live_key[s] != (uintptr_t)p) s = (s + 1) & (live_slots - 1);
    if (!live_key[s]) return 0;
    size_t cap = live_cap[s];
    live_key[s] = 0;
    live_used--;
    for (size_t hole = s, j = (s + 1) & (live_slots - 1); live_key[j]; j = (j + 1) & (live_slots - 1)) {
        size_t home = slot_of(live_key[j]);
        /* move j into the hole when its home is not cyclically in (hole, j] */
        if (((j - home) & (live_slots - 1)) >= ((j - hole) & (live_slots - 1))) {
            live_key[hole] = live_key[j];
            live_cap[hole] = live_cap[j];
            live_key[j] = 0;
            hole = j;
        }
    }
    return cap;
}

static size_t round_up(size_t n) { return (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1); }

/* A fresh HUGE_PAGE-aligned range of `size` bytes (a multiple of HUGE_PAGE), with protection `prot`. */
static char *map_aligned(size_t size, int prot) {
    char *raw = mmap(NULL, size + HUGE_PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *p = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + size + HUGE_PAGE - (p + size));
    if (tail) munmap(p + size, tail);
    return p;
}

static void advise(char *p, size_t size) {
#ifdef MADV_HUGEPAGE
    if (size >= MIN_BIG) madvise(p, size, MADV_HUGEPAGE);
#else
    (void)p;
    (void)size;
#endif
}

static void cache_remove(int i) {
    cached_bytes -= cached[i].cap;
    cached[i] = cached[--n_cached];
}

static void cache_add(char *p, size_t cap) {
    if (n_cached == MAX_CACHED) { /* unmap the smallest to make room */
        int smallest = 0;
        for (int i = 1; i < n_cached; i++)
            if (cached[i].cap < cached[smallest].cap) smallest = i;
        munmap(cached[smallest].p, cached[smallest].cap);
        stats.unmapped += cached[smallest].cap;
        cache_remove(smallest);
    }
    cached[n_cached].p = p;
    cached[n_cached].cap = cap;
    n_cached++;
    cached_bytes += cap;
}

/* A block of at least `need` bytes (a multiple of HUGE_PAGE); *reused: how many of its leading bytes were
 * cached (not zero), the rest being fresh zero pages. Called holding the lock. */
static char *take(size_t need, size_t *cap_out, size_t *reused) {
    int best = -1;
    for (int i = 0; i < n_cached; i++)
        if (cached[i].cap >= need && (best < 0 || cached[i].cap < cached[best].cap)) best = i;
    if (best >= 0) {
        char *p = cached[best].p;
        size_t cap = cached[best].cap;
        cache_remove(best);
        if (cap > need) { /* keep the tail cached (whole 2 MiB blocks: it serves the 1-2 MiB arrays) */
            cache_add(p + need, cap - need);
            cap = need;
            stats.splits++;
        }
        *cap_out = cap;
        *reused = cap;
        stats.reused_bytes += cap;
        return p;
    }
    if (n_cached == 0) {
        char *p = map_aligned(need, PROT_READ | PROT_WRITE);
        if (!p) return NULL;
        advise(p, need);
        *cap_out = need;
        *reused = 0;
        stats.fresh_bytes += need;
        return p;
    }
    /* Every cached block is smaller than need: move them (largest first) into one new range, then fresh pages
     * for the rest. The reservation is PROT_NONE until filled: each mremap replaces part of it. */
    char *dest = map_aligned(need, PROT_NONE);
    if (!dest) return NULL;
    size_t filled = 0;
    while (n_cached > 0 && filled < need) {
        int largest = 0;
        for (int i = 1; i < n_cached; i++)
            if (cached[i].cap > cached[largest].cap) largest = i;
        Block b = cached[largest];
        size_t part = b.cap < need - filled ? b.cap : need - filled; /* the last one may be cut */
        void *moved = mremap(b.p, part, part, MREMAP_MAYMOVE | MREMAP_FIXED, dest + filled);
        if (moved == MAP_FAILED) break; /* leave the rest cached; the range gets fresh pages instead */
        cache_remove(largest);
        if (part < b.cap) cache_add(b.p + part, b.cap - part);
        filled += part;
        stats.moves++;
    }
    if (filled < need) {
        char *rest = mmap(dest + filled, need - filled, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        if (rest == MAP_FAILED) {
            munmap(dest, need); /* the moved pages go back to the OS with it */
            return NULL;
        }
        if (n_cached) stats.fresh_while_cached += need - filled;
        stats.fresh_bytes += need - filled;
    }
    advise(dest, need);
    stats.reused_bytes += filled;
    *cap_out = need;
    *reused = filled;
    return dest;
}

static void *big_alloc(size_t size, int zero) {
    size_t need = round_up(size), cap = 0, reused = 0;
    pthread_mutex_lock(&lock);
    char *p = take(need, &cap, &reused);
    if (p && live_add(p, cap) < 0) {
        munmap(p, cap);
        p = NULL;
    }
    if (p) stats.allocations++;
    pthread_mutex_unlock(&lock);
    if (p && zero && reused) memset(p, 0, reused < size ? reused : size);
    return p;
}

static void big_release(char *p, size_t cap) {
    pthread_mutex_lock(&lock);
    if (scopes > 0) {
        cache_add(p, cap);
    } else {
        munmap(p, cap);
        stats.unmapped += cap;
    }
    pthread_mutex_unlock(&lock);
}

static int is_candidate(void *p) { return p && ((uintptr_t)p & (HUGE_PAGE - 1)) == 0; }

/* The live capacity of p if it is a big block (removing it from the table), else 0. */
static size_t take_live(void *p) {
    if (!is_candidate(p)) return 0;
    pthread_mutex_lock(&lock);
    size_t cap = live_take(p);
    pthread_mutex_unlock(&lock);
    return cap;
}

static void *h_malloc(void *ctx, size_t size) {
    (void)ctx;
    if (size < min_big || size == 0) return small.malloc(small.ctx, size);
    return big_alloc(size, 0);
}

static void *h_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    if (elsize && nelem > SIZE_MAX / elsize) return NULL;
    size_t size = nelem * elsize;
    if (size < min_big || size == 0) return small.calloc(small.ctx, nelem, elsize);
    return big_alloc(size, 1);
}

static void h_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    size_t cap = take_live(p);
    if (cap) {
        big_release(p, cap);
    } else {
        small.free(small.ctx, p, size);
    }
}

static void *h_realloc(void *ctx, void *p, size_t size) {
    (void)ctx;
    size_t cap = take_live(p);
    if (cap) {
        if (size <= cap) { /* keeps its block */
            pthread_mutex_lock(&lock);
            int ok = live_add(p, cap) == 0;
            pthread_mutex_unlock(&lock);
            if (ok) return p;
            big_release(p, cap);
            return NULL;
        }
        char *q = big_alloc(size, 0);
        if (!q) {
            pthread_mutex_lock(&lock);
            live_add(p, cap); /* the caller still owns p */
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        memcpy(q, p, cap);
        big_release(p, cap);
        return q;
    }
    if (!p || size < min_big || size == 0) return small.realloc(small.ctx, p, size);
    char *q = big_alloc(size, 0);
    if (!q) return NULL;
    size_t old = malloc_usable_size(p); /* numpy's default handler allocates with malloc */
    memcpy(q, p, old < size ? old : size);
    small.free(small.ctx, p, old);
    return q;
}

static DataHandler handler = {
    "tracelens_array_pages", 1, {NULL, h_malloc, h_calloc, h_realloc, h_free}};

static int available_here(void) { return 1; }

/* A child forked while another thread held the lock would wait on it forever: the child starts unlocked. */
static void unlock_in_child(void) {
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&behind_done, NULL);
}

static void settle_here(void);

/* Before a fork: the unmapping threads end first (settle_here), so the child has none of their blocks. */
static void prepare_fork_safety(void) { pthread_atfork(settle_here, NULL, unlock_in_child); }

static size_t flush_cache(void) {
    pthread_mutex_lock(&lock);
    size_t released = cached_bytes;
    for (int i = 0; i < n_cached; i++) munmap(cached[i].p, cached[i].cap);
    stats.unmapped += cached_bytes;
    n_cached = 0;
    cached_bytes = 0;
    pthread_mutex_unlock(&lock);
    return released;
}

/* Unmapping the cache behind (release_behind): the blocks leave the cache at once (counted unmapped), and a
 * detached thread unmaps them, then trims glibc's heaps when asked, so the caller goes on instead of waiting for
 * the kernel to free ~100 MB of pages (~4 ms at the Kineto 406 MB tile's load end, and malloc_trim's ~2 ms).
 * `behind` counts such threads still running: a fork waits for them (the child would keep their blocks mapped
 * for good), and settle() waits for them where a caller wants the memory back before it goes on (tests). */
typedef struct {
    Block *blocks;
    int n;
    int trim;
} Behind;


static void unmap_blocks(Block *blocks, int n, int trim) {
    for (int i = 0; i < n; i++) munmap(blocks[i].p, blocks[i].cap);
    if (trim) malloc_trim(0);
}

static void *behind_main(void *arg) {
    Behind *work = arg;
    unmap_blocks(work->blocks, work->n, work->trim);
    free(work->blocks);
    free(work);
    pthread_mutex_lock(&lock);
    behind--;
    pthread_cond_broadcast(&behind_done);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Takes the cache's blocks (only while no scope is open: an open one reuses them) and unmaps them, with the trim,
 * on a detached thread; inline where that thread cannot be started. Returns the bytes handed over. */
static size_t release_behind_here(int trim) {
    Behind *work = malloc(sizeof *work);
    Block *blocks = malloc(sizeof(Block) * MAX_CACHED);
    pthread_mutex_lock(&lock);
    size_t released = 0;
    int n = 0;
    if (scopes == 0 && work && blocks) {
        memcpy(blocks, cached, sizeof(Block) * (size_t)n_cached);
        n = n_cached;
        released = cached_bytes;
        stats.unmapped += cached_bytes;
        n_cached = 0;
        cached_bytes = 0;
    }
    behind++;
    pthread_mutex_unlock(&lock);
    int started = 0;
    if (work && blocks) {
        work->blocks = blocks;
        work->n = n;
        work->trim = trim;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            pthread_t thread;
            started = pthread_create(&thread, &attr, behind_main, work) == 0;
            pthread_attr_destroy(&attr);
        }
    }
    if (!started) {
        if (work && blocks) {
            unmap_blocks(blocks, n, trim);
        } else { /* no memory for the hand-over: unmapped here, as a scope's close does */
            pthread_mutex_lock(&lock);
            long open = scopes;
            pthread_mutex_unlock(&lock);
            if (!open) released = flush_cache();
            if (trim) malloc_trim(0);
        }
        free(blocks);
        free(work);
        pthread_mutex_lock(&lock);
        behind--;
        pthread_cond_broadcast(&behind_done);
        pthread_mutex_unlock(&lock);
    }
    return released;
}

static void settle_here(void) {
    pthread_mutex_lock(&lock);
    while (behind > 0) pthread_cond_wait(&behind_done, &lock);
    pthread_mutex_unlock(&lock);
}

static size_t set_min_big_here(size_t n) {
    size_t before = min_big;
    min_big = n ? n : 1;
    return before;
}

/* Moves the pages of [p, p + size) (page aligned, a private anonymous mapping its owner unmaps later) into the
 * cache while a scope is open: the whole 2 MiB multiple of its size, if at least MIN_BIG. MREMAP_DONTUNMAP
 * leaves the owner's range mapped (empty: zero pages if touched again), so its own munmap stays its own.
 * The bytes moved; 0 when nothing was (no scope, too small, or a kernel without MREMAP_DONTUNMAP). */
static size_t donate_here(char *p, size_t size) {
#ifdef MREMAP_DONTUNMAP
    size_t n = size & ~(HUGE_PAGE - 1);
    if (n < MIN_BIG || ((uintptr_t)p & 4095)) return 0;
    pthread_mutex_lock(&lock);
    long open = scopes;
    pthread_mutex_unlock(&lock);
    if (!open) return 0;
    char *dest = map_aligned(n, PROT_NONE);
    if (!dest) return 0;
    if (mremap(p, n, n, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, dest) == MAP_FAILED) {
        munmap(dest, n);
        return 0;
    }
    pthread_mutex_lock(&lock);
    if (scopes > 0) {
        cache_add(dest, n);
        stats.donated += n;
    } else {
        munmap(dest, n);
        n = 0;
    }
    pthread_mutex_unlock(&lock);
    return n;
#else
    (void)p;
    (void)size;
    return 0;
#endif
}

static long set_scopes(long delta) {
    pthread_mutex_lock(&lock);
    scopes += delta;
    if (scopes < 0) scopes = 0;
    long now = scopes;
    pthread_mutex_unlock(&lock);
    return now;
}

#else /* not Linux: the module loads, available() is False */

static DataHandler handler = {"tracelens_array_pages", 1, {NULL, NULL, NULL, NULL, NULL}};
static DataAllocator small;
static PyObject *small_capsule;
static int small_ready;
static struct {
    unsigned long long allocations, reused_bytes, fresh_bytes, fresh_while_cached, moves, splits, unmapped, donated;
} stats;
static size_t cached_bytes;
static int available_here(void) { return 0; }
static void prepare_fork_safety(void) {}
static size_t flush_cache(void) { return 0; }
static long set_scopes(long delta) { (void)delta; return 0; }
static size_t set_min_big_here(size_t n) {
    (void)n;
    return 0;
}
static size_t release_behind_here(int trim) {
    (void)trim;
    return 0;
}
static void settle_here(void) {}
static size_t donate_here(char *p, size_t size) {
    (void)p;
    (void)size;
    return 0;
}

#endif

static void **api_table(PyObject *capsule) {
    void **table = PyCapsule_GetPointer(capsule, NULL);
    if (!table) PyErr_SetString(PyExc_TypeError, "not numpy's C-API capsule");
    return table;
}

/* swap(api, install): install=True sets this handler in the current context, returns the one it replaces;
 * install=False returns the current handler's name. */
static PyObject *swap(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *api;
    int install;
    if (!PyArg_ParseTuple(args, "Op", &api, &install)) return NULL;
    void **table = api_table(api);
    if (!table) return NULL;
    PyObject *(*get_handler)(void) = (PyObject * (*)(void)) table[SLOT_GET_HANDLER];
    PyObject *(*set_handler)(PyObject *) = (PyObject * (*)(PyObject *)) table[SLOT_SET_HANDLER];
    PyObject *current = get_handler();
    if (!current) return NULL;
    if (!PyCapsule_IsValid(current, "mem_handler")) {
        Py_DECREF(current);
        PyErr_SetString(PyExc_RuntimeError, "numpy's C-API slot 305 did not give a memory handler");
        return NULL;
    }
    DataHandler *now = PyCapsule_GetPointer(current, "mem_handler");
    if (!install) {
        PyObject *name = PyUnicode_FromString(now->name);
        Py_DECREF(current);
        return name;
    }
    if (!available_here()) {
        Py_DECREF(current);
        PyErr_SetString(PyExc_RuntimeError, "array page reuse needs Linux");
        return NULL;
    }
    if (now == &handler) return current; /* already set: the caller restores it, which is the same */
    if (strcmp(now->name, "default_allocator") != 0) { /* another handler is set: leave it */
        Py_DECREF(current);
        PyErr_Format(PyExc_RuntimeError, "numpy's memory handler is %s, not the default", now->name);
        return NULL;
    }
    if (!small_ready) { /* the first handler replaced serves the small arrays for good */
        if (now->version != 1) {
            Py_DECREF(current);
            PyErr_SetString(PyExc_RuntimeError, "unknown numpy memory handler version");
            return NULL;
        }
        small = now->allocator;
        small_capsule = current;
        Py_INCREF(small_capsule);
        small_ready = 1;
    }
    Py_DECREF(current);
    PyObject *mine = PyCapsule_New(&handler, "mem_handler", NULL);
    if (!mine) return NULL;
    PyObject *old = set_handler(mine);
    Py_DECREF(mine);
    return old;
}

/* restore(api, handler): sets a handler swap() returned. */
static PyObject *restore(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *api, *old;
    if (!PyArg_ParseTuple(args, "OO", &api, &old)) return NULL;
    void **table = api_table(api);
    if (!table) return NULL;
    PyObject *(*set_handler)(PyObject *) = (PyObject * (*)(PyObject *)) table[SLOT_SET_HANDLER];
    PyObject *replaced = set_handler(old);
    if (!replaced) return NULL;
    Py_DECREF(replaced);
    Py_RETURN_NONE;
}

static PyObject *enable(PyObject *self, PyObject *arg) {
    (void)self;
    long delta = PyLong_AsLong(arg);
    if (delta == -1 && PyErr_Occurred()) return NULL;
    if (set_scopes(delta) == 0) flush_cache(); /* the last scope closed */
    Py_RETURN_NONE;
}

/* leave(): closes a scope without unmapping the cache when it is the last (release_behind does, after) */
static PyObject *leave(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    set_scopes(-1);
    Py_RETURN_NONE;
}

static PyObject *set_min_big(PyObject *self, PyObject *arg) {
    (void)self;
    size_t n = PyLong_AsSize_t(arg);
    if (n == (size_t)-1 && PyErr_Occurred()) return NULL;
    return PyLong_FromSize_t(set_min_big_here(n));
}

static PyObject *flush(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    size_t released;
    Py_BEGIN_ALLOW_THREADS released = flush_cache();
    Py_END_ALLOW_THREADS return PyLong_FromSize_t(released);
}

/* release_behind(trim): where no scope is open, the cache's pages are unmapped on a detached thread (then
 * glibc's heaps trimmed when trim is true); returns the bytes handed over. */
static PyObject *release_behind(PyObject *self, PyObject *arg) {
    (void)self;
    int trim = PyObject_IsTrue(arg);
    if (trim < 0) return NULL;
    return PyLong_FromSize_t(release_behind_here(trim));
}

static PyObject *settle(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS settle_here();
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

/* donate(buffer): the pages of a writable buffer that is a private anonymous mapping (an mmap.mmap), moved
 * into the cache (donate_here); returns the bytes moved. The buffer's contents are gone after (zero pages). */
static PyObject *donate(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_WRITABLE) < 0) return NULL;
    size_t moved;
    Py_BEGIN_ALLOW_THREADS moved = donate_here((char *)view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    return PyLong_FromSize_t(moved);
}

static PyObject *counters(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:n}", "allocations", stats.allocations, "reused_bytes",
                         stats.reused_bytes, "fresh_bytes", stats.fresh_bytes, "fresh_while_cached",
                         stats.fresh_while_cached, "moves", stats.moves, "splits", stats.splits, "unmapped_bytes",
                         stats.unmapped, "donated_bytes", stats.donated, "cached_bytes", (Py_ssize_t)cached_bytes);
}

static PyObject *available(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(available_here());
}

static PyMethodDef methods[] = {
    {"swap", swap, METH_VARARGS, "swap(api, install): set this handler (True) or read the current name"},
    {"restore", restore, METH_VARARGS, "restore(api, handler): set a handler swap() returned"},
    {"enable", enable, METH_O, "enable(+1/-1): open or close a reusing scope (the last closing flushes)"},
    {"leave", leave, METH_NOARGS, "close a scope, leaving the cache mapped for release_behind"},
    {"set_min_big", set_min_big, METH_O, "set_min_big(bytes): the smallest array served here (tests); returns the one before"},
    {"flush", flush, METH_NOARGS, "unmap the cached pages; returns their bytes"},
    {"release_behind", release_behind, METH_O,
     "release_behind(trim): unmap the cache (no scope open), then trim glibc's heaps, on a detached thread"},
    {"settle", settle, METH_NOARGS, "wait for the threads release_behind started"},
    {"donate", donate, METH_O, "donate(mmap): move a mapping's pages into the cache; returns the bytes moved"},
    {"counters", counters, METH_NOARGS, "allocation counters"},
    {"available", available, METH_NOARGS, "whether this platform supports the handler"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_array_pages", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__array_pages(void) {
    prepare_fork_safety();
    return PyModule_Create(&module);
}
