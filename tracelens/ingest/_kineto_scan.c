/* Columnar scanner for Kineto event lists: the native engine of tracelens/ingest/kineto/ (native.py).
 *
 * scan_events(pieces, to_number, decode_string) reads the Kineto events of a block cut out by kineto.split
 * (a JSON list, or the block's bytes in place: a bare comma-separated sequence of events) and returns its complete ("X") events as columns (but
 * the profiler's own span, category "Trace", which the reader drops: counted, not a row), or None when the block is not exactly
 * what the typed msgspec decoder of kineto/msgspec_engine.py would accept (invalid JSON, a field of another JSON type,
 * an escaped key, ...). None sends the block to msgspec, which then gives the same table or the error
 * message; so this scanner only has to be exact on well-typed input, and it never guesses.
 *
 * Two phases. The first walks the bytes without the GIL (other blocks are scanned on other threads at the
 * same time): numbers are parsed, strings are located (offset, length) but not decoded, and the row string
 * fields (category, name, sync kind) get block-local codes, one per distinct JSON text, in a hash table of
 * plain C. The second, with the GIL, makes one Python str per distinct string, and turns numbers written as
 * strings into floats through kineto.blocks.to_number.
 *
 * Numbers are the correctly rounded doubles Python's float() and msgspec give, bit for bit, on every
 * platform, in plain double and 64-bit integer arithmetic (no long double: on ARM64 macOS and with MSVC it
 * is no wider than double):
 * integers that fit int64 are converted once; Clinger's fast path takes a mantissa <= 2^53 times an exact
 * power of ten up to 1e22; the Eisel-Lemire algorithm takes any 19-digit mantissa (Kineto's absolute
 * timestamps, 1712195495519689.047) with a decimal exponent in [POW5_MIN_Q, POW5_MAX_Q]. A number neither can
 * decide (rare: an exponent outside the table, or more than 19 digits whose first 19 do not settle the
 * double) is deferred: phase two parses its text with PyOS_string_to_double, Python's own correctly rounded
 * float(). That number alone leaves the fast path; its block is never declined for it.
 *
 * Every read is bounds-checked against the end of the buffer; nesting deeper than MAX_DEPTH declines.
 *
 * prepared_sizes and prepare_scanned then make scan_events' columns the block the reader keeps (the columns
 * of kineto/native.py and the per-row steps of kineto/prepare.py, the same values) in one pass over the rows,
 * into numpy columns the caller allocates; prepare_rows does prepare.py's per-row steps for the other blocks.
 *
 * Speed: phase one is bound less by its instructions than by the chain through s->p, where each token's end
 * waits for the bytes just loaded (a string's quote, a number's last digit). So Kineto's own bytes are
 * recognized where they are fixed (the layout between events, the keys in Kineto's member orders, its
 * categories, its timestamps' shape) or predictable (an id as long as the same field's last one), each by a
 * compare on a branch nearly always taken, after which s->p moves by a constant; every other byte goes
 * through the general readers (out of line), which read it as msgspec would. benchmarks/bench_kineto_scan.py
 * times it; benchmarks/results/kineto_scan_kscan7.md and kscn10.md have the measures behind each of these
 * choices (kscn10.md: those counted in instructions, and the wider SIMD string stops tried and dropped).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define HAVE_SSE2 1
#endif
#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
#include <intrin.h>
#endif

/* TRACELENS_PORTABLE_ARITHMETIC: the plain C 64x64->128 multiply and leading-zero count, instead of the
 * compiler's (__int128, __builtin_clzll, _umul128, __umulh, _BitScanReverse64); the tests build with it. */
#if !defined(TRACELENS_PORTABLE_ARITHMETIC) && defined(__SIZEOF_INT128__)
#define HAVE_INT128 1
#endif
#if !defined(TRACELENS_PORTABLE_ARITHMETIC) && defined(__GNUC__)
#define HAVE_BUILTIN_CLZLL 1
#endif
#if !defined(TRACELENS_PORTABLE_ARITHMETIC) && defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
#define HAVE_MSVC_INTRINSICS 1
#endif
/* Clinger's fast path needs double operations rounded to double. Where double arithmetic is carried out in
 * a wider format (FLT_EVAL_METHOD 2: x87 extended precision, on 32-bit x86 without SSE2 or with
 * -mfpmath=387; -1: unknown), m / 10^k would be rounded twice: there Eisel-Lemire, in integers only, takes
 * those numbers too. 16, 32 and 64 (ISO/IEC TS 18661-3) evaluate double as double; MSVC on x64 and ARM64
 * has no wider format for double. */
#if (defined(FLT_EVAL_METHOD) && (FLT_EVAL_METHOD == 0 || FLT_EVAL_METHOD == 1 || FLT_EVAL_METHOD == 16 || \
                                  FLT_EVAL_METHOD == 32 || FLT_EVAL_METHOD == 64)) ||                        \
    (defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64)))
#define HAVE_DOUBLE_ROUNDING_FREE_ARITHMETIC 1
#endif

/* For the few small functions every member of every event goes through: GCC's inliner leaves them calls.
 * NOINLINE: for the general paths behind them, kept out of the many places they are inlined into (the
 * scanner's hot code then fits the instruction caches). */
#if defined(__GNUC__)
#define ALWAYS_INLINE __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))
#else
#define ALWAYS_INLINE
#define NOINLINE
#endif

/* Runs of up to eight digits read as one little-endian word (scan_number, GCC and Clang); elsewhere digit by
 * digit, as TRACELENS_NO_SWAR (tests) builds it. The module's WORD_DIGITS says which. */
#if !defined(TRACELENS_NO_SWAR) && defined(__GNUC__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_LITTLE_ENDIAN_LOADS 1
#endif

#define OK 0
#define DECLINE 1  /* the caller decodes the block with msgspec instead */
#define NO_MEMORY 2
#define DEFER 3    /* scan_number: valid, but left for phase two to parse (never returned past read_float) */
#define MAX_DEPTH 512

/* Float columns of a complete event: the fields, order and KEY_IS keys of kineto/fields.py (NATIVE_FLOATS,
 * ARG_FIELDS); tests/test_kineto_native.py checks this file against it. */
enum {
    F_TS, F_DUR, F_PID, F_TID, F_CORRELATION, F_EXTERNAL_ID, F_EXTERNAL_ID_OLD, F_DEVICE, F_STREAM, F_BYTES,
    F_REGISTERS, F_SHARED_MEMORY, F_OCCUPANCY_PCT, F_GRID_X, F_GRID_Y, F_GRID_Z, F_BLOCK_X, F_BLOCK_Y, F_BLOCK_Z,
    N_FLOATS
};
/* The first N_ROW_FLOATS float fields are read on nearly every event: a column each, a value per complete
 * event. The others (external_id_old and the GPU-side fields, NaN on the nine events in ten that are host
 * events) are kept in sparse records, one per complete event holding one of them, with its row: writing them
 * into full columns cost a page fault per 512 rows of each, for NaNs. kineto/fields.py: NATIVE_ROW_FLOATS,
 * NATIVE_SPARSE_FLOATS. */
#define N_ROW_FLOATS F_EXTERNAL_ID_OLD
#define N_SPARSE_FLOATS (N_FLOATS - N_ROW_FLOATS)
/* The op fields (kineto/fields.py OP_FIELDS: NATIVE_OP_FLOATS, NATIVE_OP_STRINGS): few events hold one, so
 * they are kept for those events only, in op records, not in every row. While an event is scanned they sit
 * after its row fields, at OP_F(k) and OP_S(k). */
enum { OF_FLOPS, OF_MSG_IN_ELEMS, OF_MSG_OUT_ELEMS, OF_GROUP_SIZE, N_OP_FLOATS };
enum { OS_INPUT_DIMS, OS_INPUT_DIMS_OLD, OS_INPUT_TYPES, OS_CONCRETE_INPUTS, OS_MSG_DTYPE, OS_COLLECTIVE_NAME,
       OS_PROCESS_GROUP, OS_GROUP_RANKS, N_OP_STRINGS };
#define OP_F(k) (N_FLOATS + (k))
#define OP_S(k) (N_STRINGS + (k))
#define N_EVENT_FLOATS (N_FLOATS + N_OP_FLOATS)
#define N_EVENT_STRINGS (N_STRINGS + N_OP_STRINGS)
typedef char deferred_fields_fit_in_32_bits[N_EVENT_FLOATS <= 32 ? 1 : -1];
/* String columns, returned as int32 codes into a list of distinct strings (-1: absent or null): the TEXT fields
 * of kineto/fields.py (NATIVE_STRINGS). */
enum { S_CAT, S_NAME, S_SYNC_KIND, N_STRINGS };

enum { PH_COMPLETE, PH_FLOW, PH_INSTANT, PH_METADATA, PH_OTHER };

#define SPAN_PRESENT 1
#define SPAN_ESCAPED 2
#define SPAN_NON_ASCII 4 /* holds a byte >= 0x80: validated as UTF-8 where msgspec decodes the string */
#define SPAN_NUMBER 8    /* a JSON number's text, deferred by scan_number: parsed in phase two */
#define SPAN_RAW 16      /* a whole JSON value's text (a JSON field), taken as it is written */

typedef struct {
    const unsigned char *text; /* first byte after the opening quote (the piece stays alive for the call) */
    int32_t length;            /* bytes before the closing quote */
    int32_t flags;
} Span;

typedef struct {
    int64_t row; /* -1: a deferred number of an event that is not kept, parsed only to check its range; for a
                  * sparse field (N_ROW_FLOATS <= field < N_FLOATS) the index of its sparse record, for an op
                  * field (field >= N_FLOATS) that of its op record */
    int32_t field;
    int32_t unused;
    Span text;
} NumberText; /* a float field written as a JSON string ("stream 7", "0x0") or a deferred JSON number */

typedef struct {
    const unsigned char *text;
    int32_t length;
    int32_t code;
    uint64_t hash;
} Slot;

/* The distinct texts of one row string field, found in phase one (plain C, no GIL): a hash table of the
 * spans keyed by their JSON text, and the first span of each code, in code order (phase two decodes each
 * once). */
typedef struct {
    Slot *slots;
    size_t capacity, used; /* capacity: a power of two (0 before the first text), used * 2 <= capacity */
    Span *spans;           /* capacity / 2 of them */
} SpanTable;

static inline uint64_t multiply_64x64(uint64_t a, uint64_t b, uint64_t *high);

static inline uint64_t load_64(const unsigned char *p) { uint64_t word; memcpy(&word, p, 8); return word; }
static inline uint32_t load_32(const unsigned char *p) { uint32_t word; memcpy(&word, p, 4); return word; }

/* Both halves of a * b folded into one word: every bit of each input reaches the low bits the table reads. */
static inline ALWAYS_INLINE uint64_t fold_multiply(uint64_t a, uint64_t b) {
    uint64_t high, low = multiply_64x64(a, b, &high);
    return low ^ high;
}

/* Sixteen bytes a step, then the last (up to) sixteen, every load of a constant width inside the string (the
 * wyhash scheme). The earlier version copied the string's last bytes with a memcpy of variable length into
 * a word and read it back: a store-forwarding stall on every string, a fifth of the scanner's time. */
static uint64_t hash_bytes(const unsigned char *p, int32_t n) {
    const uint64_t k0 = UINT64_C(0xa0761d6478bd642f), k1 = UINT64_C(0xe7037ed1a0b428db);
    uint64_t seed = UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)(uint32_t)n, a, b;
    if (n > 16) {
        const unsigned char *last = p + n - 16;
        while (p < last) {
            seed = fold_multiply(load_64(p) ^ k0, load_64(p + 8) ^ seed);
            p += 16;
        }
        a = load_64(last), b = load_64(last + 8);
    } else if (n >= 8) {
        a = load_64(p), b = load_64(p + n - 8);
    } else if (n >= 4) {
        a = load_32(p), b = load_32(p + n - 4);
    } else if (n > 0) {
        a = (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1], b = 0;
    } else {
        a = b = 0;
    }
    return fold_multiply(k1 ^ (uint64_t)(uint32_t)n, fold_multiply(a ^ k0, b ^ seed));
}

/* Whether the n bytes at a and b are equal: words compared inline (memcmp is a library call on every
 * string a table looks up). */
static inline ALWAYS_INLINE int same_text(const unsigned char *a, const unsigned char *b, int32_t n) {
#ifdef HAVE_SSE2
    if (n >= 16) { /* sixteen bytes a step, the last sixteen overlapping */
        int32_t i = 0;
        for (; i + 16 < n; i += 16)
            if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + i)),
                                                 _mm_loadu_si128((const __m128i *)(b + i)))) != 0xFFFF)
                return 0;
        return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + n - 16)),
                                                _mm_loadu_si128((const __m128i *)(b + n - 16)))) == 0xFFFF;
    }
#endif
    if (n >= 8) {
        int32_t i = 0;
        for (; i + 8 < n; i += 8)
            if (load_64(a + i) != load_64(b + i)) return 0;
        return load_64(a + n - 8) == load_64(b + n - 8);
    }
    if (n >= 4) return load_32(a) == load_32(b) && load_32(a + n - 4) == load_32(b + n - 4);
    for (int32_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* The code of a present span's text in t: >= 0, or -1 out of memory. */
static int32_t span_code(SpanTable *t, Span span) {
    uint64_t hash = hash_bytes(span.text, span.length);
    size_t j;
    if ((t->used + 1) * 2 > t->capacity) { /* grow (and rehash) before inserting: room for one more */
        size_t capacity = t->capacity ? t->capacity * 2 : 256;
        Slot *slots = PyMem_RawCalloc(capacity, sizeof(Slot));
        Span *spans = slots == NULL ? NULL : PyMem_RawRealloc(t->spans, capacity / 2 * sizeof(Span));
        if (spans == NULL) {
            PyMem_RawFree(slots);
            return -1;
        }
        for (size_t i = 0; i < t->capacity; i++) {
            if (t->slots[i].text == NULL) continue;
            size_t k = t->slots[i].hash & (capacity - 1);
            while (slots[k].text != NULL) k = (k + 1) & (capacity - 1);
            slots[k] = t->slots[i];
        }
        PyMem_RawFree(t->slots);
        t->slots = slots;
        t->spans = spans;
        t->capacity = capacity;
    }
    j = hash & (t->capacity - 1);
    while (t->slots[j].text != NULL) {
        Slot *slot = &t->slots[j];
        if (slot->hash == hash && slot->length == span.length && same_text(slot->text, span.text, span.length))
            return slot->code;
        j = (j + 1) & (t->capacity - 1);
    }
    t->slots[j].text = span.text;
    t->slots[j].length = span.length;
    t->slots[j].hash = hash;
    t->slots[j].code = (int32_t)t->used; /* used < capacity / 2, far below INT32_MAX for any block */
    t->spans[t->used] = span;
    return (int32_t)t->used++;
}

/* How scan_number decided the value of its last number (reported by _parse_number, for tests). */
enum { PATH_INTEGER, PATH_ZERO, PATH_CLINGER, PATH_EISEL_LEMIRE, PATH_DEFERRED, PATH_INTEGER_AND_FRACTION };

/* counted_sizes' counters: category codes -1 to N_COUNTED_CATEGORIES - 2 (a block has a few dozen at most) */
#define N_COUNTED_CATEGORIES 64

/* The categories read_category recognizes by their bytes. */
enum { KNOWN_NONE, KNOWN_CPU_OP, KNOWN_AC2G, KNOWN_CUDA_RUNTIME, KNOWN_KERNEL, KNOWN_FWDBWD, KNOWN_GPU_MEMCPY, N_KNOWN };

#if defined(HAVE_SSE2) && defined(HAVE_LITTLE_ENDIAN_LOADS)
#define HAVE_FLOW_TEMPLATES 1
#define FLOW_CHUNKS 8 /* a flow's bytes after its "ph" member, through its '}': at most 16 * FLOW_CHUNKS */
#define FLOW_BYTES (16 * FLOW_CHUNKS)
#define FLOW_SET_BITS 4
/* One shape of flow event as Kineto writes it (flow_template_build): each byte's range [lo, hi] (a constant
 * byte, a digit, a first digit 1-9; 0-255 past the event's end), `length` bytes through the '}'. key: the
 * shape's digits in its first 48 bytes and its phase (flow_template_key), 0 where empty. */
typedef struct {
    uint64_t key;
    int32_t length;
    unsigned char lo[FLOW_BYTES], hi[FLOW_BYTES];
} FlowTemplate;
#endif

/* A name the block has coded (read_name): the first NAME_KEY_BYTES bytes after its opening quote (the name's,
 * and for a shorter one its closing quote and what follows it: Kineto's pid and tid), where its first
 * occurrence is, its length and its code in tables[S_NAME]. Empty: all zero (no NAME_KEY_BYTES after a quote
 * are all NUL with a quote first). */
#define NAME_SET_BITS 8
#define NAME_KEY_BYTES 16
typedef struct {
    uint64_t key[NAME_KEY_BYTES / 8];
    const unsigned char *text;
    int32_t length, code;
} NameSlot;

typedef struct {
    const unsigned char *p, *end;
    double *floats[N_ROW_FLOATS]; /* a column per row float field, one value per complete event: the reader
                                   * takes each column as it is (no gather out of rows) */
    int32_t *codes[N_STRINGS]; /* a column per row string field: its code in tables[k], -1 when absent */
    SpanTable tables[N_STRINGS];
    size_t rows, capacity;
    NumberText *texts;
    size_t n_texts, texts_capacity;
    int64_t *op_rows; /* op records: the row of each complete event holding an op field, and its op fields */
    double *op_floats;  /* N_OP_FLOATS per record */
    Span *op_strings;   /* N_OP_STRINGS per record */
    size_t n_ops, ops_capacity;
    int64_t *sparse_rows;  /* sparse records: the row of each complete event holding a sparse float field, */
    double *sparse_floats; /* and its N_SPARSE_FLOATS fields (NaN where missing) */
    size_t n_sparse, sparse_capacity;
    int64_t counts[5]; /* by PH_* */
    Span number;       /* the text of the last number scan_number deferred */
    int path;          /* PATH_*: how scan_number decided its last number */
    uint32_t deferred; /* bit per float field of the event being scanned whose number was deferred */
    Span deferred_text[N_EVENT_FLOATS];
    unsigned char lengths[N_EVENT_FLOATS]; /* read_id: the digits of each field's last integer (1-8; 0: none) */
    unsigned char skipped_lengths[3];      /* skip_id: the same for the ids skipped (SKIP_*) */
    uint64_t length_masks[N_EVENT_FLOATS]; /* each length's digit bytes as a mask (length_mask), kept with it */
    uint64_t skipped_masks[3];
    int32_t known_categories[N_KNOWN]; /* each recognized category's code + 1 (0: none yet) */
    unsigned char category_lengths[N_KNOWN][2]; /* read_row_id_or_text: the last pid and tid length by category */
    uint64_t category_masks[N_KNOWN][2];
    int convert_all; /* scan_event reads an event again: no flow sequence (CHECKED_ONLY) */
    /* What prepared_sizes reads, counted as each row is stored (counted_sizes then folds them with the kind
     * tables, instead of that pass over the rows): rows by category code + 1 (0: none), those of them with a
     * correlation and a pid, the largest |ts| (NaN: a ts missing). `uncounted`: a category code beyond the
     * counters, or a ts, correlation or pid that phase two sets (deferred, text): no counts then. */
    uint64_t category_counts[N_COUNTED_CATEGORIES]; /* rows + those linked << 32: one add a row */
    double max_abs_ts;
    int uncounted;
#ifdef HAVE_FLOW_TEMPLATES
    FlowTemplate flow_templates[1 << FLOW_SET_BITS][2]; /* flow_template_skip's: two ways a set */
#endif
    int64_t flow_template_hits; /* the flow events it took (for tests: _flow_templates) */
    NameSlot names[1 << NAME_SET_BITS]; /* read_name's: one a set */
    int64_t name_hits;                  /* the names it took (for tests: _name_cache) */
} Scanner;

static inline int is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* Called before and after every key and value: most find no whitespace (Kineto writes its events' members
 * without any), which one compare decides; runs of sixteen bytes and more (other layouts' indentation) go
 * sixteen at a time. */
static inline ALWAYS_INLINE void skip_space(Scanner *s) {
    const unsigned char *p = s->p, *end = s->end;
    if (p >= end || *p > ' ') return;
#ifdef HAVE_SSE2
    while (end - p >= 16) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)p);
        __m128i space = _mm_or_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\n')));
        space = _mm_or_si128(space, _mm_or_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('\r')),
                                                 _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\t'))));
        unsigned other = ~(unsigned)_mm_movemask_epi8(space) & 0xFFFFu;
        if (other) {
            s->p = p + __builtin_ctz(other);
            return;
        }
        p += 16;
    }
#endif
    while (p < end && is_space(*p)) p++;
    s->p = p;
}

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static inline int is_hex(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The first '"', '\\' or control character at or after p (end if none); *high gets a nonzero bit when a
 * byte >= 0x80 was passed. */
static inline const unsigned char *string_stop(const unsigned char *p, const unsigned char *end, int *high) {
#ifdef HAVE_SSE2
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), control = _mm_set1_epi8(0x1f);
    while (end - p >= 16) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)p);
        __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash));
        stop = _mm_or_si128(stop, _mm_cmpeq_epi8(_mm_max_epu8(chunk, control), control)); /* byte <= 0x1f */
        int mask = _mm_movemask_epi8(stop);
        if (mask) {
            unsigned before = ((unsigned)mask & (0u - (unsigned)mask)) - 1u; /* the bytes before the stop */
            *high |= _mm_movemask_epi8(chunk) & (int)before;
            return p + __builtin_ctz((unsigned)mask);
        }
        *high |= _mm_movemask_epi8(chunk);
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20) {
        *high |= *p & 0x80;
        p++;
    }
    return p;
}

static inline int hex_value(unsigned char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* The UTF-16 code unit of the \uXXXX escape at p (p at the 'u', 4 hex digits checked by the caller). */
static inline unsigned code_unit(const unsigned char *p) {
    return (unsigned)(hex_value(p[1]) << 12 | hex_value(p[2]) << 8 | hex_value(p[3]) << 4 | hex_value(p[4]));
}

/* Strict UTF-8, as Python decodes it: no overlong forms, no surrogates, nothing above U+10FFFF. */
static int valid_utf8(const unsigned char *p, int32_t n) {
    const unsigned char *end = p + n;
    while (p < end) {
        unsigned char c = *p;
        int more;
        unsigned char low = 0x80, high = 0xBF;
        if (c < 0x80) { p++; continue; }
        if (c >= 0xC2 && c <= 0xDF) more = 1;
        else if (c >= 0xE0 && c <= 0xEF) { more = 2; if (c == 0xE0) low = 0xA0; if (c == 0xED) high = 0x9F; }
        else if (c >= 0xF0 && c <= 0xF4) { more = 3; if (c == 0xF0) low = 0x90; if (c == 0xF4) high = 0x8F; }
        else return 0;
        if (end - p <= more || p[1] < low || p[1] > high) return 0;
        for (int i = 2; i <= more; i++)
            if (p[i] < 0x80 || p[i] > 0xBF) return 0;
        p += more + 1;
    }
    return 1;
}

/* s->p at the opening quote; on success s->p is past the closing quote. */
static inline ALWAYS_INLINE int scan_string(Scanner *s, Span *out) {
    const unsigned char *start = s->p + 1, *p = start, *end = s->end;
    int escaped = 0, high = 0;
    for (;;) {
        p = string_stop(p, end, &high);
        if (p >= end) return DECLINE;
        if (*p == '"') break;
        if (*p < 0x20) return DECLINE; /* raw control characters are not JSON */
        escaped = 1;
        p++;
        if (p >= end) return DECLINE;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u': {
            unsigned unit;
            if (end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4])) return DECLINE;
            unit = code_unit(p);
            p += 5;
            if (unit >= 0xDC00 && unit <= 0xDFFF) return DECLINE; /* a low surrogate alone */
            if (unit >= 0xD800 && unit <= 0xDBFF) {              /* must be followed by its low half */
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !is_hex(p[2]) || !is_hex(p[3]) ||
                    !is_hex(p[4]) || !is_hex(p[5]))
                    return DECLINE;
                unit = code_unit(p + 1);
                if (unit < 0xDC00 || unit > 0xDFFF) return DECLINE;
                p += 6;
            }
            break;
        }
        default:
            return DECLINE;
        }
    }
    if (p - start > INT32_MAX) return DECLINE;
    out->text = start;
    out->length = (int32_t)(p - start);
    out->flags = SPAN_PRESENT | (escaped ? SPAN_ESCAPED : 0) | (high ? SPAN_NON_ASCII : 0);
    s->p = p + 1;
    return OK;
}

/* --- decimal to double, correctly rounded ---------------------------------------------------------------- */

#ifdef HAVE_DOUBLE_ROUNDING_FREE_ARITHMETIC
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#endif

/* 5^q as a 128-bit significand {high, low} with its top bit set, for q in [POW5_MIN_Q, POW5_MAX_Q]: truncated
 * for q >= 0 and q < -27, rounded up for -27 <= q < 0 (the table the Eisel-Lemire proofs are made for).
 * tests/test_kineto_native.py derives every entry again from that definition. Numbers with a decimal
 * exponent outside the range are deferred: Kineto writes exponents from about -20 to 0. */
#define POW5_MIN_Q (-64)
#define POW5_MAX_Q 64
static const uint64_t POW5_128[POW5_MAX_Q - POW5_MIN_Q + 1][2] = {
    {0xa87fea27a539e9a5, 0x3f2398d747b36224}, {0xd29fe4b18e88640e, 0x8eec7f0d19a03aad}, /* -64, -63 */
    {0x83a3eeeef9153e89, 0x1953cf68300424ac}, {0xa48ceaaab75a8e2b, 0x5fa8c3423c052dd7}, /* -62, -61 */
    {0xcdb02555653131b6, 0x3792f412cb06794d}, {0x808e17555f3ebf11, 0xe2bbd88bbee40bd0}, /* -60, -59 */
    {0xa0b19d2ab70e6ed6, 0x5b6aceaeae9d0ec4}, {0xc8de047564d20a8b, 0xf245825a5a445275}, /* -58, -57 */
    {0xfb158592be068d2e, 0xeed6e2f0f0d56712}, {0x9ced737bb6c4183d, 0x55464dd69685606b}, /* -56, -55 */
    {0xc428d05aa4751e4c, 0xaa97e14c3c26b886}, {0xf53304714d9265df, 0xd53dd99f4b3066a8}, /* -54, -53 */
    {0x993fe2c6d07b7fab, 0xe546a8038efe4029}, {0xbf8fdb78849a5f96, 0xde98520472bdd033}, /* -52, -51 */
    {0xef73d256a5c0f77c, 0x963e66858f6d4440}, {0x95a8637627989aad, 0xdde7001379a44aa8}, /* -50, -49 */
    {0xbb127c53b17ec159, 0x5560c018580d5d52}, {0xe9d71b689dde71af, 0xaab8f01e6e10b4a6}, /* -48, -47 */
    {0x9226712162ab070d, 0xcab3961304ca70e8}, {0xb6b00d69bb55c8d1, 0x3d607b97c5fd0d22}, /* -46, -45 */
    {0xe45c10c42a2b3b05, 0x8cb89a7db77c506a}, {0x8eb98a7a9a5b04e3, 0x77f3608e92adb242}, /* -44, -43 */
    {0xb267ed1940f1c61c, 0x55f038b237591ed3}, {0xdf01e85f912e37a3, 0x6b6c46dec52f6688}, /* -42, -41 */
    {0x8b61313bbabce2c6, 0x2323ac4b3b3da015}, {0xae397d8aa96c1b77, 0xabec975e0a0d081a}, /* -40, -39 */
    {0xd9c7dced53c72255, 0x96e7bd358c904a21}, {0x881cea14545c7575, 0x7e50d64177da2e54}, /* -38, -37 */
    {0xaa242499697392d2, 0xdde50bd1d5d0b9e9}, {0xd4ad2dbfc3d07787, 0x955e4ec64b44e864}, /* -36, -35 */
    {0x84ec3c97da624ab4, 0xbd5af13bef0b113e}, {0xa6274bbdd0fadd61, 0xecb1ad8aeacdd58e}, /* -34, -33 */
    {0xcfb11ead453994ba, 0x67de18eda5814af2}, {0x81ceb32c4b43fcf4, 0x80eacf948770ced7}, /* -32, -31 */
    {0xa2425ff75e14fc31, 0xa1258379a94d028d}, {0xcad2f7f5359a3b3e, 0x096ee45813a04330}, /* -30, -29 */
    {0xfd87b5f28300ca0d, 0x8bca9d6e188853fc}, {0x9e74d1b791e07e48, 0x775ea264cf55347e}, /* -28, -27 */
    {0xc612062576589dda, 0x95364afe032a819e}, {0xf79687aed3eec551, 0x3a83ddbd83f52205}, /* -26, -25 */
    {0x9abe14cd44753b52, 0xc4926a9672793543}, {0xc16d9a0095928a27, 0x75b7053c0f178294}, /* -24, -23 */
    {0xf1c90080baf72cb1, 0x5324c68b12dd6339}, {0x971da05074da7bee, 0xd3f6fc16ebca5e04}, /* -22, -21 */
    {0xbce5086492111aea, 0x88f4bb1ca6bcf585}, {0xec1e4a7db69561a5, 0x2b31e9e3d06c32e6}, /* -20, -19 */
    {0x9392ee8e921d5d07, 0x3aff322e62439fd0}, {0xb877aa3236a4b449, 0x09befeb9fad487c3}, /* -18, -17 */
    {0xe69594bec44de15b, 0x4c2ebe687989a9b4}, {0x901d7cf73ab0acd9, 0x0f9d37014bf60a11}, /* -16, -15 */
    {0xb424dc35095cd80f, 0x538484c19ef38c95}, {0xe12e13424bb40e13, 0x2865a5f206b06fba}, /* -14, -13 */
    {0x8cbccc096f5088cb, 0xf93f87b7442e45d4}, {0xafebff0bcb24aafe, 0xf78f69a51539d749}, /* -12, -11 */
    {0xdbe6fecebdedd5be, 0xb573440e5a884d1c}, {0x89705f4136b4a597, 0x31680a88f8953031}, /* -10, -9 */
    {0xabcc77118461cefc, 0xfdc20d2b36ba7c3e}, {0xd6bf94d5e57a42bc, 0x3d32907604691b4d}, /* -8, -7 */
    {0x8637bd05af6c69b5, 0xa63f9a49c2c1b110}, {0xa7c5ac471b478423, 0x0fcf80dc33721d54}, /* -6, -5 */
    {0xd1b71758e219652b, 0xd3c36113404ea4a9}, {0x83126e978d4fdf3b, 0x645a1cac083126ea}, /* -4, -3 */
    {0xa3d70a3d70a3d70a, 0x3d70a3d70a3d70a4}, {0xcccccccccccccccc, 0xcccccccccccccccd}, /* -2, -1 */
    {0x8000000000000000, 0x0000000000000000}, {0xa000000000000000, 0x0000000000000000}, /* 0, 1 */
    {0xc800000000000000, 0x0000000000000000}, {0xfa00000000000000, 0x0000000000000000}, /* 2, 3 */
    {0x9c40000000000000, 0x0000000000000000}, {0xc350000000000000, 0x0000000000000000}, /* 4, 5 */
    {0xf424000000000000, 0x0000000000000000}, {0x9896800000000000, 0x0000000000000000}, /* 6, 7 */
    {0xbebc200000000000, 0x0000000000000000}, {0xee6b280000000000, 0x0000000000000000}, /* 8, 9 */
    {0x9502f90000000000, 0x0000000000000000}, {0xba43b74000000000, 0x0000000000000000}, /* 10, 11 */
    {0xe8d4a51000000000, 0x0000000000000000}, {0x9184e72a00000000, 0x0000000000000000}, /* 12, 13 */
    {0xb5e620f480000000, 0x0000000000000000}, {0xe35fa931a0000000, 0x0000000000000000}, /* 14, 15 */
    {0x8e1bc9bf04000000, 0x0000000000000000}, {0xb1a2bc2ec5000000, 0x0000000000000000}, /* 16, 17 */
    {0xde0b6b3a76400000, 0x0000000000000000}, {0x8ac7230489e80000, 0x0000000000000000}, /* 18, 19 */
    {0xad78ebc5ac620000, 0x0000000000000000}, {0xd8d726b7177a8000, 0x0000000000000000}, /* 20, 21 */
    {0x878678326eac9000, 0x0000000000000000}, {0xa968163f0a57b400, 0x0000000000000000}, /* 22, 23 */
    {0xd3c21bcecceda100, 0x0000000000000000}, {0x84595161401484a0, 0x0000000000000000}, /* 24, 25 */
    {0xa56fa5b99019a5c8, 0x0000000000000000}, {0xcecb8f27f4200f3a, 0x0000000000000000}, /* 26, 27 */
    {0x813f3978f8940984, 0x4000000000000000}, {0xa18f07d736b90be5, 0x5000000000000000}, /* 28, 29 */
    {0xc9f2c9cd04674ede, 0xa400000000000000}, {0xfc6f7c4045812296, 0x4d00000000000000}, /* 30, 31 */
    {0x9dc5ada82b70b59d, 0xf020000000000000}, {0xc5371912364ce305, 0x6c28000000000000}, /* 32, 33 */
    {0xf684df56c3e01bc6, 0xc732000000000000}, {0x9a130b963a6c115c, 0x3c7f400000000000}, /* 34, 35 */
    {0xc097ce7bc90715b3, 0x4b9f100000000000}, {0xf0bdc21abb48db20, 0x1e86d40000000000}, /* 36, 37 */
    {0x96769950b50d88f4, 0x1314448000000000}, {0xbc143fa4e250eb31, 0x17d955a000000000}, /* 38, 39 */
    {0xeb194f8e1ae525fd, 0x5dcfab0800000000}, {0x92efd1b8d0cf37be, 0x5aa1cae500000000}, /* 40, 41 */
    {0xb7abc627050305ad, 0xf14a3d9e40000000}, {0xe596b7b0c643c719, 0x6d9ccd05d0000000}, /* 42, 43 */
    {0x8f7e32ce7bea5c6f, 0xe4820023a2000000}, {0xb35dbf821ae4f38b, 0xdda2802c8a800000}, /* 44, 45 */
    {0xe0352f62a19e306e, 0xd50b2037ad200000}, {0x8c213d9da502de45, 0x4526f422cc340000}, /* 46, 47 */
    {0xaf298d050e4395d6, 0x9670b12b7f410000}, {0xdaf3f04651d47b4c, 0x3c0cdd765f114000}, /* 48, 49 */
    {0x88d8762bf324cd0f, 0xa5880a69fb6ac800}, {0xab0e93b6efee0053, 0x8eea0d047a457a00}, /* 50, 51 */
    {0xd5d238a4abe98068, 0x72a4904598d6d880}, {0x85a36366eb71f041, 0x47a6da2b7f864750}, /* 52, 53 */
    {0xa70c3c40a64e6c51, 0x999090b65f67d924}, {0xd0cf4b50cfe20765, 0xfff4b4e3f741cf6d}, /* 54, 55 */
    {0x82818f1281ed449f, 0xbff8f10e7a8921a4}, {0xa321f2d7226895c7, 0xaff72d52192b6a0d}, /* 56, 57 */
    {0xcbea6f8ceb02bb39, 0x9bf4f8a69f764490}, {0xfee50b7025c36a08, 0x02f236d04753d5b4}, /* 58, 59 */
    {0x9f4f2726179a2245, 0x01d762422c946590}, {0xc722f0ef9d80aad6, 0x424d3ad2b7b97ef5}, /* 60, 61 */
    {0xf8ebad2b84e0d58b, 0xd2e0898765a7deb2}, {0x9b934c3b330c8577, 0x63cc55f49f88eb2f}, /* 62, 63 */
    {0xc2781f49ffcfa6d5, 0x3cbf6b71c76b25fb}, /* 64 */
};

/* a * b: the low 64 bits returned, the high 64 in *high. */
static inline uint64_t multiply_64x64(uint64_t a, uint64_t b, uint64_t *high) {
#if defined(HAVE_INT128)
    __extension__ typedef unsigned __int128 uint128; /* __extension__: a GCC/Clang type, not ISO C's */
    uint128 product = (uint128)a * b;
    *high = (uint64_t)(product >> 64);
    return (uint64_t)product;
#elif defined(HAVE_MSVC_INTRINSICS) && defined(_M_X64)
    return _umul128(a, b, high);
#elif defined(HAVE_MSVC_INTRINSICS)
    *high = __umulh(a, b);
    return a * b;
#else
    uint64_t a_low = a & 0xFFFFFFFFu, a_high = a >> 32, b_low = b & 0xFFFFFFFFu, b_high = b >> 32;
    uint64_t low_low = a_low * b_low, high_low = a_high * b_low, low_high = a_low * b_high;
    uint64_t middle = (low_low >> 32) + (high_low & 0xFFFFFFFFu) + (low_high & 0xFFFFFFFFu);
    *high = a_high * b_high + (high_low >> 32) + (low_high >> 32) + (middle >> 32);
    return (middle << 32) | (low_low & 0xFFFFFFFFu);
#endif
}

static inline int leading_zeros_64(uint64_t x) { /* x != 0 */
#if defined(HAVE_BUILTIN_CLZLL)
    return __builtin_clzll(x);
#elif defined(HAVE_MSVC_INTRINSICS)
    unsigned long index;
    _BitScanReverse64(&index, x);
    return 63 - (int)index;
#else
    int n = 0;
    if (!(x >> 32)) { n += 32; x <<= 32; }
    if (!(x >> 48)) { n += 16; x <<= 16; }
    if (!(x >> 56)) { n += 8; x <<= 8; }
    if (!(x >> 60)) { n += 4; x <<= 4; }
    if (!(x >> 62)) { n += 2; x <<= 2; }
    if (!(x >> 63)) n += 1;
    return n;
#endif
}

/* The bits of the double nearest w * 10^q (ties to even), for 0 < w < 2^64 and q in the table: the
 * Eisel-Lemire algorithm (Lemire, "Number parsing at a gigabyte per second", 2021), in 64-bit integers.
 * w * 5^q is taken from a 64x128-bit product; its top 55 bits give the 53-bit significand, a rounding bit
 * and the bit the product's magnitude may cost. Mushtak and Lemire ("Fast number parsing without
 * fallback", 2023) prove those bits exact for every such w and q; the refusals below (0: the caller defers
 * the number to Python) are kept as checks that cost nothing on the common path. */
static int eisel_lemire(uint64_t w, int q, uint64_t *bits) {
    const uint64_t *power = POW5_128[q - POW5_MIN_Q];
    int zeros = leading_zeros_64(w), upper, shift;
    uint64_t high, low, significand;
    int64_t binary_exponent;
    w <<= zeros;
    low = multiply_64x64(w, power[0], &high);
    if ((high & 0x1FF) == 0x1FF) { /* the 9 bits below the 55 are all ones: a carry from below may reach them */
        uint64_t high2;
        (void)multiply_64x64(w, power[1], &high2);
        low += high2;
        if (low < high2) high++;
        /* Earlier versions of the algorithm gave up here outside the exponents where the product is exact. */
        if (low == UINT64_MAX && (q < -27 || q > 55)) return 0;
    }
    upper = (int)(high >> 63); /* the product's top bit: 127 or 126 */
    shift = upper + 64 - 55;
    significand = high >> shift; /* 54 bits: the 53 of the double and the rounding bit */
    /* floor(q * log2(10)) as floor(217706 * q / 2^16): exact for |q| < 400 (tests check it) */
    binary_exponent = (217706 * (int64_t)q >= 0 ? (217706 * (int64_t)q) >> 16
                                                : -((-217706 * (int64_t)q + 65535) >> 16));
    binary_exponent += 63 + upper - zeros + 1023;
    if (binary_exponent <= 0) return 0; /* subnormal (not with this table; kept as a check) */
    /* w * 10^q exactly halfway between two doubles (the dropped bits 1 then zeros) is only possible for q
     * in [-4, 23] (Lemire 2021): round it to even rather than up. */
    if (low <= 1 && q >= -4 && q <= 23 && (significand & 3) == 1 && (significand << shift) == high)
        significand &= ~(uint64_t)1;
    significand = (significand + (significand & 1)) >> 1; /* round half up on the rounding bit */
    if (significand >= (UINT64_C(1) << 53)) {              /* rounded up to the next power of two */
        significand = UINT64_C(1) << 52;
        binary_exponent++;
    }
    if (binary_exponent >= 0x7FF) return 0; /* overflow: Python's float says inf, and the block declines */
    *bits = (significand & ((UINT64_C(1) << 52) - 1)) | ((uint64_t)binary_exponent << 52);
    return 1;
}

/* The double of (w + a fraction in [0, 1) when !exact) * 10^q, w != 0: PATH_CLINGER or PATH_EISEL_LEMIRE
 * with *value set, or PATH_DEFERRED. */
static inline int decimal_to_double(uint64_t w, int64_t q, int exact, int negative, double *value) {
    uint64_t bits, upper_bits;
#ifdef HAVE_DOUBLE_ROUNDING_FREE_ARITHMETIC
    /* Clinger's fast path: one correctly rounded operation on exact operands. */
    if (exact && w <= (UINT64_C(1) << 53) && q >= -22 && q <= 22) {
        double m = (double)w;
        m = q < 0 ? m / POW10[-q] : m * POW10[q];
        *value = negative ? -m : m;
        return PATH_CLINGER;
    }
#endif
    if (q < POW5_MIN_Q || q > POW5_MAX_Q || !eisel_lemire(w, (int)q, &bits)) return PATH_DEFERRED;
    /* More than 19 digits: the dropped ones put the number in [w, w + 1) * 10^q, and rounding is monotone,
     * so the double is known when both ends round to it. */
    if (!exact && (!eisel_lemire(w + 1, (int)q, &upper_bits) || upper_bits != bits)) return PATH_DEFERRED;
    bits |= (uint64_t)negative << 63;
    memcpy(value, &bits, sizeof bits);
    return PATH_EISEL_LEMIRE;
}

#ifdef HAVE_LITTLE_ENDIAN_LOADS
/* The run of ASCII digits at p, up to eight of them, read as one little-endian word (p has 8 bytes left): how
 * many there are (0 to 8) and, when some, their value in *value, in a few word operations instead of a
 * multiply and two compares a digit (Lemire, "Number parsing at a gigabyte per second", 2021, section 7).
 * Each byte less '0' is 0 to 9 exactly for a digit: a borrow or a carry between bytes only ever runs from the
 * first byte that is not a digit towards the later ones, which are not read. */
static const uint64_t POW10_INTEGER[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

static inline ALWAYS_INLINE int digit_run(const unsigned char *p, uint64_t *value) {
    uint64_t t = load_64(p) - UINT64_C(0x3030303030303030);
    uint64_t not_digit = ((t + UINT64_C(0x7676767676767676)) | t) & UINT64_C(0x8080808080808080);
    int n = not_digit ? __builtin_ctzll(not_digit) >> 3 : 8;
    if (n == 0) return 0;
    t <<= 8 * (8 - n); /* the digits to the top bytes, leading zeros below: an eight-digit number */
    t = t * 10 + (t >> 8);
    t = ((t & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x000F424000000064) +
         ((t >> 16) & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x0000271000000001)) >> 32;
    *value = (uint32_t)t;
    return n;
}
#endif


#ifdef HAVE_LITTLE_ENDIAN_LOADS
/* The value of the eight digits of a little-endian word of which the first n (1 to 8) bytes are digits, less
 * '0' (t: the word less 0x30 in every byte): the digits moved to the top bytes, zeros below, then combined in
 * three multiplies (digit_run's conversion; the bytes after the digits are shifted out, and the borrow of a
 * byte below '0' only ever runs towards them). */
static inline ALWAYS_INLINE uint64_t digits_value(uint64_t t, int n) {
    t <<= 8 * (8 - n);
    t = t * 10 + (t >> 8);
    t = ((t & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x000F424000000064) +
         ((t >> 16) & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x0000271000000001)) >> 32;
    return (uint32_t)t;
}

#ifdef HAVE_DOUBLE_ROUNDING_FREE_ARITHMETIC
/* d / 10 for each digit d, as the division rounds it (constants the compiler divides, correctly rounded). */
static const double TENTHS[10] = {0.0 / 10, 1.0 / 10, 2.0 / 10, 3.0 / 10, 4.0 / 10,
                                  5.0 / 10, 6.0 / 10, 7.0 / 10, 8.0 / 10, 9.0 / 10};
#endif

/* The end of a Kineto number (integer part of `n` digits at p, then, when `fraction` > 0, a point and that
 * many digits; mantissa and run their values, the integer part of at most 16 digits, n + fraction <= 19)
 * converted as scan_number converts it: 1 with s->p, *value and s->path set, or 0 to leave the number to
 * scan_number. `digits`: n, or 0 for a lone integer digit 0 (scan_number counts no digits there). */
static inline ALWAYS_INLINE int kineto_number_value(Scanner *s, const unsigned char *p, int negative,
                                                    uint64_t mantissa, int fraction, uint64_t run, double *value,
                                                    int *is_integer, int64_t *integer) {
    if (fraction == 0) {
        s->p = p;
        *is_integer = 1; /* at most 16 digits: fits int64 */
        *integer = negative ? (int64_t)(0 - mantissa) : (int64_t)mantissa;
        *value = (double)*integer;
        s->path = PATH_INTEGER;
        return 1;
    }
    *is_integer = 0;
#ifdef HAVE_DOUBLE_ROUNDING_FREE_ARITHMETIC
    /* Kineto's absolute timestamps (1712195499980147.5: 17 digits, past Clinger's 2^53) as integer part I plus
     * fraction d / 10^k, in two correctly rounded operations that round as one: with 10^k <= I < 2^53, I and
     * d / 10^k are exact doubles but for the division's rounding, by at most 2^-54; the sum's rounding
     * boundaries in [2^e, 2^(e+1)) (2^e <= I) lie at odd multiples of 2^(e-53) from I, and d / 10^k is either
     * one of them (then a dyadic number, exactly divided) or at least 1 / (10^k 2^(53-e)) > 2^-54 from each
     * (10^k <= I < 2^(e+1)): the division's rounding never carries it across one. */
    if (mantissa >= POW10_INTEGER[fraction] && mantissa < (UINT64_C(1) << 53) &&
        mantissa * POW10_INTEGER[fraction] + run > (UINT64_C(1) << 53)) {
        /* one digit (Kineto's timestamps): its quotient by ten from a table of the ten correctly rounded ones
         * (division is slow) */
        double sum = (double)mantissa + (fraction == 1 ? TENTHS[run] : (double)run / POW10[fraction]);
        *value = negative ? -sum : sum;
        s->path = PATH_INTEGER_AND_FRACTION;
        s->p = p;
        return 1;
    }
#endif
    mantissa = mantissa * POW10_INTEGER[fraction] + run; /* at most 19 digits: exact */
    if (mantissa == 0) {
        *value = negative ? -0.0 : 0.0;
        s->path = PATH_ZERO;
#ifdef HAVE_DOUBLE_ROUNDING_FREE_ARITHMETIC
    } else if (mantissa <= (UINT64_C(1) << 53)) {
        /* decimal_to_double's first path (Clinger's; fraction <= 8 here) inline, without its call (a "dur") */
        double m = (double)mantissa / POW10[fraction];
        *value = negative ? -m : m;
        s->path = PATH_CLINGER;
#endif
    } else {
        int path = decimal_to_double(mantissa, -(int64_t)fraction, 1, negative, value);
        if (path == PATH_DEFERRED) return 0;
        s->path = path;
    }
    s->p = p;
    return 1;
}

#define KINETO_NUMBER_BYTES 32

/* The numbers Kineto writes (an integer of up to 16 digits, or one with a fraction of up to 8 digits: ids,
 * "ts": 1712195499980147.5, "dur": 0.358), with 32 bytes or more left after s->p: read in two or three digit
 * runs without a bounds check each, and converted as scan_number converts them (the same digits, mantissa
 * and exponent: every value, path and end are the ones scan_number gives). 0 when the number is of another
 * shape, or the conversion would defer it: scan_number then reads it from its first byte. */
static inline ALWAYS_INLINE int scan_kineto_number(Scanner *s, double *value, int *is_integer, int64_t *integer) {
    const unsigned char *p = s->p;
    int negative = *p == '-', n, fraction = 0;
    uint64_t mantissa = 0, run = 0; /* digit_run leaves run as it is when it finds no digit */
    p += negative;
    if (*p == '0') {
        p++;
        n = 0;
    } else {
        n = digit_run(p, &mantissa);
        if (n == 0) return 0; /* not a digit: scan_number declines it */
        p += n;
        if (n == 8) {
            int more = digit_run(p, &run);
            if (more == 8 && is_digit(p[8])) return 0; /* 17 integer digits or more */
            mantissa = mantissa * POW10_INTEGER[more] + run;
            p += more;
            n += more;
        }
    }
    if (*p == '.') {
        p++;
        fraction = digit_run(p, &run);
        if (fraction == 0 || (fraction == 8 && is_digit(p[8])) || n + fraction > 19) return 0;
        p += fraction;
    }
    if (*p == 'e' || *p == 'E') return 0;
    return kineto_number_value(s, p, negative, mantissa, fraction, run, value, is_integer, integer);
}
#endif

/* A JSON number at s->p. *is_integer: no fraction and no exponent, and the value fits int64 (*integer).
 * value NULL: only checked (a skipped member). OK with *value set, DEFER (*value NaN, the text in s->number)
 * or DECLINE. */
static NOINLINE int scan_number_general(Scanner *s, double *value, int *is_integer, int64_t *integer) {
    const unsigned char *start = s->p, *p = s->p, *end = s->end;
    int negative = 0, exact = 1, has_fraction = 0, has_exponent = 0, digits = 0;
    uint64_t mantissa = 0;
    int64_t exponent = 0;
    if (p < end && *p == '-') { negative = 1; p++; }
    if (p >= end) return DECLINE;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
#ifdef HAVE_LITTLE_ENDIAN_LOADS
        while (end - p >= 8) { /* as the loop below would read them, while at most 19 digits are kept */
            uint64_t run;
            int n = digit_run(p, &run);
            if (n == 0 || digits + n > 19) break;
            mantissa = mantissa * POW10_INTEGER[n] + run;
            digits += n;
            p += n;
            if (n < 8) break;
        }
#endif
        while (p < end && is_digit(*p)) {
            if (digits < 19) { mantissa = mantissa * 10 + (uint64_t)(*p - '0'); digits++; }
            else { exact = 0; exponent++; }
            p++;
        }
    } else {
        return DECLINE;
    }
    if (p < end && *p == '.') {
        has_fraction = 1;
        p++;
        if (p >= end || !is_digit(*p)) return DECLINE;
#ifdef HAVE_LITTLE_ENDIAN_LOADS
        while (mantissa != 0 && end - p >= 8) { /* leading zeros are not digits: those go through the loop below */
            uint64_t run;
            int n = digit_run(p, &run);
            if (n == 0 || digits + n > 19) break;
            mantissa = mantissa * POW10_INTEGER[n] + run;
            digits += n;
            exponent -= n;
            p += n;
            if (n < 8) break;
        }
#endif
        while (p < end && is_digit(*p)) {
            if (mantissa == 0 && *p == '0') { exponent--; }
            else if (digits < 19) { mantissa = mantissa * 10 + (uint64_t)(*p - '0'); digits++; exponent--; }
            else { exact = 0; }
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        int exponent_negative = 0;
        int64_t written = 0;
        has_exponent = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) { exponent_negative = *p == '-'; p++; }
        if (p >= end || !is_digit(*p)) return DECLINE;
        while (p < end && is_digit(*p)) {
            if (written < 100000) written = written * 10 + (*p - '0');
            p++;
        }
        exponent += exponent_negative ? -written : written;
    }
    s->p = p;
    *is_integer = 0;
    if (!has_fraction && !has_exponent && exact &&
        mantissa <= (uint64_t)INT64_MAX + (uint64_t)negative) {
        *is_integer = 1;
        *integer = negative ? (int64_t)(0 - mantissa) : (int64_t)mantissa;
        if (value == NULL) return OK;
        *value = (double)*integer; /* what msgspec gives a float field from a JSON integer */
        s->path = PATH_INTEGER;
        return OK;
    }
    if (value == NULL) return OK; /* msgspec skips 1e400 in a member it ignores, as this does */
    if (mantissa == 0 && exact) {
        *value = negative ? -0.0 : 0.0;
        s->path = PATH_ZERO;
        return OK;
    }
    s->path = decimal_to_double(mantissa, exponent, exact, negative, value);
    if (s->path != PATH_DEFERRED) return OK;
    if (p - start > INT32_MAX) return DECLINE;
    *value = NAN;
    s->number.text = start;
    s->number.length = (int32_t)(p - start);
    s->number.flags = SPAN_PRESENT | SPAN_NUMBER;
    return DEFER;
}

/* scan_number: Kineto's numbers by scan_kineto_number where 32 bytes follow, any other by the general reader
 * (out of line). value NULL (only checked, *is_integer and *integer wanted: a grid or block's three
 * integers): Kineto's integers too, their value put aside (any other shape goes to the general reader, which
 * alone says what the check of a number not converted accepts). */
static inline ALWAYS_INLINE int scan_number(Scanner *s, double *value, int *is_integer, int64_t *integer) {
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    double unused;
    if (s->end - s->p >= KINETO_NUMBER_BYTES) {
        const unsigned char *start = s->p;
        if (scan_kineto_number(s, value != NULL ? value : &unused, is_integer, integer)) {
            if (value != NULL || *is_integer) return OK;
            s->p = start; /* a fraction, only checked: as the general reader checks it */
        }
    }
#endif
    return scan_number_general(s, value, is_integer, integer);
}

static int skip_value(Scanner *s, int depth);

/* Past the run of ASCII digits at p: eight bytes a step where words load little-endian (the first byte that
 * is no digit found as digit_run finds it, without a branch a digit), then byte by byte. */
static inline ALWAYS_INLINE const unsigned char *skip_digits(const unsigned char *p, const unsigned char *end) {
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    while (end - p >= 8) {
        uint64_t t = load_64(p) - UINT64_C(0x3030303030303030);
        uint64_t not_digit = ((t + UINT64_C(0x7676767676767676)) | t) & UINT64_C(0x8080808080808080);
        if (not_digit) return p + (__builtin_ctzll(not_digit) >> 3);
        p += 8;
    }
#endif
    while (p < end && is_digit(*p)) p++;
    return p;
}

/* A JSON number at s->p, its syntax checked and skipped (what scan_number checks with value NULL, without
 * computing the value). */
static inline ALWAYS_INLINE int skip_number(Scanner *s) {
    const unsigned char *p = s->p, *end = s->end;
    if (p < end && *p == '-') p++;
    if (p >= end) return DECLINE;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        p++;
        while (p < end && is_digit(*p)) p++;
    } else {
        return DECLINE;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) return DECLINE;
        p = skip_digits(p, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) return DECLINE;
        p = skip_digits(p, end);
    }
    s->p = p;
    return OK;
}

/* The value of a member not read (s->p at it, before the end): strings and numbers, most of them, without
 * skip_value's call and dispatch. */
static inline ALWAYS_INLINE int skip_member_value(Scanner *s, int depth) {
    unsigned char c = *s->p;
    if (c == '"') {
        Span ignored;
        return scan_string(s, &ignored);
    }
    if (c == '-' || is_digit(c)) return skip_number(s);
    return skip_value(s, depth);
}

/* After a member or element: 1 when the container goes on (','), 0 when it ended (close), -1 otherwise. */
static inline ALWAYS_INLINE int after_item(Scanner *s, unsigned char close) {
    if (s->p < s->end && *s->p == ',') { s->p++; return 1; } /* Kineto's layout: the comma right after */
    /* An event's end as Kineto writes it (a line of its own, indented by two): one word compare */
    if (close == '}' && s->end - s->p >= 4 && load_32(s->p) == load_32((const unsigned char *)"\n  }")) {
        s->p += 4;
        return 0;
    }
    skip_space(s);
    if (s->p >= s->end) return -1;
    if (*s->p == ',') { s->p++; return 1; }
    if (*s->p == close) { s->p++; return 0; }
    return -1;
}

static int expect_literal(Scanner *s, const char *word, size_t length) {
    if ((size_t)(s->end - s->p) < length || memcmp(s->p, word, length) != 0) return DECLINE;
    s->p += length;
    return OK;
}

static int skip_value(Scanner *s, int depth) {
    Span ignored;
    int rc, more;
    if (depth > MAX_DEPTH) return DECLINE;
    skip_space(s);
    if (s->p >= s->end) return DECLINE;
    switch (*s->p) {
    case '"':
        return scan_string(s, &ignored);
    case '{':
        s->p++;
        skip_space(s);
        if (s->p < s->end && *s->p == '}') { s->p++; return OK; }
        for (;;) {
            skip_space(s);
            if (s->p >= s->end || *s->p != '"') return DECLINE;
            if ((rc = scan_string(s, &ignored)) != OK) return rc;
            skip_space(s);
            if (s->p >= s->end || *s->p != ':') return DECLINE;
            s->p++;
            if ((rc = skip_value(s, depth + 1)) != OK) return rc;
            if ((more = after_item(s, '}')) <= 0) return more == 0 ? OK : DECLINE;
        }
    case '[':
        s->p++;
        skip_space(s);
        if (s->p < s->end && *s->p == ']') { s->p++; return OK; }
        for (;;) {
            if ((rc = skip_value(s, depth + 1)) != OK) return rc;
            if ((more = after_item(s, ']')) <= 0) return more == 0 ? OK : DECLINE;
        }
    case 't':
        return expect_literal(s, "true", 4);
    case 'f':
        return expect_literal(s, "false", 5);
    case 'n':
        return expect_literal(s, "null", 4);
    default:
        return skip_number(s);
    }
}

/* Typed readers, one per type of field in kineto/fields.py. s->p is at the value. */

static int add_text(Scanner *s, int64_t row, int field, Span text);

/* A later value of a key replaces a deferred number (msgspec keeps the last one), but msgspec still fails on
 * the earlier one when it is out of range: it is kept to be parsed for that check alone (row -1). */
static int replace_deferred(Scanner *s, int field) {
    if (!(s->deferred & (UINT32_C(1) << field))) return OK;
    s->deferred &= ~(UINT32_C(1) << field);
    return add_text(s, -1, field, s->deferred_text[field]);
}

/* read_float's general path: any JSON number (or a decline), out of line. */
static NOINLINE int read_float_general(Scanner *s, double *f, int field) {
    int is_integer, rc, deferred;
    int64_t integer;
    if (s->p >= s->end || !(*s->p == '-' || is_digit(*s->p))) return DECLINE;
    rc = scan_number_general(s, &f[field], &is_integer, &integer);
    if (rc == DECLINE) return DECLINE;
    deferred = rc == DEFER;
    if ((rc = replace_deferred(s, field)) != OK) return rc;
    if (deferred) {
        s->deferred |= UINT32_C(1) << field;
        s->deferred_text[field] = s->number;
    }
    return OK;
}

/* float: a JSON number, nothing else, into f[field]. A deferred number is noted for the event. Kineto's
 * numbers inline (scan_kineto_number: no deferred number, no decline), any other by read_float_general. */
static inline ALWAYS_INLINE int read_float(Scanner *s, double *f, int field) {
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    int is_integer;
    int64_t integer;
    if (s->end - s->p >= KINETO_NUMBER_BYTES && scan_kineto_number(s, &f[field], &is_integer, &integer))
        return (s->deferred & (UINT32_C(1) << field)) ? replace_deferred(s, field) : OK;
#endif
    return read_float_general(s, f, field);
}

/* read_float out of line: for the members read on few events (kernels' and copies' fields) and the general
 * member loops, which then do not each hold a copy of the number reader. */
static NOINLINE int read_float_cold(Scanner *s, double *f, int field) { return read_float(s, f, field); }

/* A JSON string that msgspec decodes into a str field: it must be valid UTF-8, or msgspec raises. */
static inline ALWAYS_INLINE int read_typed_text(Scanner *s, Span *out) {
    int rc = scan_string(s, out);
    if (rc == OK && (out->flags & SPAN_NON_ASCII) && !valid_utf8(out->text, out->length)) return DECLINE;
    return rc;
}

#ifdef HAVE_LITTLE_ENDIAN_LOADS
/* Whether the 8 bytes of a word are all ASCII digits (digit_run's test, for a whole word). */
static inline ALWAYS_INLINE int all_digits(uint64_t word) {
    uint64_t t = word - UINT64_C(0x3030303030303030);
    return (((t + UINT64_C(0x7676767676767676)) | t) & UINT64_C(0x8080808080808080)) == 0;
}
#endif

/* "ts": read_float, with Kineto's own shape of it first (16 digits, a point and one digit:
 * 1712195504612945.5) recognized by its bytes: then the end is known without waiting for the digits'
 * lengths (the branch is taken on nearly every event), and the value converted from the two words as
 * scan_kineto_number converts it (the same mantissa, fraction and path). */
static inline ALWAYS_INLINE int read_timestamp(Scanner *s, double *f, int convert) {
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    const unsigned char *p = s->p;
    if (s->end - p >= 32 && !(s->deferred & (UINT32_C(1) << F_TS))) {
        uint64_t high = load_64(p), low = load_64(p + 8);
        if (all_digits(high) && all_digits(low) && p[0] != '0' && p[16] == '.' && is_digit(p[17]) &&
            !is_digit(p[18]) && (p[18] | 0x20) != 'e') {
            if (!convert) { /* checked only (CHECKED_ONLY): any number of this shape is a double in range */
                s->p = p + 18;
                return OK;
            }
            int is_integer;
            int64_t integer;
            uint64_t mantissa = digits_value(high - UINT64_C(0x3030303030303030), 8) * 100000000 +
                                digits_value(low - UINT64_C(0x3030303030303030), 8);
            if (kineto_number_value(s, p + 18, 0, mantissa, 1, (uint64_t)(p[17] - '0'), &f[F_TS], &is_integer,
                                    &integer))
                return OK;
            s->p = p;
        }
    }
#endif
    return read_float(s, f, F_TS);
}

static inline ALWAYS_INLINE int read_float_or_text(Scanner *s, double *f, int field, Span *text) { /* float | str */
    if (s->p < s->end && *s->p == '"') {
        int rc = replace_deferred(s, field);
        f[field] = NAN;
        return rc != OK ? rc : read_typed_text(s, text);
    }
    text->flags = 0;
    return read_float(s, f, field);
}

/* The bytes of the first `length` (0-8) of a word as a mask: kept with each predicted length (a variable shift
 * and a test for 8 an id otherwise). */
static inline uint64_t length_mask(int length) {
    return length >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * length)) - 1;
}

#ifdef HAVE_LITTLE_ENDIAN_LOADS
/* Whether the 8 bytes at p (at least 16 readable) begin with a JSON integer of exactly `length` (1-8) digits
 * (`digits`: length_mask(length)): digits only, no leading zero, then a byte that ends a number. *t gets the
 * bytes less '0' each, for digits_value. Shared by read_id and skip_id. */
static inline ALWAYS_INLINE int integer_of_length(const unsigned char *p, int length, uint64_t digits, uint64_t *t) {
    uint64_t v = load_64(p) - UINT64_C(0x3030303030303030);
    uint64_t not_digit = ((v + UINT64_C(0x7676767676767676)) | v) & UINT64_C(0x8080808080808080);
    unsigned char next = p[length];
    *t = v;
    if ((not_digit & digits) != 0 || (p[0] == '0' && length != 1)) return 0;
    /* the byte after: a comma where Kineto writes the id (one compare), else any that ends a number */
    return next == ',' || (!is_digit(next) && next != '.' && (next | 0x20) != 'e');
}
#endif

/* read_float for the ids Kineto writes (pid, tid, External id, correlation): an integer of as many digits as
 * the field's previous one (its length predicted: the end of the number is then known without waiting for
 * its digits to be found, on a branch nearly always taken), checked as JSON (digits only, no leading zero,
 * then a byte that ends a number) and converted as scan_kineto_number converts it; any other number, or
 * one of another length, by read_float, which then notes its length. */
static inline ALWAYS_INLINE int read_id_predicted(Scanner *s, double *f, int field, int convert,
                                                  unsigned char *predicted, uint64_t *predicted_mask) {
    int rc;
    const unsigned char *p = s->p;
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    int length = *predicted;
    if (length != 0 && s->end - p >= 16 && !(s->deferred & (UINT32_C(1) << field))) {
        uint64_t t;
        if (integer_of_length(p, length, *predicted_mask, &t)) {
            if (convert) { /* (else checked only: see CHECKED_ONLY) */
                f[field] = (double)(int64_t)digits_value(t, length);
                s->path = PATH_INTEGER;
            }
            s->p = p + length;
            return OK;
        }
    }
#endif
    rc = read_float(s, f, field);
    if (rc == OK) {
        *predicted = s->p - p <= 8 && is_digit(p[0]) ? (unsigned char)(s->p - p) : 0;
        *predicted_mask = length_mask(*predicted);
    }
    return rc;
}

/* read_id_predicted with the field's last length */
static inline ALWAYS_INLINE int read_id_as(Scanner *s, double *f, int field, int convert) {
    return read_id_predicted(s, f, field, convert, &s->lengths[field], &s->length_masks[field]);
}

/* read_float_or_text with read_id for a number. */
static inline ALWAYS_INLINE int read_id(Scanner *s, double *f, int field) { return read_id_as(s, f, field, 1); }

static inline ALWAYS_INLINE int read_id_or_text_as(Scanner *s, double *f, int field, Span *text, int convert) {
    if (s->p < s->end && *s->p == '"') return read_float_or_text(s, f, field, text);
    text->flags = 0;
    return read_id_as(s, f, field, convert);
}

static inline ALWAYS_INLINE int read_id_or_text(Scanner *s, double *f, int field, Span *text) {
    return read_id_or_text_as(s, f, field, text, 1);
}

/* read_id_or_text for a complete event's pid or tid in Kineto's member order, its length predicted by the last
 * one of the event's recognized category (KNOWN_*; KNOWN_NONE: any other): host and device events, one after
 * the other, write ids of other lengths (pid 1102 and 0), which missed the field's last length on a quarter
 * of the rows at the 406 MB tile. The prediction steers the fast path only: the values are the same. */
static inline ALWAYS_INLINE int read_row_id_or_text(Scanner *s, double *f, int field, Span *text, int category) {
    if (s->p < s->end && *s->p == '"') return read_float_or_text(s, f, field, text);
    text->flags = 0;
    return read_id_predicted(s, f, field, 1, &s->category_lengths[category][field - F_PID],
                             &s->category_masks[category][field - F_PID]);
}

static inline ALWAYS_INLINE int read_text_or_null(Scanner *s, Span *out) { /* str | None */
    if (s->p < s->end && *s->p == '"') return read_typed_text(s, out);
    out->flags = 0;
    return expect_literal(s, "null", 4);
}

/* Any JSON value (a JSON field): its text, located, checked as skip_value checks what it skips. null is
 * kept as written; canonical_json (kineto/fields.py) makes every text canonical after the scan. */
static int read_json(Scanner *s, Span *out) {
    const unsigned char *start = s->p;
    int rc = skip_value(s, 2);
    if (rc != OK) return rc;
    if (s->p - start > INT32_MAX) return DECLINE;
    out->text = start;
    out->length = (int32_t)(s->p - start);
    out->flags = SPAN_PRESENT | SPAN_RAW;
    return OK;
}

static int read_triple_or_null(Scanner *s, double *out) { /* list[int] | None; a 3-list fills *out */
    int count = 0, rc;
    double values[3];
    out[0] = out[1] = out[2] = NAN;
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    /* Kineto's grid and block ([4,106,1]: three integers of 1 to 7 digits, no leading zero, no whitespace), a
     * digit run each: the values and the end the loop below gives; any other bytes go to the loop, from '['.
     * (32 bytes: the third run's word ends at most 25 bytes in.) */
    if (s->end - s->p >= 32 && *s->p == '[') {
        const unsigned char *p = s->p + 1;
        uint64_t value[3];
        int k = 0;
        for (; k < 3; k++) {
            int n = digit_run(p, &value[k]);
            if (n == 0 || n == 8 || (p[0] == '0' && n > 1) || p[n] != (k == 2 ? ']' : ',')) break;
            p += n + 1;
        }
        if (k == 3) {
            out[0] = (double)value[0], out[1] = (double)value[1], out[2] = (double)value[2];
            s->p = p;
            return OK;
        }
    }
#endif
    if (s->p < s->end && *s->p == 'n') return expect_literal(s, "null", 4);
    if (s->p >= s->end || *s->p != '[') return DECLINE;
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == ']') { s->p++; return OK; }
    for (;;) {
        int is_integer;
        int64_t integer;
        skip_space(s);
        if (s->p >= s->end || !(*s->p == '-' || is_digit(*s->p))) return DECLINE;
        if ((rc = scan_number(s, NULL, &is_integer, &integer)) != OK) return rc;
        if (!is_integer) return DECLINE; /* msgspec's int rejects 1.0 and 1e3 */
        if (count < 3) values[count] = (double)integer;
        count++;
        if ((rc = after_item(s, ']')) < 0) return DECLINE;
        if (rc == 0) break;
    }
    if (count == 3) { out[0] = values[0]; out[1] = values[1]; out[2] = values[2]; }
    return OK;
}

/* Whether the n bytes at a are those of b; n is a constant where it is inlined, so this compiles to a few
 * word compares (GCC calls memcmp for most constant lengths, on every key of every event). */
static inline ALWAYS_INLINE int same_bytes(const unsigned char *a, const char *b, size_t n) {
    uint64_t x, y;
    uint32_t u, v;
    uint16_t h, k;
    if (n >= 8) {
        for (size_t i = 0; i + 8 <= n; i += 8) {
            memcpy(&x, a + i, 8), memcpy(&y, b + i, 8);
            if (x != y) return 0;
        }
        if (n % 8 == 0) return 1;
        memcpy(&x, a + n - 8, 8), memcpy(&y, b + n - 8, 8); /* the last 8 bytes, overlapping */
        return x == y;
    }
    if (n >= 4) {
        memcpy(&u, a, 4), memcpy(&v, b, 4);
        if (u != v) return 0;
        memcpy(&u, a + n - 4, 4), memcpy(&v, b + n - 4, 4);
        return u == v;
    }
    if (n >= 2) {
        memcpy(&h, a, 2), memcpy(&k, b, 2);
        if (h != k) return 0;
        return a[n - 1] == (unsigned char)b[n - 1];
    }
    return n == 0 || a[0] == (unsigned char)b[0];
}

#define KEY_IS(span, word) ((span).length == (int32_t)(sizeof(word) - 1) && \
                            same_bytes((span).text, word, sizeof(word) - 1))

/* A member's key at s->p (its opening quote): scan_string for a key, which declines any escape (msgspec would
 * unescape the key first; scan_string either declines an escape or marks it, and begin_member then declined)
 * and so needs no escape decoding: the first quote, backslash or control character ends it. Keys are not
 * validated as UTF-8 (KEY_IS compares their bytes). */
static inline ALWAYS_INLINE int scan_key(Scanner *s, Span *key) {
    const unsigned char *start = s->p + 1, *p;
    int high = 0;
    p = string_stop(start, s->end, &high);
    if (p >= s->end || *p != '"' || p - start > INT32_MAX) return DECLINE;
    key->text = start;
    key->length = (int32_t)(p - start);
    key->flags = SPAN_PRESENT | (high ? SPAN_NON_ASCII : 0);
    s->p = p + 1;
    return OK;
}

static inline ALWAYS_INLINE int begin_member(Scanner *s, Span *key) {
    int rc;
    if (s->p >= s->end || *s->p != '"') { /* the key's quote right there (Kineto's layout), or after spaces */
        skip_space(s);
        if (s->p >= s->end || *s->p != '"') return DECLINE;
    }
    if ((rc = scan_key(s, key)) != OK) return rc;
    if (s->p >= s->end || *s->p != ':') {
        skip_space(s);
        if (s->p >= s->end || *s->p != ':') return DECLINE;
    }
    s->p++;
    skip_space(s);
    return s->p < s->end ? OK : DECLINE;
}

/* The event members the event loop reads, by key (EK_OTHER: any other key). */
enum { EK_OTHER, EK_PH, EK_CAT, EK_NAME, EK_PID, EK_TID, EK_TS, EK_DUR, EK_ARGS, EK_SKIPPED /* id, bp: not read */ };

/* Whether the first n (<= 8) bytes of the word w, loaded little-endian, are those of a literal: one AND and
 * one compare. The literal comes padded to eight bytes (WORD_STARTS_WITH), so its word is one 8-byte copy
 * that folds at compile time. (A copy of n bytes into a zeroed word did not fold: GCC stored the literal's
 * bytes on the stack and read them back as a word, a store-forwarding stall on every flow's category and
 * name, a tenth of scan_event's samples.) */
static inline ALWAYS_INLINE int word_starts_with(uint64_t w, const char *padded, size_t n) {
    uint64_t y;
    memcpy(&y, padded, 8);
    if (n < 8) y &= (UINT64_C(1) << (8 * n)) - 1;
    return (n == 8 ? w : (w & ((UINT64_C(1) << (8 * n)) - 1))) == y;
}
#define WORD_STARTS_WITH(w, literal, n) word_starts_with(w, literal "\0\0\0\0\0\0\0\0", n)

/* begin_member for an event's own members: the keys Kineto writes there, with their quotes and the colon
 * (no escape can hide in those bytes), are recognized in one word compare or two, without the string scan,
 * and their EK_* returned in *which (the caller then dispatches on it without comparing the key again); any
 * other key, or one written another way, goes through begin_member (*which EK_OTHER). The key span is the
 * one begin_member would give. */
static inline ALWAYS_INLINE int begin_event_member(Scanner *s, Span *key, int *which) {
    const unsigned char *p;
    int32_t n = 0;
    int k = EK_OTHER;
    skip_space(s);
    p = s->p;
    if (s->end - p >= 8) {
        /* one word compare per key where words load little-endian, else a byte compare; both include the
         * key's quotes and colon */
#ifdef HAVE_LITTLE_ENDIAN_LOADS
        uint64_t w = load_64(p);
#define EVENT_KEY_IS(text, len) WORD_STARTS_WITH(w, text, len)
#else
#define EVENT_KEY_IS(text, len) same_bytes(p, text, len)
#endif
        switch (p[1]) { /* the key's first letter */
        case 'p':
            if (EVENT_KEY_IS("\"ph\":", 5)) n = 2, k = EK_PH;
            else if (EVENT_KEY_IS("\"pid\":", 6)) n = 3, k = EK_PID;
            break;
        case 'c': if (EVENT_KEY_IS("\"cat\":", 6)) n = 3, k = EK_CAT; break;
        case 'n': if (EVENT_KEY_IS("\"name\":", 7)) n = 4, k = EK_NAME; break;
        case 't':
            if (EVENT_KEY_IS("\"ts\":", 5)) n = 2, k = EK_TS;
            else if (EVENT_KEY_IS("\"tid\":", 6)) n = 3, k = EK_TID;
            break;
        case 'd': if (EVENT_KEY_IS("\"dur\":", 6)) n = 3, k = EK_DUR; break;
        case 'a': if (EVENT_KEY_IS("\"args\":", 7)) n = 4, k = EK_ARGS; break;
        case 'i': if (EVENT_KEY_IS("\"id\":", 5)) n = 2, k = EK_SKIPPED; break; /* flow events' */
        case 'b': if (EVENT_KEY_IS("\"bp\":", 5)) n = 2, k = EK_SKIPPED; break;
        default: break;
        }
#undef EVENT_KEY_IS
    }
    *which = k;
    if (n == 0) return begin_member(s, key);
    key->text = p + 1;
    key->length = n;
    key->flags = SPAN_PRESENT;
    s->p = p + n + 3; /* the quotes and the colon: at most 7 of the 8 bytes there are */
    if (*s->p > ' ') return OK;
    skip_space(s);
    return s->p < s->end ? OK : DECLINE;
}

/* The args members Kineto writes most, by key (AK_OTHER: any other key; AK_SKIPPED: one not read). */
enum { AK_OTHER, AK_SKIPPED, AK_EXTERNAL_ID, AK_CORRELATION, AK_DEVICE, AK_STREAM, AK_GRID, AK_BLOCK,
       AK_REGISTERS, AK_SHARED_MEMORY, AK_OCCUPANCY };

/* Whether the key at p is `literal` followed by its colon: n and k set when it is. */
#define ARGS_KEY(literal, id) \
    (same_bytes(p, "\"" literal "\":", sizeof(literal) + 2) ? (n = (int32_t)sizeof(literal) - 1, k = (id), 1) : 0)

/* begin_member for an args member: the keys Kineto writes in the args of its runtime calls, kernels and
 * CPU ops, with their quotes and colon, recognized in word compares after a jump on their first letter (no
 * string scan, no dispatch on the length), their AK_* in *which; any other key, or one written another way,
 * through begin_member (*which AK_OTHER). The key span is the one begin_member would give. */
static inline ALWAYS_INLINE int begin_args_member(Scanner *s, Span *key, int *which) {
    const unsigned char *p = s->p;
    int32_t n = 0;
    int k = AK_OTHER;
    if (s->end - p >= 32 && p[0] == '"') { /* the longest key below, with its quotes and colon: 28 bytes */
        switch (p[1]) {
        case 'E': (void)(ARGS_KEY("External id", AK_EXTERNAL_ID) || ARGS_KEY("Ev Idx", AK_SKIPPED)); break;
        case 'c':
            (void)(ARGS_KEY("correlation", AK_CORRELATION) || ARGS_KEY("cbid", AK_SKIPPED) ||
                   ARGS_KEY("context", AK_SKIPPED));
            break;
        case 'd': (void)ARGS_KEY("device", AK_DEVICE); break;
        case 's': (void)(ARGS_KEY("stream", AK_STREAM) || ARGS_KEY("shared memory", AK_SHARED_MEMORY)); break;
        case 'q': (void)ARGS_KEY("queued", AK_SKIPPED); break;
        case 'g': (void)ARGS_KEY("grid", AK_GRID); break;
        case 'b': (void)(ARGS_KEY("block", AK_BLOCK) || ARGS_KEY("blocks per SM", AK_SKIPPED)); break;
        case 'w': (void)ARGS_KEY("warps per SM", AK_SKIPPED); break;
        case 'r': (void)ARGS_KEY("registers per thread", AK_REGISTERS); break;
        case 'e': (void)ARGS_KEY("est. achieved occupancy %", AK_OCCUPANCY); break;
        case 'S': (void)ARGS_KEY("Sequence number", AK_SKIPPED); break;
        case 'F': (void)ARGS_KEY("Fwd thread id", AK_SKIPPED); break;
        default: break;
        }
    }
    *which = k;
    if (n == 0) return begin_member(s, key);
    key->text = p + 1;
    key->length = n;
    key->flags = SPAN_PRESENT;
    s->p = p + n + 3; /* the quotes and the colon: inside the 32 bytes there are */
    if (*s->p > ' ') return OK;
    skip_space(s);
    return s->p < s->end ? OK : DECLINE;
}

/* The 8 bytes at p as one word, and the word of an 8-byte literal (folded at compile time). */
static inline ALWAYS_INLINE uint64_t load_word(const unsigned char *p) { return load_64(p); }
static inline ALWAYS_INLINE uint64_t word_of(const char *literal) {
    uint64_t word;
    memcpy(&word, literal, 8);
    return word;
}

/* Whether the bytes at s->p are the n of `literal`, a key with its colon, and a byte follows them (then
 * the key is skipped; where none follows the general loop takes the member and declines: a value is
 * missing). Every use is followed by value_start, which then needs no bounds check. */
static inline ALWAYS_INLINE int expect_bytes(Scanner *s, const char *literal, size_t n) {
    if ((size_t)(s->end - s->p) <= n || !same_bytes(s->p, literal, n)) return 0;
    s->p += n;
    return 1;
}

/* After a key's colon matched by expect_bytes (a byte follows): the value's first byte, past any
 * whitespace, as begin_event_member leaves it. */
static inline ALWAYS_INLINE int value_start(Scanner *s) {
    if (*s->p > ' ') return OK;
    skip_space(s);
    return s->p < s->end ? OK : DECLINE;
}

/* The integers skip_id skips, by the slot of their last length. */
enum { SKIP_FLOW_ID, SKIP_EV_IDX, SKIP_CBID };

/* skip_member_value for an id that is not read (a flow's "id", "Ev Idx", "cbid"): an integer of as many
 * digits as the last one of its kind recognized as read_id recognizes it, else skip_member_value, which
 * then notes its length. */
static inline ALWAYS_INLINE int skip_id(Scanner *s, int kind, int depth) {
    int rc;
    const unsigned char *p = s->p;
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    int length = s->skipped_lengths[kind];
    if (length != 0 && s->end - p >= 16) {
        uint64_t t;
        if (integer_of_length(p, length, s->skipped_masks[kind], &t)) {
            s->p = p + length;
            return OK;
        }
    }
#endif
    rc = skip_member_value(s, depth);
    if (rc == OK) {
        s->skipped_lengths[kind] = s->p - p <= 8 && is_digit(p[0]) ? (unsigned char)(s->p - p) : 0;
        s->skipped_masks[kind] = length_mask(s->skipped_lengths[kind]);
    }
    return rc;
}

/* read_text_or_null for a category (and a flow's name, its category again): the ones Kineto writes most
 * (cpu_op, cuda_runtime, kernel, gpu_memcpy; ac2g and fwdbwd on flows) recognized with their quotes in word
 * compares, where the string scan's end depends on its bytes; any other text, or null, by read_text_or_null.
 * The span is the one it gives; *known the KNOWN_* of a text recognized (left as it is for any other). */
static inline ALWAYS_INLINE int read_category(Scanner *s, Span *out, int *known) {
#ifdef HAVE_LITTLE_ENDIAN_LOADS
    const unsigned char *p = s->p;
    if (s->end - p >= 16) {
        uint64_t w = load_64(p);
        int32_t n = 0;
        if (w == word_of("\"cpu_op\"")) n = 6, *known = KNOWN_CPU_OP;
        else if (WORD_STARTS_WITH(w, "\"ac2g\"", 6)) n = 4, *known = KNOWN_AC2G;
        else if (w == word_of("\"cuda_ru") && load_64(p + 6) == word_of("runtime\"")) n = 12, *known = KNOWN_CUDA_RUNTIME;
        else if (w == word_of("\"kernel\"")) n = 6, *known = KNOWN_KERNEL;
        else if (w == word_of("\"fwdbwd\"")) n = 6, *known = KNOWN_FWDBWD;
        else if (w == word_of("\"gpu_mem") && load_32(p + 8) == load_32((const unsigned char *)"cpy\"")) {
            n = 10, *known = KNOWN_GPU_MEMCPY;
        }
        if (n) {
            out->text = p + 1;
            out->length = n;
            out->flags = SPAN_PRESENT;
            s->p = p + n + 2;
            return OK;
        }
    }
#endif
    return read_text_or_null(s, out);
}

/* read_text_or_null for the "name" of a complete event in Kineto's member order. Names repeat (a block of
 * 8 MiB holds ~30K rows and ~170 distinct names), and each was scanned for its closing quote, hashed and
 * compared with its table's slot, three passes over its bytes, where the string that comes is most often one
 * the block has already coded. So the 16 bytes after the quote find a slot (the last name coded that begins
 * with them, or, shorter, that ends within them before the same bytes); when the rest of that name's bytes
 * and a closing quote follow too, the bytes at s->p are exactly that string, which scan_string then reads
 * as the same span (the slot's name was a plain one: ASCII without escapes or control characters, so its
 * first stop is that quote) and span_code then codes as the slot's code (the same bytes, the same table):
 * *code gets it (else -1: scan_event codes the span as before, and the slot learns it). name_cache_enabled:
 * off for tests (scan_events' output the same). */
static int name_cache_enabled = 1;
static int64_t name_cache_hits; /* summed over the scanners as they finish */

static inline ALWAYS_INLINE NameSlot *name_slot(Scanner *s, const uint64_t *w) {
    /* one multiply: its top bits mix all of the second word, the first word's top bytes carried in */
    return &s->names[(w[0] + w[1] * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - NAME_SET_BITS)];
}

static inline ALWAYS_INLINE int read_name(Scanner *s, Span *out, int32_t *code) {
    const unsigned char *p = s->p;
    *code = -1;
    if (name_cache_enabled && s->end - p > 2 * NAME_KEY_BYTES && *p == '"') {
        uint64_t w[NAME_KEY_BYTES / 8], differ = 0;
        for (int i = 0; i < NAME_KEY_BYTES / 8; i++) w[i] = load_64(p + 1 + 8 * i);
        const NameSlot *slot = name_slot(s, w);
        for (int i = 0; i < NAME_KEY_BYTES / 8; i++) differ |= slot->key[i] ^ w[i];
        int32_t n = slot->length;
        /* n < NAME_KEY_BYTES: the key holds the closing quote (checked again below); else the bytes after it */
        if (differ == 0 && s->end - p > (Py_ssize_t)n + 1 && p[n + 1] == '"' &&
            (n <= NAME_KEY_BYTES ||
             same_text(p + 1 + NAME_KEY_BYTES, slot->text + NAME_KEY_BYTES, n - NAME_KEY_BYTES))) {
            out->text = p + 1;
            out->length = n;
            out->flags = SPAN_PRESENT;
            *code = slot->code;
            s->p = p + n + 2;
            s->name_hits++;
            return OK;
        }
    }
    return read_text_or_null(s, out);
}

/* A plain name (SPAN_PRESENT only) scan_event has just coded: its slot learns it (NAME_KEY_BYTES readable from
 * its first byte). */
static inline ALWAYS_INLINE void learn_name(Scanner *s, Span name, int32_t code) {
    uint64_t w[NAME_KEY_BYTES / 8];
    if (name.flags != SPAN_PRESENT || s->end - name.text < NAME_KEY_BYTES) return;
    for (int i = 0; i < NAME_KEY_BYTES / 8; i++) w[i] = load_64(name.text + 8 * i);
    NameSlot *slot = name_slot(s, w);
    for (int i = 0; i < NAME_KEY_BYTES / 8; i++) slot->key[i] = w[i];
    slot->text = name.text;
    slot->length = name.length;
    slot->code = code;
}

/* The value of a member of scan_args's expected sequence, its key matched: read as the loop reads it. */
#define ARGS_MEMBER_VALUE(read)                                              \
    do {                                                                     \
        if ((rc = value_start(s)) != OK || (rc = (read)) != OK) return rc;  \
    } while (0)
/* One member of scan_args's expected sequence: its key (the comma before it, the quotes and the colon),
 * else on to the member loop, after the last value read; then its value. */
#define ARGS_MEMBER(literal, read)                                           \
    do {                                                                     \
        if (!expect_bytes(s, literal, sizeof(literal) - 1)) goto rest;      \
        ARGS_MEMBER_VALUE(read);                                             \
    } while (0)

/* Which kinds of fields an event's args may have set (scan_event makes an op or sparse record only then). */
#define KEYS_OP 1     /* a key of an op field was read: add_op looks for the op record's fields */
#define KEYS_SPARSE 2 /* a key that may be a sparse field's: add_sparse looks for the record's fields */

/* The members of an args object from the one at s->p (first), or after a value read (!first): the general
 * loop of scan_args, out of line (Kineto's own members are read by scan_args's sequences). */
static NOINLINE int args_members(Scanner *s, double *f, Span *strings, Span *stream_text, int *keys, int first) {
    int rc, more;
    Span key;
    if (!first) goto after_value;
    do {
        int which;
        if ((rc = begin_args_member(s, &key, &which)) != OK) return rc;
        rc = -1;
        switch (which) { /* the keys begin_args_member recognized; any other by its text */
        case AK_SKIPPED: break;
        case AK_EXTERNAL_ID: rc = read_float_cold(s, f, F_EXTERNAL_ID); break;
        case AK_CORRELATION: rc = read_float_cold(s, f, F_CORRELATION); break;
        case AK_DEVICE: rc = read_float_cold(s, f, F_DEVICE); break;
        case AK_STREAM: rc = read_float_or_text(s, f, F_STREAM, stream_text); break;
        case AK_GRID: rc = read_triple_or_null(s, &f[F_GRID_X]); break;
        case AK_BLOCK: rc = read_triple_or_null(s, &f[F_BLOCK_X]); break;
        case AK_REGISTERS: rc = read_float_cold(s, f, F_REGISTERS); break;
        case AK_SHARED_MEMORY: rc = read_float_cold(s, f, F_SHARED_MEMORY); break;
        case AK_OCCUPANCY: rc = read_float_cold(s, f, F_OCCUPANCY_PCT); break;
        default:
            /* By the key's length first: most keys of an event's args are not read, and each is then skipped
             * after one jump and at most a few comparisons instead of one per field read. */
            switch (key.length) {
            case 4:
                if (KEY_IS(key, "grid")) rc = read_triple_or_null(s, &f[F_GRID_X]);
                break;
            case 5:
                if (KEY_IS(key, "bytes")) rc = read_float_cold(s, f, F_BYTES);
                else if (KEY_IS(key, "block")) rc = read_triple_or_null(s, &f[F_BLOCK_X]);
                else if (KEY_IS(key, "flops")) rc = read_float_cold(s, f, OP_F(OF_FLOPS)), *keys |= KEYS_OP;
                else if (KEY_IS(key, "dtype")) rc = read_text_or_null(s, &strings[OP_S(OS_MSG_DTYPE)]), *keys |= KEYS_OP;
                break;
            case 6:
                if (KEY_IS(key, "device")) rc = read_float_cold(s, f, F_DEVICE);
                else if (KEY_IS(key, "stream")) rc = read_float_or_text(s, f, F_STREAM, stream_text);
                break;
            case 10:
                if (KEY_IS(key, "Input Dims")) rc = read_json(s, &strings[OP_S(OS_INPUT_DIMS)]), *keys |= KEYS_OP;
                else if (KEY_IS(key, "Input dims")) rc = read_json(s, &strings[OP_S(OS_INPUT_DIMS_OLD)]), *keys |= KEYS_OP;
                else if (KEY_IS(key, "Input type")) rc = read_json(s, &strings[OP_S(OS_INPUT_TYPES)]), *keys |= KEYS_OP;
                else if (KEY_IS(key, "Group size")) rc = read_float_cold(s, f, OP_F(OF_GROUP_SIZE)), *keys |= KEYS_OP;
                break;
            case 11:
                if (KEY_IS(key, "correlation")) rc = read_float_cold(s, f, F_CORRELATION);
                else if (KEY_IS(key, "External id")) rc = read_float_cold(s, f, F_EXTERNAL_ID);
                else if (KEY_IS(key, "external id")) rc = read_float_cold(s, f, F_EXTERNAL_ID_OLD);
                break;
            case 13:
                if (KEY_IS(key, "shared memory")) rc = read_float_cold(s, f, F_SHARED_MEMORY);
                else if (KEY_IS(key, "In msg nelems")) rc = read_float_cold(s, f, OP_F(OF_MSG_IN_ELEMS)), *keys |= KEYS_OP;
                break;
            case 14:
                if (KEY_IS(key, "cuda_sync_kind")) rc = read_text_or_null(s, &strings[S_SYNC_KIND]);
                else if (KEY_IS(key, "Out msg nelems")) rc = read_float_cold(s, f, OP_F(OF_MSG_OUT_ELEMS)), *keys |= KEYS_OP;
                break;
            case 15:
                if (KEY_IS(key, "Concrete Inputs")) rc = read_json(s, &strings[OP_S(OS_CONCRETE_INPUTS)]), *keys |= KEYS_OP;
                else if (KEY_IS(key, "Collective name")) rc = read_text_or_null(s, &strings[OP_S(OS_COLLECTIVE_NAME)]), *keys |= KEYS_OP;
                break;
            case 18:
                if (KEY_IS(key, "Process Group Name")) rc = read_text_or_null(s, &strings[OP_S(OS_PROCESS_GROUP)]), *keys |= KEYS_OP;
                break;
            case 19:
                if (KEY_IS(key, "Process Group Ranks")) rc = read_text_or_null(s, &strings[OP_S(OS_GROUP_RANKS)]), *keys |= KEYS_OP;
                break;
            case 20:
                if (KEY_IS(key, "registers per thread")) rc = read_float_cold(s, f, F_REGISTERS);
                break;
            case 25:
                if (KEY_IS(key, "est. achieved occupancy %")) rc = read_float_cold(s, f, F_OCCUPANCY_PCT);
                break;
            default:
                break;
            }
            break;
        }
        /* AK_OTHER (any key by its text: conservatively) or a sparse field's key (AK_DEVICE on) */
        *keys |= (which == AK_OTHER || which >= AK_DEVICE) ? KEYS_SPARSE : 0;
        if (rc == -1) rc = skip_member_value(s, 2); /* a key not read */
        if (rc != OK) return rc;
    after_value:
        more = after_item(s, '}');
        if (more < 0) return DECLINE;
    } while (more);
    return OK;
}


/* An event's args object at s->p. *keys gets KEYS_OP when a key of an op field was read, KEYS_SPARSE when
 * any key other than those of the row fields or those skipped was (most events have neither). */
static int scan_args(Scanner *s, double *f, Span *strings, Span *stream_text, int *keys) {
    int rc;
    s->p++; /* '{' */
    skip_space(s);
    if (s->p < s->end && *s->p == '}') { s->p++; return OK; }
    /* The members in the orders Kineto writes them (CPU ops: External id, Ev Idx; runtime calls: External id,
     * cbid, correlation; kernels: External id, queued, device, context, stream, correlation, registers,
     * shared memory, blocks and warps per SM, grid, block, occupancy), read in sequence as scan_event reads
     * its own members: a key each, with the comma before it, in word compares, where the loop below takes
     * two jumps on the key (begin_args_member's and its own) that the branch predictor often misses. At the
     * first member that is not the one expected, the loop takes over after the last value read: both read
     * every member alike (the same readers, the same depth for a value skipped), in the order written. */
    if (expect_bytes(s, "\"External id\":", 14)) {
        if ((rc = value_start(s)) != OK || (rc = read_id(s, f, F_EXTERNAL_ID)) != OK) return rc;
        if (expect_bytes(s, ",\"Ev Idx\":", 10)) {
            ARGS_MEMBER_VALUE(skip_id(s, SKIP_EV_IDX, 2));
            goto rest;
        }
        if (expect_bytes(s, ",\"Sequence number\":", 19)) {
            ARGS_MEMBER_VALUE(skip_member_value(s, 2));
            ARGS_MEMBER(",\"Fwd thread id\":", skip_member_value(s, 2));
            ARGS_MEMBER(",\"Ev Idx\":", skip_id(s, SKIP_EV_IDX, 2));
            goto rest;
        }
        if (expect_bytes(s, ",\"cbid\":", 8)) {
            ARGS_MEMBER_VALUE(skip_id(s, SKIP_CBID, 2));
            ARGS_MEMBER(",\"correlation\":", read_id(s, f, F_CORRELATION));
            goto rest;
        }
        if (expect_bytes(s, ",\"queued\":", 10)) ARGS_MEMBER_VALUE(skip_member_value(s, 2)); /* not on copies */
        *keys |= KEYS_SPARSE;
        ARGS_MEMBER(",\"device\":", read_float_cold(s, f, F_DEVICE));
        ARGS_MEMBER(",\"context\":", skip_member_value(s, 2));
        ARGS_MEMBER(",\"stream\":", read_float_or_text(s, f, F_STREAM, stream_text));
        ARGS_MEMBER(",\"correlation\":", read_id(s, f, F_CORRELATION));
        if (expect_bytes(s, ",\"bytes\":", 9)) { /* copies and sets */
            ARGS_MEMBER_VALUE(read_float_cold(s, f, F_BYTES));
            ARGS_MEMBER(",\"memory bandwidth (GB/s)\":", skip_member_value(s, 2));
            goto rest;
        }
        ARGS_MEMBER(",\"registers per thread\":", read_float_cold(s, f, F_REGISTERS));
        ARGS_MEMBER(",\"shared memory\":", read_float_cold(s, f, F_SHARED_MEMORY));
        ARGS_MEMBER(",\"blocks per SM\":", skip_member_value(s, 2));
        ARGS_MEMBER(",\"warps per SM\":", skip_member_value(s, 2));
        ARGS_MEMBER(",\"grid\":", read_triple_or_null(s, &f[F_GRID_X]));
        ARGS_MEMBER(",\"block\":", read_triple_or_null(s, &f[F_BLOCK_X]));
        ARGS_MEMBER(",\"est. achieved occupancy %\":", read_float_cold(s, f, F_OCCUPANCY_PCT));
        goto rest;
    }
    return args_members(s, f, strings, stream_text, keys, 1);
rest:
    /* the args' end right after the last value read (Kineto's layout): what args_members' loop would read
     * there, without its call */
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return OK;
    }
    return args_members(s, f, strings, stream_text, keys, 0);
}

/* The PH_* of each one-byte phase (filled once, at import: phase_table_init), read without a jump table
 * (its indirect jump, a phase an event, was often mispredicted). */
static unsigned char PHASE_OF_BYTE[256];

static void phase_table_init(void) {
    memset(PHASE_OF_BYTE, PH_OTHER, sizeof PHASE_OF_BYTE);
    PHASE_OF_BYTE['X'] = PH_COMPLETE;
    PHASE_OF_BYTE['s'] = PHASE_OF_BYTE['f'] = PHASE_OF_BYTE['t'] = PH_FLOW;
    PHASE_OF_BYTE['i'] = PHASE_OF_BYTE['I'] = PH_INSTANT;
    PHASE_OF_BYTE['M'] = PH_METADATA;
}

static inline ALWAYS_INLINE int phase_of(Span span) {
    return span.length == 1 ? PHASE_OF_BYTE[span.text[0]] : PH_OTHER;
}

/* Room for `capacity` rows (the columns' contents kept). */
static int reserve(Scanner *s, size_t capacity) {
    for (int k = 0; k < N_ROW_FLOATS; k++) {
        double *column = PyMem_RawRealloc(s->floats[k], capacity * sizeof(double));
        if (column == NULL) return NO_MEMORY;
        s->floats[k] = column;
    }
    for (int k = 0; k < N_STRINGS; k++) {
        int32_t *column = PyMem_RawRealloc(s->codes[k], capacity * sizeof(int32_t));
        if (column == NULL) return NO_MEMORY;
        s->codes[k] = column;
    }
    s->capacity = capacity;
    return OK;
}

static int grow(Scanner *s) { return reserve(s, s->capacity ? s->capacity * 2 : 1024); }

/* The rows to make room for before scanning `bytes` of JSON: Kineto's events take 150 to 300 bytes, so one
 * row per 128 bytes is seldom outgrown and the columns are not copied by realloc as they grow (pages never
 * written are never touched; see column_buffers). A whole document in one piece starts with at most a
 * million rows and grows from there. */
static size_t first_capacity(size_t bytes) {
    size_t rows = bytes / 128 + 16;
    return rows < ((size_t)1 << 20) ? rows : (size_t)1 << 20;
}

static int add_text(Scanner *s, int64_t row, int field, Span text) {
    if (!(text.flags & SPAN_PRESENT)) return OK;
    if (s->n_texts == s->texts_capacity) {
        size_t capacity = s->texts_capacity ? s->texts_capacity * 2 : 16;
        NumberText *texts = PyMem_RawRealloc(s->texts, capacity * sizeof(NumberText));
        if (texts == NULL) return NO_MEMORY;
        s->texts = texts;
        s->texts_capacity = capacity;
    }
    s->texts[s->n_texts].row = row;
    s->texts[s->n_texts].field = field;
    s->texts[s->n_texts].text = text;
    s->n_texts++;
    return OK;
}

/* An op record for the event at `row` when it holds an op field (a deferred number counts: its bit in
 * s->deferred); *index gets the record's index, -1 when none. */
static int add_op(Scanner *s, const double *f, const Span *strings, int64_t row, int64_t *index) {
    int found = 0;
    *index = -1;
    for (int k = OP_F(0); k < N_EVENT_FLOATS && !found; k++)
        found = !isnan(f[k]) || (s->deferred & (UINT32_C(1) << k));
    for (int k = OP_S(0); k < N_EVENT_STRINGS && !found; k++) found = strings[k].flags & SPAN_PRESENT;
    if (!found) return OK;
    if (s->n_ops == s->ops_capacity) {
        size_t capacity = s->ops_capacity ? s->ops_capacity * 2 : 64;
        int64_t *op_rows = PyMem_RawRealloc(s->op_rows, capacity * sizeof(int64_t));
        if (op_rows == NULL) return NO_MEMORY;
        s->op_rows = op_rows;
        double *op_floats = PyMem_RawRealloc(s->op_floats, capacity * N_OP_FLOATS * sizeof(double));
        if (op_floats == NULL) return NO_MEMORY;
        s->op_floats = op_floats;
        Span *op_strings = PyMem_RawRealloc(s->op_strings, capacity * N_OP_STRINGS * sizeof(Span));
        if (op_strings == NULL) return NO_MEMORY;
        s->op_strings = op_strings;
        s->ops_capacity = capacity;
    }
    s->op_rows[s->n_ops] = row;
    memcpy(s->op_floats + s->n_ops * N_OP_FLOATS, f + OP_F(0), N_OP_FLOATS * sizeof(double));
    memcpy(s->op_strings + s->n_ops * N_OP_STRINGS, strings + OP_S(0), N_OP_STRINGS * sizeof(Span));
    *index = (int64_t)s->n_ops++;
    return OK;
}

/* A sparse record for the event at `row` when it holds a sparse float field (a number, a deferred number, or
 * a stream written as a string: `text`); *index gets the record's index, -1 when none. */
static inline ALWAYS_INLINE int add_sparse(Scanner *s, const double *f, const Span *text, int64_t row,
                                           int64_t *index) {
    int found = (text->flags & SPAN_PRESENT) ||
                (s->deferred & (((UINT32_C(1) << N_SPARSE_FLOATS) - 1) << N_ROW_FLOATS));
    for (int k = N_ROW_FLOATS; k < N_FLOATS; k++) found |= !isnan(f[k]);
    *index = -1;
    if (!found) return OK;
    if (s->n_sparse == s->sparse_capacity) {
        /* first room for a quarter of the rows' (GPU events are one in ten to one in four): the records are
         * then seldom copied by realloc as they grow, and each block's are the size the next block's ask for */
        size_t first = s->capacity / 4 > 256 ? s->capacity / 4 : 256;
        size_t capacity = s->sparse_capacity ? s->sparse_capacity * 2 : first;
        int64_t *rows = PyMem_RawRealloc(s->sparse_rows, capacity * sizeof(int64_t));
        if (rows == NULL) return NO_MEMORY;
        s->sparse_rows = rows;
        double *floats = PyMem_RawRealloc(s->sparse_floats, capacity * N_SPARSE_FLOATS * sizeof(double));
        if (floats == NULL) return NO_MEMORY;
        s->sparse_floats = floats;
        s->sparse_capacity = capacity;
    }
    s->sparse_rows[s->n_sparse] = row;
    memcpy(s->sparse_floats + s->n_sparse * N_SPARSE_FLOATS, f + N_ROW_FLOATS, N_SPARSE_FLOATS * sizeof(double));
    *index = (int64_t)s->n_sparse++;
    return OK;
}

/* "ph": a string without escapes (phase_of reads its one byte). */
static inline ALWAYS_INLINE int read_phase(Scanner *s, Span *phase_text) {
    int rc;
    const unsigned char *p = s->p;
    /* One ASCII character, not a quote, backslash or control character, between quotes ("X"): the span
     * read_typed_text gives, without the string scan. */
    if (s->end - p >= 3 && p[0] == '"' && p[2] == '"' && p[1] >= 0x20 && p[1] < 0x80 && p[1] != '"' &&
        p[1] != '\\') {
        phase_text->text = p + 1;
        phase_text->length = 1;
        phase_text->flags = SPAN_PRESENT;
        s->p = p + 3;
        return OK;
    }
    if (*s->p != '"') return DECLINE;
    rc = read_typed_text(s, phase_text);
    if (rc == OK && (phase_text->flags & SPAN_ESCAPED)) return DECLINE;
    return rc;
}

/* An event member whose key begin_event_member did not recognize by its bytes (written with whitespace before
 * its colon, or a key the event loop does not read): dispatched on the key's text. Out of line: Kineto's
 * own members never come here. */
static int other_event_member(Scanner *s, Span key, double *f, Span *strings, Span *phase_text, Span *pid_text,
                              Span *tid_text, Span *stream_text, int *keys) {
    int rc;
    if (KEY_IS(key, "ph")) rc = read_phase(s, phase_text);
    else if (KEY_IS(key, "cat")) rc = read_text_or_null(s, &strings[S_CAT]);
    else if (KEY_IS(key, "name")) rc = read_text_or_null(s, &strings[S_NAME]);
    else if (KEY_IS(key, "pid")) rc = read_float_or_text(s, f, F_PID, pid_text);
    else if (KEY_IS(key, "tid")) rc = read_float_or_text(s, f, F_TID, tid_text);
    else if (KEY_IS(key, "ts")) rc = read_float_cold(s, f, F_TS);
    else if (KEY_IS(key, "dur")) rc = read_float_cold(s, f, F_DUR);
    else if (KEY_IS(key, "args")) rc = *s->p == '{' ? scan_args(s, f, strings, stream_text, keys) : DECLINE;
    else rc = skip_member_value(s, 1);
    return rc;
}

/* Whether a category is the text "Trace" as Kineto writes it (no escape): its profiler span's. */
static inline ALWAYS_INLINE int is_profiler_span(Span category) {
    return (category.flags & (SPAN_PRESENT | SPAN_ESCAPED)) == SPAN_PRESENT && KEY_IS(category, "Trace");
}

/* One member of scan_event's expected sequence: its key (the comma before it, the quotes and the colon),
 * else on to the member loop, after the last value read; then its value, read as the loop reads it. */
#define KINETO_MEMBER(literal, read)                                        \
    do {                                                                    \
        if (!expect_bytes(s, literal, sizeof(literal) - 1)) goto after_value; \
        if ((rc = value_start(s)) != OK || (rc = (read)) != OK) return rc;  \
    } while (0)

/* A stored row counted for counted_sizes (the scanner's fields above). */
static inline ALWAYS_INLINE void count_row(Scanner *s, const double *f, int32_t category) {
    uint32_t at = (uint32_t)(category + 1);
    if (at < N_COUNTED_CATEGORIES) {
        s->category_counts[at] += 1 + ((uint64_t)(!isnan(f[F_CORRELATION]) & !isnan(f[F_PID])) << 32);
    } else {
        s->uncounted = 1;
    }
    double t = fabs(f[F_TS]);
    if (t > s->max_abs_ts || t != t) s->max_abs_ts = t; /* a NaN stays */
    /* (a ts, correlation or pid phase two sets is one of s->texts: build_result finds it there) */
}

/* Flow events ("ph" "s" or "f": no rows, checked only) checked whole against a template of their shape.
 * Kineto writes them in few shapes (the lengths of the id, pid and tid; the category; "bp" on "f" only):
 *     ,"id":ID,"pid":PID,"tid":TID,"ts":1712195495519695.8,"cat":"ac2g","name":"ac2g","bp":"e"\n  }
 * after the event's "ph":"s"; the member by member check below takes a seventh of the scan's time on
 * them. A template holds each byte's range: a constant byte, a digit, or the first digit of a run of two or
 * more (1-9); 16 bytes are compared a step, with no branch but the last. An event that matches one is
 * exactly what the member sequence accepts, with the same effects (a flow's members set nothing kept:
 * integers of at most 16 digits and the timestamp's shape are neither deferred nor declined, texts are
 * ASCII without escapes), and it ends at its '}'. Any other event (another shape, or one that does not
 * match) goes through the member sequence, which alone declines. The templates are learnt from the events
 * (flow_template_build, which takes only the shape above) and found by the digits of their first 48 bytes
 * and the phase, two a set. flow_templates_enabled: off for tests (scan_events' output the same). */
static int flow_templates_enabled = 1;
static int64_t flow_template_hits; /* summed over the scanners as they finish */

#ifdef HAVE_FLOW_TEMPLATES
static inline ALWAYS_INLINE unsigned digit_mask_16(__m128i chunk) {
    __m128i d = _mm_sub_epi8(chunk, _mm_set1_epi8('0'));
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
}

/* The template key of the bytes at p (FLOW_BYTES readable): its digits in the first 48, the phase byte. */
static inline ALWAYS_INLINE uint64_t flow_template_key(const __m128i *chunk, unsigned char phase) {
    return (uint64_t)digit_mask_16(chunk[0]) | (uint64_t)digit_mask_16(chunk[1]) << 16 |
           (uint64_t)digit_mask_16(chunk[2]) << 32 | (uint64_t)phase << 48 | UINT64_C(1) << 63;
}

static inline ALWAYS_INLINE int flow_template_matches(const FlowTemplate *t, const __m128i *chunk) {
    __m128i ok = _mm_set1_epi8(-1);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
    for (int i = 0; i < FLOW_CHUNKS; i++) {
        __m128i lo = _mm_loadu_si128((const __m128i *)(t->lo + 16 * i));
        __m128i hi = _mm_loadu_si128((const __m128i *)(t->hi + 16 * i));
        ok = _mm_and_si128(ok, _mm_and_si128(_mm_cmpeq_epi8(_mm_max_epu8(chunk[i], lo), chunk[i]),
                                             _mm_cmpeq_epi8(_mm_min_epu8(chunk[i], hi), chunk[i])));
    }
    return _mm_movemask_epi8(ok) == 0xFFFF;
}

/* flow_template_build's steps: each takes the bytes at p[*at] into the template, or returns 0. */
static int template_constant(FlowTemplate *t, const unsigned char *p, int *at, const char *text) {
    for (; *text; text++, (*at)++) {
        if (*at >= FLOW_BYTES || p[*at] != (unsigned char)*text) return 0;
        t->lo[*at] = t->hi[*at] = (unsigned char)*text;
    }
    return 1;
}

/* A JSON integer of 1 to 16 digits, a '-' before it or not: its digits each a range, the first 1-9 where
 * there are more (no leading zero). */
static int template_integer(FlowTemplate *t, const unsigned char *p, int *at) {
    int n = 0;
    if (*at < FLOW_BYTES && p[*at] == '-') t->lo[*at] = t->hi[*at] = '-', (*at)++;
    while (*at + n < FLOW_BYTES && is_digit(p[*at + n])) n++;
    if (n == 0 || n > 16 || (n > 1 && p[*at] == '0')) return 0;
    for (int k = 0; k < n; k++) t->lo[*at + k] = k == 0 && n > 1 ? '1' : '0', t->hi[*at + k] = '9';
    *at += n;
    return 1;
}

/* Kineto's timestamp, as read_timestamp's fast path takes it: 16 digits (the first 1-9), a point, a digit. */
static int template_timestamp(FlowTemplate *t, const unsigned char *p, int *at) {
    if (*at + 18 > FLOW_BYTES || p[*at] == '0' || p[*at + 16] != '.' || !is_digit(p[*at + 17])) return 0;
    for (int k = 0; k < 18; k++) {
        if (k != 16 && !is_digit(p[*at + k])) return 0;
        t->lo[*at + k] = k == 16 ? '.' : k == 0 ? '1' : '0';
        t->hi[*at + k] = k == 16 ? '.' : '9';
    }
    *at += 18;
    return 1;
}

/* A string of printable ASCII without escapes (at most 32 bytes between its quotes), each byte a constant. */
static int template_text(FlowTemplate *t, const unsigned char *p, int *at) {
    int n = 1;
    if (*at >= FLOW_BYTES || p[*at] != '"') return 0;
    while (*at + n < FLOW_BYTES && p[*at + n] >= 0x20 && p[*at + n] < 0x7F && p[*at + n] != '"' && p[*at + n] != '\\')
        n++;
    if (*at + n >= FLOW_BYTES || p[*at + n] != '"' || n > 33) return 0;
    for (int k = 0; k <= n; k++) t->lo[*at + k] = t->hi[*at + k] = p[*at + k];
    *at += n + 1;
    return 1;
}

/* The template of the flow event at p (after its "ph" member; FLOW_BYTES readable): 0 unless it is of the
 * shape flow_template_skip describes, ended by whitespace (Kineto's "\n  ") and its '}'. */
static NOINLINE int flow_template_build(FlowTemplate *t, const unsigned char *p, uint64_t key) {
    int at = 0;
    memset(t->lo, 0, FLOW_BYTES);
    memset(t->hi, 0xFF, FLOW_BYTES);
    if (!(template_constant(t, p, &at, ",\"id\":") && template_integer(t, p, &at) &&
          template_constant(t, p, &at, ",\"pid\":") && template_integer(t, p, &at) &&
          template_constant(t, p, &at, ",\"tid\":") && template_integer(t, p, &at) &&
          template_constant(t, p, &at, ",\"ts\":") && template_timestamp(t, p, &at) &&
          template_constant(t, p, &at, ",\"cat\":") && template_text(t, p, &at) &&
          template_constant(t, p, &at, ",\"name\":") && template_text(t, p, &at)))
        return 0;
    if (at < FLOW_BYTES && p[at] == ',' && !(template_constant(t, p, &at, ",\"bp\":") && template_text(t, p, &at)))
        return 0;
    while (at < FLOW_BYTES && is_space(p[at])) t->lo[at] = t->hi[at] = p[at], at++;
    if (!template_constant(t, p, &at, "}")) return 0;
    t->key = key;
    t->length = at;
    return 1;
}

/* A flow event at s->p (after its "ph" member) that matches a template: s->p past its '}', 1; else 0 (s->p
 * as it was: the member sequence reads it). */
static inline ALWAYS_INLINE int flow_template_skip(Scanner *s, unsigned char phase) {
    const unsigned char *p = s->p;
    __m128i chunk[FLOW_CHUNKS];
    if (!flow_templates_enabled || s->end - p < FLOW_BYTES) return 0;
    for (int i = 0; i < FLOW_CHUNKS; i++) chunk[i] = _mm_loadu_si128((const __m128i *)(p + 16 * i));
    uint64_t key = flow_template_key(chunk, phase);
    FlowTemplate *set = s->flow_templates[(key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - FLOW_SET_BITS)];
    FlowTemplate *t = NULL;
    if (set[0].key == key && flow_template_matches(&set[0], chunk)) t = &set[0];
    else if (set[1].key == key && flow_template_matches(&set[1], chunk)) t = &set[1];
    else {
        FlowTemplate learnt;
        if (!flow_template_build(&learnt, p, key) || !flow_template_matches(&learnt, chunk)) return 0;
        set[1] = set[0]; /* the new one first, the last one kept beside it */
        set[0] = learnt;
        t = &set[0];
    }
    s->p = p + t->length;
    s->flow_template_hits++;
    return 1;
}
#endif

/* read_float for an event's "dur" in Kineto's member order: Kineto's shape of it (1 to 8 digits, no leading
 * zero, a point, 1 to 8 digits: 4.928, 0.358, 1234.5) found in one 16-byte compare, its digits' lengths from
 * the masks of digits and points, where scan_kineto_number finds the integer part's end first and then reads
 * the fraction from there (two digit runs in a chain); the same mantissa, fraction and digits then converted
 * as it converts them (kineto_number_value), so the value, path and end are its. Any other shape (a sign, an
 * integer, an exponent, more digits, fewer than 32 bytes left, a deferred dur before) by read_float. */
static inline ALWAYS_INLINE int read_duration(Scanner *s, double *f) {
#ifdef HAVE_FLOW_TEMPLATES
    const unsigned char *p = s->p;
    if (s->end - p >= KINETO_NUMBER_BYTES && !(s->deferred & (UINT32_C(1) << F_DUR))) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)p);
        unsigned digits = digit_mask_16(chunk);
        unsigned point = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('.')));
        int n = __builtin_ctz(~digits); /* the digits before the first other byte (~digits: bits 16 on set) */
        if (n >= 1 && n <= 8 && (point >> n & 1) && !(p[0] == '0' && n > 1)) {
            int fraction = __builtin_ctz(~(digits >> (n + 1)));
            if (fraction >= 1 && fraction <= 8 && n + 1 + fraction < 16 && (p[n + 1 + fraction] | 0x20) != 'e') {
                int is_integer;
                int64_t integer;
                uint64_t mantissa = digits_value(load_64(p) - UINT64_C(0x3030303030303030), n);
                uint64_t run = digits_value(load_64(p + n + 1) - UINT64_C(0x3030303030303030), fraction);
                if (kineto_number_value(s, p + n + 1 + fraction, 0, mantissa, fraction, run, &f[F_DUR],
                                        &is_integer, &integer))
                    return OK;
            }
        }
    }
#endif
    return read_float(s, f, F_DUR);
}

static int scan_event(Scanner *s) {
    double f[N_EVENT_FLOATS];
    Span strings[N_EVENT_STRINGS]; /* only a present span's text and length are read */
    Span phase_text = {0}, pid_text = {0}, tid_text = {0}, stream_text = {0}, key;
    int rc, more, phase, keys = 0, checked_only = 0;
    const unsigned char *event_start = s->p;
    /* a category read_category recognized (KNOWN_*), and where its text is: the row's category while the
     * span is still that one (a later "cat" member replaces it) */
    int category = KNOWN_NONE, unused = KNOWN_NONE;
    const unsigned char *category_text = NULL;
    /* the name's code when read_name found it, while the name's span is still that one */
    int32_t name_code = -1;
    const unsigned char *name_text = NULL;
    int64_t row, op = -1, sparse = -1;
    /* The fields absent until read (EVENT_FIELDS_ABSENT), for a complete event: the flow sequence does not
     * set them, nor an empty event (only a complete event's fields are read after its members, and a flow
     * read again as one sets them then). Flags alone, in plain stores: zeroing the whole array compiled to a
     * `rep stos`, a fifth of the event's time. */
#define EVENT_FIELDS_ABSENT()                                                  \
    do {                                                                       \
        for (int k = 0; k < N_EVENT_STRINGS; k++) strings[k].flags = 0;        \
        for (int k = 0; k < N_EVENT_FLOATS; k++) f[k] = NAN;                   \
        f[F_DUR] = 0.0; /* dur's default in kineto/fields.py */               \
    } while (0)
    s->deferred = 0;
    s->p++;          /* '{' */
    /* Kineto's layout: the first member on the next line, indented by four (one word compare) */
    if (s->end - s->p >= 8 && load_64(s->p) == word_of("\n    \"ph")) s->p += 5;
    else skip_space(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        goto members_done;
    }
    /* Kineto's own member order, read in sequence: each expected key (with the comma before it) is one
     * word compare, a branch that is nearly always taken, where the member loop below jumps on the key's
     * first letter and then on the key, two indirect jumps a member that the branch predictor often misses
     * (a third of the scan's time, measured). At the first member that is not the one expected, the loop
     * takes over where the sequence stopped, after a value (or at the first member): both read every member
     * alike, in the order written, so the event is the one the loop alone would read. */
    if (s->end - s->p >= 8 && s->p[0] == '"' && s->p[1] == 'p') {
        uint64_t w = load_word(s->p);
        if (w == word_of("\"ph\":\"X\"")) {
            EVENT_FIELDS_ABSENT();
            phase_text.text = s->p + 6, phase_text.length = 1, phase_text.flags = SPAN_PRESENT;
            s->p += 8;
            KINETO_MEMBER(",\"cat\":", read_category(s, &strings[S_CAT], &category));
            category_text = strings[S_CAT].text;
            KINETO_MEMBER(",\"name\":", read_name(s, &strings[S_NAME], &name_code));
            name_text = strings[S_NAME].text;
            KINETO_MEMBER(",\"pid\":", read_row_id_or_text(s, f, F_PID, &pid_text, category));
            KINETO_MEMBER(",\"tid\":", read_row_id_or_text(s, f, F_TID, &tid_text, category));
            KINETO_MEMBER(",\"ts\":", read_timestamp(s, f, 1));
            KINETO_MEMBER(",\"dur\":", read_duration(s, f));
            KINETO_MEMBER(",\"args\":", *s->p == '{' ? scan_args(s, f, strings, &stream_text, &keys) : DECLINE);
            goto after_value;
        }
        if ((w == word_of("\"ph\":\"f\"") || w == word_of("\"ph\":\"s\"")) && !s->convert_all) { /* flow events */
            phase_text.text = s->p + 6, phase_text.length = 1, phase_text.flags = SPAN_PRESENT;
            s->p += 8;
            /* CHECKED_ONLY: a flow is no row, so its ids and time of Kineto's shapes are checked, not
             * converted (any other shape is read as always: a number deferred is still checked); should a
             * later "ph" member make the event a complete one, it is read again, converting all */
            checked_only = 1;
#ifdef HAVE_FLOW_TEMPLATES
            if (flow_template_skip(s, s->p[-2])) goto members_done; /* the whole event at once, if it can */
#endif
            KINETO_MEMBER(",\"id\":", skip_id(s, SKIP_FLOW_ID, 1));
            KINETO_MEMBER(",\"pid\":", read_id_or_text_as(s, f, F_PID, &pid_text, 0));
            KINETO_MEMBER(",\"tid\":", read_id_or_text_as(s, f, F_TID, &tid_text, 0));
            KINETO_MEMBER(",\"ts\":", read_timestamp(s, f, 0));
            KINETO_MEMBER(",\"cat\":", read_category(s, &strings[S_CAT], &unused));
            KINETO_MEMBER(",\"name\":", read_category(s, &strings[S_NAME], &unused)); /* "ac2g", "fwdbwd" as their category */
            KINETO_MEMBER(",\"bp\":", skip_member_value(s, 1));
            goto after_value;
        }
    }
    EVENT_FIELDS_ABSENT();
    for (;;) {
        int which;
        if ((rc = begin_event_member(s, &key, &which)) != OK) return rc;
        switch (which) { /* the keys begin_event_member recognized; any other by its text */
        case EK_PH: rc = read_phase(s, &phase_text); break;
        case EK_CAT: rc = read_text_or_null(s, &strings[S_CAT]); break;
        case EK_NAME:
            rc = read_name(s, &strings[S_NAME], &name_code);
            name_text = strings[S_NAME].text;
            break;
        case EK_PID: rc = read_float_or_text(s, f, F_PID, &pid_text); break;
        case EK_TID: rc = read_float_or_text(s, f, F_TID, &tid_text); break;
        case EK_TS: rc = read_float_cold(s, f, F_TS); break;
        case EK_DUR: rc = read_float_cold(s, f, F_DUR); break;
        case EK_ARGS: rc = *s->p == '{' ? scan_args(s, f, strings, &stream_text, &keys) : DECLINE; break;
        case EK_SKIPPED: rc = skip_member_value(s, 1); break;
        default:
            rc = other_event_member(s, key, f, strings, &phase_text, &pid_text, &tid_text, &stream_text, &keys);
            break;
        }
        if (rc != OK) return rc;
    after_value:
        more = after_item(s, '}');
        if (more < 0) return DECLINE;
        if (!more) break;
    }
members_done:
    phase = (phase_text.flags & SPAN_PRESENT) ? phase_of(phase_text) : PH_OTHER; /* ph "" by default */
    if (checked_only && phase == PH_COMPLETE) { /* a row after all: read again, every number converted */
        s->p = event_start;
        s->convert_all = 1;
        rc = scan_event(s);
        s->convert_all = 0;
        return rc;
    }
    s->counts[phase]++;
    /* Deferred numbers are parsed in phase two: into the row, or, for an event not kept (row -1), only to
     * decline the block if one is out of range, as msgspec's typed decoder then fails. A complete event of
     * the category "Trace" (the profiler's own span, one a trace, which kineto/blocks.py makes no timeline
     * event of) is not kept either: the reader would drop its row, and with it gathering every other row of
     * the block (any other spelling of the category is left to it). */
    row = phase == PH_COMPLETE && !is_profiler_span(strings[S_CAT]) ? (int64_t)s->rows : -1;
    if (row >= 0 && (keys & KEYS_OP) && (rc = add_op(s, f, strings, row, &op)) != OK) return rc;
    if (row >= 0 && (keys & KEYS_SPARSE) && (rc = add_sparse(s, f, &stream_text, row, &sparse)) != OK) return rc;
    /* a deferred number's slot: its row's (row fields), its sparse or op record's (-1: only checked) */
    for (int k = 0; s->deferred != 0 && k < N_EVENT_FLOATS; k++)
        if ((s->deferred & (UINT32_C(1) << k)) &&
            (rc = add_text(s, k < N_ROW_FLOATS ? row : k < N_FLOATS ? sparse : op, k, s->deferred_text[k])) != OK)
            return rc;
    if (row < 0) return OK;
    if (s->rows == s->capacity && (rc = grow(s)) != OK) return rc;
    {
        size_t r = s->rows;
        double *const *floats = s->floats;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 32
#endif
        for (int k = 0; k < N_ROW_FLOATS; k++) floats[k][r] = f[k];
        /* a recognized category's code, kept from its first row: no hash and probe for it */
        int recognized = category != KNOWN_NONE && (strings[S_CAT].flags & SPAN_PRESENT) &&
                         strings[S_CAT].text == category_text;
        for (int k = 0; k < N_STRINGS; k++) {
            int32_t code = -1;
            if (k == S_CAT && recognized && s->known_categories[category] != 0)
                code = s->known_categories[category] - 1;
            else if (k == S_NAME && name_code >= 0 && (strings[S_NAME].flags & SPAN_PRESENT) &&
                     strings[S_NAME].text == name_text)
                code = name_code; /* read_name's span, not replaced since (a null leaves the text as it was) */
            else if ((strings[k].flags & SPAN_PRESENT) && (code = span_code(&s->tables[k], strings[k])) < 0)
                return NO_MEMORY;
            else if (k == S_NAME && (strings[k].flags & SPAN_PRESENT))
                learn_name(s, strings[k], code);
            s->codes[k][r] = code;
        }
        if (recognized) s->known_categories[category] = s->codes[S_CAT][r] + 1;
        count_row(s, f, s->codes[S_CAT][r]);
    }
    if ((rc = add_text(s, row, F_PID, pid_text)) != OK) return rc;
    if ((rc = add_text(s, row, F_TID, tid_text)) != OK) return rc;
    if ((rc = add_text(s, sparse, F_STREAM, stream_text)) != OK) return rc;
    s->rows++;
    return OK;
}

#undef EVENT_FIELDS_ABSENT

/* After an event: the comma and the next event's '{' as Kineto writes them (",\n  {"), s->p then at the '{':
 * one word compare instead of two whitespace scans. 0 (s->p unchanged) for any other bytes. */
static inline ALWAYS_INLINE int next_event(Scanner *s) {
    if (s->end - s->p >= 8 && load_32(s->p) == load_32((const unsigned char *)",\n  ") && s->p[4] == '{') {
        s->p += 4;
        return 1;
    }
    return 0;
}

/* A JSON list of event objects at s->p, up to and including its ']'. */
static int scan_list(Scanner *s) {
    int rc, more;
    if (s->p >= s->end || *s->p != '[') return DECLINE;
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == ']') { s->p++; return OK; }
    for (;;) {
        skip_space(s);
        if (s->p >= s->end || *s->p != '{') return DECLINE; /* an event that is not an object */
        if ((rc = scan_event(s)) != OK) return rc;
        if (next_event(s)) continue;
        if ((more = after_item(s, ']')) <= 0) return more == 0 ? OK : DECLINE;
    }
}

/* One piece: a JSON list of event objects, or a bare sequence of them ("{...},\n  {...}", how a block of
 * the file holds them). Either way nothing but whitespace may follow. */
static int scan_piece(Scanner *s) {
    int rc;
    skip_space(s);
    if (s->p >= s->end) return DECLINE;
    if (*s->p == '[') {
        if ((rc = scan_list(s)) != OK) return rc;
    } else {
        for (;;) {
            skip_space(s);
            if (s->p >= s->end || *s->p != '{') return DECLINE;
            if ((rc = scan_event(s)) != OK) return rc;
            if (next_event(s)) continue;
            skip_space(s);
            if (s->p >= s->end) return OK;
            if (*s->p != ',') return DECLINE;
            s->p++;
        }
    }
    skip_space(s);
    return s->p == s->end ? OK : DECLINE;
}

/* A whole document: a list of events, or an object whose "traceEvents" member is one (its other members are
 * checked and skipped; the caller decodes them). events_start and events_end: where that list lies (-1 for a
 * bare list). */
static int scan_document(Scanner *s, const unsigned char *base, int64_t *events_start, int64_t *events_end) {
    int rc, more, found = 0;
    Span key;
    *events_start = *events_end = -1;
    skip_space(s);
    if (s->p >= s->end) return DECLINE;
    if (*s->p == '[') return scan_piece(s);
    if (*s->p != '{') return DECLINE;
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == '}') return DECLINE; /* no traceEvents: msgspec says so */
    do {
        if ((rc = begin_member(s, &key)) != OK) return rc;
        if (KEY_IS(key, "traceEvents")) {
            if (found || *s->p != '[') return DECLINE; /* twice, or not a list: left to msgspec */
            found = 1;
            *events_start = s->p - base;
            rc = scan_list(s);
            *events_end = s->p - base;
        } else {
            rc = skip_value(s, 1);
        }
        if (rc != OK) return rc;
        more = after_item(s, '}');
        if (more < 0) return DECLINE;
    } while (more);
    skip_space(s);
    if (s->p != s->end || !found) return DECLINE;
    return OK;
}

/* --- phase two: strings, with the GIL ------------------------------------------------------------------ */

typedef struct {
    Slot *slots;
    size_t capacity, used;
    PyObject *values; /* list of str, indexed by code */
    double *numbers;  /* for number texts: the parsed value of each code */
} Interner;

static int interner_init(Interner *t) {
    t->capacity = 256;
    t->used = 0;
    t->numbers = NULL;
    t->slots = PyMem_Calloc(t->capacity, sizeof(Slot));
    if (t->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->values = PyList_New(0);
    return t->values == NULL ? -1 : 0;
}

static void interner_free(Interner *t) {
    PyMem_Free(t->slots);
    PyMem_Free(t->numbers);
    Py_CLEAR(t->values);
}

static int interner_grow(Interner *t) {
    size_t capacity = t->capacity * 2;
    Slot *slots = PyMem_Calloc(capacity, sizeof(Slot));
    if (slots == NULL) return -1;
    for (size_t i = 0; i < t->capacity; i++) {
        if (t->slots[i].text == NULL) continue;
        size_t j = t->slots[i].hash & (capacity - 1);
        while (slots[j].text != NULL) j = (j + 1) & (capacity - 1);
        slots[j] = t->slots[i];
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->capacity = capacity;
    return 0;
}

/* The Python str of a span: UTF-8 decoded, or unescaped by decode_string (msgspec.json.decode) when it
 * holds escapes. NULL with no exception set: not valid text, decline. */
static PyObject *span_text(Span span, PyObject *decode_string) {
    PyObject *value;
    if (!(span.flags & SPAN_ESCAPED)) { /* also a raw JSON text, escapes and all */
        value = PyUnicode_DecodeUTF8((const char *)span.text, span.length, NULL);
        if (value == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) PyErr_Clear();
        return value;
    }
    PyObject *quoted = PyBytes_FromStringAndSize((const char *)span.text - 1, span.length + 2);
    if (quoted == NULL) return NULL;
    value = PyObject_CallOneArg(decode_string, quoted);
    Py_DECREF(quoted);
    if (value == NULL) {
        PyErr_Clear(); /* msgspec will report it when it decodes the block */
        return NULL;
    }
    if (!PyUnicode_Check(value)) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

/* The str objects of the row string fields' texts (categories, names, sync kinds), kept across blocks and reads,
 * keyed by their bytes: a big trace's blocks hold the same few hundred names, and each block's names were new str
 * objects, decoded again (build_result, the GIL held, on the scan worker), and hashed again where the reader looks
 * them up (named_kinds.NameFlags.bits, the table's interner in Columns.add: ~8 ms a load of the 406 MB tile); the
 * same objects keep their hash and compare equal by identity. At most TEXT_CACHE_SLOTS / 2 texts (then emptied and
 * filled again), each at most TEXT_CACHE_MAX_BYTES and without escapes: such a str depends only on the bytes
 * (span_text decodes them as UTF-8), so the values are those span_text gives. text_cache_enabled: off for tests
 * (the values the same). The GIL guards it (build_result holds it). */
#define TEXT_CACHE_SLOTS 8192
#define TEXT_CACHE_MAX_BYTES 1024
typedef struct {
    unsigned char *bytes; /* a copy of the text (NULL: an empty slot) */
    int32_t length;
    uint64_t hash;
    PyObject *value;
} TextSlot;
static TextSlot *text_cache; /* TEXT_CACHE_SLOTS of them, allocated at first use */
static size_t text_cache_used;
static int text_cache_enabled = 1;
static int64_t text_cache_hits;

static void text_cache_clear(void) {
    if (text_cache == NULL) return;
    for (size_t i = 0; i < TEXT_CACHE_SLOTS; i++) {
        PyMem_Free(text_cache[i].bytes);
        Py_CLEAR(text_cache[i].value);
        text_cache[i].bytes = NULL;
    }
    text_cache_used = 0;
}

/* span_text through the cache (a new reference; NULL as span_text gives it). */
static PyObject *cached_span_text(Span span, PyObject *decode_string) {
    if (!text_cache_enabled || (span.flags & SPAN_ESCAPED) || span.length > TEXT_CACHE_MAX_BYTES)
        return span_text(span, decode_string);
    if (text_cache == NULL && (text_cache = PyMem_Calloc(TEXT_CACHE_SLOTS, sizeof(TextSlot))) == NULL)
        return span_text(span, decode_string);
    uint64_t hash = hash_bytes(span.text, span.length);
    size_t j = hash & (TEXT_CACHE_SLOTS - 1);
    for (; text_cache[j].bytes != NULL; j = (j + 1) & (TEXT_CACHE_SLOTS - 1)) {
        TextSlot *slot = &text_cache[j];
        if (slot->hash == hash && slot->length == span.length && same_text(slot->bytes, span.text, span.length)) {
            text_cache_hits++;
            return Py_NewRef(slot->value);
        }
    }
    PyObject *value = span_text(span, decode_string);
    if (value == NULL) return NULL;
    if ((text_cache_used + 1) * 2 > TEXT_CACHE_SLOTS) { /* full: emptied, the text the first of the new fill */
        text_cache_clear();
        j = hash & (TEXT_CACHE_SLOTS - 1);
    }
    unsigned char *bytes = PyMem_Malloc(span.length > 0 ? (size_t)span.length : 1);
    if (bytes == NULL) return value; /* (not kept: the value all the same) */
    memcpy(bytes, span.text, (size_t)span.length);
    text_cache[j].bytes = bytes;
    text_cache[j].length = span.length;
    text_cache[j].hash = hash;
    text_cache[j].value = Py_NewRef(value);
    text_cache_used++;
    return value;
}

/* The double of a JSON number's text that scan_number deferred: Python's float() of it (PyOS_string_to_double,
 * correctly rounded, independent of the locale). 0, -1 with an exception set, or -2 to decline: out of
 * range, which msgspec reports for a float field. */
static int deferred_number(Span span, double *value) {
    char small[128], *text = small, *parsed_end = NULL;
    int rc = 0;
    if ((size_t)span.length >= sizeof small && (text = PyMem_Malloc((size_t)span.length + 1)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(text, span.text, (size_t)span.length);
    text[span.length] = '\0';
    *value = PyOS_string_to_double(text, &parsed_end, NULL); /* NULL: overflow gives +-inf, no exception */
    if (*value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear(); /* not a number: cannot happen after scan_number; decline all the same */
        rc = -2;
    } else if (parsed_end != text + span.length || isinf(*value)) {
        rc = -2;
    }
    if (text != small) PyMem_Free(text);
    return rc;
}

/* The code of a span's string: >= 0, -1 with an exception set, -2 to decline. */
static int32_t intern(Interner *t, Span span, PyObject *decode_string, PyObject *to_number) {
    const unsigned char *text = span.text;
    uint64_t hash = hash_bytes(text, span.length);
    size_t j = hash & (t->capacity - 1);
    while (t->slots[j].text != NULL) {
        Slot *slot = &t->slots[j];
        if (slot->hash == hash && slot->length == span.length && same_text(slot->text, text, span.length))
            return slot->code;
        j = (j + 1) & (t->capacity - 1);
    }
    PyObject *value = span_text(span, decode_string);
    if (value == NULL) return PyErr_Occurred() ? -1 : -2;
    Py_ssize_t code = PyList_GET_SIZE(t->values);
    if (code >= INT32_MAX || PyList_Append(t->values, value) < 0) {
        Py_DECREF(value);
        return -1;
    }
    if (to_number != NULL) {
        double *numbers = PyMem_Realloc(t->numbers, (code + 1) * sizeof(double));
        if (numbers == NULL) { Py_DECREF(value); PyErr_NoMemory(); return -1; }
        t->numbers = numbers;
        PyObject *number = PyObject_CallOneArg(to_number, value);
        double d = number == NULL ? -1.0 : PyFloat_AsDouble(number);
        Py_XDECREF(number);
        if (d == -1.0 && PyErr_Occurred()) { Py_DECREF(value); return -1; }
        numbers[code] = d;
    }
    Py_DECREF(value);
    Slot *slot = &t->slots[j];
    slot->text = text;
    slot->length = span.length;
    slot->hash = hash;
    slot->code = (int32_t)code;
    if (++t->used * 2 > t->capacity && interner_grow(t) < 0) { PyErr_NoMemory(); return -1; }
    return (int32_t)code;
}

/* --- a buffer owned by a Python object: the columns reach numpy without a copy --------------------------- */

typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t size;
} Buffer;

static void Buffer_dealloc(Buffer *self) {
    PyMem_RawFree(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Buffer_getbuffer(Buffer *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->size, 1, flags);
}

static PyBufferProcs Buffer_as_buffer = {(getbufferproc)Buffer_getbuffer, NULL};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracelens.ingest._kineto_scan.Buffer",
    .tp_basicsize = sizeof(Buffer),
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only bytes owned by the scanner's result.",
};

static PyObject *wrap_buffer(void *data, Py_ssize_t size) {
    Buffer *buffer = PyObject_New(Buffer, &BufferType);
    if (buffer == NULL) {
        PyMem_RawFree(data);
        return NULL;
    }
    buffer->data = data;
    buffer->size = size;
    return (PyObject *)buffer;
}

/* --- scan_events ---------------------------------------------------------------------------------------- */

static void scanner_free(Scanner *s) {
    for (int k = 0; k < N_ROW_FLOATS; k++) PyMem_RawFree(s->floats[k]);
    for (int k = 0; k < N_STRINGS; k++) {
        PyMem_RawFree(s->codes[k]);
        PyMem_RawFree(s->tables[k].slots);
        PyMem_RawFree(s->tables[k].spans);
    }
    PyMem_RawFree(s->texts);
    PyMem_RawFree(s->op_rows);
    PyMem_RawFree(s->op_floats);
    PyMem_RawFree(s->op_strings);
    PyMem_RawFree(s->sparse_rows);
    PyMem_RawFree(s->sparse_floats);
}

/* A tuple of the n columns (taken over: freed here on failure), each a buffer of exactly `rows` items of
 * `size` bytes. The slack is not given back: the reader makes its own columns of these (kineto/native.py,
 * prepare.py) and lets them go, so each block's columns are freed at the size the next block's ask for and
 * are reused. (Shrunk, they left holes the next block's columns did not fit, and every block's columns took
 * fresh pages: some 860 page faults a block of the 406 MB tile, a sixth of the scan's time.) */
static PyObject *column_buffers(void **columns, int n, size_t rows, size_t size) {
    PyObject *tuple = PyTuple_New(n);
    int k = 0;
    for (; tuple != NULL && k < n; k++) {
        void *column = columns[k] != NULL ? columns[k] : PyMem_RawMalloc(size); /* never a NULL buffer */
        PyObject *buffer;
        if (column == NULL) {
            Py_CLEAR(tuple);
            PyErr_NoMemory();
            k++;
            break;
        }
        buffer = wrap_buffer(column, (Py_ssize_t)(rows * size)); /* frees the column if it fails */
        if (buffer == NULL) {
            Py_CLEAR(tuple);
            k++;
            break;
        }
        PyTuple_SET_ITEM(tuple, k, buffer);
    }
    for (; k < n; k++) PyMem_RawFree(columns[k]); /* those not reached after a failure */
    return tuple;
}

static PyObject *build_result(Scanner *s, PyObject *to_number, PyObject *decode_string) {
    Interner interners[N_EVENT_STRINGS], numbers; /* the op strings' interners follow the rows' */
    PyObject *result = NULL, *codes_object = NULL, *floats_object = NULL, *op_strings = NULL, *op_rows = NULL,
             *op_floats = NULL, *op_codes_object = NULL, *sparse_rows = NULL, *sparse_floats = NULL,
             *row_counts = NULL;
    int32_t *op_codes = NULL;
    size_t rows = s->rows, ops = s->n_ops, sparse = s->n_sparse;

    for (int k = 0; k < N_EVENT_STRINGS; k++) interners[k].slots = NULL, interners[k].values = NULL,
        interners[k].numbers = NULL;
    numbers.slots = NULL, numbers.values = NULL, numbers.numbers = NULL;
    for (int k = 0; k < N_EVENT_STRINGS; k++)
        if (interner_init(&interners[k]) < 0) goto fail;
    if (interner_init(&numbers) < 0) goto fail;

    for (int k = 0; k < N_STRINGS; k++) { /* the row fields' distinct strings, coded in phase one */
        for (size_t code = 0; code < s->tables[k].used; code++) {
            PyObject *value = cached_span_text(s->tables[k].spans[code], decode_string);
            if (value == NULL) {
                if (PyErr_Occurred()) goto fail;
                goto decline;
            }
            int appended = PyList_Append(interners[k].values, value);
            Py_DECREF(value);
            if (appended < 0) goto fail;
        }
    }
    op_codes = PyMem_RawMalloc((ops ? ops : 1) * N_OP_STRINGS * sizeof(int32_t));
    if (op_codes == NULL) { PyErr_NoMemory(); goto fail; }
    for (size_t r = 0; r < ops; r++) {
        for (int k = 0; k < N_OP_STRINGS; k++) {
            Span span = s->op_strings[r * N_OP_STRINGS + k];
            int32_t code = -1;
            if (span.flags & SPAN_PRESENT) {
                code = intern(&interners[OP_S(k)], span, decode_string, NULL);
                if (code == -1) goto fail;
                if (code == -2) goto decline;
            }
            op_codes[r * N_OP_STRINGS + k] = code;
        }
    }
    for (size_t t = 0; t < s->n_texts; t++) {
        NumberText *text = &s->texts[t];
        /* a row's ts, correlation or pid set here (a deferred number, a pid written as text): not counted */
        if (text->row >= 0 && (text->field == F_TS || text->field == F_CORRELATION || text->field == F_PID))
            s->uncounted = 1;
        double unused, *slot = text->row < 0                ? &unused
                               : text->field < N_ROW_FLOATS ? &s->floats[text->field][text->row]
                               : text->field < N_FLOATS
                                   ? &s->sparse_floats[text->row * N_SPARSE_FLOATS + text->field - N_ROW_FLOATS]
                                   : &s->op_floats[text->row * N_OP_FLOATS + text->field - N_FLOATS];
        if (text->text.flags & SPAN_NUMBER) {
            int rc = deferred_number(text->text, slot);
            if (rc == -1) goto fail;
            if (rc == -2) goto decline;
            continue;
        }
        int32_t code = intern(&numbers, text->text, decode_string, to_number);
        if (code == -1) goto fail;
        if (code == -2) goto decline;
        *slot = numbers.numbers[code];
    }

    {
        void *code_columns[N_STRINGS], *float_columns[N_ROW_FLOATS]; /* handed over to the buffers */
        void *sparse_columns[2] = {s->sparse_rows, s->sparse_floats};
        for (int k = 0; k < N_STRINGS; k++) code_columns[k] = s->codes[k], s->codes[k] = NULL;
        for (int k = 0; k < N_ROW_FLOATS; k++) float_columns[k] = s->floats[k], s->floats[k] = NULL;
        s->sparse_rows = NULL, s->sparse_floats = NULL;
        codes_object = column_buffers(code_columns, N_STRINGS, rows, sizeof(int32_t));
        floats_object = column_buffers(float_columns, N_ROW_FLOATS, rows, sizeof(double));
        /* the records as two buffers: their rows, and their fields (N_SPARSE_FLOATS per record) */
        sparse_rows = column_buffers(sparse_columns, 1, sparse, sizeof(int64_t));
        sparse_floats = column_buffers(sparse_columns + 1, 1, sparse * N_SPARSE_FLOATS, sizeof(double));
        if (codes_object == NULL || floats_object == NULL || sparse_rows == NULL || sparse_floats == NULL) goto fail;
    }
    op_strings = PyList_New(N_OP_STRINGS); /* each op string field's distinct strings, by OS_* */
    if (op_strings == NULL) goto fail;
    for (int k = 0; k < N_OP_STRINGS; k++) PyList_SET_ITEM(op_strings, k, Py_NewRef(interners[OP_S(k)].values));
    op_rows = PyBytes_FromStringAndSize((const char *)s->op_rows, (Py_ssize_t)(ops * sizeof(int64_t)));
    op_floats = PyBytes_FromStringAndSize((const char *)s->op_floats, (Py_ssize_t)(ops * N_OP_FLOATS * sizeof(double)));
    op_codes_object = PyBytes_FromStringAndSize((const char *)op_codes, (Py_ssize_t)(ops * N_OP_STRINGS * sizeof(int32_t)));
    if (op_rows == NULL || op_floats == NULL || op_codes_object == NULL) goto fail;
    if (s->uncounted || rows >= UINT32_MAX) { /* (the packed counts hold fewer than 2^32 rows) */
        row_counts = Py_NewRef(Py_None);
    } else { /* counted_sizes' counts: the rows by category code + 1, then those with a correlation and a pid */
        row_counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(2 * sizeof s->category_counts));
        if (row_counts == NULL) goto fail;
        int64_t *counted = (int64_t *)PyBytes_AS_STRING(row_counts);
        for (int k = 0; k < N_COUNTED_CATEGORIES; k++) {
            counted[k] = (int64_t)(s->category_counts[k] & UINT32_MAX);
            counted[N_COUNTED_CATEGORIES + k] = (int64_t)(s->category_counts[k] >> 32);
        }
    }
    result = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:n,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:d}",
                           "complete", (long long)s->counts[PH_COMPLETE], "flow", (long long)s->counts[PH_FLOW],
                           "instant", (long long)s->counts[PH_INSTANT],
                           "metadata", (long long)s->counts[PH_METADATA],
                           "other_phase", (long long)s->counts[PH_OTHER], "rows", (Py_ssize_t)rows,
                           "floats", floats_object, "codes", codes_object,
                           "categories", interners[S_CAT].values, "names", interners[S_NAME].values,
                           "sync_kinds", interners[S_SYNC_KIND].values, "op_rows", op_rows,
                           "op_floats", op_floats, "op_codes", op_codes_object, "op_strings", op_strings,
                           "sparse_rows", PyTuple_GET_ITEM(sparse_rows, 0),
                           "sparse_floats", PyTuple_GET_ITEM(sparse_floats, 0), "row_counts", row_counts,
                           "max_abs_ts", s->max_abs_ts);
    goto done;
decline:
    result = Py_NewRef(Py_None);
    goto done;
fail:
    result = NULL;
done:
    Py_XDECREF(codes_object);
    Py_XDECREF(floats_object);
    PyMem_RawFree(op_codes);
    Py_XDECREF(op_strings);
    Py_XDECREF(op_rows);
    Py_XDECREF(op_floats);
    Py_XDECREF(op_codes_object);
    Py_XDECREF(sparse_rows);
    Py_XDECREF(sparse_floats);
    Py_XDECREF(row_counts);
    for (int k = 0; k < N_EVENT_STRINGS; k++) interner_free(&interners[k]);
    interner_free(&numbers);
    return result;
}

/* Checks the callbacks and readies a scanner; -1 with an exception set. */
static int scanner_start(Scanner *s, PyObject *to_number, PyObject *decode_string) {
    if (!PyCallable_Check(to_number) || !PyCallable_Check(decode_string)) {
        PyErr_SetString(PyExc_TypeError, "to_number and decode_string must be callables");
        return -1;
    }
    memset(s, 0, sizeof *s);
    return 0;
}

/* Phase two after a phase one that ended with rc; frees the scanner. */
static PyObject *scanner_finish(Scanner *s, int rc, PyObject *to_number, PyObject *decode_string) {
    PyObject *result;
    flow_template_hits += s->flow_template_hits; /* the GIL held */
    name_cache_hits += s->name_hits;
    if (rc == NO_MEMORY) result = PyErr_NoMemory();
    else if (rc != OK) result = Py_NewRef(Py_None); /* DECLINE */
    else result = build_result(s, to_number, decode_string);
    scanner_free(s);
    return result;
}

#define MAX_PIECES 8

static PyObject *scan_events(PyObject *module, PyObject *args) {
    Py_buffer views[MAX_PIECES];
    PyObject *pieces, *to_number, *decode_string, *result = NULL;
    Py_ssize_t n_pieces = 0, held = 0;
    Scanner s;
    int rc = OK;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!OO:scan_events", &PyTuple_Type, &pieces, &to_number, &decode_string))
        return NULL;
    n_pieces = PyTuple_GET_SIZE(pieces);
    if (n_pieces < 1 || n_pieces > MAX_PIECES) {
        PyErr_Format(PyExc_ValueError, "scan_events takes 1 to %d pieces", MAX_PIECES);
        return NULL;
    }
    if (scanner_start(&s, to_number, decode_string) < 0) return NULL;
    for (; held < n_pieces; held++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(pieces, held), &views[held], PyBUF_SIMPLE) < 0) {
            scanner_free(&s);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    {
        size_t bytes = 0;
        for (Py_ssize_t i = 0; i < n_pieces; i++) bytes += (size_t)views[i].len;
        rc = reserve(&s, first_capacity(bytes));
    }
    for (Py_ssize_t i = 0; i < n_pieces && rc == OK; i++) {
        s.p = (const unsigned char *)views[i].buf;
        s.end = s.p + views[i].len;
        rc = scan_piece(&s);
    }
    Py_END_ALLOW_THREADS
    result = scanner_finish(&s, rc, to_number, decode_string);
done:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    return result;
}

static PyObject *scan_document_py(PyObject *module, PyObject *args) {
    Py_buffer view;
    PyObject *to_number, *decode_string, *columns;
    Scanner s;
    int64_t events_start = -1, events_end = -1;
    int rc;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*OO:scan_document", &view, &to_number, &decode_string)) return NULL;
    if (scanner_start(&s, to_number, decode_string) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    s.p = (const unsigned char *)view.buf;
    s.end = s.p + view.len;
    Py_BEGIN_ALLOW_THREADS
    rc = reserve(&s, first_capacity((size_t)view.len));
    if (rc == OK) rc = scan_document(&s, (const unsigned char *)view.buf, &events_start, &events_end);
    Py_END_ALLOW_THREADS
    columns = scanner_finish(&s, rc, to_number, decode_string);
    PyBuffer_Release(&view);
    if (columns == NULL || columns == Py_None) return columns;
    return Py_BuildValue("(NLL)", columns, (long long)events_start, (long long)events_end);
}

/* Where a block of an event list can be cut in any layout: the offset of the last comma that separates two
 * events at the list's top level (-1 if none), given that the buffer starts inside the list, between two
 * events. Only strings and nesting are tracked (no value is parsed): the pieces are parsed strictly later,
 * and a piece that is not valid JSON goes to msgspec, which says where. Stops where the list ends. */
static Py_ssize_t last_event_boundary(const unsigned char *p, Py_ssize_t n) {
    Py_ssize_t depth = 0, last = -1;
    int high = 0;
    const unsigned char *start = p, *end = p + n;
    while (p < end) {
        unsigned char c = *p++;
        switch (c) {
        case '"':
            for (;;) { /* to the closing quote, over escapes */
                p = string_stop(p, end, &high);
                if (p >= end) return last;
                if (*p == '"') { p++; break; }
                p += *p == '\\' ? 2 : 1;
            }
            break;
        case '{': case '[':
            depth++;
            break;
        case '}': case ']':
            if (--depth < 0) return last; /* the event list ends here */
            break;
        case ',':
            if (depth == 0) last = (p - 1) - start;
            break;
        default:
            break;
        }
    }
    return last;
}

static PyObject *event_boundary_py(PyObject *module, PyObject *args) {
    Py_buffer view;
    Py_ssize_t at;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*:last_event_boundary", &view)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    at = last_event_boundary((const unsigned char *)view.buf, view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(at);
}

static PyObject *parse_number_py(PyObject *module, PyObject *args) {
    static const char *const paths[] = {"integer", "zero", "clinger", "eisel-lemire", "python",
                                        "integer-and-fraction"};
    Py_buffer view;
    Scanner s;
    double value;
    int is_integer, rc, padded = 0;
    int64_t integer;
    unsigned char *copy = NULL;
    const unsigned char *number_end;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*|p:_parse_number", &view, &padded)) return NULL;
    memset(&s, 0, sizeof s);
    s.p = (const unsigned char *)view.buf;
    s.end = number_end = s.p + view.len;
    if (padded) { /* the number followed by 32 bytes that end it (a comma), as inside a block */
        copy = PyMem_Malloc((size_t)view.len + 32);
        if (copy == NULL) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        memcpy(copy, view.buf, (size_t)view.len);
        memset(copy + view.len, ',', 32);
        s.p = copy;
        number_end = copy + view.len;
        s.end = number_end + 32;
    }
    rc = s.p < s.end && (*s.p == '-' || is_digit(*s.p)) ? scan_number(&s, &value, &is_integer, &integer) : DECLINE;
    if (rc != DECLINE && s.p != number_end) rc = DECLINE; /* the whole text must be the number */
    if (rc == DEFER) {
        int deferred = deferred_number(s.number, &value);
        if (deferred == -1) {
            PyMem_Free(copy);
            PyBuffer_Release(&view);
            return NULL;
        }
        if (deferred == -2) rc = DECLINE;
    }
    PyMem_Free(copy);
    PyBuffer_Release(&view);
    if (rc == DECLINE) Py_RETURN_NONE;
    return Py_BuildValue("(ds)", value, paths[s.path]);
}

/* --- prepare_rows: a block's per-row steps (kineto/prepare.py) in one pass ---------------------------------- */

/* Flags of a kind code (kineto/prepare.py KIND_FLAGS): which rows keep their correlation (device and launch
 * rows), which are launches, which are not host rows (pid and tid dropped), which nest on a thread. */
#define KIND_DEVICE 1
#define KIND_LAUNCH 2
#define KIND_NOT_HOST 4
#define KIND_NESTED 8
#define TWO_63 9223372036854775808.0

/* An id as its int64 column stores it (prepare.int_parts): the value truncated, valid when |v| < 2**63 (NaN
 * is not), 0 where not valid. Returns whether the stored value, read back as float64, is v (NaN counts). */
static inline ALWAYS_INLINE int id_parts(double v, int64_t *data, unsigned char *valid) {
    int ok = fabs(v) < TWO_63;
    int64_t d = ok ? (int64_t)v : 0;
    *data = d;
    *valid = (unsigned char)ok;
    return isnan(v) || (double)d == v;
}

/* Float microseconds as int64 ns (prepare.microseconds_to_ns): whole microseconds times 1000 plus the
 * rounded fraction. prepare_block passes times on the timeline only (|ts| < max_time_us); any other is 0
 * here (numpy's formula gives 0 for those not finite, and no defined value for the others). */
static inline ALWAYS_INLINE int64_t us_to_ns(double ts, double max_time_us) {
    if (!(fabs(ts) < max_time_us)) return 0;
    double whole = floor(ts);
    double fraction = (ts - whole) * 1000.0;
    return (int64_t)whole * 1000 + (int64_t)rint(fraction);
}

enum { PR_KIND, PR_TS, PR_DUR, PR_PID, PR_TID, PR_CORRELATION, PR_EXTERNAL_ID, PR_FLAGS, PR_START, PR_DURATION,
       PR_PID_DATA, PR_PID_VALID, PR_TID_DATA, PR_TID_VALID, PR_CORRELATION_DATA, PR_CORRELATION_VALID,
       PR_EXTERNAL_DATA, PR_EXTERNAL_VALID, PR_LAUNCHES, N_PR };
/* Each buffer's item size (0: any, the kind flags) and whether it is written. */
static const int PR_ITEM[N_PR] = {1, 8, 8, 8, 8, 8, 8, 0, 8, 8, 8, 1, 8, 1, 8, 1, 8, 1, 8};

static PyObject *prepare_rows_py(PyObject *module, PyObject *args) {
    Py_buffer views[N_PR];
    int held = 0, pid_exact = 1, tid_exact = 1, nested = 0, bad_kind = 0;
    Py_ssize_t n = 0, launches = 0, n_flags = 0;
    PyObject *result = NULL;
    double max_time_us;
    (void)module;
    if (PyTuple_GET_SIZE(args) != N_PR + 1) {
        PyErr_Format(PyExc_TypeError, "prepare_rows takes %d buffers and max_time_us", N_PR);
        return NULL;
    }
    max_time_us = PyFloat_AsDouble(PyTuple_GET_ITEM(args, N_PR));
    if (max_time_us == -1.0 && PyErr_Occurred()) return NULL;
    for (; held < N_PR; held++) {
        int writable = held >= PR_START;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, held), &views[held],
                               (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    }
    n = views[PR_KIND].len;
    n_flags = views[PR_FLAGS].len;
    for (int k = 0; k < N_PR; k++) {
        if (PR_ITEM[k] != 0 && views[k].len != n * PR_ITEM[k]) {
            PyErr_Format(PyExc_ValueError, "prepare_rows: buffer %d holds %zd bytes, not %zd", k, views[k].len,
                         n * PR_ITEM[k]);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    {
        const int8_t *kind = views[PR_KIND].buf;
        const double *ts = views[PR_TS].buf, *dur = views[PR_DUR].buf, *pid = views[PR_PID].buf,
                     *tid = views[PR_TID].buf, *correlation = views[PR_CORRELATION].buf,
                     *external = views[PR_EXTERNAL_ID].buf;
        const unsigned char *flags_of = views[PR_FLAGS].buf;
        int64_t *start = views[PR_START].buf, *duration = views[PR_DURATION].buf,
                *pid_data = views[PR_PID_DATA].buf, *tid_data = views[PR_TID_DATA].buf,
                *correlation_data = views[PR_CORRELATION_DATA].buf, *external_data = views[PR_EXTERNAL_DATA].buf,
                *launch_rows = views[PR_LAUNCHES].buf;
        unsigned char *pid_valid = views[PR_PID_VALID].buf, *tid_valid = views[PR_TID_VALID].buf,
                      *correlation_valid = views[PR_CORRELATION_VALID].buf,
                      *external_valid = views[PR_EXTERNAL_VALID].buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int k = kind[i];
            if (k < 0 || k >= n_flags) {
                bad_kind = 1;
                break;
            }
            unsigned flags = flags_of[k];
            double d = dur[i];
            start[i] = us_to_ns(ts[i], max_time_us);
            /* blocks.placeable: finite and within max_time_us (NaN fails the compare) */
            duration[i] = fabs(d) < max_time_us ? (int64_t)rint(d * 1000.0) : 0;
            double c = (flags & (KIND_DEVICE | KIND_LAUNCH)) ? correlation[i] : NAN;
            double p = (flags & KIND_NOT_HOST) ? NAN : pid[i];
            double t = (flags & KIND_NOT_HOST) ? NAN : tid[i];
            if ((flags & KIND_LAUNCH) && !isnan(c) && !isnan(pid[i])) launch_rows[launches++] = (int64_t)i;
            nested |= (flags & KIND_NESTED) && !isnan(t);
            pid_exact &= id_parts(p, &pid_data[i], &pid_valid[i]);
            tid_exact &= id_parts(t, &tid_data[i], &tid_valid[i]);
            id_parts(c, &correlation_data[i], &correlation_valid[i]);
            id_parts(external[i], &external_data[i], &external_valid[i]);
        }
    }
    Py_END_ALLOW_THREADS
    if (bad_kind) PyErr_SetString(PyExc_ValueError, "prepare_rows: a kind code outside the flags table");
    else result = Py_BuildValue("(nOOO)", launches, pid_exact ? Py_True : Py_False, tid_exact ? Py_True : Py_False,
                                nested ? Py_True : Py_False);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&views[k]);
    return result;
}

/* --- name_kinds: the steps a prepared block's names decide (kineto/named_kinds.py) in one pass ------------- */

enum { NK_KIND, NK_CODES, NK_NAME_BITS, NK_STEP_KIND, NK_DRIVER_KIND, NK_LAUNCH_SIDE, NK_PID_VALID, NK_TID_VALID,
       NK_CORRELATION_VALID, NK_EXTERNAL_VALID, NK_DURATION, NK_KIND_VALID, NK_LAUNCH_NAMES, N_NK };
/* Each buffer's item size (0: a table of any length) and whether it is written (kind and duration in place). */
static const int NK_ITEM[N_NK] = {1, 4, 0, 0, 0, 0, 1, 1, 1, 1, 8, 1, 0};
static const int NK_WRITTEN[N_NK] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1};

static PyObject *name_kinds_py(PyObject *module, PyObject *args) {
    Py_buffer views[N_NK];
    int held = 0, bad = 0, narrow_duration = 0;
    Py_ssize_t n = 0, names = 0, kinds = 0;
    PyObject *result = NULL;
    (void)module;
    if (PyTuple_GET_SIZE(args) != N_NK) {
        PyErr_Format(PyExc_TypeError, "name_kinds takes %d buffers", N_NK);
        return NULL;
    }
    for (; held < N_NK; held++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, held), &views[held],
                               (NK_WRITTEN[held] ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    }
    n = views[NK_KIND].len;
    names = views[NK_LAUNCH_NAMES].len;
    kinds = views[NK_STEP_KIND].len;
    /* duration: int64, or int32 (the reader's row chunks hold it so) */
    narrow_duration = n > 0 && views[NK_DURATION].len == n * 4;
    for (int k = 0; k < N_NK; k++) {
        if (k == NK_DURATION && narrow_duration) continue;
        if (NK_ITEM[k] != 0 && views[k].len != n * NK_ITEM[k]) {
            PyErr_Format(PyExc_ValueError, "name_kinds: buffer %d holds %zd bytes, not %zd", k, views[k].len,
                         n * NK_ITEM[k]);
            goto done;
        }
    }
    if (views[NK_NAME_BITS].len != names + 1 || views[NK_DRIVER_KIND].len != kinds ||
        views[NK_LAUNCH_SIDE].len != kinds) {
        PyErr_SetString(PyExc_ValueError, "name_kinds: tables of different lengths");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        int8_t *kind = views[NK_KIND].buf;
        const int32_t *codes = views[NK_CODES].buf;
        const unsigned char *name_bits = views[NK_NAME_BITS].buf, *launch_side = views[NK_LAUNCH_SIDE].buf,
                            *pid_valid = views[NK_PID_VALID].buf, *tid_valid = views[NK_TID_VALID].buf,
                            *correlation_valid = views[NK_CORRELATION_VALID].buf,
                            *external_valid = views[NK_EXTERNAL_VALID].buf;
        const int8_t *step_kind = views[NK_STEP_KIND].buf, *driver_kind = views[NK_DRIVER_KIND].buf;
        int64_t *duration = views[NK_DURATION].buf;
        int32_t *duration32 = narrow_duration ? views[NK_DURATION].buf : NULL;
        unsigned char *kind_valid = views[NK_KIND_VALID].buf, *launch_names = views[NK_LAUNCH_NAMES].buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int k = kind[i];
            int32_t c = codes[i];
            if (k < 0 || k >= kinds || c < -1 || c >= names) {
                bad = 1;
                break;
            }
            unsigned bits = name_bits[c < 0 ? names : c];
            /* a step-marker name (bit 1) makes host annotations and ops steps; a driver name (bit 2), runtime
             * calls driver calls (the tables map every other kind to itself) */
            if (bits & 1) k = step_kind[k];
            if (bits & 2) k = driver_kind[k];
            if (k < 0 || k >= kinds) {
                bad = 1;
                break;
            }
            kind[i] = (int8_t)k;
            if (launch_side[k] && c >= 0) launch_names[c] = 1;
            kind_valid[i] = (unsigned char)(k | (pid_valid[i] != 0) << 4 | (tid_valid[i] != 0) << 5 |
                                            (correlation_valid[i] != 0) << 6 | (external_valid[i] != 0) << 7);
            if (duration32 != NULL) {
                if (duration32[i] < 0) duration32[i] = 0;
            } else if (duration[i] < 0) duration[i] = 0;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) PyErr_SetString(PyExc_ValueError, "name_kinds: a kind or name code outside its table");
    else result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&views[k]);
    return result;
}

/* --- prepare_scanned: scan_events' columns as the reader's prepared block, in one pass ------------------- */

/* The columns prepare_scanned writes, in the order it takes them (kineto/native.py _PREPARED lists the same):
 * a value per row, then per GPU row (gpu_rows: the rows of kind flag KIND_NOT_HOST), then per launch. */
enum { P_KIND, P_NAME, P_START, P_DURATION, P_PID, P_PID_VALID, P_TID, P_TID_VALID, P_CORRELATION,
       P_CORRELATION_VALID, P_EXTERNAL_ID, P_EXTERNAL_ID_VALID, P_GPU_ROWS, P_GPU_CORRELATION, P_GPU_PID,
       P_GPU_TID, P_GPU_SYNC_KIND, P_DEVICE, P_STREAM, P_BYTES, P_REGISTERS, P_SHARED_MEMORY, P_OCCUPANCY_PCT,
       P_GRID, P_BLOCK, P_LAUNCH_ROWS, P_LAUNCH_CORRELATION, P_LAUNCH_PID, N_PREPARED };
#define P_FIRST_GPU P_GPU_ROWS
#define P_FIRST_LAUNCH P_LAUNCH_ROWS
/* bytes per item (grid and block: three floats per GPU row) */
static const int P_ITEM[N_PREPARED] = {1, 4, 8, 8, 8, 1, 8, 1, 8, 1, 8, 1, 8, 8, 8, 8, 4, 8, 8, 8, 8, 8, 8,
                                       24, 24, 8, 8, 8};
typedef char prepared_device_fields_follow_the_sparse_floats[
    P_OCCUPANCY_PCT - P_DEVICE == F_OCCUPANCY_PCT - F_DEVICE && F_DEVICE == F_EXTERNAL_ID_OLD + 1 &&
    F_GRID_X == F_OCCUPANCY_PCT + 1 && F_BLOCK_X == F_GRID_X + 3 ? 1 : -1];

/* scan_events' row columns and sparse records, and the tables of both calls, as buffers. */
enum { IN_CODES = N_ROW_FLOATS, IN_SPARSE_ROWS = N_ROW_FLOATS + N_STRINGS, IN_SPARSE_FLOATS, IN_KIND_TABLE,
       IN_KIND_FLAGS, N_IN };

typedef struct {
    Py_buffer in[N_IN];
    int held;
    Py_ssize_t n, m, n_table, n_flags;
} Inputs;

static void inputs_release(Inputs *x) {
    for (int k = 0; k < x->held; k++) PyBuffer_Release(&x->in[k]);
    x->held = 0;
}

/* -1 with an exception set (released then) */
static int inputs_get(Inputs *x, PyObject *floats, PyObject *codes, PyObject *sparse_rows, PyObject *sparse_floats,
                      PyObject *kind_table, PyObject *kind_flags) {
    PyObject *objects[N_IN];
    x->held = 0;
    if (!PyTuple_Check(floats) || !PyTuple_Check(codes) || PyTuple_GET_SIZE(floats) != N_ROW_FLOATS ||
        PyTuple_GET_SIZE(codes) != N_STRINGS) {
        PyErr_SetString(PyExc_ValueError, "scan_events' floats and codes expected");
        return -1;
    }
    for (int k = 0; k < N_ROW_FLOATS; k++) objects[k] = PyTuple_GET_ITEM(floats, k);
    for (int k = 0; k < N_STRINGS; k++) objects[IN_CODES + k] = PyTuple_GET_ITEM(codes, k);
    objects[IN_SPARSE_ROWS] = sparse_rows;
    objects[IN_SPARSE_FLOATS] = sparse_floats;
    objects[IN_KIND_TABLE] = kind_table;
    objects[IN_KIND_FLAGS] = kind_flags;
    for (; x->held < N_IN; x->held++)
        if (PyObject_GetBuffer(objects[x->held], &x->in[x->held], PyBUF_C_CONTIGUOUS) < 0) {
            inputs_release(x);
            return -1;
        }
    x->n = x->in[F_TS].len / (Py_ssize_t)sizeof(double);
    x->m = x->in[IN_SPARSE_ROWS].len / (Py_ssize_t)sizeof(int64_t);
    x->n_table = x->in[IN_KIND_TABLE].len;
    x->n_flags = x->in[IN_KIND_FLAGS].len;
    int sized = x->n_table >= 1 &&
                x->in[IN_SPARSE_FLOATS].len == x->m * N_SPARSE_FLOATS * (Py_ssize_t)sizeof(double);
    for (int k = 0; k < N_ROW_FLOATS; k++) sized &= x->in[k].len == x->n * (Py_ssize_t)sizeof(double);
    for (int k = 0; k < N_STRINGS; k++) sized &= x->in[IN_CODES + k].len == x->n * (Py_ssize_t)sizeof(int32_t);
    if (!sized) {
        inputs_release(x);
        PyErr_SetString(PyExc_ValueError, "scan_events' columns of different lengths");
        return -1;
    }
    return 0;
}

/* A row's kind flags (>= 0), -1: a row the numpy steps drop (not a timeline event, or a ts off the
 * timeline), -2: a category code or kind outside its table. */
static inline ALWAYS_INLINE int row_flags(const Inputs *x, Py_ssize_t i, double max_time_us) {
    int32_t code = ((const int32_t *)x->in[IN_CODES + S_CAT].buf)[i];
    if (code < -1 || code >= x->n_table - 1) return -2;
    int k = ((const int8_t *)x->in[IN_KIND_TABLE].buf)[code < 0 ? x->n_table - 1 : code]; /* -1: the last */
    if (k < 0 || !(fabs(((const double *)x->in[F_TS].buf)[i]) < max_time_us)) return -1;
    if (k >= x->n_flags) return -2;
    return ((const unsigned char *)x->in[IN_KIND_FLAGS].buf)[k];
}

static inline ALWAYS_INLINE int is_launch(const Inputs *x, Py_ssize_t i, int flags) {
    return (flags & KIND_LAUNCH) && !isnan(((const double *)x->in[F_CORRELATION].buf)[i]) &&
           !isnan(((const double *)x->in[F_PID].buf)[i]);
}

/* The id columns prepare_scanned may write as int32 (the reader's row chunks hold them so where every value of the
 * trace fits: 4 bytes a row each instead of 8, the pages of ~25 MB fewer at the 406 MB Kineto tile), and the
 * duration (int64 ns, but up to 2.1 s fits: ~6 MB fewer there): a bit per column (0: int64 only). */
static inline unsigned narrow_id(int k) {
    return k == P_PID ? 1u : k == P_TID ? 2u : k == P_CORRELATION ? 4u : k == P_EXTERNAL_ID ? 8u
         : k == P_DURATION ? 16u : 0u;
}

/* An id's int64 data (id_parts) stored in its column, int32 where `narrow` (its narrow_id bit; that bit set in
 * misfit where the value does not fit: the caller then writes that column as int64). */
#define STORE_ID(column, narrow, i, value, misfit)                                                               \
    do {                                                                                                        \
        if (narrow) {                                                                                           \
            ((int32_t *)(column))[i] = (int32_t)(value);                                                        \
            if ((value) != (int64_t)(int32_t)(value)) (misfit) |= (narrow);                                       \
        } else {                                                                                                \
            ((int64_t *)(column))[i] = (value);                                                                 \
        }                                                                                                       \
    } while (0)

/* prepared_sizes(floats, codes, sparse_rows, sparse_floats, kind_table, kind_flags, max_time_us):
 * (gpu rows, launches) of the block prepare_scanned makes, or None where a row is dropped. */
static PyObject *prepared_sizes_py(PyObject *module, PyObject *args) {
    PyObject *floats, *codes, *sparse_rows, *sparse_floats, *kind_table, *kind_flags;
    Inputs x;
    double max_time_us;
    Py_ssize_t n_gpu = 0, n_launches = 0;
    int outcome = 0;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOOOOd:prepared_sizes", &floats, &codes, &sparse_rows, &sparse_floats,
                          &kind_table, &kind_flags, &max_time_us))
        return NULL;
    if (inputs_get(&x, floats, codes, sparse_rows, sparse_floats, kind_table, kind_flags) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < x.n; i++) {
        int flags = row_flags(&x, i, max_time_us);
        if (flags < 0) {
            outcome = flags;
            break;
        }
        n_gpu += (flags & KIND_NOT_HOST) != 0;
        n_launches += is_launch(&x, i, flags);
    }
    Py_END_ALLOW_THREADS
    inputs_release(&x);
    if (outcome == -2) {
        PyErr_SetString(PyExc_ValueError, "prepared_sizes: a category code or kind outside its table");
        return NULL;
    }
    if (outcome == -1) Py_RETURN_NONE;
    return Py_BuildValue("(nn)", n_gpu, n_launches);
}

/* counted_sizes(row_counts, max_abs_ts, kind_table, kind_flags, max_time_us): prepared_sizes' result from the
 * counts scan_events kept as it stored the rows (its "row_counts", "max_abs_ts"), without a pass over the rows:
 * (gpu rows, launches), or None where a row is dropped (a category not a timeline event's, a ts off the
 * timeline). */
static PyObject *counted_sizes_py(PyObject *module, PyObject *args) {
    Py_buffer counts, table, flags;
    double max_abs_ts, max_time_us;
    PyObject *result = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*dy*y*d:counted_sizes", &counts, &max_abs_ts, &table, &flags, &max_time_us))
        return NULL;
    const int64_t *rows = counts.buf, *linked = rows + N_COUNTED_CATEGORIES;
    const int8_t *kind_of = table.buf;
    const unsigned char *flags_of = flags.buf;
    Py_ssize_t n_gpu = 0, n_launches = 0, any = 0;
    int outcome = 0;
    if (counts.len != (Py_ssize_t)(2 * N_COUNTED_CATEGORIES * sizeof(int64_t)) || table.len < 1) {
        PyErr_SetString(PyExc_ValueError, "counted_sizes: scan_events' row_counts and a kind table expected");
        goto done;
    }
    for (Py_ssize_t at = 0; at < N_COUNTED_CATEGORIES && outcome == 0; at++) {
        if (rows[at] == 0) continue;
        any += rows[at];
        if (at > table.len - 1) { outcome = -2; break; } /* code at - 1 beyond the table's categories */
        int k = kind_of[at == 0 ? table.len - 1 : at - 1]; /* code -1 (at 0) takes the last entry */
        if (k < 0) outcome = -1;
        else if (k >= flags.len) outcome = -2;
        else {
            n_gpu += (flags_of[k] & KIND_NOT_HOST) ? (Py_ssize_t)rows[at] : 0;
            n_launches += (flags_of[k] & KIND_LAUNCH) ? (Py_ssize_t)linked[at] : 0;
        }
    }
    if (outcome == 0 && any > 0 && !(max_abs_ts < max_time_us)) outcome = -1;
    if (outcome == -2) PyErr_SetString(PyExc_ValueError, "counted_sizes: a category code or kind outside its table");
    else if (outcome == -1) result = Py_NewRef(Py_None);
    else result = Py_BuildValue("(nn)", n_gpu, n_launches);
done:
    PyBuffer_Release(&counts);
    PyBuffer_Release(&table);
    PyBuffer_Release(&flags);
    return result;
}

/* prepare_scanned's optional last argument: the steps a block's names decide (name_kinds), done in the same
 * pass: each name's bits (and a last entry for rows without a name), the kind tables of a step-marker and of a
 * driver name, which kinds are launch-side, and the outputs kind_valid (a byte per row) and launch_names (a
 * byte per name). */
enum { PN_NAME_BITS, PN_STEP_KIND, PN_DRIVER_KIND, PN_LAUNCH_SIDE, PN_KIND_VALID, PN_LAUNCH_NAMES, N_PN };
static const int PN_WRITTEN[N_PN] = {0, 0, 0, 0, 1, 1};

/* prepare_scanned(floats, codes, sparse_rows, sparse_floats, kind_table, kind_flags, max_time_us, columns
 *                 [, names]):
 * scan_events' columns (each category code's kind from kind_table, the code -1 taking the last entry as
 * numpy's take does; each kind's flags from kind_flags) made the block that kineto/native.py's block columns
 * and prepare.prepare_block make of them (the same values), in one pass with the GIL released, into
 * `columns`: N_PREPARED writable buffers sized by prepared_sizes. With `names` (PN_*), also the block that
 * named_kinds.ready_block then makes of it, in that same pass (the kinds the names change, kind_valid,
 * launch_names, durations clamped at 0): one pass over the rows instead of two. The pid, tid, correlation and
 * external id and duration columns may be int32 (narrow_id). Returns (pid_exact, tid_exact, nested, misfit):
 * misfit, the narrow_id bits (pid 1, tid 2, correlation 4, external id 8, duration 16) of the int32 columns given a
 * value they cannot hold
 * (their other values are written, those truncated); 0 where all fit. */
static inline ALWAYS_INLINE PyObject *prepare_scanned_body(PyObject *module, PyObject *args) {
    PyObject *floats, *codes, *sparse_rows_object, *sparse_floats_object, *table_object, *flags_object, *columns;
    PyObject *names_object = Py_None;
    PyObject *result = NULL;
    Inputs x;
    Py_buffer out_views[N_PREPARED], name_views[N_PN];
    void *out[N_PREPARED];
    int outs = 0, named = 0, failed = 0, bad_name = 0, pid_exact = 1, tid_exact = 1, nested = 0;
    unsigned narrow = 0, misfit = 0; /* the id columns of int32 items (narrow_id bits); a value one cannot hold */
    Py_ssize_t n_gpu = 0, n_launches = 0, want_gpu, want_launches, n_names = 0, n_kinds = 0;
    double max_time_us;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOOOOdO!|O:prepare_scanned", &floats, &codes, &sparse_rows_object,
                          &sparse_floats_object, &table_object, &flags_object, &max_time_us, &PyTuple_Type, &columns,
                          &names_object))
        return NULL;
    if (PyTuple_GET_SIZE(columns) != N_PREPARED) {
        PyErr_Format(PyExc_ValueError, "prepare_scanned takes %d columns", N_PREPARED);
        return NULL;
    }
    if (names_object != Py_None && (!PyTuple_Check(names_object) || PyTuple_GET_SIZE(names_object) != N_PN)) {
        PyErr_Format(PyExc_ValueError, "prepare_scanned: names takes %d buffers", N_PN);
        return NULL;
    }
    if (inputs_get(&x, floats, codes, sparse_rows_object, sparse_floats_object, table_object, flags_object) < 0)
        return NULL;
    for (; outs < N_PREPARED; outs++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(columns, outs), &out_views[outs],
                               PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        out[outs] = out_views[outs].buf;
    }
    if (names_object != Py_None) {
        for (; named < N_PN; named++)
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(names_object, named), &name_views[named],
                                   (PN_WRITTEN[named] ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0)
                goto done;
        n_names = name_views[PN_LAUNCH_NAMES].len;
        n_kinds = name_views[PN_STEP_KIND].len;
        if (name_views[PN_NAME_BITS].len != n_names + 1 || name_views[PN_DRIVER_KIND].len != n_kinds ||
            name_views[PN_LAUNCH_SIDE].len != n_kinds || name_views[PN_KIND_VALID].len != x.n) {
            PyErr_SetString(PyExc_ValueError, "prepare_scanned: names' tables of other lengths");
            goto done;
        }
    }
    want_gpu = out_views[P_GPU_ROWS].len / 8;
    want_launches = out_views[P_LAUNCH_ROWS].len / 8;
    for (int k = 0; k < N_PREPARED; k++) {
        Py_ssize_t items = k >= P_FIRST_LAUNCH ? want_launches : k >= P_FIRST_GPU ? want_gpu : x.n;
        if (narrow_id(k) && x.n > 0 && out_views[k].len == items * 4) { /* an int32 id column */
            narrow |= narrow_id(k);
            continue;
        }
        if (out_views[k].len != items * P_ITEM[k]) {
            PyErr_Format(PyExc_ValueError, "prepare_scanned: column %d holds %zd bytes, not %zd", k,
                         out_views[k].len, items * P_ITEM[k]);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    {
        const Inputs *const in = &x;
        const double *ts = in->in[F_TS].buf, *dur = in->in[F_DUR].buf, *pid = in->in[F_PID].buf,
                     *tid = in->in[F_TID].buf, *correlation = in->in[F_CORRELATION].buf,
                     *external = in->in[F_EXTERNAL_ID].buf;
        const int32_t *name = in->in[IN_CODES + S_NAME].buf, *sync_kind = in->in[IN_CODES + S_SYNC_KIND].buf;
        const int64_t *sparse_rows = in->in[IN_SPARSE_ROWS].buf;
        const double *sparse = in->in[IN_SPARSE_FLOATS].buf;
        int8_t *kind = out[P_KIND];
        int32_t *names = out[P_NAME], *gpu_sync = out[P_GPU_SYNC_KIND];
        int64_t *start = out[P_START], *gpu_rows = out[P_GPU_ROWS], *launch_rows = out[P_LAUNCH_ROWS];
        void *duration_data = out[P_DURATION];
        void *pid_data = out[P_PID], *tid_data = out[P_TID], *correlation_data = out[P_CORRELATION],
             *external_data = out[P_EXTERNAL_ID];
        const unsigned pid_narrow = narrow & narrow_id(P_PID), tid_narrow = narrow & narrow_id(P_TID),
                       correlation_narrow = narrow & narrow_id(P_CORRELATION),
                       external_narrow = narrow & narrow_id(P_EXTERNAL_ID),
                       duration_narrow = narrow & narrow_id(P_DURATION);
        int64_t id_value;
        unsigned char *pid_valid = out[P_PID_VALID], *tid_valid = out[P_TID_VALID],
                      *correlation_valid = out[P_CORRELATION_VALID], *external_valid = out[P_EXTERNAL_ID_VALID];
        double *gpu_correlation = out[P_GPU_CORRELATION], *gpu_pid = out[P_GPU_PID], *gpu_tid = out[P_GPU_TID],
               *grid = out[P_GRID], *block = out[P_BLOCK], *launch_correlation = out[P_LAUNCH_CORRELATION],
               *launch_pid = out[P_LAUNCH_PID];
        Py_ssize_t record = 0; /* the first sparse record not before row i (both ascending) */
        for (Py_ssize_t i = 0; i < in->n; i++) {
            int flags = row_flags(in, i, max_time_us);
            if (flags < 0) { /* prepared_sizes said none */
                failed = 1;
                break;
            }
            while (record < in->m && sparse_rows[record] < i) record++;
            const double *fields =
                record < in->m && sparse_rows[record] == i ? sparse + record * N_SPARSE_FLOATS : NULL;
            double d = dur[i], e = external[i];
            double c = (flags & (KIND_DEVICE | KIND_LAUNCH)) ? correlation[i] : NAN;
            double p = (flags & KIND_NOT_HOST) ? NAN : pid[i];
            double t = (flags & KIND_NOT_HOST) ? NAN : tid[i];
            if (isnan(e) && fields != NULL) e = fields[0]; /* external_id_old, the 2021 key */
            kind[i] = ((const int8_t *)in->in[IN_KIND_TABLE].buf)[
                ((const int32_t *)in->in[IN_CODES + S_CAT].buf)[i] < 0
                    ? in->n_table - 1 : ((const int32_t *)in->in[IN_CODES + S_CAT].buf)[i]];
            names[i] = name[i];
            start[i] = us_to_ns(ts[i], max_time_us);
            int64_t duration = fabs(d) < max_time_us ? (int64_t)rint(d * 1000.0) : 0;
            nested |= (flags & KIND_NESTED) && !isnan(t);
            pid_exact &= id_parts(p, &id_value, &pid_valid[i]);
            STORE_ID(pid_data, pid_narrow, i, id_value, misfit);
            tid_exact &= id_parts(t, &id_value, &tid_valid[i]);
            STORE_ID(tid_data, tid_narrow, i, id_value, misfit);
            id_parts(c, &id_value, &correlation_valid[i]);
            STORE_ID(correlation_data, correlation_narrow, i, id_value, misfit);
            id_parts(e, &id_value, &external_valid[i]);
            STORE_ID(external_data, external_narrow, i, id_value, misfit);
            if (named) { /* name_kinds' steps (the row's flags above are its kind's before them) */
                const unsigned char *name_bits = name_views[PN_NAME_BITS].buf;
                const int8_t *step_kind = name_views[PN_STEP_KIND].buf, *driver_kind = name_views[PN_DRIVER_KIND].buf;
                int k = kind[i];
                int32_t c = name[i];
                if (k < 0 || k >= n_kinds || c < -1 || c >= n_names) {
                    bad_name = 1;
                    break;
                }
                unsigned bits = name_bits[c < 0 ? n_names : c];
                if (bits & 1) k = step_kind[k];
                if (bits & 2) k = driver_kind[k];
                if (k < 0 || k >= n_kinds) {
                    bad_name = 1;
                    break;
                }
                kind[i] = (int8_t)k;
                if (((const unsigned char *)name_views[PN_LAUNCH_SIDE].buf)[k] && c >= 0)
                    ((unsigned char *)name_views[PN_LAUNCH_NAMES].buf)[c] = 1;
                ((unsigned char *)name_views[PN_KIND_VALID].buf)[i] =
                    (unsigned char)(k | (pid_valid[i] != 0) << 4 | (tid_valid[i] != 0) << 5 |
                                    (correlation_valid[i] != 0) << 6 | (external_valid[i] != 0) << 7);
                if (duration < 0) duration = 0;
            }
            STORE_ID(duration_data, duration_narrow, i, duration, misfit);
            if (flags & KIND_NOT_HOST) {
                if (n_gpu == want_gpu) {
                    failed = 1;
                    break;
                }
                Py_ssize_t g = n_gpu++;
                gpu_rows[g] = (int64_t)i;
                gpu_correlation[g] = c;
                gpu_pid[g] = pid[i];
                gpu_tid[g] = tid[i];
                gpu_sync[g] = sync_kind[i];
                for (int f = 0; f <= P_OCCUPANCY_PCT - P_DEVICE; f++)
                    ((double *)out[P_DEVICE + f])[g] = fields != NULL ? fields[F_DEVICE - N_ROW_FLOATS + f] : NAN;
                for (int a = 0; a < 3; a++) {
                    grid[3 * g + a] = fields != NULL ? fields[F_GRID_X - N_ROW_FLOATS + a] : NAN;
                    block[3 * g + a] = fields != NULL ? fields[F_BLOCK_X - N_ROW_FLOATS + a] : NAN;
                }
            }
            if (is_launch(in, i, flags)) {
                if (n_launches == want_launches) {
                    failed = 1;
                    break;
                }
                launch_rows[n_launches] = (int64_t)i;
                launch_correlation[n_launches] = c;
                launch_pid[n_launches++] = pid[i];
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (bad_name)
        PyErr_SetString(PyExc_ValueError, "prepare_scanned: a kind or name code outside its table");
    else if (failed || n_gpu != want_gpu || n_launches != want_launches)
        PyErr_SetString(PyExc_ValueError, "prepare_scanned: columns not of the sizes prepared_sizes gives");
    else
        result = Py_BuildValue("(OOOI)", pid_exact ? Py_True : Py_False, tid_exact ? Py_True : Py_False,
                               nested ? Py_True : Py_False, misfit);
done:
    for (int k = 0; k < outs; k++) PyBuffer_Release(&out_views[k]);
    for (int k = 0; k < named; k++) PyBuffer_Release(&name_views[k]);
    inputs_release(&x);
    return result;
}

/* prepare_scanned's pass rounds two numbers a row (us_to_ns's floor and rint, the duration's rint), which x86-64's
 * baseline (SSE2) has no instruction for: the compiler writes each as a dozen instructions where SSE4.1 has one
 * (roundsd, the same IEEE operation: the same values). So where the compiler can build a function for SSE4.1 and
 * the processor has it, the pass is that build (benchmarks/results/kscan26.md: -3 ms of the pass's ~20 at the
 * 406 MB tile); else the baseline one. TRACELENS_PORTABLE_ARITHMETIC builds the baseline only (tests). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(__SSE4_1__) && \
    !defined(TRACELENS_PORTABLE_ARITHMETIC)
#define HAVE_SSE41_PREPARE 1
static NOINLINE PyObject *prepare_scanned_baseline(PyObject *module, PyObject *args) {
    return prepare_scanned_body(module, args);
}
__attribute__((target("sse4.1"))) static NOINLINE PyObject *prepare_scanned_sse41(PyObject *module, PyObject *args) {
    return prepare_scanned_body(module, args);
}
#endif
/* whether the SSE4.1 pass runs (-1: the processor not asked yet; the GIL held); _prepare_sse41 sets it for tests */
static int prepare_sse41 = -1;

static PyObject *prepare_scanned_py(PyObject *module, PyObject *args) {
#ifdef HAVE_SSE41_PREPARE
    if (prepare_sse41 < 0) {
        __builtin_cpu_init();
        prepare_sse41 = __builtin_cpu_supports("sse4.1") ? 1 : 0;
    }
    return prepare_sse41 ? prepare_scanned_sse41(module, args) : prepare_scanned_baseline(module, args);
#else
    return prepare_scanned_body(module, args);
#endif
}

/* rows_with_bit(flags, bit, order, values, rows, data[, value_bytes]): the rows r of a table (flags: a byte per row,
 * in table order) whose byte holds `bit`, ascending, into `rows` (int32 or int64 items), and values[order[r]]
 * (int64 items, or int32 ones with value_bytes 4: written as int64) at
 * them into `data`: the sparse column of an id that fewer than half the rows carry, in one pass, instead of a
 * table-long validity mask, its nonzero rows, their joined rows (a take of the order) and a cast of the rows.
 * `rows` and `data` hold exactly as many items as rows have the bit (ValueError otherwise, and where an order
 * entry is outside `values`). */
static PyObject *rows_with_bit_py(PyObject *module, PyObject *args) {
    Py_buffer flags, order, values, rows, data;
    int bit, held = 0, bad = 0, value_bytes = 8;
    PyObject *result = NULL;
    Py_ssize_t n, n_values, want, item, k = 0;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*iy*y*w*w*|i:rows_with_bit", &flags, &bit, &order, &values, &rows, &data,
                          &value_bytes))
        return NULL;
    held = 1;
    n = flags.len;
    n_values = (value_bytes == 4 || value_bytes == 8) ? values.len / value_bytes : 0;
    want = data.len / 8;
    item = want ? rows.len / want : 4;
    if (order.len != n * 8 || (value_bytes != 4 && value_bytes != 8) || values.len % value_bytes || data.len % 8 ||
        (item != 4 && item != 8) || rows.len != want * item || bit < 0 || bit > 255) {
        PyErr_SetString(PyExc_ValueError, "rows_with_bit: buffers of other sizes");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        const unsigned char *f = flags.buf;
        const int64_t *o = order.buf, *v = values.buf;
        int64_t *d = data.buf;
        for (Py_ssize_t r = 0; r < n; r++) {
            if (!(f[r] & bit)) continue;
            int64_t at = o[r];
            if (k == want || at < 0 || at >= n_values) {
                bad = 1;
                break;
            }
            if (item == 4) ((int32_t *)rows.buf)[k] = (int32_t)r;
            else ((int64_t *)rows.buf)[k] = (int64_t)r;
            d[k++] = value_bytes == 4 ? ((const int32_t *)values.buf)[at] : v[at];
        }
    }
    Py_END_ALLOW_THREADS
    if (bad || k != want) PyErr_SetString(PyExc_ValueError, "rows_with_bit: not as many rows as given");
    else result = Py_NewRef(Py_None);
done:
    if (held) {
        PyBuffer_Release(&flags);
        PyBuffer_Release(&order);
        PyBuffer_Release(&values);
        PyBuffer_Release(&rows);
        PyBuffer_Release(&data);
    }
    return result;
}

/* take_widened(values, order, out): out[i] = values[order[i]], int32 values written as int64 (numpy's take of an
 * int32 column, then its cast, in one pass): the row chunks' int32 id columns put in table order as the table's
 * int64 columns. ValueError where out and order differ in length or an order entry is outside the values. */
static PyObject *take_widened_py(PyObject *module, PyObject *args) {
    Py_buffer values, order, out;
    int bad = 0;
    PyObject *result = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*y*w*:take_widened", &values, &order, &out)) return NULL;
    Py_ssize_t n = order.len / 8, n_values = values.len / 4;
    if (values.len % 4 || order.len % 8 || out.len != order.len) {
        PyErr_SetString(PyExc_ValueError, "take_widened: buffers of other sizes");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        const int32_t *v = values.buf;
        const int64_t *o = order.buf;
        int64_t *d = out.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t at = o[i];
            if (at < 0 || at >= n_values) {
                bad = 1;
                break;
            }
            d[i] = v[at];
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) PyErr_SetString(PyExc_ValueError, "take_widened: an order entry outside the values");
    else result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&order);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *flow_templates_py(PyObject *module, PyObject *args) {
    int enabled;
    long long hits = (long long)flow_template_hits;
    (void)module;
    if (!PyArg_ParseTuple(args, "p:_flow_templates", &enabled)) return NULL;
    flow_templates_enabled = enabled;
    flow_template_hits = 0;
    return PyLong_FromLongLong(hits);
}

static PyObject *prepare_sse41_py(PyObject *module, PyObject *args) {
    int enabled;
    (void)module;
    if (!PyArg_ParseTuple(args, "p:_prepare_sse41", &enabled)) return NULL;
#ifdef HAVE_SSE41_PREPARE
    __builtin_cpu_init();
    prepare_sse41 = enabled && __builtin_cpu_supports("sse4.1");
#else
    prepare_sse41 = 0;
#endif
    return PyBool_FromLong(prepare_sse41);
}

static PyObject *name_cache_py(PyObject *module, PyObject *args) {
    int enabled;
    long long hits = (long long)name_cache_hits;
    (void)module;
    if (!PyArg_ParseTuple(args, "p:_name_cache", &enabled)) return NULL;
    name_cache_enabled = enabled;
    name_cache_hits = 0;
    return PyLong_FromLongLong(hits);
}

static PyObject *text_cache_py(PyObject *module, PyObject *args) {
    int enabled;
    long long hits = (long long)text_cache_hits;
    (void)module;
    if (!PyArg_ParseTuple(args, "p:_text_cache", &enabled)) return NULL;
    text_cache_enabled = enabled;
    text_cache_hits = 0;
    text_cache_clear();
    return PyLong_FromLongLong(hits);
}

static PyMethodDef methods[] = {
    {"counted_sizes", counted_sizes_py, METH_VARARGS,
     "counted_sizes(row_counts, max_abs_ts, kind_table, kind_flags, max_time_us)\n"
     "prepared_sizes' (gpu rows, launches) from scan_events' row_counts and max_abs_ts (not None), without a\n"
     "pass over the rows; None where a row is dropped."},
    {"prepared_sizes", prepared_sizes_py, METH_VARARGS,
     "prepared_sizes(floats, codes, sparse_rows, sparse_floats, kind_table, kind_flags, max_time_us)\n"
     "    -> (gpu_rows, launches) | None\n\n"
     "The sizes of the GPU-row and launch columns of prepare_scanned's block; None where the numpy steps\n"
     "would drop a row of scan_events' columns (the caller then takes them)."},
    {"prepare_scanned", prepare_scanned_py, METH_VARARGS,
     "prepare_scanned(floats, codes, sparse_rows, sparse_floats, kind_table, kind_flags, max_time_us, columns\n"
     "                [, names]) -> (pid_exact, tid_exact, nested, misfit)\n\n"
     "scan_events' columns made the reader's prepared block in one pass (kineto/native.py), written into\n"
     "columns (writable buffers of the sizes prepared_sizes gives; the pid, tid, correlation, external id and\n"
     "duration columns int64 or int32, misfit the bits 1, 2, 4, 8, 16 of the int32 ones given a value they cannot hold,\n"
     "in that order); with names (name_bits,\n"
     "step_kind, driver_kind, launch_side, kind_valid, launch_names), name_kinds' steps in the same pass."},
    {"name_kinds", name_kinds_py, METH_VARARGS,
     "name_kinds(kind, codes, name_bits, step_kind, driver_kind, launch_side, pid_valid, tid_valid,\n"
     "           correlation_valid, external_valid, duration, kind_valid, launch_names) -> None\n\n"
     "The steps a prepared block's names decide (kineto/named_kinds.py) in one pass: kind set in place from\n"
     "each row's name bits (1: a step marker, 2: a driver call; the last entry for rows without a name),\n"
     "kind_valid and launch_names written, duration (int64 or int32) clamped at 0 in place."},
    {"prepare_rows", prepare_rows_py, METH_VARARGS,
     "prepare_rows(kind, ts, dur, pid, tid, correlation, external_id, kind_flags, start, duration, pid_data,\n"
     "             pid_valid, tid_data, tid_valid, correlation_data, correlation_valid, external_data,\n"
     "             external_valid, launch_rows, max_time_us) -> (launches, pid_exact, tid_exact, nested)\n\n"
     "A block's per-row steps of kineto/prepare.py in one pass, into the given output buffers (for the\n"
     "kept rows: every kind a code of kind_flags)."},
    {"take_widened", take_widened_py, METH_VARARGS,
     "take_widened(values, order, out): out[i] = values[order[i]], int32 values as int64."},
    {"rows_with_bit", rows_with_bit_py, METH_VARARGS,
     "rows_with_bit(flags, bit, order, values, rows, data) -> None\n\n"
     "The table rows whose flags byte holds bit (ascending) into rows (int32 or int64), and values at their\n"
     "order entries into data (int64); both sized for exactly those rows."},
    {"scan_events", scan_events, METH_VARARGS,
     "scan_events(pieces, to_number, decode_string) -> dict | None\n\n"
     "The complete events of a tuple of pieces (buffers holding a JSON list of Kineto events, or a bare\n"
     "comma-separated sequence of them) as columns (but those of category \"Trace\", the profiler's own\n"
     "span: counted, not rows), or None when they are not exactly what the kineto\n"
     "package's typed msgspec decoder accepts (the caller then decodes them with msgspec)."},
    {"last_event_boundary", event_boundary_py, METH_VARARGS,
     "last_event_boundary(buffer) -> int\n\n"
     "The offset of the last top-level comma between two events in a buffer that starts inside an event\n"
     "list between two events (-1 if none): where a block of any layout can be cut."},
    {"scan_document", scan_document_py, METH_VARARGS,
     "scan_document(document, to_number, decode_string) -> (dict, start, end) | None\n\n"
     "A whole trace document in any layout: a list of events, or an object whose traceEvents member is\n"
     "one. The columns as scan_events gives them, and where the traceEvents list lies in the buffer\n"
     "(-1, -1 for a bare list) so that the caller can decode the other members; None to decline."},
    {"_parse_number", parse_number_py, METH_VARARGS,
     "_parse_number(text, padded=False) -> (float, path) | None\n\n"
     "One JSON number as a float field reads it (for tests): the double and how it was decided ('integer',\n"
     "'zero', 'clinger', 'eisel-lemire', 'integer-and-fraction', or 'python': deferred to\n"
     "PyOS_string_to_double); None when the text is not one JSON number or is out of range (a block holding\n"
     "it is declined). padded: the text followed by 32 more bytes, as a number inside a block is (Kineto's\n"
     "numbers are then read by their fast path; without, at the end of the buffer, by the general one)."},
    {"_flow_templates", flow_templates_py, METH_VARARGS,
     "_flow_templates(enabled) -> int\n\n"
     "For tests: whether scan_events checks flow events against templates of their shapes (its output is the\n"
     "same either way); returns how many flow events the templates took since the last call."},
    {"_prepare_sse41", prepare_sse41_py, METH_VARARGS,
     "_prepare_sse41(enabled) -> bool\n\n"
     "For tests: whether prepare_scanned runs its SSE4.1 build (where the compiler made one and the processor\n"
     "has SSE4.1; its output is the same either way); returns whether it now does."},
    {"_name_cache", name_cache_py, METH_VARARGS,
     "_name_cache(enabled) -> int\n\n"
     "For tests: whether scan_events takes the names of complete events it has already coded by their bytes\n"
     "(its output is the same either way); returns how many names it took so since the last call."},
    {"_text_cache", text_cache_py, METH_VARARGS,
     "_text_cache(enabled) -> int\n\n"
     "For tests: whether scan_events gives the str objects of texts it decoded before (kept across calls) for\n"
     "the categories, names and sync kinds (the same values either way); empties the cache and returns how many\n"
     "texts it gave so since the last call."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kineto_scan",
    "Columnar scanner for Kineto event lists (the fast path of tracelens.ingest.kineto).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kineto_scan(void) {
    PyObject *m;
    if (PyType_Ready(&BufferType) < 0) return NULL;
    phase_table_init();
    m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "N_FLOATS", N_FLOATS) < 0 ||
        PyModule_AddIntConstant(m, "N_ROW_FLOATS", N_ROW_FLOATS) < 0 ||
        PyModule_AddIntConstant(m, "N_STRINGS", N_STRINGS) < 0 ||
        PyModule_AddIntConstant(m, "N_OP_FLOATS", N_OP_FLOATS) < 0 ||
        PyModule_AddIntConstant(m, "N_OP_STRINGS", N_OP_STRINGS) < 0 ||
        /* How this build reads numbers (tests check the build configurations they make). */
        PyModule_AddIntConstant(m, "LDBL_MANT_DIG", LDBL_MANT_DIG) < 0 ||
#ifdef FLT_EVAL_METHOD
        PyModule_AddIntConstant(m, "FLT_EVAL_METHOD", FLT_EVAL_METHOD) < 0 ||
#else
        PyModule_AddIntConstant(m, "FLT_EVAL_METHOD", -1) < 0 ||
#endif
#ifdef HAVE_DOUBLE_ROUNDING_FREE_ARITHMETIC
        PyModule_AddIntConstant(m, "CLINGER_FAST_PATH", 1) < 0 ||
#else
        PyModule_AddIntConstant(m, "CLINGER_FAST_PATH", 0) < 0 ||
#endif
#if defined(HAVE_INT128) || defined(HAVE_MSVC_INTRINSICS)
        PyModule_AddIntConstant(m, "NATIVE_MULTIPLY", 1) < 0 ||
#else
        PyModule_AddIntConstant(m, "NATIVE_MULTIPLY", 0) < 0 ||
#endif
#ifdef HAVE_LITTLE_ENDIAN_LOADS
        PyModule_AddIntConstant(m, "WORD_DIGITS", 1) < 0 ||
#else
        PyModule_AddIntConstant(m, "WORD_DIGITS", 0) < 0 ||
#endif
        PyModule_AddIntConstant(m, "POW5_MIN_Q", POW5_MIN_Q) < 0 ||
        PyModule_AddIntConstant(m, "POW5_MAX_Q", POW5_MAX_Q) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
