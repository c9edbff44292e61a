/* sbuf.h — seed's one string builder: append bytes, strings and printf text to a buffer
 * that stays NUL-terminated.
 *
 * Two kinds, one type:
 *  - growable (zero-initialise: `seed_sbuf b = {0};`): the heap buffer doubles as needed
 *    and is the caller's to free with seed_sbuf_free (or to keep: p is malloc'd);
 *  - fixed (seed_sbuf_init_fixed over the caller's char[cap]): never grows; an append
 *    that does not fit is cut at the end of the buffer and sets `overflow`.
 * A failed append (no memory, or a fixed buffer full) returns -1 and raises a flag
 * (`oom` or `overflow`) that stays up until seed_sbuf_clear, so a builder can append a
 * whole document and check once at the end (seed_sbuf_failed) instead of after every
 * append. A failed growable append leaves the text as it was, and a later append may
 * succeed (memory came back, or `n = 0` reused the builder). Until the first append a
 * growable builder's p is NULL; after any append, even of 0 bytes, p[n] == 0.
 * Not thread-safe: one builder, one writer. */
#ifndef SEED_SBUF_H
#define SEED_SBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct seed_sbuf {
    char *p;      /* NUL-terminated text (p[n] == 0) once anything was appended */
    size_t n;     /* bytes of text, the NUL not counted */
    size_t cap;   /* bytes allocated (growable) or the caller's buffer size (fixed) */
    int fixed;    /* 1: p is the caller's buffer, never reallocated or freed */
    int overflow; /* a fixed buffer was too small: the text was cut */
    int oom;      /* an allocation failed: the text stops before the failed append */
} seed_sbuf;

/* A fixed builder over buf[cap] (cap >= 1), starting empty: buf[0] = 0. */
void seed_sbuf_init_fixed(seed_sbuf *b, char *buf, size_t cap);
/* Frees a growable builder's memory; both kinds end empty (a fixed one keeps its buffer). */
void seed_sbuf_free(seed_sbuf *b);
/* Empties the text and clears the sticky flags, keeping the memory, to reuse a builder. */
void seed_sbuf_clear(seed_sbuf *b);

/* Room for `extra` more bytes (and the NUL) without another allocation. 0, or -1: out
 * of memory or a size past size_t (both set oom), or a fixed buffer lacks the room
 * (nothing is set: a reserve of a fixed buffer is a question, not an append). */
int seed_sbuf_reserve(seed_sbuf *b, size_t extra);
/* Append n bytes of s (which may hold NULs; the builder does not read past n). 0, or -1
 * as the contract above says. Inline while the bytes fit: rendering an observation
 * appends dozens of short strings, and the call showed in household's env steps/s;
 * seed_sbuf_append_slow grows the buffer, or cuts and flags a fixed one. */
int seed_sbuf_append_slow(seed_sbuf *b, const void *s, size_t n);
static inline int seed_sbuf_append(seed_sbuf *b, const void *s, size_t n) {
    if (!b->p || n >= b->cap - b->n) return seed_sbuf_append_slow(b, s, n);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}
/* Append the NUL-terminated string s. */
static inline int seed_sbuf_puts(seed_sbuf *b, const char *s) {
    return seed_sbuf_append(b, s, strlen(s));
}
/* Append each string up to the NULL sentinel: the printf-free "%s%s..." of hot text
 * paths (rendering observations, building catalogues). 0, or -1 when any append failed. */
int seed_sbuf_cats(seed_sbuf *b, ...) __attribute__((sentinel));
/* Append printf-formatted text, of any length. */
int seed_sbuf_appendf(seed_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int seed_sbuf_vappendf(seed_sbuf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* 1 when an append failed (overflow or oom) since init or the last clear. */
static inline int seed_sbuf_failed(const seed_sbuf *b) {
    return b->overflow || b->oom;
}

#endif
