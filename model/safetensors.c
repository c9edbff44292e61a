/* safetensors.c — safetensors reader (mmap, validated header, sharded index) and
 * streaming atomic writer. See safetensors.h for the contract.
 *
 * File layout (the format's spec): 8-byte little-endian header length N, N bytes of
 * JSON header (an object: tensor name -> {dtype, shape, data_offsets}, plus an optional
 * "__metadata__" object of strings), then the data region that data_offsets index. */
#define _GNU_SOURCE
#include "model/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bf16.h"
#include "common/sbuf.h"
#include "common/util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host, as the format does"
#endif

/* The reference library refuses headers above 100 MB; so do we. */
#define ST_MAX_HEADER 100000000ull
/* Elements below which a conversion stays on one thread. */
#define ST_PAR_MIN (1u << 18)

static const struct {
    const char *name;
    size_t size;
} st_dtypes[ST_NUM_DTYPES] = {
    [ST_F32] = {"F32", 4},         [ST_BF16] = {"BF16", 2},       [ST_F16] = {"F16", 2},
    [ST_F64] = {"F64", 8},         [ST_I64] = {"I64", 8},         [ST_I32] = {"I32", 4},
    [ST_I16] = {"I16", 2},         [ST_I8] = {"I8", 1},           [ST_U64] = {"U64", 8},
    [ST_U32] = {"U32", 4},         [ST_U16] = {"U16", 2},         [ST_U8] = {"U8", 1},
    [ST_BOOL] = {"BOOL", 1},       [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
    [ST_F8_E8M0] = {"F8_E8M0", 1}, [ST_C64] = {"C64", 8},
};

const char *st_dtype_name(st_dtype d) {
    return (unsigned)d < ST_NUM_DTYPES ? st_dtypes[d].name : "?";
}
size_t st_dtype_size(st_dtype d) {
    return (unsigned)d < ST_NUM_DTYPES ? st_dtypes[d].size : 0;
}

static int st_dtype_parse(const char *s, st_dtype *out) {
    for (int i = 0; i < ST_NUM_DTYPES; i++)
        if (strcmp(s, st_dtypes[i].name) == 0) {
            *out = (st_dtype)i;
            return 0;
        }
    return -1;
}

/* ------------------------------------------------------------------ conversions */

static inline float f32_from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline uint32_t f32_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

void st_bf16_to_f32(const void *src, float *dst, size_t n) {
    const unsigned char *s = src;
#pragma omp parallel for schedule(static) if (n >= ST_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, s + 2 * i, 2);
        dst[i] = seed_bf16_to_f32(h);
    }
}

/* IEEE half -> single, exact, branch-free so it vectorizes (the FP16 library's method,
 * which torch uses too). Normal halves: shift into place and rescale by 2^-112 (exact);
 * subnormals: build 0.5 + m * 2^-24 and subtract 0.5 (exact); inf/NaN: the rescale keeps
 * them, and a signaling NaN comes out quiet with its payload, as F16C does. */
static inline float f16_to_f32(uint16_t h) {
    uint32_t w = (uint32_t)h << 16;
    uint32_t sign = w & 0x80000000u;
    uint32_t two_w = w + w;
    float normalized = f32_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1p-112f;
    float denormalized = f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
    uint32_t bits = two_w < (1u << 27) ? f32_bits(denormalized) : f32_bits(normalized);
    return f32_from_bits(sign | bits);
}

void st_f16_to_f32(const void *src, float *dst, size_t n) {
    const unsigned char *s = src;
#pragma omp parallel for schedule(static) if (n >= ST_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, s + 2 * i, 2);
        dst[i] = f16_to_f32(h);
    }
}

void st_f32_to_bf16(const float *src, uint16_t *dst, size_t n) {
#pragma omp parallel for schedule(static) if (n >= ST_PAR_MIN)
    for (size_t i = 0; i < n; i++) dst[i] = seed_f32_to_bf16(src[i]);
}

static void copy_f32(const void *src, float *dst, size_t n) {
    const unsigned char *s = src;
    if (n < ST_PAR_MIN) {
        memcpy(dst, s, n * 4);
        return;
    }
    /* Parallel chunks: for a fresh map this also spreads the page faults. */
    const size_t chunk = 1u << 16;
    size_t nchunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nchunks; c++) {
        size_t b = c * chunk, len = SEED_MIN(chunk, n - b);
        memcpy(dst + b, s + 4 * b, len * 4);
    }
}

/* ------------------------------------------------------------------ reader */

typedef struct st_shard {
    char *path;
    const unsigned char *map;
    size_t size;
    size_t data_start; /* 8 + header length */
} st_shard;

typedef struct st_entry {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end; /* within the data region */
    int shard;
} st_entry;

typedef struct st_meta {
    char *key, *value;
} st_meta;

struct st_file {
    char *path; /* what st_open was given */
    st_shard *shards;
    int nshards;
    st_entry *ents;
    int n, cap;
    st_meta *meta;
    int nmeta;
};

static void shape_str(char *buf, size_t len, const int64_t *shape, int ndim) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < ndim && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

/* A JSON number that is a non-negative integer exactly representable in a double. */
static int json_u64(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0) || d > 9007199254740992.0 || d != floor(d)) return -1;
    *out = (uint64_t)d;
    return 0;
}

static int push_entry(st_file *f, st_entry *e) {
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 64;
        st_entry *p = realloc(f->ents, (size_t)cap * sizeof *p);
        if (!p) return -1;
        f->ents = p;
        f->cap = cap;
    }
    f->ents[f->n++] = *e;
    return 0;
}

static int add_meta(st_file *f, const cJSON *obj, int strings_only, const char *path, char *err,
                    size_t errlen) {
    int cnt = cJSON_GetArraySize(obj);
    f->meta = calloc((size_t)SEED_MAX(cnt, 1), sizeof *f->meta);
    if (!f->meta) return seed_errf(err, errlen, "%s: out of memory", path);
    for (const cJSON *m = obj->child; m; m = m->next) {
        if (!cJSON_IsString(m)) {
            if (!strings_only) continue;
            return seed_errf(err, errlen, "%s: __metadata__ value of '%s' is not a string", path,
                             m->string);
        }
        f->meta[f->nmeta].key = strdup(m->string);
        f->meta[f->nmeta].value = strdup(m->valuestring);
        f->nmeta++;
        if (!f->meta[f->nmeta - 1].key || !f->meta[f->nmeta - 1].value)
            return seed_errf(err, errlen, "%s: out of memory", path);
    }
    return 0;
}

static int cmp_offsets(const void *a, const void *b) {
    const st_entry *x = *(st_entry *const *)a, *y = *(st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Parse one tensor's header entry into e (name not yet set). */
static int parse_tensor(const cJSON *t, const char *path, uint64_t data_len, st_entry *e, char *err,
                        size_t errlen) {
    const char *name = t->string;
    if (!cJSON_IsObject(t))
        return seed_errf(err, errlen, "%s: header entry for tensor '%s' is not an object", path,
                         name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    if (!cJSON_IsString(dt))
        return seed_errf(err, errlen, "%s: tensor '%s' has no \"dtype\" string", path, name);
    if (st_dtype_parse(dt->valuestring, &e->dtype) != 0)
        return seed_errf(err, errlen, "%s: tensor '%s' has unknown dtype '%s'", path, name,
                         dt->valuestring);
    if (!cJSON_IsArray(sh))
        return seed_errf(err, errlen, "%s: tensor '%s' has no \"shape\" array", path, name);
    int nd = cJSON_GetArraySize(sh);
    if (nd > ST_MAX_DIMS)
        return seed_errf(err, errlen, "%s: tensor '%s' has %d dims, more than the %d supported",
                         path, name, nd, ST_MAX_DIMS);
    e->ndim = nd;
    uint64_t numel = 1;
    int i = 0;
    for (const cJSON *d = sh->child; d; d = d->next, i++) {
        uint64_t v;
        if (json_u64(d, &v) != 0)
            return seed_errf(err, errlen,
                             "%s: tensor '%s' shape entry %d is not a non-negative integer", path,
                             name, i);
        if (v > (uint64_t)INT64_MAX || __builtin_mul_overflow(numel, v, &numel) ||
            numel > (uint64_t)INT64_MAX)
            return seed_errf(err, errlen, "%s: tensor '%s' shape overflows 64-bit element counts",
                             path, name);
        e->shape[i] = (int64_t)v;
    }
    e->numel = (int64_t)numel;
    uint64_t nbytes;
    if (__builtin_mul_overflow(numel, (uint64_t)st_dtype_size(e->dtype), &nbytes))
        return seed_errf(err, errlen, "%s: tensor '%s' byte size overflows 64 bits", path, name);
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || json_u64(off->child, &e->begin) ||
        json_u64(off->child->next, &e->end))
        return seed_errf(err, errlen,
                         "%s: tensor '%s' data_offsets is not a pair of non-negative integers",
                         path, name);
    if (e->begin > e->end)
        return seed_errf(err, errlen, "%s: tensor '%s' data_offsets [%llu, %llu] begin after end",
                         path, name, (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end > data_len)
        return seed_errf(err, errlen,
                         "%s: tensor '%s' data_offsets [%llu, %llu] end past the data region of "
                         "%llu bytes (file truncated?)",
                         path, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                         (unsigned long long)data_len);
    if (e->end - e->begin != nbytes) {
        char s[160];
        shape_str(s, sizeof s, e->shape, e->ndim);
        return seed_errf(err, errlen,
                         "%s: tensor '%s' of shape %s and dtype %s needs %llu bytes but "
                         "data_offsets [%llu, %llu] span %llu",
                         path, name, s, st_dtype_name(e->dtype), (unsigned long long)nbytes,
                         (unsigned long long)e->begin, (unsigned long long)e->end,
                         (unsigned long long)(e->end - e->begin));
    }
    return 0;
}

/* Map one .safetensors file as shard number `si` of f and append its tensors.
 * keep_meta: store its __metadata__ (single-file checkpoints). */
static int open_shard(st_file *f, int si, int keep_meta, char *err, size_t errlen) {
    st_shard *sh = &f->shards[si];
    const char *path = sh->path;
    /* O_NONBLOCK: a FIFO in the shard's place is refused at once, not waited on */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return seed_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    size_t size;
    if (seed_file_size(fd, path, &size, err, errlen)) {
        close(fd);
        return -1;
    }
    if (size < 8) {
        close(fd);
        return seed_errf(err, errlen,
                         "%s: file is %zu bytes, too short for the 8-byte header length "
                         "(truncated?)",
                         path, size);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return seed_errf(err, errlen, "cannot mmap %s: %s", path, strerror(errno));
    sh->map = map;
    sh->size = size;

    uint64_t hlen;
    memcpy(&hlen, sh->map, 8);
    if (hlen > size - 8)
        return seed_errf(err, errlen,
                         "%s: header length %llu runs past the end of the %zu-byte file "
                         "(truncated, or not a safetensors file?)",
                         path, (unsigned long long)hlen, size);
    if (hlen > ST_MAX_HEADER)
        return seed_errf(err, errlen, "%s: header length %llu is above the %llu-byte limit", path,
                         (unsigned long long)hlen, ST_MAX_HEADER);
    sh->data_start = 8 + (size_t)hlen;
    uint64_t data_len = size - sh->data_start;

    const char *hdr = (const char *)sh->map + 8;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &end, 0);
    if (!root) {
        size_t at = end && end >= hdr ? (size_t)(end - hdr) : 0;
        return seed_errf(err, errlen, "%s: header is not valid JSON (error near byte %zu of %llu)",
                         path, at, (unsigned long long)hlen);
    }
    int rc = 0;
    for (const char *p = end; p < hdr + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            rc = seed_errf(err, errlen, "%s: header has bytes after its JSON object (byte %zu)",
                           path, (size_t)(p - hdr));
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        rc = seed_errf(err, errlen, "%s: header is not a JSON object", path);
        goto done;
    }
    int first = f->n, seen_meta = 0;
    for (const cJSON *t = root->child; t; t = t->next) {
        if (strcmp(t->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(t)) {
                rc = seed_errf(err, errlen, "%s: __metadata__ is not an object", path);
                goto done;
            }
            /* add_meta sizes its table for one object: a second would overflow it */
            if (seen_meta++) {
                rc = seed_errf(err, errlen, "%s: __metadata__ appears twice in the header", path);
                goto done;
            }
            if (keep_meta && (rc = add_meta(f, t, 1, path, err, errlen)) != 0) goto done;
            continue;
        }
        st_entry e = {0};
        if ((rc = parse_tensor(t, path, data_len, &e, err, errlen)) != 0) goto done;
        e.shard = si;
        e.name = strdup(t->string);
        if (!e.name || push_entry(f, &e) != 0) {
            free(e.name);
            rc = seed_errf(err, errlen, "%s: out of memory", path);
            goto done;
        }
    }
    /* The reference library requires the tensors to tile the data region exactly. */
    int cnt = f->n - first;
    st_entry **by = malloc((size_t)SEED_MAX(cnt, 1) * sizeof *by);
    if (!by) {
        rc = seed_errf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < cnt; i++) by[i] = &f->ents[first + i];
    qsort(by, (size_t)cnt, sizeof *by, cmp_offsets);
    uint64_t pos = 0;
    for (int i = 0; i < cnt && rc == 0; i++) {
        if (by[i]->begin != pos)
            rc = seed_errf(err, errlen,
                           "%s: tensor '%s' starts at byte %llu of the data region where the "
                           "previous tensor ends at %llu (hole or overlap)",
                           path, by[i]->name, (unsigned long long)by[i]->begin,
                           (unsigned long long)pos);
        pos = by[i]->end;
    }
    free(by);
    if (rc == 0 && pos != data_len)
        rc = seed_errf(err, errlen,
                       "%s: the tensors cover %llu of the %llu bytes of the data region "
                       "(trailing bytes)",
                       path, (unsigned long long)pos, (unsigned long long)data_len);
done:
    cJSON_Delete(root);
    return rc;
}

static int cmp_name(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return (x->shard > y->shard) - (x->shard < y->shard);
}

static int add_shard(st_file *f, const char *path) {
    st_shard *p = realloc(f->shards, (size_t)(f->nshards + 1) * sizeof *p);
    if (!p) return -1;
    f->shards = p;
    memset(&p[f->nshards], 0, sizeof *p);
    p[f->nshards].path = strdup(path);
    if (!p[f->nshards].path) return -1;
    f->nshards++;
    return 0;
}

static char *path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (!s) return NULL;
    memcpy(s, dir, a);
    size_t o = a;
    if (a && dir[a - 1] != '/') s[o++] = '/';
    memcpy(s + o, name, b + 1);
    return s;
}

/* A shard name from an index: relative, inside the index's directory. */
static int shard_name_ok(const char *s) {
    if (!*s || s[0] == '/') return 0;
    for (const char *p = s; *p;) {
        const char *q = strchr(p, '/');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.') return 0;
        p += len + (q ? 1 : 0);
    }
    return 1;
}

static int open_index(st_file *f, const char *path, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    if (seed_read_file(path, &text, &len, err, errlen) != 0) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    int rc = 0;
    char *dir = NULL;
    cJSON *wm = NULL;
    if (!root || !cJSON_IsObject(root)) {
        rc = seed_errf(err, errlen, "%s: not a JSON object", path);
        goto done;
    }
    wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm)) {
        rc = seed_errf(err, errlen, "%s: no \"weight_map\" object", path);
        goto done;
    }
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    if (cJSON_IsObject(md) && (rc = add_meta(f, md, 0, path, err, errlen)) != 0) goto done;
    dir = strdup(path);
    if (!dir) {
        rc = seed_errf(err, errlen, "out of memory");
        goto done;
    }
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = 0;
    else
        dir[0] = 0;
    /* Open each distinct shard once, in order of first mention. */
    for (const cJSON *w = wm->child; w; w = w->next) {
        if (!cJSON_IsString(w)) {
            rc = seed_errf(err, errlen, "%s: weight_map entry '%s' is not a file name", path,
                           w->string);
            goto done;
        }
        if (!shard_name_ok(w->valuestring)) {
            rc = seed_errf(err, errlen,
                           "%s: weight_map entry '%s' names shard '%s' outside the index's "
                           "directory",
                           path, w->string, w->valuestring);
            goto done;
        }
        char *sp = path_join(dir, w->valuestring);
        if (!sp) {
            rc = seed_errf(err, errlen, "out of memory");
            goto done;
        }
        int known = 0;
        for (int s = 0; s < f->nshards && !known; s++) known = strcmp(f->shards[s].path, sp) == 0;
        int r = known ? 0 : add_shard(f, sp);
        free(sp);
        if (r != 0) {
            rc = seed_errf(err, errlen, "out of memory");
            goto done;
        }
    }
    if (f->nshards == 0) {
        rc = seed_errf(err, errlen, "%s: weight_map is empty", path);
        goto done;
    }
    for (int s = 0; s < f->nshards; s++)
        if ((rc = open_shard(f, s, 0, err, errlen)) != 0) goto done;
    /* Keep exactly the tensors the weight_map assigns to the shard that holds them. */
    int kept = 0;
    for (int i = 0; i < f->n; i++) {
        st_entry *e = &f->ents[i];
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(wm, e->name);
        char *want = w ? path_join(dir, w->valuestring) : NULL;
        int keep = want && strcmp(want, f->shards[e->shard].path) == 0;
        free(want);
        if (keep)
            f->ents[kept++] = *e;
        else
            free(e->name);
    }
    f->n = kept;
    if (f->n > 1) qsort(f->ents, (size_t)f->n, sizeof *f->ents, cmp_name);
    for (const cJSON *w = wm->child; w; w = w->next) {
        st_entry key = {.name = w->string, .shard = -1};
        int lo = 0, hi = f->n;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (strcmp(f->ents[mid].name, key.name) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo >= f->n || strcmp(f->ents[lo].name, key.name) != 0) {
            char *sp = path_join(dir, w->valuestring);
            rc = seed_errf(err, errlen,
                           "%s: weight_map puts tensor '%s' in %s, which does not hold it", path,
                           w->string, sp ? sp : w->valuestring);
            free(sp);
            goto done;
        }
    }
done:
    free(dir);
    cJSON_Delete(root);
    return rc;
}

void st_close(st_file *f) {
    if (!f) return;
    for (int s = 0; s < f->nshards; s++) {
        if (f->shards[s].map) munmap((void *)f->shards[s].map, f->shards[s].size);
        free(f->shards[s].path);
    }
    for (int i = 0; i < f->n; i++) free(f->ents[i].name);
    for (int i = 0; i < f->nmeta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->meta);
    free(f->shards);
    free(f->ents);
    free(f->path);
    free(f);
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int st_open(st_file **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return seed_errf(err, errlen, "out of memory opening %s", path);
    }
    int rc = 0;
    struct stat stt;
    char *target = NULL;
    if (stat(path, &stt) != 0) {
        rc = seed_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto done;
    }
    if (S_ISDIR(stt.st_mode)) {
        target = path_join(path, "model.safetensors");
        if (target && access(target, F_OK) != 0) {
            free(target);
            target = path_join(path, "model.safetensors.index.json");
            if (target && access(target, F_OK) != 0) {
                rc = seed_errf(err, errlen,
                               "%s: neither model.safetensors nor model.safetensors.index.json "
                               "is there",
                               path);
                goto done;
            }
        }
    } else {
        target = strdup(path);
    }
    if (!target) {
        rc = seed_errf(err, errlen, "out of memory opening %s", path);
        goto done;
    }
    if (ends_with(target, ".json")) {
        rc = open_index(f, target, err, errlen);
    } else {
        if (add_shard(f, target) != 0) {
            rc = seed_errf(err, errlen, "out of memory opening %s", path);
            goto done;
        }
        if ((rc = open_shard(f, 0, 1, err, errlen)) != 0) goto done;
        if (f->n > 1) qsort(f->ents, (size_t)f->n, sizeof *f->ents, cmp_name);
    }
    for (int i = 1; rc == 0 && i < f->n; i++)
        if (strcmp(f->ents[i - 1].name, f->ents[i].name) == 0)
            rc = seed_errf(err, errlen, "%s: tensor '%s' appears twice in the header",
                           f->shards[f->ents[i].shard].path, f->ents[i].name);
done:
    free(target);
    if (rc != 0) {
        st_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

int st_count(const st_file *f) {
    return f->n;
}

void st_get(const st_file *f, int i, st_tensor *info) {
    const st_entry *e = &f->ents[i];
    const st_shard *sh = &f->shards[e->shard];
    info->name = e->name;
    info->dtype = e->dtype;
    info->ndim = e->ndim;
    memcpy(info->shape, e->shape, sizeof info->shape);
    info->numel = e->numel;
    info->data = sh->map + sh->data_start + e->begin;
    info->nbytes = (size_t)(e->end - e->begin);
    info->file = sh->path;
}

static int find_index(const st_file *f, const char *name) {
    int lo = 0, hi = f->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(f->ents[mid].name, name);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int st_find(const st_file *f, const char *name, st_tensor *info) {
    int i = find_index(f, name);
    if (i < 0) return -1;
    st_get(f, i, info);
    return 0;
}

const char *st_metadata(const st_file *f, const char *key) {
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

int st_read_f32(const st_file *f, const char *name, const int64_t *expect_shape, int expect_ndim,
                float *dst, char *err, size_t errlen) {
    st_tensor t;
    if (st_find(f, name, &t) != 0)
        return seed_errf(err, errlen, "%s: no tensor named '%s'", f->path, name);
    if (expect_shape) {
        int same = t.ndim == expect_ndim;
        for (int i = 0; same && i < t.ndim; i++) same = t.shape[i] == expect_shape[i];
        if (!same) {
            char a[160], b[160];
            shape_str(a, sizeof a, t.shape, t.ndim);
            shape_str(b, sizeof b, expect_shape, SEED_MAX(0, SEED_MIN(expect_ndim, ST_MAX_DIMS)));
            return seed_errf(err, errlen, "%s: tensor '%s' has shape %s but %s was expected",
                             t.file, name, a, b);
        }
    }
    size_t n = (size_t)t.numel;
    if (n == 0 && (t.dtype == ST_F32 || t.dtype == ST_BF16 || t.dtype == ST_F16)) return 0;
    switch (t.dtype) {
    case ST_F32:
        copy_f32(t.data, dst, n);
        return 0;
    case ST_BF16:
        st_bf16_to_f32(t.data, dst, n);
        return 0;
    case ST_F16:
        st_f16_to_f32(t.data, dst, n);
        return 0;
    default:
        return seed_errf(err, errlen,
                         "%s: tensor '%s' has dtype %s, which is not converted to fp32 (only "
                         "F32, BF16 and F16 are)",
                         t.file, name, st_dtype_name(t.dtype));
    }
}

/* ------------------------------------------------------------------ writer */

/* s as a JSON string (quotes, escapes) onto b. */
static void json_string(seed_sbuf *b, const char *s) {
    seed_sbuf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            seed_sbuf_append(b, e, 2);
        } else if (*p < 0x20) {
            seed_sbuf_appendf(b, "\\u%04x", *p);
        } else {
            seed_sbuf_append(b, (const char *)p, 1);
        }
    }
    seed_sbuf_append(b, "\"", 1);
}

static int cmp_wname(const void *a, const void *b) {
    const st_write_tensor *x = *(const st_write_tensor *const *)a;
    const st_write_tensor *y = *(const st_write_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* One entry, checked before the file system is touched: a name, an output dtype, a shape
 * whose element and byte counts fit, data when there are elements. *nbytes: its size. */
static int check_tensor(const char *path, const st_write_tensor *w, int i, uint64_t *nbytes,
                        char *err, size_t errlen) {
    if (!w->name || !*w->name || strcmp(w->name, "__metadata__") == 0)
        return seed_errf(err, errlen, "%s: tensor %d has an empty or reserved name ('%s')", path, i,
                         w->name ? w->name : "(null)");
    if (w->dtype != ST_F32 && w->dtype != ST_BF16)
        return seed_errf(err, errlen, "%s: tensor '%s' output dtype %s is not F32 or BF16", path,
                         w->name, st_dtype_name(w->dtype));
    if (w->ndim < 0 || w->ndim > ST_MAX_DIMS)
        return seed_errf(err, errlen, "%s: tensor '%s' has %d dims (0..%d allowed)", path, w->name,
                         w->ndim, ST_MAX_DIMS);
    uint64_t numel = 1;
    for (int d = 0; d < w->ndim; d++)
        if (w->shape[d] < 0 || __builtin_mul_overflow(numel, (uint64_t)w->shape[d], &numel) ||
            numel > (uint64_t)INT64_MAX)
            return seed_errf(err, errlen, "%s: tensor '%s' has a negative or overflowing shape",
                             path, w->name);
    if (numel && !w->data)
        return seed_errf(err, errlen, "%s: tensor '%s' has no data", path, w->name);
    if (__builtin_mul_overflow(numel, (uint64_t)st_dtype_size(w->dtype), nbytes))
        return seed_errf(err, errlen, "%s: tensor '%s' byte size overflows", path, w->name);
    return 0;
}

/* Every entry checked (sizes into nbytes[]), and no name twice (byname: scratch). */
static int check_tensors(const char *path, const st_write_tensor *t, int n, uint64_t *nbytes,
                         const st_write_tensor **byname, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (check_tensor(path, &t[i], i, &nbytes[i], err, errlen)) return -1;
        byname[i] = &t[i];
    }
    qsort(byname, (size_t)n, sizeof *byname, cmp_wname);
    for (int i = 1; i < n; i++)
        if (strcmp(byname[i - 1]->name, byname[i]->name) == 0)
            return seed_errf(err, errlen, "%s: tensor name '%s' is given twice", path,
                             byname[i]->name);
    return 0;
}

/* The metadata text as a JSON object of strings (*meta stays NULL without one). */
static int parse_metadata(const char *path, const char *metadata_json, cJSON **meta, char *err,
                          size_t errlen) {
    if (!metadata_json) return 0;
    *meta = cJSON_Parse(metadata_json);
    int ok = *meta && cJSON_IsObject(*meta);
    for (const cJSON *m = ok ? (*meta)->child : NULL; m && ok; m = m->next) ok = cJSON_IsString(m);
    return ok ? 0 : seed_errf(err, errlen, "%s: metadata is not a JSON object of strings", path);
}

/* The header: metadata, then each tensor in file order with its byte range, padded with
 * spaces to a multiple of 8 (so 8 + header stays 8-aligned). */
static int build_header(const char *path, const st_write_tensor *t, int n, const int *order,
                        const uint64_t *nbytes, const cJSON *meta, seed_sbuf *hb, char *err,
                        size_t errlen) {
    seed_sbuf_append(hb, "{", 1);
    int need_comma = 0;
    if (meta) {
        seed_sbuf_append(hb, "\"__metadata__\":{", 16);
        for (const cJSON *m = meta->child; m; m = m->next) {
            if (m != meta->child) seed_sbuf_append(hb, ",", 1);
            json_string(hb, m->string);
            seed_sbuf_append(hb, ":", 1);
            json_string(hb, m->valuestring);
        }
        seed_sbuf_append(hb, "}", 1);
        need_comma = 1;
    }
    uint64_t pos = 0;
    for (int j = 0; j < n; j++) {
        const st_write_tensor *w = &t[order[j]];
        if (need_comma) seed_sbuf_append(hb, ",", 1);
        need_comma = 1;
        json_string(hb, w->name);
        seed_sbuf_appendf(hb, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(w->dtype));
        for (int d = 0; d < w->ndim; d++)
            seed_sbuf_appendf(hb, "%s%lld", d ? "," : "", (long long)w->shape[d]);
        uint64_t end;
        if (__builtin_add_overflow(pos, nbytes[order[j]], &end))
            return seed_errf(err, errlen, "%s: total size overflows", path);
        seed_sbuf_appendf(hb, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)pos,
                          (unsigned long long)end);
        pos = end;
    }
    seed_sbuf_append(hb, "}", 1);
    while (!seed_sbuf_failed(hb) && hb->n % 8) seed_sbuf_append(hb, " ", 1);
    if (seed_sbuf_failed(hb))
        return seed_errf(err, errlen, "%s: out of memory building the header", path);
    if (hb->n > ST_MAX_HEADER)
        return seed_errf(err, errlen, "%s: header of %zu bytes is above the %llu-byte limit", path,
                         hb->n, ST_MAX_HEADER);
    return 0;
}

/* The tensors' bytes in file order: F32 as is, BF16 converted a chunk at a time. */
static int write_data(seed_atomic_file *out, const char *path, const st_write_tensor *t, int n,
                      const int *order, const uint64_t *nbytes, char *err, size_t errlen) {
    const size_t chunk = 1u << 20; /* elements per bf16 conversion chunk (2 MiB) */
    uint16_t *cbuf = NULL;
    int rc = 0;
    for (int j = 0; j < n && !rc; j++) {
        const st_write_tensor *w = &t[order[j]];
        size_t numel = (size_t)(nbytes[order[j]] / st_dtype_size(w->dtype));
        if (w->dtype == ST_F32) {
            if (numel && seed_atomic_write(out, w->data, numel * 4, err, errlen)) rc = -1;
            continue;
        }
        if (!cbuf && numel && !(cbuf = malloc(chunk * sizeof *cbuf))) {
            rc = seed_errf(err, errlen, "%s: out of memory", path);
            break;
        }
        for (size_t b = 0; b < numel && !rc; b += chunk) {
            size_t len = SEED_MIN(chunk, numel - b);
            /* Serial on purpose: the write dominates, and a parallel region per chunk
             * costs more than it saves on a loaded machine. */
            for (size_t i = 0; i < len; i++) cbuf[i] = seed_f32_to_bf16(w->data[b + i]);
            if (seed_atomic_write(out, cbuf, len * 2, err, errlen)) rc = -1;
        }
    }
    free(cbuf);
    return rc;
}

int st_write(const char *path, const st_write_tensor *t, int n, const char *metadata_json,
             char *err, size_t errlen) {
    if (n < 0) return seed_errf(err, errlen, "%s: negative tensor count %d", path, n);
    int rc = 0;
    seed_atomic_file out = {.fd = -1};
    seed_sbuf hb = {0};
    int *order = malloc((size_t)SEED_MAX(n, 1) * sizeof *order);
    uint64_t *nbytes = malloc((size_t)SEED_MAX(n, 1) * sizeof *nbytes);
    const st_write_tensor **byname = malloc((size_t)SEED_MAX(n, 1) * sizeof *byname);
    cJSON *meta = NULL;
    if (!order || !nbytes || !byname) {
        rc = seed_errf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    /* Validate every entry before touching the file system. */
    if (check_tensors(path, t, n, nbytes, byname, err, errlen) ||
        parse_metadata(path, metadata_json, &meta, err, errlen)) {
        rc = -1;
        goto done;
    }
    /* Wider dtypes first (stable), so each tensor sits aligned to its element size. */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (t[i].dtype == ST_F32) order[k++] = i;
    for (int i = 0; i < n; i++)
        if (t[i].dtype != ST_F32) order[k++] = i;
    if (build_header(path, t, n, order, nbytes, meta, &hb, err, errlen) ||
        seed_atomic_open(&out, path, err, errlen)) {
        rc = -1;
        goto done;
    }
    uint64_t hlen = hb.n;
    unsigned char lenb[8];
    memcpy(lenb, &hlen, 8);
    if (seed_atomic_write(&out, lenb, 8, err, errlen) ||
        seed_atomic_write(&out, hb.p, hb.n, err, errlen) ||
        write_data(&out, path, t, n, order, nbytes, err, errlen) ||
        seed_atomic_commit(&out, err, errlen))
        rc = -1;
done:
    seed_atomic_abort(&out); /* a no-op after a commit */
    cJSON_Delete(meta);
    seed_sbuf_free(&hb);
    free(order);
    free(nbytes);
    free(byname);
    return rc;
}
