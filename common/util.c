/* util.c — see util.h. */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int seed_errf(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void seed_rng_init(seed_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t seed_rng_next(seed_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double seed_rng_uniform(seed_rng *r) {
    return (double)(seed_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t seed_rng_below(seed_rng *r, uint64_t n) {
    if (n == 0) return 0;
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = seed_rng_next(r);
    while (x >= lim);
    return x % n;
}

float seed_rng_normal(seed_rng *r) {
    double u1 = seed_rng_uniform(r), u2 = seed_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint64_t seed_hash_mix(uint64_t a, uint64_t b) {
    uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    return splitmix64(&x);
}

double seed_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double seed_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The log level and tag are process-wide settings made once by main(). */
static int g_log_level = SEED_LOG_INFO;
static char g_log_tag[64] = "seed";

void seed_log_set_level(int level) {
    g_log_level = level;
}
void seed_log_set_tag(const char *tag) {
    snprintf(g_log_tag, sizeof g_log_tag, "%s", tag);
}

void seed_log(int level, const char *fmt, ...) {
    if (level > g_log_level) return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    fprintf(stderr, "%02d:%02d:%02d [%s] %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec, g_log_tag,
            names[level < 0   ? 0
                  : level > 3 ? 3
                              : level],
            msg);
}

int seed_file_size(int fd, const char *path, size_t *size, char *err, size_t errlen) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return seed_errf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return seed_errf(err, errlen, "%s: is a directory, not a file", path);
    if (!S_ISREG(st.st_mode)) return seed_errf(err, errlen, "%s: not a regular file", path);
    *size = (size_t)st.st_size;
    return 0;
}

int seed_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen) {
    /* O_NONBLOCK: a FIFO opens at once (to be refused below) instead of waiting for a
     * writer; it changes nothing for a regular file */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return seed_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    size_t n;
    if (seed_file_size(fd, path, &n, err, errlen)) {
        close(fd);
        return -1;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return seed_errf(err, errlen, "cannot open %s: %s", path, strerror(e));
    }
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return seed_errf(err, errlen, "out of memory reading %s (%zu bytes)", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    if (got != n) {
        free(buf);
        return seed_errf(err, errlen, "short read on %s: %zu of %zu bytes", path, got, n);
    }
    buf[n] = 0;
    *out = buf;
    if (len) *len = (size_t)n;
    return 0;
}

int seed_mkdir_p(const char *path, char *err, size_t errlen) {
    char p[4096];
    size_t n = strlen(path);
    if (n == 0) return seed_errf(err, errlen, "cannot create a directory with an empty path");
    if (n >= sizeof p)
        return seed_errf(err, errlen,
                         "cannot create directory %.64s...: path of %zu bytes is "
                         "longer than %zu",
                         path, n, sizeof p - 1);
    memcpy(p, path, n + 1);
    /* every prefix that ends before a '/', then the whole path */
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        struct stat sb;
        if (mkdir(p, 0755) != 0) {
            int e = errno;
            if (e != EEXIST)
                return seed_errf(err, errlen, "cannot create directory %s: %s", p, strerror(e));
            if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
                return seed_errf(err, errlen,
                                 "cannot create directory %s: a file of that name "
                                 "is in the way",
                                 p);
        }
        if (!c) break;
        *s = c;
    }
    return 0;
}

int seed_fsync_dir(const char *dir, char *err, size_t errlen) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return seed_errf(err, errlen, "cannot open directory %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    return rc ? seed_errf(err, errlen, "cannot sync directory %s: %s", dir, strerror(e)) : 0;
}

void seed_atomic_abort(seed_atomic_file *f) {
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->tmp);
    }
    f->fd = -1;
    free(f->path);
    free(f->tmp);
    f->path = f->tmp = NULL;
}

int seed_atomic_open(seed_atomic_file *f, const char *path, char *err, size_t errlen) {
    f->fd = -1;
    f->path = strdup(path);
    size_t n = strlen(path) + 32;
    f->tmp = malloc(n);
    if (!f->path || !f->tmp) {
        seed_atomic_abort(f);
        return seed_errf(err, errlen, "%s: out of memory", path);
    }
    snprintf(f->tmp, n, "%s.tmp.%d", path, (int)getpid());
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        int rc = seed_errf(err, errlen, "cannot create %s: %s", f->tmp, strerror(errno));
        seed_atomic_abort(f);
        return rc;
    }
    return 0;
}

int seed_atomic_write(seed_atomic_file *f, const void *data, size_t len, char *err, size_t errlen) {
    if (f->fd < 0) return seed_errf(err, errlen, "write to a file that is not open");
    const char *p = data;
    while (len) {
        ssize_t w = write(f->fd, p, SEED_MIN(len, (size_t)1 << 30)); /* Linux caps one write */
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int rc = seed_errf(err, errlen, "write to %s failed: %s", f->tmp,
                               strerror(w < 0 ? errno : EIO));
            seed_atomic_abort(f);
            return rc;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int seed_atomic_commit(seed_atomic_file *f, char *err, size_t errlen) {
    if (f->fd < 0) return seed_errf(err, errlen, "commit of a file that is not open");
    int rc = 0;
    if (fsync(f->fd) != 0) {
        rc = seed_errf(err, errlen, "cannot flush %s: %s", f->tmp, strerror(errno));
    } else {
        int fd = f->fd;
        f->fd = -1; /* closed below whatever happens: abort must not close it again */
        if (close(fd) != 0)
            rc = seed_errf(err, errlen, "cannot flush %s: %s", f->tmp, strerror(errno));
        else if (rename(f->tmp, f->path) != 0)
            rc = seed_errf(err, errlen, "cannot rename %s to %s: %s", f->tmp, f->path,
                           strerror(errno));
        if (rc) unlink(f->tmp);
    }
    if (!rc) {
        /* the rename is durable once the directory is */
        char *slash = strrchr(f->path, '/');
        if (!slash)
            rc = seed_fsync_dir(".", err, errlen);
        else if (slash == f->path)
            rc = seed_fsync_dir("/", err, errlen);
        else {
            *slash = 0;
            rc = seed_fsync_dir(f->path, err, errlen);
            *slash = '/';
        }
    }
    seed_atomic_abort(f); /* frees; the fd is already closed */
    return rc;
}

int seed_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                           size_t errlen) {
    seed_atomic_file f;
    if (seed_atomic_open(&f, path, err, errlen) || seed_atomic_write(&f, data, len, err, errlen))
        return -1;
    return seed_atomic_commit(&f, err, errlen);
}

/* CRC-32C (Castagnoli), table-driven; used for weight-bucket checksums. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <pthread.h>
#define SEED_CRC32C_HW 1
/* SSE4.2's crc32 instruction computes CRC-32C. One instruction has a 3-cycle latency and
 * a 1-cycle throughput, so three independent streams over consecutive blocks run about
 * three times as fast as one; their CRCs are joined by "shifting" a CRC over a block of
 * zeros, a linear map kept as four byte tables per block length. (Weight buckets are
 * checksummed on both ends, so this runs over every byte of every broadcast.) */
#define SEED_CRC_LONG 8192
#define SEED_CRC_SHORT 256
static uint32_t seed_crc_long[4][256], seed_crc_short[4][256];
static pthread_once_t seed_crc_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static uint32_t seed_crc32c_zeros(uint32_t c, size_t n) {
    uint64_t x = c;
    for (size_t i = 0; i < n; i += 8) x = _mm_crc32_u64(x, 0);
    return (uint32_t)x;
}

static void seed_crc32c_shift_table(uint32_t t[4][256], size_t n) {
    uint32_t basis[32];
    for (int i = 0; i < 32; i++) basis[i] = seed_crc32c_zeros(1u << i, n);
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                if (b >> i & 1) v ^= basis[8 * k + i];
            t[k][b] = v;
        }
}

static void seed_crc32c_init_hw(void) {
    seed_crc32c_shift_table(seed_crc_long, SEED_CRC_LONG);
    seed_crc32c_shift_table(seed_crc_short, SEED_CRC_SHORT);
}

static inline uint32_t seed_crc32c_shift(uint32_t t[4][256], uint32_t c) {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

/* Three streams over [p, p+n), [p+n, p+2n), [p+2n, p+3n); returns the joined state. */
__attribute__((target("sse4.2"))) static uint64_t
seed_crc32c_3way(uint64_t c0, const unsigned char *p, size_t n, uint32_t t[4][256]) {
    uint64_t c1 = 0, c2 = 0;
    for (const unsigned char *e = p + n; p < e; p += 8) {
        uint64_t a, b, d;
        memcpy(&a, p, 8);
        memcpy(&b, p + n, 8);
        memcpy(&d, p + 2 * n, 8);
        c0 = _mm_crc32_u64(c0, a);
        c1 = _mm_crc32_u64(c1, b);
        c2 = _mm_crc32_u64(c2, d);
    }
    c0 = seed_crc32c_shift(t, (uint32_t)c0) ^ c1;
    return seed_crc32c_shift(t, (uint32_t)c0) ^ c2;
}

__attribute__((target("sse4.2"))) static uint32_t
seed_crc32c_sse42(uint32_t crc, const unsigned char *p, size_t len) {
    uint64_t c = (uint32_t)~crc;
    for (; len && ((uintptr_t)p & 7); len--) c = _mm_crc32_u8((uint32_t)c, *p++);
    if (len >= 3 * SEED_CRC_SHORT) pthread_once(&seed_crc_once, seed_crc32c_init_hw);
    for (; len >= 3 * SEED_CRC_LONG; len -= 3 * SEED_CRC_LONG, p += 3 * SEED_CRC_LONG)
        c = seed_crc32c_3way(c, p, SEED_CRC_LONG, seed_crc_long);
    for (; len >= 3 * SEED_CRC_SHORT; len -= 3 * SEED_CRC_SHORT, p += 3 * SEED_CRC_SHORT)
        c = seed_crc32c_3way(c, p, SEED_CRC_SHORT, seed_crc_short);
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
    }
    for (; len; len--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

uint32_t seed_crc32c(uint32_t crc, const void *data, size_t len) {
#ifdef SEED_CRC32C_HW
    if (__builtin_cpu_supports("sse4.2")) return seed_crc32c_sse42(crc, data, len);
#endif
    static uint32_t table[8][256];
    static int ready = 0; /* idempotent init; a race writes identical values */
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
            table[0][i] = c;
        }
        for (int t = 1; t < 8; t++)
            for (int i = 0; i < 256; i++)
                table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
        ready = 1;
    }
    const unsigned char *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        v ^= crc;
        crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^ table[5][(v >> 16) & 0xff] ^
              table[4][(v >> 24) & 0xff] ^ table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
              table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

uint64_t seed_fnv1a64(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
