/* util.h — small pieces every seed module uses: error sentences, a seeded RNG,
 * monotonic time, logging, and whole-file reads.
 *
 * Contract: fallible functions across seed return 0 on success and a negative
 * value on failure, writing one human sentence into a caller-owned buffer
 * (`char *err, size_t errlen`; err may be NULL). Nothing here keeps global
 * mutable state except the log level, which main() sets once. */
#ifndef SEED_UTIL_H
#define SEED_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SEED_ERRLEN 512

/* Write a formatted sentence into err (if non-NULL) and return -1. */
int seed_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* xoshiro256** seeded through splitmix64: fast, reproducible on every machine. */
typedef struct seed_rng {
    uint64_t s[4];
} seed_rng;
void seed_rng_init(seed_rng *r, uint64_t seed);
uint64_t seed_rng_next(seed_rng *r);
double seed_rng_uniform(seed_rng *r);             /* [0, 1) */
uint64_t seed_rng_below(seed_rng *r, uint64_t n); /* [0, n), unbiased */
float seed_rng_normal(seed_rng *r);
/* Mix several integers into one 64-bit seed (order matters). */
uint64_t seed_hash_mix(uint64_t a, uint64_t b);

double seed_now(void);  /* monotonic seconds */
double seed_wall(void); /* unix epoch seconds */

enum { SEED_LOG_ERROR = 0, SEED_LOG_WARN = 1, SEED_LOG_INFO = 2, SEED_LOG_DEBUG = 3 };
void seed_log_set_level(int level);
void seed_log_set_tag(const char *tag); /* e.g. "actor-1"; copied */
void seed_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read a whole file into a NUL-terminated malloc'd buffer. PATH must be a regular file:
 * a directory or a FIFO/device is refused by name (seed_file_size). */
int seed_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen);
/* The size of the open file fd, named path in messages. A directory ("PATH: is a directory,
 * not a file") or any other non-regular file ("PATH: not a regular file") is an error: its
 * size says nothing of what reading it gives (ftell on a directory reports ~2^63). */
int seed_file_size(int fd, const char *path, size_t *size, char *err, size_t errlen);

/* Create a directory and its missing parents (mode 0755), as `mkdir -p`. An existing
 * directory is fine; an existing non-directory on the path is an error naming it. */
int seed_mkdir_p(const char *path, char *err, size_t errlen);
/* fsync a directory: a file created or renamed in it is durable only after this. */
int seed_fsync_dir(const char *dir, char *err, size_t errlen);

/* Atomic, durable file replacement, streamed: seed_atomic_open creates PATH.tmp.PID,
 * seed_atomic_write appends to it, seed_atomic_commit fsyncs it, renames it over PATH and
 * fsyncs PATH's directory, so after a crash PATH holds the old bytes or all the new ones,
 * never a mix, and a commit that returned 0 survives power loss. seed_atomic_abort (also
 * what every failing call does) removes the temp file; after a failure only abort is
 * allowed, and it is a no-op then. */
typedef struct seed_atomic_file {
    int fd;     /* -1 once committed or aborted */
    char *path; /* malloc'd */
    char *tmp;  /* malloc'd */
} seed_atomic_file;
int seed_atomic_open(seed_atomic_file *f, const char *path, char *err, size_t errlen);
int seed_atomic_write(seed_atomic_file *f, const void *data, size_t len, char *err, size_t errlen);
int seed_atomic_commit(seed_atomic_file *f, char *err, size_t errlen);
void seed_atomic_abort(seed_atomic_file *f);
/* The whole of data to path through the above. */
int seed_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                           size_t errlen);

uint32_t seed_crc32c(uint32_t crc, const void *data, size_t len);
uint64_t seed_fnv1a64(const void *data, size_t len);

#define SEED_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SEED_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
