/* sbuf.c — the string builder of sbuf.h. */
#include "common/sbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void seed_sbuf_init_fixed(seed_sbuf *b, char *buf, size_t cap) {
    *b = (seed_sbuf){.p = buf, .cap = cap, .fixed = 1};
    if (cap) buf[0] = 0;
}

void seed_sbuf_free(seed_sbuf *b) {
    if (b->fixed) {
        seed_sbuf_init_fixed(b, b->p, b->cap);
        return;
    }
    free(b->p);
    *b = (seed_sbuf){0};
}

void seed_sbuf_clear(seed_sbuf *b) {
    b->n = 0;
    b->overflow = b->oom = 0;
    if (b->p && b->cap) b->p[0] = 0;
}

/* Growable: make cap >= need, doubling from 64 so appends stay amortised O(1). */
static int grow(seed_sbuf *b, size_t need) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int seed_sbuf_reserve(seed_sbuf *b, size_t extra) {
    if (extra > SIZE_MAX - b->n - 1) {
        b->oom = 1;
        return -1;
    }
    size_t need = b->n + extra + 1;
    if (need <= b->cap) return 0;
    if (b->fixed) return -1;
    if (grow(b, need)) {
        b->oom = 1;
        return -1;
    }
    return 0;
}

int seed_sbuf_append_slow(seed_sbuf *b, const void *s, size_t n) {
    if (b->fixed) {
        if (!b->cap) { /* no room even for the NUL */
            b->overflow = n > 0;
            return n > 0 ? -1 : 0;
        }
        size_t room = b->cap - 1 - b->n, k = n < room ? n : room;
        if (k) memcpy(b->p + b->n, s, k);
        b->n += k;
        b->p[b->n] = 0;
        if (k < n) {
            b->overflow = 1;
            return -1;
        }
        return 0;
    }
    if (seed_sbuf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

int seed_sbuf_cats(seed_sbuf *b, ...) {
    va_list ap;
    va_start(ap, b);
    int rc = 0;
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        rc |= seed_sbuf_puts(b, s);
    va_end(ap);
    return rc;
}

int seed_sbuf_vappendf(seed_sbuf *b, const char *fmt, va_list ap) {
    /* Format straight into the free space; when it does not fit, grow (or cut) and
     * format again from a copy of the arguments. */
    char empty[1];
    char *dst = b->p ? b->p + b->n : empty;
    size_t room = b->p && b->cap > b->n ? b->cap - b->n : (b->p ? 0 : 1);
    va_list ap2;
    va_copy(ap2, ap);
    int len = vsnprintf(dst, room, fmt, ap);
    if (len < 0) {
        va_end(ap2);
        if (b->p && b->cap > b->n) b->p[b->n] = 0; /* undo a partial write */
        return -1;                                 /* an encoding error: nothing appended */
    }
    if ((size_t)len < room && b->p) {
        b->n += (size_t)len;
        va_end(ap2);
        return 0;
    }
    int rc;
    if (b->fixed) { /* what fitted stays, cut at the end */
        if (b->cap) {
            b->n = b->cap - 1;
            b->p[b->n] = 0;
        }
        b->overflow = 1;
        rc = -1;
    } else if (seed_sbuf_reserve(b, (size_t)len)) {
        if (b->p) b->p[b->n] = 0;
        rc = -1;
    } else {
        vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap2);
        b->n += (size_t)len;
        rc = 0;
    }
    va_end(ap2);
    return rc;
}

int seed_sbuf_appendf(seed_sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = seed_sbuf_vappendf(b, fmt, ap);
    va_end(ap);
    return rc;
}
