/* The primitives of common/ that several modules share: mkdir -p, the atomic durable
 * write (checkpoints, safetensors, status files), fp32 -> bf16 and its NaN rule, the
 * staleness predicate, the job -> socket options builder and the string builder. One part
 * per argument:
 *   common_test mkdir|readfile|atomic|bf16|stale|sockopts|sbuf WORKDIR */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "common/bf16.h"
#include "roles/daemon.h"
#include "common/job.h"
#include "common/sbuf.h"
#include "common/util.h"
#include "tests/check.h"

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Files in dir whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return n;
}

static void test_mkdir(const char *work) {
    char err[SEED_ERRLEN] = "", p[4096];
    snprintf(p, sizeof p, "%s/mk/a/b/c", work);
    CHECK(seed_mkdir_p(p, err, sizeof err) == 0, "%s", err);
    CHECK(is_dir(p), "%s was not made", p);
    CHECK(seed_mkdir_p(p, err, sizeof err) == 0, "an existing directory: %s", err);
    snprintf(p, sizeof p, "%s/mk/a/b/c/", work); /* a trailing slash */
    CHECK(seed_mkdir_p(p, err, sizeof err) == 0, "trailing slash: %s", err);
    /* a file where a directory should be: an error naming it, not a quiet success */
    char file[4096];
    snprintf(file, sizeof file, "%s/mk/file", work);
    CHECK(seed_write_file_atomic(file, "x", 1, err, sizeof err) == 0, "%s", err);
    CHECK(seed_mkdir_p(file, err, sizeof err) < 0 && strstr(err, file) && strstr(err, "in the way"),
          "a file in the way gave '%s'", err);
    snprintf(p, sizeof p, "%s/mk/file/sub", work);
    CHECK(seed_mkdir_p(p, err, sizeof err) < 0 && strstr(err, file), "below a file: '%s'", err);
    CHECK(seed_mkdir_p("", err, sizeof err) < 0 && strstr(err, "empty"), "empty: '%s'", err);
    char *longp = malloc(5000);
    memset(longp, 'a', 4999);
    longp[0] = '/';
    longp[4999] = 0;
    CHECK(seed_mkdir_p(longp, err, sizeof err) < 0 && strstr(err, "longer than"),
          "a too long path gave '%s'", err);
    free(longp);
}

/* seed_read_file: a file's bytes; a directory, a FIFO or a device in a file's place is
 * refused by name (a directory once sized itself by ftell as ~2^63 bytes and the malloc
 * aborted), and a FIFO without a writer does not block. */
static void test_readfile(const char *work) {
    char err[SEED_ERRLEN] = "", p[4096];
    char *got = NULL;
    size_t n = 99;
    snprintf(p, sizeof p, "%s/empty", work);
    CHECK(seed_write_file_atomic(p, "", 0, err, sizeof err) == 0, "%s", err);
    CHECK(seed_read_file(p, &got, &n, err, sizeof err) == 0 && n == 0 && got && !got[0],
          "an empty file: '%s'", err);
    free(got);
    snprintf(p, sizeof p, "%s/dir.json", work);
    CHECK(seed_mkdir_p(p, err, sizeof err) == 0, "%s", err);
    got = NULL;
    CHECK(seed_read_file(p, &got, &n, err, sizeof err) < 0 && !got && strstr(err, p) &&
              strstr(err, "is a directory"),
          "a directory gave '%s'", err);
    snprintf(p, sizeof p, "%s/fifo", work);
    unlink(p);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo %s: %s", p, strerror(errno));
    CHECK(seed_read_file(p, &got, &n, err, sizeof err) < 0 && strstr(err, p) &&
              strstr(err, "not a regular file"),
          "a FIFO gave '%s'", err);
    CHECK(seed_read_file("/dev/null", &got, &n, err, sizeof err) < 0 &&
              strstr(err, "/dev/null: not a regular file"),
          "a device gave '%s'", err);
    snprintf(p, sizeof p, "%s/missing", work);
    CHECK(seed_read_file(p, &got, &n, err, sizeof err) < 0 && strstr(err, p), "'%s'", err);
}

static void test_atomic(const char *work) {
    char err[SEED_ERRLEN] = "", dir[4096], p[4096];
    snprintf(dir, sizeof dir, "%s/at", work);
    CHECK(seed_mkdir_p(dir, err, sizeof err) == 0, "%s", err);
    snprintf(p, sizeof p, "%s/f.txt", dir);
    CHECK(seed_write_file_atomic(p, "old", 3, err, sizeof err) == 0, "%s", err);
    /* streamed: the old bytes stay until the commit, the temp file goes at the commit */
    seed_atomic_file f;
    CHECK(seed_atomic_open(&f, p, err, sizeof err) == 0, "%s", err);
    CHECK(seed_atomic_write(&f, "ne", 2, err, sizeof err) == 0, "%s", err);
    CHECK(seed_atomic_write(&f, "w!", 2, err, sizeof err) == 0, "%s", err);
    char *got = NULL;
    size_t n = 0;
    CHECK(seed_read_file(p, &got, &n, err, sizeof err) == 0 && n == 3 && !memcmp(got, "old", 3),
          "the target changed before the commit");
    free(got);
    CHECK(count_prefixed(dir, "f.txt.tmp.") == 1, "no temp file while writing");
    CHECK(seed_atomic_commit(&f, err, sizeof err) == 0, "%s", err);
    CHECK(seed_read_file(p, &got, &n, err, sizeof err) == 0 && n == 4 && !memcmp(got, "new!", 4),
          "after the commit");
    free(got);
    CHECK(count_prefixed(dir, "f.txt.tmp.") == 0, "the temp file was left behind");
    seed_atomic_abort(&f); /* after a commit: nothing to do */
    /* aborted: the old file stays, the temp file goes */
    CHECK(seed_atomic_open(&f, p, err, sizeof err) == 0, "%s", err);
    CHECK(seed_atomic_write(&f, "zzz", 3, err, sizeof err) == 0, "%s", err);
    seed_atomic_abort(&f);
    CHECK(seed_read_file(p, &got, &n, err, sizeof err) == 0 && n == 4 && !memcmp(got, "new!", 4),
          "an abort changed the target");
    free(got);
    CHECK(count_prefixed(dir, "f.txt.tmp.") == 0, "an abort left its temp file");
    /* a missing directory: an error naming the file, nothing created */
    snprintf(p, sizeof p, "%s/no/such/f.txt", dir);
    CHECK(seed_write_file_atomic(p, "x", 1, err, sizeof err) < 0 && strstr(err, "cannot create") &&
              strstr(err, "no/such/f.txt"),
          "missing directory gave '%s'", err);
    /* the rename target is a directory: the commit fails and leaves no temp file */
    snprintf(p, sizeof p, "%s/adir", dir);
    CHECK(seed_mkdir_p(p, err, sizeof err) == 0, "%s", err);
    snprintf(p, sizeof p, "%s/adir/inner", dir);
    CHECK(seed_mkdir_p(p, err, sizeof err) == 0, "%s", err);
    snprintf(p, sizeof p, "%s/adir", dir);
    CHECK(seed_write_file_atomic(p, "x", 1, err, sizeof err) < 0 && strstr(err, "cannot rename"),
          "rename over a directory gave '%s'", err);
    CHECK(count_prefixed(dir, "adir.tmp.") == 0, "a failed commit left its temp file");
    /* a relative path commits too (its directory is ".") */
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    CHECK(chdir(dir) == 0, "chdir %s", dir);
    CHECK(seed_write_file_atomic("rel.txt", "r", 1, err, sizeof err) == 0, "%s", err);
    CHECK(access("rel.txt", F_OK) == 0, "rel.txt missing");
    CHECK(chdir(cwd) == 0, "chdir back");
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void test_bf16(void) {
    /* round to nearest, ties to even */
    CHECK(seed_bf16_from_bits(0x3f808000u) == 0x3f80, "tie to even (down)");
    CHECK(seed_bf16_from_bits(0x3f818000u) == 0x3f82, "tie to even (up)");
    CHECK(seed_bf16_from_bits(0x3f808001u) == 0x3f81, "above the tie rounds up");
    CHECK(seed_bf16_from_bits(0x3f807fffu) == 0x3f80, "below the tie rounds down");
    CHECK(seed_bf16_from_bits(0x7f7fffffu) == 0x7f80, "FLT_MAX rounds to inf");
    CHECK(seed_bf16_from_bits(0x7f800000u) == 0x7f80, "inf");
    CHECK(seed_bf16_from_bits(0xff800000u) == 0xff80, "-inf");
    CHECK(seed_bf16_from_bits(0x80000000u) == 0x8000, "-0");
    CHECK(seed_bf16_from_bits(0x00000001u) == 0x0000, "smallest denormal rounds to 0");
    /* the NaN rule: sign kept, top bits kept, quiet bit set */
    CHECK(seed_bf16_from_bits(0x7fc00000u) == 0x7fc0, "quiet NaN");
    CHECK(seed_bf16_from_bits(0xffc12345u) == 0xffc1, "negative NaN keeps its sign: %#x",
          seed_bf16_from_bits(0xffc12345u));
    CHECK(seed_bf16_from_bits(0x7f800001u) == 0x7fc0,
          "a payload only in the low bits stays a NaN, not inf: %#x",
          seed_bf16_from_bits(0x7f800001u));
    CHECK(seed_bf16_from_bits(0x7fa00000u) == 0x7fe0, "signalling NaN: payload kept, quieted");
    for (uint32_t h = 0; h < 0x10000u; h++) { /* bf16 -> f32 -> bf16 is the identity */
        uint16_t back = seed_f32_to_bf16(seed_bf16_to_f32((uint16_t)h));
        int nan = (h & 0x7fffu) > 0x7f80u;
        if (back != (nan ? (uint16_t)(h | 0x40u) : (uint16_t)h)) {
            CHECK(0, "round trip of %#x gave %#x", h, back);
            break;
        }
    }
    CHECK(bits(seed_bf16_to_f32(0x3f80)) == 0x3f800000u, "1.0 widens exactly");
}

static void test_stale(void) {
    job_config job;
    memset(&job, 0, sizeof job);
    job.algorithm.max_staleness = 1;
    CHECK(!job_version_stale(&job, 5, 5), "same version");
    CHECK(!job_version_stale(&job, 5, 6), "one behind, max 1");
    CHECK(job_version_stale(&job, 5, 7), "two behind, max 1");
    CHECK(!job_version_stale(&job, 7, 5), "ahead of the learner");
    job.algorithm.max_staleness = 0;
    CHECK(job_version_stale(&job, 5, 6), "one behind, max 0");
}

static void test_sockopts(void) {
    job_config job;
    char err[SEED_ERRLEN] = "";
    CHECK(job_build(&job, NULL, 0, NULL, err, sizeof err) == 0, "%s", err);
    job.wire.max_msg_bytes = 12345;
    job.wire.linger_ms = 77;
    job.wire.hwm = 9;
    job.wire.heartbeat_ms = 111;
    job.wire.heartbeat_timeout_ms = 222;
    wire_sockopts o;
    for (int side = DAEMON_SERVER; side <= DAEMON_CLIENT; side++) {
        CHECK(daemon_sockopts(&job, side, &o, err, sizeof err) == 0, "%s", err);
        CHECK(o.max_msg_bytes == 12345 && o.linger_ms == 77 && o.sndhwm == 9 && o.rcvhwm == 9 &&
                  o.heartbeat_ivl_ms == 111 && o.heartbeat_timeout_ms == 222,
              "side %d: the job's wire keys are not all applied", side);
        CHECK(o.curve == WIRE_CURVE_NONE, "side %d: CURVE without keys", side);
    }
    if (!zmq_has("curve")) {
        printf("sockopts: this libzmq has no CURVE; the key cases are not run\n");
        return;
    }
    char pub[41], sec[41], spub[41], ssec[41];
    CHECK(wire_curve_keypair(pub, sec, err, sizeof err) == 0, "%s", err);
    CHECK(wire_curve_keypair(spub, ssec, err, sizeof err) == 0, "%s", err);
    memcpy(job.endpoints.curve_public, spub, 41);
    memcpy(job.endpoints.curve_secret, ssec, 41);
    CHECK(daemon_sockopts(&job, DAEMON_SERVER, &o, err, sizeof err) == 0, "%s", err);
    CHECK(o.curve == WIRE_CURVE_SERVER && !strcmp(o.curve_public, spub), "server keys");
    /* a client with its own pair trusting the server key */
    memcpy(job.endpoints.curve_public, pub, 41);
    memcpy(job.endpoints.curve_secret, sec, 41);
    memcpy(job.endpoints.curve_server_key, spub, 41);
    CHECK(daemon_sockopts(&job, DAEMON_CLIENT, &o, err, sizeof err) == 0, "%s", err);
    CHECK(o.curve == WIRE_CURVE_CLIENT && !strcmp(o.curve_public, pub) &&
              !strcmp(o.curve_server_key, spub),
          "client keys");
    /* a client with a server key and no pair of its own gets a fresh pair */
    job.endpoints.curve_public[0] = job.endpoints.curve_secret[0] = 0;
    CHECK(daemon_sockopts(&job, DAEMON_CLIENT, &o, err, sizeof err) == 0, "%s", err);
    CHECK(o.curve == WIRE_CURVE_CLIENT && strlen(o.curve_public) == 40 &&
              strcmp(o.curve_public, pub) && !strcmp(o.curve_server_key, spub),
          "fresh client pair");
    /* a bad server key is an error, not a plaintext socket */
    snprintf(job.endpoints.curve_server_key, sizeof job.endpoints.curve_server_key, "short");
    CHECK(daemon_sockopts(&job, DAEMON_CLIENT, &o, err, sizeof err) < 0 && strstr(err, "Z85"),
          "bad server key gave '%s'", err);
}

/* The string builder: growable appends of any size (bytes with NULs, printf text longer
 * than any first guess), a fixed buffer cutting at its end with a sticky overflow, and
 * clear/reuse. */
static void test_sbuf(void) {
    seed_sbuf b = {0};
    CHECK(b.p == NULL && b.n == 0, "a zeroed builder is empty");
    CHECK(seed_sbuf_append(&b, "", 0) == 0 && b.p && b.p[0] == 0, "an empty append gives \"\"");
    CHECK(seed_sbuf_append(&b, "a\0b", 3) == 0 && b.n == 3 && memcmp(b.p, "a\0b", 4) == 0,
          "bytes with a NUL are kept, and the text stays terminated");
    seed_sbuf_clear(&b);
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    /* longer than the builder's first allocation and than a vsnprintf first try */
    CHECK(seed_sbuf_appendf(&b, "%d:%s:%s", 42, big, "end") == 0, "appendf grows");
    CHECK(b.n == 3 + 4999 + 4 && strncmp(b.p, "42:x", 4) == 0 && !strcmp(b.p + b.n - 4, ":end"),
          "appendf text is whole (n=%zu)", b.n);
    for (int i = 0; i < 1000; i++) CHECK(seed_sbuf_puts(&b, "0123456789") == 0);
    CHECK(b.n == 5006 + 10000 && b.p[b.n] == 0 && !seed_sbuf_failed(&b), "puts grows (n=%zu)", b.n);
    CHECK(seed_sbuf_reserve(&b, 1 << 20) == 0 && b.cap >= b.n + (1 << 20) + 1, "reserve");
    CHECK(seed_sbuf_reserve(&b, SIZE_MAX - 2) < 0 && b.oom && seed_sbuf_failed(&b),
          "a size past size_t is an error");
    size_t n = b.n;
    CHECK(seed_sbuf_puts(&b, "more") == 0 && b.n == n + 4 && seed_sbuf_failed(&b),
          "a later append succeeds, the failure stays flagged");
    seed_sbuf_clear(&b);
    CHECK(b.n == 0 && !seed_sbuf_failed(&b) && seed_sbuf_puts(&b, "ok") == 0 && !strcmp(b.p, "ok"),
          "clear resets the flags and the text");
    seed_sbuf_free(&b);
    CHECK(b.p == NULL && b.cap == 0, "free");

    char mem[8];
    seed_sbuf f;
    seed_sbuf_init_fixed(&f, mem, sizeof mem);
    CHECK(mem[0] == 0 && seed_sbuf_puts(&f, "abc") == 0 && seed_sbuf_appendf(&f, "%d", 12) == 0,
          "fixed appends that fit");
    CHECK(!strcmp(mem, "abc12") && f.n == 5, "fixed text '%s'", mem);
    CHECK(seed_sbuf_reserve(&f, 3) < 0 && !f.overflow, "reserve past a fixed buffer: -1, no flag");
    CHECK(seed_sbuf_appendf(&f, "%s", "defg") < 0 && f.overflow, "overflow is reported");
    CHECK(!strcmp(mem, "abc12de") && f.n == 7, "cut at the end: '%s'", mem);
    CHECK(seed_sbuf_puts(&f, "x") < 0 && !strcmp(mem, "abc12de") && seed_sbuf_failed(&f),
          "a full buffer takes nothing more");
    seed_sbuf_clear(&f);
    CHECK(seed_sbuf_append(&f, "0123456789", 10) < 0 && !strcmp(mem, "0123456"),
          "append cuts too: '%s'", mem);
    seed_sbuf_free(&f);
    CHECK(f.p == mem && f.n == 0 && mem[0] == 0 && !f.overflow,
          "free of a fixed builder empties it");

    /* cats: each string up to the sentinel, growable and fixed (cut, flagged) alike */
    CHECK(seed_sbuf_cats(&b, "You open the ", "", "fridge", ".", NULL) == 0 &&
              !strcmp(b.p, "You open the fridge.") && b.n == 20,
          "cats grows: '%s'", b.p ? b.p : "(null)");
    CHECK(seed_sbuf_cats(&b, NULL) == 0 && b.n == 20, "cats of nothing appends nothing");
    seed_sbuf_free(&b);
    CHECK(seed_sbuf_cats(&f, "abc", "de", NULL) == 0 && !strcmp(mem, "abcde") && !f.overflow,
          "cats into a fixed buffer that fits");
    CHECK(seed_sbuf_cats(&f, "fg", "hij", "k", NULL) < 0 && f.overflow && !strcmp(mem, "abcdefg") &&
              f.n == 7,
          "cats cuts at the end and flags it: '%s'", mem);
    /* the inline path's edge: text that exactly fills a fixed buffer fits, a byte more
     * does not */
    seed_sbuf_clear(&f);
    CHECK(seed_sbuf_append(&f, "0123456", 7) == 0 && !f.overflow && seed_sbuf_puts(&f, "") == 0 &&
              !f.overflow && seed_sbuf_puts(&f, "7") < 0 && f.overflow && !strcmp(mem, "0123456"),
          "a full buffer: '%s'", mem);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: common_test mkdir|readfile|atomic|bf16|stale|sockopts|sbuf [WORKDIR]\n");
        return 2;
    }
    const char *part = argv[1], *work = argc > 2 ? argv[2] : ".";
    char err[SEED_ERRLEN];
    if (argc > 2 && seed_mkdir_p(work, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (!strcmp(part, "mkdir"))
        test_mkdir(work);
    else if (!strcmp(part, "readfile"))
        test_readfile(work);
    else if (!strcmp(part, "atomic"))
        test_atomic(work);
    else if (!strcmp(part, "bf16"))
        test_bf16();
    else if (!strcmp(part, "stale"))
        test_stale();
    else if (!strcmp(part, "sockopts"))
        test_sockopts();
    else if (!strcmp(part, "sbuf"))
        test_sbuf();
    else {
        fprintf(stderr, "common_test: unknown part '%s'\n", part);
        return 2;
    }
    if (check_failures)
        fprintf(stderr, "common_test %s: %d check(s) failed\n", part, check_failures);
    return check_failures != 0;
}
