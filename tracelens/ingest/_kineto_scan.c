/* Columnar scanner for Kineto event lists: the fast path of tracelens/ingest/kineto.py.
 *
 * scan_events(pieces, to_number, decode_string) reads the Kineto events of a block cut out by kineto._split
 * (a JSON list, or the block's bytes in place: a bare comma-separated sequence of events) and returns its complete ("X") events as columns, or None when the block is not exactly
 * what the typed msgspec decoder of kineto.py would accept (invalid JSON, a field of another JSON type,
 * an escaped key, ...). None sends the block to msgspec, which then gives the same table or the error
 * message; so this scanner only has to be exact on well-typed input, and it never guesses.
 *
 * Two phases. The first walks the bytes without the GIL (other blocks are scanned on other threads at the
 * same time): numbers are parsed, strings are located (offset, length) but not decoded. The second, with
 * the GIL, turns the located strings into block-local codes (one Python str per distinct string) and
 * numbers written as strings into floats through kineto._to_number.
 *
 * Every read is bounds-checked against the end of the buffer; nesting deeper than MAX_DEPTH declines.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define HAVE_SSE2 1
#endif
/* x87 extended precision: a 64-bit mantissa holds any 19-digit decimal mantissa exactly. */
#if LDBL_MANT_DIG == 64 && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X87_LONG_DOUBLE 1
#endif

#define OK 0
#define DECLINE 1  /* the caller decodes the block with msgspec instead */
#define NO_MEMORY 2
#define MAX_DEPTH 512
#define MAX_NUMBER_TEXT 512

/* Float columns of a complete event; the order is kineto._NATIVE_FIELDS. */
enum {
    F_TS, F_DUR, F_PID, F_TID, F_CORRELATION, F_EXTERNAL_ID, F_EXTERNAL_ID_OLD, F_DEVICE, F_STREAM, F_BYTES,
    F_REGISTERS, F_SHARED_MEMORY, F_OCCUPANCY, F_GRID_X, F_GRID_Y, F_GRID_Z, F_BLOCK_X, F_BLOCK_Y, F_BLOCK_Z,
    N_FLOATS
};
/* String columns, returned as int32 codes into a list of distinct strings (-1: absent or null). */
enum { S_CAT, S_NAME, S_SYNC_KIND, N_STRINGS };

enum { PH_COMPLETE, PH_FLOW, PH_INSTANT, PH_METADATA, PH_OTHER };

#define SPAN_PRESENT 1
#define SPAN_ESCAPED 2
#define SPAN_NON_ASCII 4 /* holds a byte >= 0x80: validated as UTF-8 where msgspec decodes the string */

typedef struct {
    const unsigned char *text; /* first byte after the opening quote (the piece stays alive for the call) */
    int32_t length;            /* bytes before the closing quote */
    int32_t flags;
} Span;

typedef struct {
    int64_t row;
    int32_t field;
    int32_t unused;
    Span text;
} NumberText; /* a float field written as a JSON string ("stream 7", "0x0"): parsed in phase two */

typedef struct {
    const unsigned char *p, *end;
    double *floats; /* N_FLOATS per complete event */
    Span *strings;  /* N_STRINGS per complete event */
    size_t rows, capacity;
    NumberText *texts;
    size_t n_texts, texts_capacity;
    int64_t counts[5]; /* by PH_* */
#if defined(__linux__) || defined(__APPLE__)
    locale_t c_locale;
#endif
} Scanner;

#ifdef HAVE_X87_LONG_DOUBLE
static const long double POW10L[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
                                     1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
                                     1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
#endif

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static inline void skip_space(Scanner *s) {
    const unsigned char *p = s->p, *end = s->end;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
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
static int scan_string(Scanner *s, Span *out) {
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

/* A JSON number at s->p. *is_integer: no fraction and no exponent, and the value fits int64 (*integer). */
static int scan_number(Scanner *s, double *value, int *is_integer, int64_t *integer) {
    const unsigned char *start = s->p, *p = s->p, *end = s->end;
    int negative = 0, exact = 1, has_fraction = 0, has_exponent = 0, digits = 0;
    uint64_t mantissa = 0;
    int64_t exponent = 0;
    if (p < end && *p == '-') { negative = 1; p++; }
    if (p >= end) return DECLINE;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
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
        *value = (double)*integer; /* what msgspec gives a float field from a JSON integer */
        return OK;
    }
    if (mantissa == 0 && exact) {
        *value = negative ? -0.0 : 0.0;
        return OK;
    }
    /* Clinger's fast path: one correctly rounded operation on exact operands. */
    if (exact && mantissa <= (UINT64_C(1) << 53) && exponent >= -22 && exponent <= 22) {
        double m = (double)mantissa;
        m = exponent < 0 ? m / POW10[-exponent] : m * POW10[exponent];
        *value = negative ? -m : m;
        return OK;
    }
#ifdef HAVE_X87_LONG_DOUBLE
    /* Kineto's absolute timestamps (1712195495519689.047) have 19 digits: too many for the fast path.
     * mantissa / 10^k rounded once to 64 bits, then to 53, is the correctly rounded double unless the
     * 64-bit value lies exactly halfway between two doubles (dropped bits 10000000000b): then strtod. */
    if (exact && exponent >= -27 && exponent <= 0) {
        long double x = (long double)mantissa / POW10L[-exponent];
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits); /* x87 layout: the 64-bit mantissa comes first */
        if ((bits & 0x7FF) != 0x400) {
            double d = (double)x;
            *value = negative ? -d : d;
            return OK;
        }
    }
#endif
    /* Otherwise a correctly rounded parse of the text, independent of the process's locale. */
    {
        char text[MAX_NUMBER_TEXT + 1];
        char *parsed_end = NULL;
        size_t length = (size_t)(p - start);
        double d;
        if (length > MAX_NUMBER_TEXT) return DECLINE;
        memcpy(text, start, length);
        text[length] = '\0';
#if defined(__linux__) || defined(__APPLE__)
        if (s->c_locale == (locale_t)0) return DECLINE;
        d = strtod_l(text, &parsed_end, s->c_locale);
#else
        return DECLINE;
#endif
        if (parsed_end != text + length || isinf(d)) return DECLINE;
        *value = d;
    }
    return OK;
}

static int skip_value(Scanner *s, int depth);

/* After a member or element: 1 when the container goes on (','), 0 when it ended (close), -1 otherwise. */
static int after_item(Scanner *s, unsigned char close) {
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
    double d;
    int is_integer;
    int64_t i;
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
        return scan_number(s, &d, &is_integer, &i);
    }
}

/* Typed readers, one per declared type of kineto._Event / kineto._Args. s->p is at the value. */

static int read_float(Scanner *s, double *out) { /* float: a JSON number, nothing else */
    int is_integer;
    int64_t integer;
    if (s->p >= s->end || !(*s->p == '-' || is_digit(*s->p))) return DECLINE;
    return scan_number(s, out, &is_integer, &integer);
}

/* A JSON string that msgspec decodes into a str field: it must be valid UTF-8, or msgspec raises. */
static int read_typed_text(Scanner *s, Span *out) {
    int rc = scan_string(s, out);
    if (rc == OK && (out->flags & SPAN_NON_ASCII) && !valid_utf8(out->text, out->length)) return DECLINE;
    return rc;
}

static int read_float_or_text(Scanner *s, double *out, Span *text) { /* float | str */
    if (s->p < s->end && *s->p == '"') {
        *out = NAN;
        return read_typed_text(s, text);
    }
    text->flags = 0;
    return read_float(s, out);
}

static int read_text_or_null(Scanner *s, Span *out) { /* str | None */
    if (s->p < s->end && *s->p == '"') return read_typed_text(s, out);
    out->flags = 0;
    return expect_literal(s, "null", 4);
}

static int read_triple_or_null(Scanner *s, double *out) { /* list[int] | None; a 3-list fills *out */
    int count = 0, rc;
    double values[3];
    out[0] = out[1] = out[2] = NAN;
    if (s->p < s->end && *s->p == 'n') return expect_literal(s, "null", 4);
    if (s->p >= s->end || *s->p != '[') return DECLINE;
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == ']') { s->p++; return OK; }
    for (;;) {
        double d;
        int is_integer;
        int64_t integer;
        skip_space(s);
        if (s->p >= s->end || !(*s->p == '-' || is_digit(*s->p))) return DECLINE;
        if ((rc = scan_number(s, &d, &is_integer, &integer)) != OK) return rc;
        if (!is_integer) return DECLINE; /* msgspec's int rejects 1.0 and 1e3 */
        if (count < 3) values[count] = (double)integer;
        count++;
        if ((rc = after_item(s, ']')) < 0) return DECLINE;
        if (rc == 0) break;
    }
    if (count == 3) { out[0] = values[0]; out[1] = values[1]; out[2] = values[2]; }
    return OK;
}

#define KEY_IS(span, word) ((span).length == (int32_t)(sizeof(word) - 1) && \
                            memcmp((span).text, word, sizeof(word) - 1) == 0)

static int begin_member(Scanner *s, Span *key) {
    int rc;
    skip_space(s);
    if (s->p >= s->end || *s->p != '"') return DECLINE;
    if ((rc = scan_string(s, key)) != OK) return rc;
    if (key->flags & SPAN_ESCAPED) return DECLINE; /* msgspec would unescape the key first */
    skip_space(s);
    if (s->p >= s->end || *s->p != ':') return DECLINE;
    s->p++;
    skip_space(s);
    return s->p < s->end ? OK : DECLINE;
}

static int scan_args(Scanner *s, double *f, Span *strings, Span *stream_text) {
    int rc, more;
    Span key;
    s->p++; /* '{' */
    skip_space(s);
    if (s->p < s->end && *s->p == '}') { s->p++; return OK; }
    do {
        if ((rc = begin_member(s, &key)) != OK) return rc;
        if (KEY_IS(key, "correlation")) rc = read_float(s, &f[F_CORRELATION]);
        else if (KEY_IS(key, "External id")) rc = read_float(s, &f[F_EXTERNAL_ID]);
        else if (KEY_IS(key, "external id")) rc = read_float(s, &f[F_EXTERNAL_ID_OLD]);
        else if (KEY_IS(key, "device")) rc = read_float(s, &f[F_DEVICE]);
        else if (KEY_IS(key, "stream")) rc = read_float_or_text(s, &f[F_STREAM], stream_text);
        else if (KEY_IS(key, "bytes")) rc = read_float(s, &f[F_BYTES]);
        else if (KEY_IS(key, "grid")) rc = read_triple_or_null(s, &f[F_GRID_X]);
        else if (KEY_IS(key, "block")) rc = read_triple_or_null(s, &f[F_BLOCK_X]);
        else if (KEY_IS(key, "registers per thread")) rc = read_float(s, &f[F_REGISTERS]);
        else if (KEY_IS(key, "shared memory")) rc = read_float(s, &f[F_SHARED_MEMORY]);
        else if (KEY_IS(key, "est. achieved occupancy %")) rc = read_float(s, &f[F_OCCUPANCY]);
        else if (KEY_IS(key, "cuda_sync_kind")) rc = read_text_or_null(s, &strings[S_SYNC_KIND]);
        else rc = skip_value(s, 2);
        if (rc != OK) return rc;
        more = after_item(s, '}');
        if (more < 0) return DECLINE;
    } while (more);
    return OK;
}

static int phase_of(Span span) {
    unsigned char c;
    if (span.length != 1) return PH_OTHER;
    c = span.text[0];
    switch (c) {
    case 'X': return PH_COMPLETE;
    case 's': case 'f': case 't': return PH_FLOW;
    case 'i': case 'I': return PH_INSTANT;
    case 'M': return PH_METADATA;
    default: return PH_OTHER;
    }
}

static int grow(Scanner *s) {
    size_t capacity = s->capacity ? s->capacity * 2 : 1024;
    double *floats = PyMem_RawRealloc(s->floats, capacity * N_FLOATS * sizeof(double));
    if (floats == NULL) return NO_MEMORY;
    s->floats = floats;
    Span *strings = PyMem_RawRealloc(s->strings, capacity * N_STRINGS * sizeof(Span));
    if (strings == NULL) return NO_MEMORY;
    s->strings = strings;
    s->capacity = capacity;
    return OK;
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

static int scan_event(Scanner *s) {
    double f[N_FLOATS];
    Span strings[N_STRINGS] = {{0}};
    Span phase_text = {0}, pid_text = {0}, tid_text = {0}, stream_text = {0}, key;
    int rc, more, phase;
    for (int k = 0; k < N_FLOATS; k++) f[k] = NAN;
    f[F_DUR] = 0.0; /* kineto._Event.dur's default */
    s->p++;          /* '{' */
    skip_space(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
    } else {
        do {
            if ((rc = begin_member(s, &key)) != OK) return rc;
            if (KEY_IS(key, "ph")) {
                if (*s->p != '"') return DECLINE;
                rc = read_typed_text(s, &phase_text);
                if (rc == OK && (phase_text.flags & SPAN_ESCAPED)) return DECLINE;
            }
            else if (KEY_IS(key, "cat")) rc = read_text_or_null(s, &strings[S_CAT]);
            else if (KEY_IS(key, "name")) rc = read_text_or_null(s, &strings[S_NAME]);
            else if (KEY_IS(key, "pid")) rc = read_float_or_text(s, &f[F_PID], &pid_text);
            else if (KEY_IS(key, "tid")) rc = read_float_or_text(s, &f[F_TID], &tid_text);
            else if (KEY_IS(key, "ts")) rc = read_float(s, &f[F_TS]);
            else if (KEY_IS(key, "dur")) rc = read_float(s, &f[F_DUR]);
            else if (KEY_IS(key, "args")) rc = *s->p == '{' ? scan_args(s, f, strings, &stream_text) : DECLINE;
            else rc = skip_value(s, 1);
            if (rc != OK) return rc;
            more = after_item(s, '}');
            if (more < 0) return DECLINE;
        } while (more);
    }
    phase = (phase_text.flags & SPAN_PRESENT) ? phase_of(phase_text) : PH_OTHER; /* ph "" by default */
    s->counts[phase]++;
    if (phase != PH_COMPLETE) return OK;
    if (s->rows == s->capacity && (rc = grow(s)) != OK) return rc;
    memcpy(s->floats + s->rows * N_FLOATS, f, sizeof f);
    memcpy(s->strings + s->rows * N_STRINGS, strings, sizeof strings);
    if ((rc = add_text(s, (int64_t)s->rows, F_PID, pid_text)) != OK) return rc;
    if ((rc = add_text(s, (int64_t)s->rows, F_TID, tid_text)) != OK) return rc;
    if ((rc = add_text(s, (int64_t)s->rows, F_STREAM, stream_text)) != OK) return rc;
    s->rows++;
    return OK;
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
    const unsigned char *text;
    int32_t length;
    int32_t code;
    uint64_t hash;
} Slot;

typedef struct {
    Slot *slots;
    size_t capacity, used;
    PyObject *values; /* list of str, indexed by code */
    double *numbers;  /* for number texts: the parsed value of each code */
} Interner;

static uint64_t hash_bytes(const unsigned char *p, int32_t n) { /* eight bytes a step, then a final mix */
    uint64_t h = UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)n, word;
    while (n >= 8) {
        memcpy(&word, p, 8);
        h = (h ^ word) * UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    word = 0;
    memcpy(&word, p, (size_t)n);
    h = (h ^ word) * UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ (h >> 29);
}

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
    if (!(span.flags & SPAN_ESCAPED)) {
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

/* The code of a span's string: >= 0, -1 with an exception set, -2 to decline. */
static int32_t intern(Interner *t, Span span, PyObject *decode_string, PyObject *to_number) {
    const unsigned char *text = span.text;
    uint64_t hash = hash_bytes(text, span.length);
    size_t j = hash & (t->capacity - 1);
    while (t->slots[j].text != NULL) {
        Slot *slot = &t->slots[j];
        if (slot->hash == hash && slot->length == span.length && memcmp(slot->text, text, span.length) == 0)
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
    PyMem_RawFree(s->floats);
    PyMem_RawFree(s->strings);
    PyMem_RawFree(s->texts);
#if defined(__linux__) || defined(__APPLE__)
    if (s->c_locale != (locale_t)0) freelocale(s->c_locale);
#endif
}

static PyObject *build_result(Scanner *s, PyObject *to_number, PyObject *decode_string) {
    Interner interners[N_STRINGS], numbers;
    PyObject *result = NULL, *codes_object = NULL, *floats_object = NULL;
    int32_t *codes = NULL;
    size_t rows = s->rows;

    for (int k = 0; k < N_STRINGS; k++) interners[k].slots = NULL, interners[k].values = NULL,
        interners[k].numbers = NULL;
    numbers.slots = NULL, numbers.values = NULL, numbers.numbers = NULL;
    for (int k = 0; k < N_STRINGS; k++)
        if (interner_init(&interners[k]) < 0) goto fail;
    if (interner_init(&numbers) < 0) goto fail;

    codes = PyMem_RawMalloc((rows ? rows : 1) * N_STRINGS * sizeof(int32_t));
    if (codes == NULL) { PyErr_NoMemory(); goto fail; }
    for (size_t r = 0; r < rows; r++) {
        for (int k = 0; k < N_STRINGS; k++) {
            Span span = s->strings[r * N_STRINGS + k];
            int32_t code = -1;
            if (span.flags & SPAN_PRESENT) {
                code = intern(&interners[k], span, decode_string, NULL);
                if (code == -1) goto fail;
                if (code == -2) goto decline;
            }
            codes[r * N_STRINGS + k] = code;
        }
    }
    for (size_t t = 0; t < s->n_texts; t++) {
        NumberText *text = &s->texts[t];
        int32_t code = intern(&numbers, text->text, decode_string, to_number);
        if (code == -1) goto fail;
        if (code == -2) goto decline;
        s->floats[text->row * N_FLOATS + text->field] = numbers.numbers[code];
    }

    codes_object = wrap_buffer(codes, (Py_ssize_t)(rows * N_STRINGS * sizeof(int32_t)));
    codes = NULL;
    if (codes_object == NULL) goto fail;
    floats_object = wrap_buffer(s->floats, (Py_ssize_t)(rows * N_FLOATS * sizeof(double)));
    s->floats = NULL;
    if (floats_object == NULL) goto fail;
    result = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:n,s:O,s:O,s:O,s:O,s:O}",
                           "complete", (long long)s->counts[PH_COMPLETE], "flow", (long long)s->counts[PH_FLOW],
                           "instant", (long long)s->counts[PH_INSTANT],
                           "metadata", (long long)s->counts[PH_METADATA],
                           "other_phase", (long long)s->counts[PH_OTHER], "rows", (Py_ssize_t)rows,
                           "floats", floats_object, "codes", codes_object,
                           "categories", interners[S_CAT].values, "names", interners[S_NAME].values,
                           "sync_kinds", interners[S_SYNC_KIND].values);
    goto done;
decline:
    result = Py_NewRef(Py_None);
    goto done;
fail:
    result = NULL;
done:
    PyMem_RawFree(codes);
    Py_XDECREF(codes_object);
    Py_XDECREF(floats_object);
    for (int k = 0; k < N_STRINGS; k++) interner_free(&interners[k]);
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
#if defined(__linux__) || defined(__APPLE__)
    s->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
#endif
    return 0;
}

/* Phase two after a phase one that ended with rc; frees the scanner. */
static PyObject *scanner_finish(Scanner *s, int rc, PyObject *to_number, PyObject *decode_string) {
    PyObject *result;
    if (rc == NO_MEMORY) result = PyErr_NoMemory();
    else if (rc == DECLINE) result = Py_NewRef(Py_None);
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
    int64_t events_start, events_end;
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
    rc = scan_document(&s, (const unsigned char *)view.buf, &events_start, &events_end);
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

static PyMethodDef methods[] = {
    {"scan_events", scan_events, METH_VARARGS,
     "scan_events(pieces, to_number, decode_string) -> dict | None\n\n"
     "The complete events of a tuple of pieces (buffers holding a JSON list of Kineto events, or a bare\n"
     "comma-separated sequence of them) as columns, or None when they are not exactly what kineto.py's\n"
     "typed msgspec decoder accepts (the caller then decodes them with msgspec)."},
    {"last_event_boundary", event_boundary_py, METH_VARARGS,
     "last_event_boundary(buffer) -> int\n\n"
     "The offset of the last top-level comma between two events in a buffer that starts inside an event\n"
     "list between two events (-1 if none): where a block of any layout can be cut."},
    {"scan_document", scan_document_py, METH_VARARGS,
     "scan_document(document, to_number, decode_string) -> (dict, start, end) | None\n\n"
     "A whole trace document in any layout: a list of events, or an object whose traceEvents member is\n"
     "one. The columns as scan_events gives them, and where the traceEvents list lies in the buffer\n"
     "(-1, -1 for a bare list) so that the caller can decode the other members; None to decline."},
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
    m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "N_FLOATS", N_FLOATS) < 0 ||
        PyModule_AddIntConstant(m, "N_STRINGS", N_STRINGS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
