/* checkpoint.c — see checkpoint.h. */
#define _GNU_SOURCE
#include "learner/checkpoint.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "model/safetensors.h"

/* Files of a checkpoint that must carry a checksum (tokenizer.json is optional). */
static const char *const REQUIRED[] = {"model.safetensors", "config.json", "optimizer.safetensors",
                                       "pending.bin"};
#define N_REQUIRED ((int)(sizeof REQUIRED / sizeof *REQUIRED))
/* Whole numbers in trainer_state.json stay below 2^53, where a JSON number is exact. */
#define MAX_EXACT 9007199254740992.0

static void rm_rf(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                rm_rf(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static int copy_file(const char *src, const char *dst, char *err, size_t errlen) {
    char *buf;
    size_t len;
    if (seed_read_file(src, &buf, &len, err, errlen)) return -1;
    int rc = seed_write_file_atomic(dst, buf, len, err, errlen);
    free(buf);
    return rc;
}

static int fsync_file(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return seed_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    return rc ? seed_errf(err, errlen, "%s: cannot sync: %s", path, strerror(e)) : 0;
}

/* Size and CRC-32C of a file, streamed; with sync the file is also fsync'ed. */
static int file_crc(const char *path, int sync, uint64_t *bytes, uint32_t *crc, char *err,
                    size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return seed_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf) {
        close(fd);
        return seed_errf(err, errlen, "%s: out of memory", path);
    }
    uint32_t c = 0;
    uint64_t n = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, buf, CHUNK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = seed_errf(err, errlen, "%s: read failed: %s", path, strerror(errno));
            break;
        }
        if (r == 0) break;
        c = seed_crc32c(c, buf, (size_t)r);
        n += (uint64_t)r;
    }
    if (!rc && sync && fsync(fd) != 0)
        rc = seed_errf(err, errlen, "%s: cannot sync: %s", path, strerror(errno));
    free(buf);
    close(fd);
    *bytes = n;
    *crc = c;
    return rc;
}

/* Test hook of checkpoint.h: abort, as a crash would, at the named point of a save. */
static void crash_point(const char *where) {
    const char *s = getenv("SEED_CKPT_CRASH");
    if (s && !strcmp(s, where)) {
        fprintf(stderr, "learner_ckpt_save: crashing at '%s' (SEED_CKPT_CRASH)\n", where);
        abort();
    }
}

/* ---- names ---- */

/* Position of a checkpoint directory name in the run: warm-start checkpoints (sft-N)
 * before stage-2 ones (step-N), each by N; -1 for any other name. Only the names a save
 * writes count: no leading zeros, nothing after the digits. */
static int64_t name_order(const char *name) {
    int64_t base;
    const char *d;
    if (!strncmp(name, "step-", 5)) {
        base = INT64_C(1) << 61;
        d = name + 5;
    } else if (!strncmp(name, "sft-", 4)) {
        base = 0;
        d = name + 4;
    } else {
        return -1;
    }
    size_t n = strspn(d, "0123456789");
    if (n == 0 || n > 18 || d[n] || (d[0] == '0' && n > 1)) return -1;
    return base + strtoll(d, NULL, 10);
}

static int64_t state_order(const learner_ckpt_state *st) {
    return st->stage == 2 ? (INT64_C(1) << 61) + st->step : st->sft_steps;
}

static void state_name(const learner_ckpt_state *st, char *out, size_t len) {
    if (st->stage == 2)
        snprintf(out, len, "step-%lld", (long long)st->step);
    else
        snprintf(out, len, "sft-%lld", (long long)st->sft_steps);
}

/* ---- optimizer state ---- */

/* Optimizer state: fp32 master weights and both AdamW moments, one tensor each per
 * parameter, named "<kind>.<hf name>". */
static const char *const KIND[3] = {"master", "exp_avg", "exp_avg_sq"};

static int save_optimizer(const char *path, model *m, char *err, size_t errlen) {
    int nt = model_num_tensors(m);
    float *m1, *m2;
    int64_t *step;
    if (model_adamw_state(m, &m1, &m2, &step))
        return seed_errf(err, errlen, "the model has no optimizer state to save");
    st_write_tensor *t = calloc((size_t)nt * 3, sizeof *t);
    char(*names)[128] = calloc((size_t)nt * 3, sizeof *names);
    if (!t || !names) {
        free(t);
        free(names);
        return seed_errf(err, errlen, "out of memory saving optimizer state");
    }
    const float *src[3] = {model_params(m), m1, m2};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < nt; i++) {
            const model_tensor_info *ti = model_tensor(m, i);
            int j = k * nt + i;
            snprintf(names[j], sizeof names[j], "%s.%s", KIND[k], ti->name);
            t[j].name = names[j];
            t[j].data = src[k] + ti->offset;
            t[j].ndim = ti->ndim;
            for (int d = 0; d < ti->ndim; d++) t[j].shape[d] = ti->shape[d];
            t[j].dtype = ST_F32;
        }
    char meta[128];
    snprintf(meta, sizeof meta, "{\"adamw_step\":\"%lld\"}", (long long)*step);
    int rc = st_write(path, t, nt * 3, meta, err, errlen);
    free(t);
    free(names);
    return rc;
}

/* The optimizer's step count from the file's metadata: a whole number >= 0. */
static int adamw_step_of(const st_file *f, const char *path, int64_t *out, char *err,
                         size_t errlen) {
    const char *s = st_metadata(f, "adamw_step");
    if (!s) return seed_errf(err, errlen, "%s: metadata 'adamw_step' is missing", path);
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 18 || s[n])
        return seed_errf(err, errlen,
                         "%s: metadata 'adamw_step' is '%.40s', not a whole number >= 0", path, s);
    *out = strtoll(s, NULL, 10);
    return 0;
}

/* Every tensor is F32, named for one of the three kinds, finite, and second moments are
 * >= 0 (a negative one makes sqrt NaN in the next step); the three kinds have the same
 * tensors. Reads the bits from the map: no copy of the state. */
static int check_optimizer(const char *path, char *err, size_t errlen) {
    st_file *f;
    if (st_open(&f, path, err, errlen)) return -1;
    int64_t step;
    int rc = adamw_step_of(f, path, &step, err, errlen);
    int count[3] = {0, 0, 0};
    for (int i = 0; i < st_count(f) && !rc; i++) {
        st_tensor t;
        st_get(f, i, &t);
        int k = -1;
        for (int q = 0; q < 3 && k < 0; q++) {
            size_t n = strlen(KIND[q]);
            if (!strncmp(t.name, KIND[q], n) && t.name[n] == '.') k = q;
        }
        if (k < 0) {
            rc = seed_errf(err, errlen,
                           "%s: tensor '%s' is not optimizer state (master., exp_avg. or "
                           "exp_avg_sq.)",
                           path, t.name);
            break;
        }
        if (t.dtype != ST_F32) {
            rc = seed_errf(err, errlen, "%s: tensor '%s' is %s; optimizer state is F32", path,
                           t.name, st_dtype_name(t.dtype));
            break;
        }
        count[k]++;
        const unsigned char *p = t.data;
        for (int64_t j = 0; j < t.numel; j++) {
            uint32_t u;
            memcpy(&u, p + 4 * j, 4);
            if ((u & 0x7f800000u) == 0x7f800000u) {
                float v;
                memcpy(&v, &u, 4);
                rc = seed_errf(err, errlen, "%s: tensor '%s' element %lld is %s (not finite)", path,
                               t.name, (long long)j, isnan(v) ? "NaN" : "infinite");
                break;
            }
            if (k == 2 && (u & 0x80000000u) && (u & 0x7fffffffu)) {
                float v;
                memcpy(&v, &u, 4);
                rc = seed_errf(err, errlen,
                               "%s: tensor '%s' element %lld is %g; second moments are >= 0", path,
                               t.name, (long long)j, (double)v);
                break;
            }
        }
    }
    if (!rc && (count[0] == 0 || count[0] != count[1] || count[0] != count[2]))
        rc = seed_errf(err, errlen,
                       "%s: %d master, %d exp_avg and %d exp_avg_sq tensors; expected the same "
                       "nonzero count of each",
                       path, count[0], count[1], count[2]);
    st_close(f);
    return rc;
}

static int load_optimizer(const char *path, model *m, char *err, size_t errlen) {
    st_file *f;
    if (st_open(&f, path, err, errlen)) return -1;
    float *m1, *m2;
    int64_t *step;
    if (model_adamw_state(m, &m1, &m2, &step)) {
        st_close(f);
        return seed_errf(err, errlen, "the model has no optimizer state to load into");
    }
    float *dst[3] = {model_params(m), m1, m2};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++)
        for (int i = 0; i < model_num_tensors(m) && !rc; i++) {
            const model_tensor_info *ti = model_tensor(m, i);
            char name[128];
            snprintf(name, sizeof name, "%s.%s", KIND[k], ti->name);
            rc = st_read_f32(f, name, ti->shape, ti->ndim, dst[k] + ti->offset, err, errlen);
        }
    int64_t s = 0;
    if (!rc) rc = adamw_step_of(f, path, &s, err, errlen);
    if (!rc) *step = s;
    st_close(f);
    return rc;
}

/* ---- trainer_state.json and pending.bin ---- */

void learner_ckpt_counter_set(learner_ckpt_state *st, const char *name, uint64_t value) {
    for (int i = 0; i < st->n_counters; i++)
        if (!strcmp(st->counters[i].name, name)) {
            st->counters[i].value = value;
            return;
        }
    size_t n = strlen(name);
    if (st->n_counters >= LEARNER_CKPT_MAX_COUNTERS || n == 0 || n >= LEARNER_CKPT_COUNTER_NAME)
        return;
    learner_ckpt_counter *c = &st->counters[st->n_counters++];
    memcpy(c->name, name, n + 1);
    c->value = value;
}

uint64_t learner_ckpt_counter_get(const learner_ckpt_state *st, const char *name) {
    for (int i = 0; i < st->n_counters; i++)
        if (!strcmp(st->counters[i].name, name)) return st->counters[i].value;
    return 0;
}

/* The state and a {"bytes", "crc32c"} entry for every file already in dir. */
static int write_state(const char *dir, const learner_ckpt_state *st, char *err, size_t errlen) {
    cJSON *j = cJSON_CreateObject(), *files = cJSON_CreateObject();
    if (!j || !files) {
        cJSON_Delete(j);
        cJSON_Delete(files);
        return seed_errf(err, errlen, "out of memory writing trainer_state.json");
    }
    cJSON_AddNumberToObject(j, "step", (double)st->step);
    cJSON_AddNumberToObject(j, "version", (double)st->version);
    cJSON_AddNumberToObject(j, "sft_steps", (double)st->sft_steps);
    cJSON_AddNumberToObject(j, "stage", st->stage);
    cJSON *counters = cJSON_AddObjectToObject(j, "counters");
    for (int i = 0; counters && i < st->n_counters; i++)
        cJSON_AddNumberToObject(counters, st->counters[i].name, (double)st->counters[i].value);
    cJSON_AddItemToObject(j, "files", files);
    int rc = 0;
    DIR *d = opendir(dir);
    if (!d) rc = seed_errf(err, errlen, "cannot list %s: %s", dir, strerror(errno));
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "trainer_state.json")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        uint64_t bytes;
        uint32_t crc;
        rc = file_crc(p, 1, &bytes, &crc, err, errlen);
        cJSON *f = rc ? NULL : cJSON_CreateObject();
        if (!rc && !f) rc = seed_errf(err, errlen, "out of memory writing trainer_state.json");
        if (rc) break;
        cJSON_AddNumberToObject(f, "bytes", (double)bytes);
        cJSON_AddNumberToObject(f, "crc32c", (double)crc);
        cJSON_AddItemToObject(files, e->d_name, f);
    }
    if (d) closedir(d);
    char *text = rc ? NULL : cJSON_Print(j);
    cJSON_Delete(j);
    if (!rc && !text) rc = seed_errf(err, errlen, "out of memory writing trainer_state.json");
    if (!rc) {
        char p[4096];
        snprintf(p, sizeof p, "%s/trainer_state.json", dir);
        rc = seed_write_file_atomic(p, text, strlen(text), err, errlen);
    }
    free(text);
    return rc;
}

/* A whole number of trainer_state.json in [lo, hi]. */
static int state_int(const cJSON *j, const char *key, double lo, double hi, const char *expect,
                     const char *path, int64_t *out, char *err, size_t errlen) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsNumber(x))
        return seed_errf(err, errlen, "%s: '%s' is missing or not a number", path, key);
    double v = x->valuedouble;
    if (!isfinite(v) || v != floor(v))
        return seed_errf(err, errlen, "%s: '%s' is %.17g, not a whole number", path, key, v);
    if (v < lo || v > hi)
        return seed_errf(err, errlen, "%s: '%s' is %.17g; %s", path, key, v, expect);
    *out = (int64_t)v;
    return 0;
}

static int read_state(const char *path, learner_ckpt_state *st, cJSON **out, char *err,
                      size_t errlen) {
    char *text;
    size_t len;
    if (seed_read_file(path, &text, &len, err, errlen)) return -1;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return seed_errf(err, errlen, "%s: not a JSON object", path);
    }
    int64_t step, version, sft, stage;
    int rc = state_int(j, "stage", 0, 2, "a checkpoint's stage is 0, 1 or 2", path, &stage, err,
                       errlen) ||
             state_int(j, "step", 0, MAX_EXACT, "expected a whole number >= 0", path, &step, err,
                       errlen) ||
             state_int(j, "sft_steps", 0, MAX_EXACT, "expected a whole number >= 0", path, &sft,
                       err, errlen) ||
             state_int(j, "version", 0, MAX_EXACT, "expected a whole number >= 0", path, &version,
                       err, errlen);
    /* Nothing is published during the warm start, and every stage-2 step publishes one
     * version after the first (version 1 enters stage 2). */
    if (!rc && stage < 2 && (step != 0 || version != 0))
        rc = seed_errf(err, errlen,
                       "%s: stage %lld (warm start) with step %lld and version %lld; a warm-start "
                       "checkpoint has step 0 and version 0",
                       path, (long long)stage, (long long)step, (long long)version);
    if (!rc && stage == 2 && version < step)
        rc = seed_errf(err, errlen,
                       "%s: version %lld is behind step %lld; every stage-2 step publishes a "
                       "new version",
                       path, (long long)version, (long long)step);
    st->n_counters = 0;
    const cJSON *counters = cJSON_GetObjectItemCaseSensitive(j, "counters");
    if (!rc && counters && !cJSON_IsObject(counters))
        rc = seed_errf(err, errlen, "%s: 'counters' is not an object of name: number", path);
    const cJSON *c, *list = rc ? NULL : counters;
    cJSON_ArrayForEach(c, list) {
        int64_t v;
        size_t n = strlen(c->string);
        if (n == 0 || n >= LEARNER_CKPT_COUNTER_NAME ||
            st->n_counters >= LEARNER_CKPT_MAX_COUNTERS) {
            rc = seed_errf(err, errlen,
                           "%s: counters: '%.64s' is one name too many or not 1..%d bytes (at "
                           "most %d counters)",
                           path, c->string, LEARNER_CKPT_COUNTER_NAME - 1,
                           LEARNER_CKPT_MAX_COUNTERS);
            break;
        }
        if ((rc = state_int(counters, c->string, 0, MAX_EXACT, "expected a whole number >= 0", path,
                            &v, err, errlen)))
            break;
        learner_ckpt_counter_set(st, c->string, (uint64_t)v);
    }
    if (rc) {
        cJSON_Delete(j);
        return -1;
    }
    st->stage = (int)stage;
    st->step = step;
    st->sft_steps = sft;
    st->version = (uint64_t)version;
    *out = j;
    return 0;
}

static int write_pending(const char *path, const void *const *blobs, const size_t *lens, int n,
                         char *err, size_t errlen) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += 8 + lens[i];
    char *buf = malloc(total ? total : 1);
    if (!buf) return seed_errf(err, errlen, "out of memory saving %d pending groups", n);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t len = lens[i];
        memcpy(buf + off, &len, 8);
        memcpy(buf + off + 8, blobs[i], lens[i]);
        off += 8 + lens[i];
    }
    int rc = seed_write_file_atomic(path, buf, total, err, errlen);
    free(buf);
    return rc;
}

/* Walks the records of pending.bin (fn may be NULL: check only); the count, or -1. */
static int pending_walk(const char *p, void (*fn)(void *ctx, const void *buf, size_t len),
                        void *ctx, char *err, size_t errlen) {
    char *buf;
    size_t len;
    if (seed_read_file(p, &buf, &len, err, errlen)) return -1;
    size_t off = 0;
    int n = 0, rc = 0;
    while (off < len) {
        uint64_t l;
        if (len - off < 8) {
            rc = seed_errf(err, errlen, "%s: %zu trailing bytes after record %d (truncated?)", p,
                           len - off, n);
            break;
        }
        memcpy(&l, buf + off, 8);
        if (l > len - off - 8) {
            rc = seed_errf(err, errlen,
                           "%s: record %d of %llu bytes runs past the end of the file "
                           "(truncated?)",
                           p, n, (unsigned long long)l);
            break;
        }
        if (fn) fn(ctx, buf + off + 8, (size_t)l);
        off += 8 + l;
        n++;
    }
    free(buf);
    return rc ? -1 : n;
}

/* ---- validation ---- */

/* A file name of the "files" table: plain, inside the checkpoint. */
static int plain_name(const char *s) {
    return s[0] && s[0] != '.' && !strchr(s, '/') && strlen(s) < 256;
}

int learner_ckpt_validate(const char *path, learner_ckpt_state *st, char *err, size_t errlen) {
    char p[4096];
    struct stat sb;
    if (stat(path, &sb) != 0) return seed_errf(err, errlen, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return seed_errf(err, errlen, "%s: not a directory", path);
    snprintf(p, sizeof p, "%s/trainer_state.json", path);
    cJSON *j = NULL;
    learner_ckpt_state s;
    if (read_state(p, &s, &j, err, errlen)) return -1;
    /* Sizes first (a truncated file says so), then structure (which names what is
     * wrong inside), then checksums (what structure cannot see). A checkpoint written
     * before checksums has no "files": structure and finiteness still hold it. */
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "files");
    int rc = 0;
    if (files && !cJSON_IsObject(files))
        rc = seed_errf(err, errlen, "%s: 'files' is not an object", p);
    for (int i = 0; files && !rc && i < N_REQUIRED; i++)
        if (!cJSON_GetObjectItemCaseSensitive(files, REQUIRED[i]))
            rc = seed_errf(err, errlen, "%s: 'files' has no entry for %s", p, REQUIRED[i]);
    const cJSON *f;
    cJSON_ArrayForEach(f, files) {
        if (rc) break;
        int64_t bytes, crc;
        if (!plain_name(f->string)) {
            rc = seed_errf(err, errlen, "%s: 'files' names '%.64s', not a file of the checkpoint",
                           p, f->string);
            break;
        }
        char fp[4096], what[4400];
        snprintf(fp, sizeof fp, "%s/%s", path, f->string);
        snprintf(what, sizeof what, "%s (entry of %s)", fp, p);
        if (!cJSON_IsObject(f) ||
            state_int(f, "bytes", 0, MAX_EXACT, "expected a size", what, &bytes, err, errlen) ||
            state_int(f, "crc32c", 0, 4294967295.0, "expected a CRC-32C", what, &crc, err,
                      errlen)) {
            if (!cJSON_IsObject(f)) seed_errf(err, errlen, "%s: not an object", what);
            rc = -1;
            break;
        }
        if (lstat(fp, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            rc = seed_errf(err, errlen, "%s: missing (the checkpoint was written with it)", fp);
            break;
        }
        if ((uint64_t)sb.st_size != (uint64_t)bytes)
            rc = seed_errf(err, errlen, "%s: %lld bytes, written with %lld (%s)", fp,
                           (long long)sb.st_size, (long long)bytes,
                           (uint64_t)sb.st_size < (uint64_t)bytes ? "truncated" : "grown since");
    }
    if (!rc) {
        snprintf(p, sizeof p, "%s/optimizer.safetensors", path);
        rc = check_optimizer(p, err, errlen);
    }
    if (!rc) {
        snprintf(p, sizeof p, "%s/pending.bin", path);
        if (access(p, F_OK) == 0 && pending_walk(p, NULL, NULL, err, errlen) < 0) rc = -1;
    }
    cJSON_ArrayForEach(f, files) {
        if (rc) break;
        char fp[4096];
        snprintf(fp, sizeof fp, "%s/%s", path, f->string);
        uint64_t bytes;
        uint32_t crc;
        if (file_crc(fp, 0, &bytes, &crc, err, errlen)) {
            rc = -1;
            break;
        }
        double want = cJSON_GetObjectItemCaseSensitive(f, "crc32c")->valuedouble;
        if ((double)crc != want)
            rc = seed_errf(err, errlen,
                           "%s: checksum mismatch (CRC-32C %08x, written with %08x): the file "
                           "changed after the checkpoint was written",
                           fp, crc, (uint32_t)want);
    }
    cJSON_Delete(j);
    if (rc) return -1;
    *st = s;
    return 0;
}

/* The newest checkpoint directory of ckpt_dir other than `except` that validates (its
 * name into out), or -1. Runs only on the error path: it may read several checkpoints. */
static int previous_good(const char *ckpt_dir, const char *except, char *out, size_t outlen) {
    DIR *d = opendir(ckpt_dir);
    if (!d) return -1;
    enum { MAXC = 4096 };
    int64_t *order = malloc(MAXC * sizeof *order);
    int n = 0;
    struct dirent *e;
    while (order && (e = readdir(d)) && n < MAXC) {
        int64_t o = name_order(e->d_name);
        if (o >= 0 && (!except || strcmp(e->d_name, except))) order[n++] = o;
    }
    closedir(d);
    int found = -1;
    while (found < 0 && n > 0) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (order[i] > order[best]) best = i;
        int64_t o = order[best];
        order[best] = order[--n];
        char name[64], p[4096], err[SEED_ERRLEN];
        if (o >= (INT64_C(1) << 61))
            snprintf(name, sizeof name, "step-%lld", (long long)(o - (INT64_C(1) << 61)));
        else
            snprintf(name, sizeof name, "sft-%lld", (long long)o);
        snprintf(p, sizeof p, "%s/%s", ckpt_dir, name);
        learner_ckpt_state st;
        if (learner_ckpt_validate(p, &st, err, sizeof err) == 0) {
            snprintf(out, outlen, "%s", name);
            found = 0;
        }
    }
    free(order);
    return found;
}

/* Appends to err which checkpoint to fall back on and how. */
static int refuse(const char *ckpt_dir, const char *except, char *err, size_t errlen) {
    char good[64];
    size_t n = strlen(err);
    if (previous_good(ckpt_dir, except, good, sizeof good) == 0)
        snprintf(err + n, errlen - n,
                 ". The previous good checkpoint is %s/%s: resume from it with "
                 "checkpoint.resume_from=%s/%s (or write '%s' into %s/latest)",
                 ckpt_dir, good, ckpt_dir, good, good, ckpt_dir);
    else
        snprintf(err + n, errlen - n,
                 ". No other checkpoint in %s validates: start afresh with "
                 "checkpoint.resume=false (or move %s away)",
                 ckpt_dir, ckpt_dir);
    return -1;
}

/* latest -> a validated checkpoint: 1, 0 (no latest), -1 (err says why; *bad the name it
 * refused, "" when latest names nothing usable). */
static int find_latest(const char *ckpt_dir, char *path_out, size_t path_len,
                       learner_ckpt_state *st, char *bad, size_t bad_len, char *err,
                       size_t errlen) {
    char p[4096], *name;
    size_t len;
    bad[0] = 0;
    snprintf(p, sizeof p, "%s/latest", ckpt_dir);
    struct stat sb;
    if (lstat(p, &sb) != 0 && errno == ENOENT) return 0;
    if (seed_read_file(p, &name, &len, err, errlen)) return -1;
    if (len > 0 && name[len - 1] == '\n') name[--len] = 0;
    if (strlen(name) != len || name_order(name) < 0) {
        char shown[80];
        size_t k = 0;
        for (size_t i = 0; i < len && k < sizeof shown - 1; i++)
            shown[k++] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
        shown[k] = 0;
        free(name);
        return seed_errf(err, errlen,
                         "%s: names '%s', not a checkpoint directory of %s (expected step-N or "
                         "sft-N, no '/' or '..')",
                         p, shown, ckpt_dir);
    }
    snprintf(path_out, path_len, "%s/%s", ckpt_dir, name);
    snprintf(bad, bad_len, "%s", name);
    free(name);
    if (lstat(path_out, &sb) != 0)
        return seed_errf(err, errlen, "%s: names %s, which is missing", p, path_out);
    if (!S_ISDIR(sb.st_mode))
        return seed_errf(err, errlen, "%s: names %s, which is not a directory", p, path_out);
    if (learner_ckpt_validate(path_out, st, err, errlen)) return -1;
    char want[64];
    state_name(st, want, sizeof want);
    if (strcmp(want, bad))
        return seed_errf(err, errlen,
                         "%s/trainer_state.json: stage %d, step %lld, sft_steps %lld belong in "
                         "%s, not in %s",
                         path_out, st->stage, (long long)st->step, (long long)st->sft_steps, want,
                         bad);
    return 1;
}

int learner_ckpt_find(const char *ckpt_dir, const char *resume_from, char *path_out,
                      size_t path_len, learner_ckpt_state *st, char *err, size_t errlen) {
    char bad[64];
    int found = find_latest(ckpt_dir, path_out, path_len, st, bad, sizeof bad, err, errlen);
    if (!resume_from || !resume_from[0])
        return found < 0 ? refuse(ckpt_dir, bad, err, errlen) : found;
    if (found < 0) seed_log(SEED_LOG_WARN, "%s; resuming from checkpoint.resume_from", err);
    learner_ckpt_state rs;
    if (learner_ckpt_validate(resume_from, &rs, err, errlen)) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, " (checkpoint.resume_from)");
        return refuse(ckpt_dir, NULL, err, errlen);
    }
    if (found > 0 && state_order(st) > state_order(&rs)) {
        seed_log(SEED_LOG_INFO,
                 "checkpoint.resume_from %s: the run has gone past it; resuming from %s",
                 resume_from, path_out);
        return 1;
    }
    snprintf(path_out, path_len, "%s", resume_from);
    *st = rs;
    return 1;
}

/* ---- save ---- */

/* Leftovers of a crashed save: temp dirs and temp files of `latest`. */
static void remove_leftovers(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, ".tmp-", 5) && strncmp(e->d_name, "latest.tmp", 10)) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        rm_rf(p);
        unlink(p);
    }
    closedir(d);
}

/* Keep the `keep` newest checkpoints up to and including `current`; newer ones (of a run
 * resumed from an older checkpoint) are left to be replaced as the run reaches them. */
static void prune(const char *dir, int keep, const char *current) {
    int64_t cur = name_order(current);
    if (keep <= 0 || cur < 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    enum { MAXC = 4096 };
    int64_t *order = malloc(MAXC * sizeof *order);
    char(*names)[64] = malloc(MAXC * sizeof *names);
    int n = 0;
    struct dirent *e;
    while (order && names && (e = readdir(d)) && n < MAXC) {
        int64_t o = name_order(e->d_name);
        if (o < 0 || o > cur) continue;
        order[n] = o;
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        int newer = 0;
        for (int j = 0; j < n; j++) newer += order[j] > order[i];
        if (newer >= keep) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            rm_rf(p);
        }
    }
    free(order);
    free(names);
}

/* `latest` = name, atomically and durably. */
static int write_latest(const char *dir, const char *name, char *err, size_t errlen) {
    char p[4096];
    snprintf(p, sizeof p, "%s/latest", dir);
    seed_atomic_file f;
    if (seed_atomic_open(&f, p, err, errlen) ||
        seed_atomic_write(&f, name, strlen(name), err, errlen) ||
        seed_atomic_write(&f, "\n", 1, err, errlen))
        return -1;
    crash_point("latest");
    return seed_atomic_commit(&f, err, errlen);
}

/* Puts the complete temp dir in place as final. An older final is exchanged atomically,
 * so `latest` naming it never points at a missing or half-written dir. */
static int put_in_place(const char *tmp, const char *final, char *err, size_t errlen) {
    struct stat sb;
    if (lstat(final, &sb) == 0) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
            rm_rf(tmp); /* now the old one */
            return 0;
        }
        if (errno != EINVAL && errno != ENOSYS)
            return seed_errf(err, errlen, "cannot exchange %s and %s: %s", tmp, final,
                             strerror(errno));
        rm_rf(final); /* a file system without exchange: a short window, as before */
    }
    if (rename(tmp, final) != 0)
        return seed_errf(err, errlen, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
    return 0;
}

int learner_ckpt_save(const char *ckpt_dir, model *policy, int bf16, const char *tokenizer_json,
                      const learner_ckpt_state *st, const void *const *pending,
                      const size_t *pending_len, int n_pending, int keep, char *out_path,
                      size_t out_len, char *err, size_t errlen) {
    if (seed_mkdir_p(ckpt_dir, err, errlen)) return -1;
    remove_leftovers(ckpt_dir);
    char name[64], tmp[2048], final[2048], p[4096];
    state_name(st, name, sizeof name);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%d", ckpt_dir, name, (int)getpid());
    snprintf(final, sizeof final, "%s/%s", ckpt_dir, name);
    rm_rf(tmp);
    if (seed_mkdir_p(tmp, err, errlen)) return -1;
    int rc = model_save(policy, tmp, bf16 ? MODEL_BF16 : MODEL_F32, err, errlen);
    if (!rc && tokenizer_json) {
        snprintf(p, sizeof p, "%s/tokenizer.json", tmp);
        rc = copy_file(tokenizer_json, p, err, errlen);
    }
    if (!rc) {
        snprintf(p, sizeof p, "%s/optimizer.safetensors", tmp);
        rc = save_optimizer(p, policy, err, errlen);
    }
    if (!rc) {
        snprintf(p, sizeof p, "%s/pending.bin", tmp);
        rc = write_pending(p, pending, pending_len, n_pending, err, errlen);
    }
    if (!rc && st->acks_len) {
        snprintf(p, sizeof p, "%s/acks.bin", tmp);
        rc = seed_write_file_atomic(p, st->acks, st->acks_len, err, errlen);
    }
    if (!rc) crash_point("files");
    /* trainer_state.json last: it holds the other files' checksums (and fsyncs them) */
    if (!rc) rc = write_state(tmp, st, err, errlen);
    if (!rc) rc = seed_fsync_dir(tmp, err, errlen);
    if (!rc) rc = put_in_place(tmp, final, err, errlen);
    if (rc) {
        rm_rf(tmp);
        return -1;
    }
    if (seed_fsync_dir(ckpt_dir, err, errlen)) return -1;
    crash_point("rename");
    if (write_latest(ckpt_dir, name, err, errlen)) return -1;
    prune(ckpt_dir, keep, name);
    if (out_path) snprintf(out_path, out_len, "%s", final);
    return 0;
}

int learner_ckpt_due(int every, double every_s, int64_t step, int64_t last_step, double now,
                     double last_t) {
    if (every > 0 && step - last_step >= every) return 1;
    return every_s > 0 && now - last_t >= every_s;
}

/* ---- load ---- */

int learner_ckpt_load(const char *path, model *policy, char *err, size_t errlen) {
    char p[4096];
    snprintf(p, sizeof p, "%s/optimizer.safetensors", path);
    return load_optimizer(p, policy, err, errlen) ? -1 : model_params_changed(policy, err, errlen);
}

int learner_ckpt_pending(const char *path, void (*fn)(void *ctx, const void *buf, size_t len),
                         void *ctx, char *err, size_t errlen) {
    char p[4096];
    snprintf(p, sizeof p, "%s/pending.bin", path);
    if (access(p, F_OK) != 0) return 0;
    return pending_walk(p, fn, ctx, err, errlen);
}

int learner_ckpt_acks(const char *path, void **buf, size_t *len, char *err, size_t errlen) {
    char p[4096];
    snprintf(p, sizeof p, "%s/acks.bin", path);
    *buf = NULL;
    *len = 0;
    if (access(p, F_OK) != 0) return 0;
    char *b = NULL;
    if (seed_read_file(p, &b, len, err, errlen)) return -1;
    *buf = b;
    return 0;
}

int learner_ckpt_save_ref(const char *ckpt_dir, model *ref, char *err, size_t errlen) {
    char p[4096], tmp[4096];
    snprintf(p, sizeof p, "%s/ref", ckpt_dir);
    if (access(p, F_OK) == 0) return 0;
    /* written aside and renamed, as a checkpoint: a crash never leaves a half ref/ that
     * every later start would fail to load */
    snprintf(tmp, sizeof tmp, "%s/.tmp-ref-%d", ckpt_dir, (int)getpid());
    rm_rf(tmp);
    if (seed_mkdir_p(tmp, err, errlen)) return -1;
    char q[4200];
    int rc = model_save(ref, tmp, MODEL_F32, err, errlen);
    snprintf(q, sizeof q, "%s/config.json", tmp); /* model.safetensors syncs itself */
    if (!rc) rc = fsync_file(q, err, errlen);
    if (!rc) rc = seed_fsync_dir(tmp, err, errlen);
    if (!rc && rename(tmp, p) != 0)
        rc = seed_errf(err, errlen, "cannot rename %s to %s: %s", tmp, p, strerror(errno));
    if (rc) {
        rm_rf(tmp);
        return -1;
    }
    return seed_fsync_dir(ckpt_dir, err, errlen);
}

int learner_ckpt_load_ref(const char *ckpt_dir, model *ref, char *err, size_t errlen) {
    char p[4096];
    snprintf(p, sizeof p, "%s/ref/model.safetensors", ckpt_dir);
    if (access(p, F_OK) != 0) return 0;
    st_file *f;
    if (st_open(&f, p, err, errlen)) return -1;
    int rc = 0;
    for (int i = 0; i < model_num_tensors(ref) && !rc; i++) {
        const model_tensor_info *ti = model_tensor(ref, i);
        rc = st_read_f32(f, ti->name, ti->shape, ti->ndim, model_params(ref) + ti->offset, err,
                         errlen);
    }
    st_close(f);
    if (rc || model_params_changed(ref, err, errlen)) return -1;
    return 1;
}
