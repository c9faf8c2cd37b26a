/* Reader of one SQLite table B-tree, page by page, straight into column buffers: the native engine of
 * tracelens/ingest/nsys/pages.py (which decides when it may run and turns the buffers into Arrow arrays).
 *
 * scan(path, page_size, reserved, page_count, root, columns, lo, hi, capacity) walks the table B-tree rooted
 * at page `root` in rowid order (interior pages 0x05, leaf pages 0x0D; the layout of sqlite.org/fileformat2)
 * and decodes each row's record (varint header of serial types, then the values, spilling into overflow
 * pages where the payload is bigger than the page's local share) into one buffer per requested column.
 * `columns` is a sequence of (record index, mode, must_be_present); modes:
 *   MODE_INT   integer values (serial types 1-6, 8, 9) as int64 plus a validity bitmap (NULL clears a bit);
 *   MODE_TEXT  TEXT and BLOB values as bytes (int32 offsets + data) plus a validity bitmap;
 *   MODE_CAST  TEXT and BLOB values as bytes, NULL read as b'' (SQL ifnull(CAST(c AS BLOB), X''));
 *   MODE_ROWID the row's rowid (an INTEGER PRIMARY KEY column, stored as NULL in the record);
 *   MODE_DICT  MODE_CAST's bytes dictionary-encoded while they are read: an int32 index a row into the
 *              distinct values (int32 offsets + data, in order of first appearance; NULL and b'' share the
 *              slot of b''), each value's bytes hashed and stored once, the rows' bytes never kept.
 * A record shorter than the table (ALTER TABLE ADD COLUMN) reads its missing columns as NULL, unless the
 * column is flagged must_be_present (a non-NULL default): then the scan declines.
 * Only rows with lo <= rowid < hi are read (None: unbounded); interior pages skip children out of range.
 *
 * Returns (status, rows, results). status 0: read; 1 (DECLINE): a value the mode does not take (a REAL, a
 * TEXT in an integer column, an integer in a text column, a missing column with a default, more than 2 GiB
 * of text); 2 (CORRUPT): anything out of the format (page type, page number out of range, a cell or a record
 * running past its page or payload, an overflow chain longer than its payload needs, a tree deeper than
 * MAX_DEPTH or visiting more pages than the file has). Running out of memory mid-walk declines too. Either way the caller reads the table through SQLite,
 * which gives the same rows or its own error. results: per column, for MODE_INT and MODE_ROWID
 * (values, validity or None, null count); for MODE_TEXT and MODE_CAST (offsets, data, validity or None, null
 * count, saw text, saw blob); for MODE_DICT (indices, offsets, data, distinct values). Buffers are objects
 * exposing the buffer protocol (zero-copy into pyarrow).
 *
 * The file is opened O_RDONLY and read with pread, in blocks of up to 64 KiB of consecutive pages (no mmap:
 * touched mapped pages would count in the process's RSS). The GIL is released while the tree is walked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODE_INT 0
#define MODE_TEXT 1
#define MODE_CAST 2
#define MODE_ROWID 3
#define MODE_DICT 4

#define ST_OK 0
#define ST_DECLINE 1
#define ST_CORRUPT 2
#define ST_NOMEM 3
#define ST_IO 4

#define MAX_DEPTH 40
#define MAX_PAYLOAD (1u << 30)
#define BLOCK_BYTES (64u * 1024)

/* ---- growable buffer exposed to Python through the buffer protocol ---- */

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
} BufObject;

static int buf_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    BufObject *b = (BufObject *)self;
    return PyBuffer_FillInfo(view, self, b->data, b->size, 1, flags);
}

static void buf_dealloc(PyObject *self) {
    free(((BufObject *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs buf_as_buffer = {buf_getbuffer, NULL};

static PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracelens.ingest._sqlite_pages.Buffer",
    .tp_basicsize = sizeof(BufObject),
    .tp_dealloc = buf_dealloc,
    .tp_as_buffer = &buf_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory of one column buffer (read through the buffer protocol).",
};

typedef struct {
    char *data;
    size_t len, cap;
} Vec;

static int vec_reserve(Vec *v, size_t extra) {
    if (v->len + extra <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 4096;
    while (cap < v->len + extra) cap *= 2;
    char *p = realloc(v->data, cap);
    if (!p) return -1;
    v->data = p;
    v->cap = cap;
    return 0;
}

/* ---- one requested column ---- */

typedef struct {
    long rec_index;
    int mode;
    int must_present;
    Vec values;   /* int64 values (MODE_INT, MODE_ROWID) or int32 offsets (MODE_TEXT, MODE_CAST) */
    Vec data;     /* bytes (MODE_TEXT, MODE_CAST) */
    Vec validity; /* bitmap, one bit a row */
    int64_t nulls;
    int saw_text, saw_blob;
    /* MODE_DICT: values holds the rows' int32 indices, data the distinct values' bytes */
    Vec dict_offsets;     /* int32 end offsets of the distinct values in data, after a leading 0 */
    uint64_t *slots;      /* open-addressing hash table: the value's hash's top 32 bits, then its index + 1
                             (0: a free slot), so that a probe reads one word */
    uint64_t *hashes;     /* hash of each distinct value (to place them again when the table grows) */
    uint32_t slot_mask;   /* table size - 1 (a power of two, at least twice the distinct values) */
    uint32_t distinct;
} Column;

typedef struct {
    int fd;
    uint32_t page_size, usable, page_count;
    uint32_t max_local, min_local; /* X and M of the file format, for table leaf cells */
    unsigned char *pages[MAX_DEPTH + 1];
    unsigned char *payload; /* assembled payload of a row that spills into overflow pages */
    size_t payload_cap;
    unsigned char *overflow_page;
    unsigned char *block; /* read-ahead: pages block_first .. block_first + block_pages - 1 */
    uint32_t block_first, block_pages, block_cap_pages;
    Column *cols;
    Py_ssize_t ncols;
    long max_index; /* highest record index read */
    int has_lo, has_hi;
    int64_t lo, hi;
    int64_t rows;
    size_t hint; /* the rows the caller expects (the buffers' first size) */
    uint64_t visited;
    int done;
    /* per-row scratch: serial type and offset of each record column up to max_index */
    uint64_t *types;
    uint64_t *offsets;
} Scan;

/* Page pgno in the read-ahead block of up to BLOCK_BYTES of consecutive pages, read there when it is not (one
 * pread serves the run of consecutive leaf pages a table is mostly made of, instead of one pread a page). The
 * pointer holds until the next block is read. */
static int block_page(Scan *s, uint32_t pgno, const unsigned char **out) {
    if (pgno < 1 || pgno > s->page_count) return ST_CORRUPT;
    if (pgno < s->block_first || pgno - s->block_first >= s->block_pages) {
        uint32_t want = s->block_cap_pages;
        if (want > s->page_count - pgno + 1) want = s->page_count - pgno + 1;
        size_t bytes = (size_t)want * s->page_size, got = 0;
        off_t at = (off_t)(pgno - 1) * s->page_size;
        s->block_pages = 0;
        while (got < bytes) {
            ssize_t n = pread(s->fd, s->block + got, bytes - got, at + (off_t)got);
            if (n < 0) {
                if (errno == EINTR) continue;
                return ST_IO;
            }
            if (n == 0) break; /* end of file: the pages read so far */
            got += (size_t)n;
        }
        s->block_first = pgno;
        s->block_pages = (uint32_t)(got / s->page_size);
        if (s->block_pages == 0) return ST_CORRUPT; /* short file */
    }
    *out = s->block + (size_t)(pgno - s->block_first) * s->page_size;
    return ST_OK;
}

/* Overflow page pgno: in the block when it is there, else read alone into s->overflow_page, so that the block
 * (which holds the leaf page of the cell being read) stays as it is. */
static int overflow_page(Scan *s, uint32_t pgno, const unsigned char **out) {
    if (pgno < 1 || pgno > s->page_count) return ST_CORRUPT;
    if (pgno >= s->block_first && pgno - s->block_first < s->block_pages) {
        *out = s->block + (size_t)(pgno - s->block_first) * s->page_size;
        return ST_OK;
    }
    size_t got = 0;
    off_t at = (off_t)(pgno - 1) * s->page_size;
    while (got < s->page_size) {
        ssize_t n = pread(s->fd, s->overflow_page + got, s->page_size - got, at + (off_t)got);
        if (n < 0) {
            if (errno == EINTR) continue;
            return ST_IO;
        }
        if (n == 0) return ST_CORRUPT; /* short file */
        got += (size_t)n;
    }
    *out = s->overflow_page;
    return ST_OK;
}

/* SQLite varint at p (at most 9 bytes, not past end): bytes used, 0 when it runs past end. */
static inline int get_varint(const unsigned char *p, const unsigned char *end, uint64_t *out) {
    if (p < end && p[0] < 0x80) { /* one byte: most payload sizes and serial types */
        *out = p[0];
        return 1;
    }
    uint64_t v = 0;
    if (end - p >= 9) { /* all nine bytes readable: no bound check per byte */
        for (int i = 0; i < 8; i++) {
            v = (v << 7) | (p[i] & 0x7f);
            if (!(p[i] & 0x80)) {
                *out = v;
                return i + 1;
            }
        }
        *out = (v << 8) | p[8];
        return 9;
    }
    for (int i = 0; i < 8; i++) {
        if (p + i >= end) return 0;
        v = (v << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    if (p + 8 >= end) return 0;
    *out = (v << 8) | p[8];
    return 9;
}

static inline uint32_t get_u32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint32_t get_u16(const unsigned char *p) { return ((uint32_t)p[0] << 8) | p[1]; }

static inline uint64_t serial_size(uint64_t t) {
    static const uint8_t sizes[12] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0};
    if (t < 12) return sizes[t];
    return (t - 12) / 2;
}

/* Serial types below 128 (one header byte: every type but TEXT and BLOB values over 57 bytes): the value's
 * size, BAD_TYPE for 10 and 11 (reserved, never written). */
#define BAD_TYPE 0xFF
static uint8_t small_sizes[128];

static void init_small_sizes(void) {
    for (int t = 0; t < 128; t++) small_sizes[t] = t == 10 || t == 11 ? BAD_TYPE : (uint8_t)serial_size((uint64_t)t);
}

/* Pages and payloads are read from buffers with READ_SLACK bytes after their end, so that an integer of 1 to 8
 * bytes is read with one 8-byte load whatever its place. */
#define READ_SLACK 8

/* The integer of serial type 1-6 (1, 2, 3, 4, 6 or 8 big-endian two's-complement bytes) at p: one 8-byte load,
 * byte-swapped, then an arithmetic shift that drops the bytes after the value and extends its sign. */
static inline int64_t read_be_int(const unsigned char *p, uint64_t t) {
    uint64_t w;
    memcpy(&w, p, 8);
    w = __builtin_bswap64(w);
    return (int64_t)w >> (64 - 8 * small_sizes[t]);
}

/* A NULL at `row` of a column: its validity bitmap is made on the first NULL (all rows before it valid), so
 * that columns without NULLs (most) never write one. */
static int grow_validity(Column *c, int64_t row, size_t hint_rows) {
    size_t need = (size_t)(row >> 3) + 1, want = need - c->validity.len;
    if (!c->validity.data && hint_rows / 8 + 1 > want) want = hint_rows / 8 + 1; /* once, not regrown */
    if (vec_reserve(&c->validity, want)) return ST_NOMEM;
    memset(c->validity.data + c->validity.len, 0xFF, need - c->validity.len);
    c->validity.len = need;
    return ST_OK;
}

static inline int mark_null(Column *c, int64_t row, size_t hint_rows) {
    if (c->validity.len <= (size_t)(row >> 3)) {
        int st = grow_validity(c, row, hint_rows);
        if (st) return st;
    }
    c->validity.data[row >> 3] &= (char)~(1u << (row & 7));
    c->nulls++;
    return ST_OK;
}

static inline uint64_t load_u64(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint64_t load_u32(const unsigned char *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* Hash of a value's bytes (eight at a time, the last eight overlapping; shorter values by two overlapping
 * loads, never a byte-wise copy), then a final mix; only ever compared within one scan. */
static inline uint64_t hash_bytes(const unsigned char *p, uint64_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
    if (n >= 8) {
        const unsigned char *last = p + n - 8;
        while (p < last) {
            h = (h ^ load_u64(p)) * 0xbf58476d1ce4e5b9ull;
            h ^= h >> 31;
            p += 8;
        }
        h = (h ^ load_u64(last)) * 0x94d049bb133111ebull;
    } else if (n >= 4) {
        h = (h ^ (load_u32(p) | (load_u32(p + n - 4) << 32))) * 0x94d049bb133111ebull;
    } else if (n) {
        h = (h ^ ((uint64_t)p[0] | ((uint64_t)p[n / 2] << 8) | ((uint64_t)p[n - 1] << 16))) * 0x94d049bb133111ebull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

#define HASH_TOP 0xFFFFFFFF00000000ull

/* Twice the slots, every distinct value placed again by its stored hash. */
static int dict_grow(Column *c) {
    uint64_t size = ((uint64_t)c->slot_mask + 1) * 2;
    if (size > ((uint64_t)1 << 31)) return ST_DECLINE;
    uint64_t *slots = calloc(size, sizeof(uint64_t));
    if (!slots) return ST_NOMEM;
    uint32_t mask = (uint32_t)(size - 1);
    for (uint32_t e = 0; e < c->distinct; e++) {
        uint64_t h = c->hashes[e];
        uint32_t at = (uint32_t)h & mask;
        while (slots[at]) at = (at + 1) & mask;
        slots[at] = (h & HASH_TOP) | (e + 1);
    }
    free(c->slots);
    c->slots = slots;
    c->slot_mask = mask;
    return ST_OK;
}

/* The index of the value v (len bytes) among the column's distinct values, added when new. */
static int dict_index(Column *c, const unsigned char *v, uint64_t len, int32_t *out) {
    uint64_t h = hash_bytes(v, len);
    const int32_t *ends = (const int32_t *)c->dict_offsets.data;
    uint32_t at = (uint32_t)h & c->slot_mask;
    for (;;) {
        uint64_t slot = c->slots[at];
        if (!slot) break;
        if (((slot ^ h) & HASH_TOP) == 0) {
            uint32_t e = (uint32_t)slot - 1;
            uint64_t start = (uint64_t)ends[e], stop = (uint64_t)ends[e + 1];
            if (stop - start == len && (len == 0 || memcmp(c->data.data + start, v, len) == 0)) {
                *out = (int32_t)e;
                return ST_OK;
            }
        }
        at = (at + 1) & c->slot_mask;
    }
    /* a new value: its bytes, its end offset, its hash, its slot */
    if (c->data.len + len > INT32_MAX || c->distinct >= INT32_MAX - 1) return ST_DECLINE;
    if (len) {
        if (vec_reserve(&c->data, len)) return ST_NOMEM;
        memcpy(c->data.data + c->data.len, v, len);
        c->data.len += len;
    }
    if (vec_reserve(&c->dict_offsets, 4)) return ST_NOMEM;
    int32_t end_offset = (int32_t)c->data.len;
    memcpy(c->dict_offsets.data + c->dict_offsets.len, &end_offset, 4);
    c->dict_offsets.len += 4;
    if ((c->distinct & (c->distinct + 1)) == 0 || c->distinct == 0) { /* 0, 1, 3, 7, ...: room for the next */
        uint64_t *grown = realloc(c->hashes, sizeof(uint64_t) * ((size_t)c->distinct + 1) * 2);
        if (!grown) return ST_NOMEM;
        c->hashes = grown;
    }
    c->hashes[c->distinct] = h;
    c->slots[at] = (h & HASH_TOP) | (c->distinct + 1);
    *out = (int32_t)c->distinct;
    c->distinct++;
    if ((uint64_t)c->distinct * 2 > (uint64_t)c->slot_mask + 1) return dict_grow(c);
    return ST_OK;
}

/* Decode one row's record (payload of `size` bytes at p, READ_SLACK readable bytes after it) into the
 * columns. Their fixed-width buffers have room for the row (reserve_rows, once a leaf page): written at the
 * row's place, their lengths set once a page. */
static int decode_record(Scan *s, const unsigned char *p, uint64_t size, int64_t rowid) {
    const unsigned char *end = p + size;
    uint64_t header_size;
    int n = get_varint(p, end, &header_size);
    if (!n || header_size > size || header_size < (uint64_t)n) return ST_CORRUPT;
    const unsigned char *h = p + n, *hend = p + header_size;
    uint64_t offset = header_size;
    long count = 0, wanted = s->max_index + 1;
    uint64_t *types = s->types, *offsets = s->offsets;
    while (h < hend && count < wanted) {
        uint64_t t = *h, len;
        if (t < 0x80) { /* one-byte serial type: its size from the table */
            h++;
            len = small_sizes[t];
            if (len == BAD_TYPE) return ST_CORRUPT;
        } else {
            int k = get_varint(h, hend, &t);
            if (!k) return ST_CORRUPT;
            h += k;
            len = serial_size(t); /* t >= 128: TEXT or BLOB */
            if (len > size) return ST_CORRUPT;
        }
        types[count] = t;
        offsets[count] = offset;
        offset += len; /* at most 32768 columns of at most 2^30 bytes: no overflow */
        count++;
    }
    if (offset > size) return ST_CORRUPT; /* a value read runs past the payload */
    int64_t row = s->rows;
    for (Py_ssize_t i = 0; i < s->ncols; i++) {
        Column *c = &s->cols[i];
        int st;
        if (c->mode == MODE_ROWID) {
            memcpy(c->values.data + (size_t)row * 8, &rowid, 8);
            continue;
        }
        uint64_t t = 0;
        const unsigned char *v = p;
        if (c->rec_index < count) {
            t = types[c->rec_index];
            v = p + offsets[c->rec_index];
        } else if (c->must_present) {
            return ST_DECLINE;
        }
        if (c->mode == MODE_INT) {
            int64_t x;
            if (t - 1 < 6) {
                x = read_be_int(v, t);
            } else if (t == 8 || t == 9) {
                x = (int64_t)t - 8;
            } else if (t == 0) {
                x = 0;
                if ((st = mark_null(c, row, s->hint))) return st;
            } else {
                return ST_DECLINE; /* a REAL, a TEXT or a BLOB */
            }
            memcpy(c->values.data + (size_t)row * 8, &x, 8);
            continue;
        }
        uint64_t len = 0;
        if (t >= 12) {
            len = (t - 12) / 2;
            if (t & 1)
                c->saw_text = 1;
            else
                c->saw_blob = 1;
        } else if (t != 0) {
            return ST_DECLINE; /* a number in a text column: SQLite's CAST would give its text */
        }
        if (c->mode == MODE_DICT) { /* NULL reads as b'' (len 0), as in MODE_CAST */
            int32_t index;
            if ((st = dict_index(c, v, len, &index))) return st;
            memcpy(c->values.data + (size_t)row * 4, &index, 4);
            continue;
        }
        if (c->data.len + len > INT32_MAX) return ST_DECLINE;
        if (len) {
            if (vec_reserve(&c->data, len)) return ST_NOMEM;
            memcpy(c->data.data + c->data.len, v, len);
            c->data.len += len;
        }
        int32_t end_offset = (int32_t)c->data.len;
        memcpy(c->values.data + (size_t)(row + 1) * 4, &end_offset, 4);
        if (c->mode == MODE_TEXT && t == 0 && (st = mark_null(c, row, s->hint))) return st;
    }
    s->rows++;
    return ST_OK;
}

/* Bytes a row of a column's values buffer takes, and the bytes before the first row's (the offsets' 0). */
static inline size_t value_width(const Column *c) { return c->mode == MODE_INT || c->mode == MODE_ROWID ? 8 : 4; }
static inline size_t value_lead(const Column *c) { return c->mode == MODE_TEXT || c->mode == MODE_CAST ? 4 : 0; }

/* Every column's values buffer: its length set to the rows read, and room for `extra` more rows. */
static int reserve_rows(Scan *s, size_t extra) {
    for (Py_ssize_t i = 0; i < s->ncols; i++) {
        Column *c = &s->cols[i];
        size_t width = value_width(c);
        c->values.len = (size_t)s->rows * width + value_lead(c);
        if (vec_reserve(&c->values, extra * width)) return ST_NOMEM;
    }
    return ST_OK;
}

/* One leaf cell at offset `at` of the leaf page `page`. */
static int leaf_cell(Scan *s, const unsigned char *page, uint32_t at) {
    const unsigned char *end = page + s->usable;
    const unsigned char *p = page + at;
    uint64_t payload, rowid_u;
    int n = get_varint(p, end, &payload);
    if (!n) return ST_CORRUPT;
    p += n;
    n = get_varint(p, end, &rowid_u);
    if (!n) return ST_CORRUPT;
    p += n;
    int64_t rowid = (int64_t)rowid_u;
    if (s->has_lo && rowid < s->lo) return ST_OK;
    if (s->has_hi && rowid >= s->hi) {
        s->done = 1;
        return ST_OK;
    }
    if (payload > MAX_PAYLOAD) return ST_CORRUPT;
    uint64_t local = payload;
    if (payload > s->max_local) {
        uint64_t k = s->min_local + (payload - s->min_local) % (s->usable - 4);
        local = k <= s->max_local ? k : s->min_local;
    }
    if ((uint64_t)(end - p) < local + (local < payload ? 4 : 0)) return ST_CORRUPT;
    if (local == payload) return decode_record(s, p, payload, rowid);
    /* spilled: the local part, then the chain of overflow pages (4-byte next page, then usable-4 bytes) */
    uint64_t per_page = s->usable - 4;
    uint64_t pages_needed = (payload - local + per_page - 1) / per_page, pages_read = 0;
    if (pages_needed >= s->page_count) return ST_CORRUPT; /* more overflow pages than the file holds */
    if (payload > s->payload_cap) {
        unsigned char *grown = realloc(s->payload, payload + READ_SLACK);
        if (!grown) return ST_NOMEM;
        memset(grown + payload, 0, READ_SLACK);
        s->payload = grown;
        s->payload_cap = payload;
    }
    memcpy(s->payload, p, local);
    uint64_t have = local;
    uint32_t next = get_u32(p + local);
    while (have < payload) {
        if (next == 0 || ++pages_read > pages_needed) return ST_CORRUPT;
        const unsigned char *page_of_chain;
        int st = overflow_page(s, next, &page_of_chain);
        if (st) return st;
        uint64_t take = payload - have < per_page ? payload - have : per_page;
        memcpy(s->payload + have, page_of_chain + 4, take);
        have += take;
        next = get_u32(page_of_chain);
    }
    if (next != 0) return ST_CORRUPT; /* the last page of a chain links nowhere: a cycle or a longer chain */
    return decode_record(s, s->payload, payload, rowid);
}

/* Walk the subtree at pgno (depth: index of the page buffer an interior page is copied into; a leaf page is
 * read where it lies in the read-ahead block). */
static int walk(Scan *s, uint32_t pgno, int depth) {
    if (depth > MAX_DEPTH) return ST_CORRUPT;
    if (++s->visited > s->page_count) return ST_CORRUPT; /* a cycle, or a page shared by two parents */
    const unsigned char *page;
    int st = block_page(s, pgno, &page);
    if (st) return st;
    uint32_t hdr = pgno == 1 ? 100 : 0;
    unsigned char type = page[hdr];
    if (type == 0x05) { /* its children are read into the block after it: a copy of its own */
        memcpy(s->pages[depth], page, s->page_size);
        page = s->pages[depth];
    }
    uint32_t ncells = get_u16(page + hdr + 3);
    uint32_t header_len = type == 0x05 ? 12 : 8;
    if (type != 0x05 && type != 0x0D) return ST_CORRUPT;
    if ((uint64_t)hdr + header_len + 2 * (uint64_t)ncells > s->usable) return ST_CORRUPT;
    const unsigned char *cells = page + hdr + header_len;
    uint32_t min_cell = hdr + header_len + 2 * ncells;
    if (type == 0x0D) {
        if ((st = reserve_rows(s, ncells))) return st;
        for (uint32_t i = 0; i < ncells && !s->done; i++) {
            uint32_t at = get_u16(cells + 2 * i);
            if (at < min_cell || at >= s->usable) return ST_CORRUPT;
            if ((st = leaf_cell(s, page, at))) return st;
        }
        return ST_OK;
    }
    uint32_t right = get_u32(page + hdr + 8);
    for (uint32_t i = 0; i < ncells && !s->done; i++) {
        uint32_t at = get_u16(cells + 2 * i);
        if (at < min_cell || at + 4 >= s->usable) return ST_CORRUPT;
        uint32_t child = get_u32(page + at);
        uint64_t key_u;
        if (!get_varint(page + at + 4, page + s->usable, &key_u)) return ST_CORRUPT;
        int64_t key = (int64_t)key_u; /* the child holds rowids <= key */
        if (s->has_lo && key < s->lo) continue;
        if ((st = walk(s, child, depth + 1))) return st;
        /* the buffer of this page is intact: children read into deeper buffers */
        /* later children hold rowids > key >= hi - 1 */
        if (s->has_hi && (s->hi == INT64_MIN || key >= s->hi - 1)) s->done = 1;
    }
    if (!s->done) return walk(s, right, depth + 1);
    return ST_OK;
}

/* After the walk: each values buffer's length set to the rows read; each validity bitmap (made on a column's
 * first NULL) covering every row, its bits past the last row cleared. */
static int finish_columns(Scan *s) {
    int st = reserve_rows(s, 0);
    if (st) return st;
    size_t bytes = (size_t)(s->rows + 7) / 8;
    for (Py_ssize_t i = 0; i < s->ncols; i++) {
        Column *c = &s->cols[i];
        if (!c->nulls) continue;
        if (c->validity.len < bytes) {
            if (vec_reserve(&c->validity, bytes - c->validity.len)) return ST_NOMEM;
            memset(c->validity.data + c->validity.len, 0xFF, bytes - c->validity.len);
            c->validity.len = bytes;
        }
        if (s->rows & 7) c->validity.data[bytes - 1] &= (char)((1u << (s->rows & 7)) - 1);
    }
    return ST_OK;
}

static PyObject *make_buf(Vec *v) {
    if (!v->data && !(v->data = malloc(1))) return PyErr_NoMemory(); /* pyarrow wants a non-NULL pointer */
    BufObject *b = PyObject_New(BufObject, &BufType);
    if (!b) return NULL;
    b->data = v->data;
    b->size = (Py_ssize_t)v->len;
    v->data = NULL;
    v->len = v->cap = 0;
    return (PyObject *)b;
}

static void free_scan(Scan *s) {
    for (int i = 0; i <= MAX_DEPTH; i++) free(s->pages[i]);
    free(s->payload);
    free(s->overflow_page);
    free(s->block);
    free(s->types);
    free(s->offsets);
    if (s->cols) {
        for (Py_ssize_t i = 0; i < s->ncols; i++) {
            free(s->cols[i].values.data);
            free(s->cols[i].data.data);
            free(s->cols[i].validity.data);
            free(s->cols[i].dict_offsets.data);
            free(s->cols[i].slots);
            free(s->cols[i].hashes);
        }
        free(s->cols);
    }
    if (s->fd >= 0) close(s->fd);
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj, *columns, *lo_obj, *hi_obj;
    unsigned long page_size, reserved, page_count, root;
    Py_ssize_t capacity;
    if (!PyArg_ParseTuple(args, "O&kkkkOOOn", PyUnicode_FSConverter, &path_obj, &page_size, &reserved,
                          &page_count, &root, &columns, &lo_obj, &hi_obj, &capacity))
        return NULL;
    Scan s;
    memset(&s, 0, sizeof s);
    s.fd = -1;
    PyObject *result = NULL;
    PyObject *seq = PySequence_Fast(columns, "columns must be a sequence");
    if (!seq) goto done;
    if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) || reserved > 255 ||
        page_size - reserved < 480 || page_count < 1 || page_count > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_ValueError, "page size, reserved bytes or page count out of range");
        goto done;
    }
    s.page_size = (uint32_t)page_size;
    s.usable = (uint32_t)(page_size - reserved);
    s.page_count = (uint32_t)page_count;
    s.max_local = s.usable - 35;
    s.min_local = ((s.usable - 12) * 32 / 255) - 23;
    s.has_lo = lo_obj != Py_None;
    s.has_hi = hi_obj != Py_None;
    if (s.has_lo && (s.lo = PyLong_AsLongLong(lo_obj)) == -1 && PyErr_Occurred()) goto done;
    if (s.has_hi && (s.hi = PyLong_AsLongLong(hi_obj)) == -1 && PyErr_Occurred()) goto done;
    s.ncols = PySequence_Fast_GET_SIZE(seq);
    s.cols = calloc(s.ncols ? (size_t)s.ncols : 1, sizeof(Column));
    if (!s.cols) {
        PyErr_NoMemory();
        goto done;
    }
    s.max_index = -1;
    for (Py_ssize_t i = 0; i < s.ncols; i++) {
        Column *c = &s.cols[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "lii", &c->rec_index, &c->mode,
                              &c->must_present))
            goto done;
        if (c->mode < MODE_INT || c->mode > MODE_DICT || c->rec_index < 0 || c->rec_index > 32767) {
            PyErr_SetString(PyExc_ValueError, "bad column spec");
            goto done;
        }
        if (c->mode != MODE_ROWID && c->rec_index > s.max_index) s.max_index = c->rec_index;
    }
    for (int i = 0; i <= MAX_DEPTH; i++)
        if (!(s.pages[i] = calloc(1, s.page_size + READ_SLACK))) goto nomem;
    if (!(s.overflow_page = calloc(1, s.page_size + READ_SLACK))) goto nomem;
    s.block_cap_pages = BLOCK_BYTES / s.page_size ? BLOCK_BYTES / s.page_size : 1;
    if (!(s.block = calloc(1, (size_t)s.block_cap_pages * s.page_size + READ_SLACK))) goto nomem;
    s.types = malloc(sizeof(uint64_t) * (size_t)(s.max_index + 2));
    s.offsets = malloc(sizeof(uint64_t) * (size_t)(s.max_index + 2));
    if (!s.types || !s.offsets) goto nomem;
    size_t hint = capacity > 0 ? (size_t)capacity : 0;
    s.hint = hint;
    for (Py_ssize_t i = 0; i < s.ncols; i++) {
        Column *c = &s.cols[i];
        size_t width = c->mode == MODE_INT || c->mode == MODE_ROWID ? 8 : 4;
        /* the hint is only a hint: where that much cannot be reserved, the buffers grow as rows come */
        if (vec_reserve(&c->values, width * (hint + 1))) {
            free(c->values.data);
            memset(&c->values, 0, sizeof c->values);
            if (vec_reserve(&c->values, 4096)) goto nomem;
        }
        if (c->mode == MODE_TEXT || c->mode == MODE_CAST) {
            int32_t zero = 0; /* offsets start with 0 */
            memcpy(c->values.data, &zero, 4);
            c->values.len = 4;
        }
        if (c->mode == MODE_DICT) {
            int32_t zero = 0;
            c->slot_mask = 1023;
            if (vec_reserve(&c->dict_offsets, 4) || !(c->slots = calloc(1024, sizeof(uint64_t)))) goto nomem;
            memcpy(c->dict_offsets.data, &zero, 4);
            c->dict_offsets.len = 4;
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    s.fd = open(PyBytes_AS_STRING(path_obj), O_RDONLY | O_CLOEXEC);
    if (s.fd < 0) {
        status = ST_IO;
    } else {
#ifdef POSIX_FADV_SEQUENTIAL
        posix_fadvise(s.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
        status = walk(&s, (uint32_t)root, 0);
    }
    if (status == ST_OK) status = finish_columns(&s);
    Py_END_ALLOW_THREADS
    /* out of memory mid-walk: the buffers are freed and SQLite gets its chance (it may need less) */
    if (status == ST_NOMEM) status = ST_DECLINE;
    if (status == ST_IO) status = ST_CORRUPT; /* the caller's SQLite read says what the I/O problem is */
    PyObject *results = PyList_New(0);
    if (!results) goto done;
    if (status == ST_OK) {
        for (Py_ssize_t i = 0; i < s.ncols; i++) {
            Column *c = &s.cols[i];
            PyObject *item = NULL, *values = NULL, *data = NULL, *validity = NULL;
            values = make_buf(&c->values);
            if (c->mode == MODE_DICT) {
                PyObject *offsets = make_buf(&c->dict_offsets);
                data = make_buf(&c->data);
                if (values && offsets && data)
                    item = Py_BuildValue("(OOOk)", values, offsets, data, (unsigned long)c->distinct);
                Py_XDECREF(values);
                Py_XDECREF(offsets);
                Py_XDECREF(data);
                if (!item || PyList_Append(results, item)) {
                    Py_XDECREF(item);
                    Py_DECREF(results);
                    goto done;
                }
                Py_DECREF(item);
                continue;
            }
            if (c->mode == MODE_TEXT || c->mode == MODE_CAST) data = make_buf(&c->data);
            if (c->nulls) {
                validity = make_buf(&c->validity);
            } else {
                validity = Py_None;
                Py_INCREF(Py_None);
            }
            if (values && validity && (data || !(c->mode == MODE_TEXT || c->mode == MODE_CAST))) {
                if (data)
                    item = Py_BuildValue("(OOOLii)", values, data, validity, (long long)c->nulls, c->saw_text,
                                         c->saw_blob);
                else
                    item = Py_BuildValue("(OOL)", values, validity, (long long)c->nulls);
            }
            Py_XDECREF(values);
            Py_XDECREF(data);
            Py_XDECREF(validity);
            if (!item || PyList_Append(results, item)) {
                Py_XDECREF(item);
                Py_DECREF(results);
                goto done;
            }
            Py_DECREF(item);
        }
    }
    result = Py_BuildValue("(iLN)", status, (long long)s.rows, results);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free_scan(&s);
    Py_XDECREF(seq);
    Py_DECREF(path_obj);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Read the rows of one table B-tree into column buffers (see the module's source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sqlite_pages", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sqlite_pages(void) {
    if (PyType_Ready(&BufType) < 0) return NULL;
    init_small_sizes();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "MODE_INT", MODE_INT) || PyModule_AddIntConstant(m, "MODE_TEXT", MODE_TEXT) ||
        PyModule_AddIntConstant(m, "MODE_CAST", MODE_CAST) || PyModule_AddIntConstant(m, "MODE_ROWID", MODE_ROWID) ||
        PyModule_AddIntConstant(m, "MODE_DICT", MODE_DICT) ||
        PyModule_AddIntConstant(m, "OK", ST_OK) || PyModule_AddIntConstant(m, "DECLINE", ST_DECLINE) ||
        PyModule_AddIntConstant(m, "CORRUPT", ST_CORRUPT)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
