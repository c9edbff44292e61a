/* st_unit.c — safetensors writer argument checks and a large round trip, in C alone.
 *
 * The Python reference tests (test_safetensors.py) cover values against torch; this
 * test covers what Python cannot reach through st_tool: every writer validation branch,
 * the OpenMP paths of the conversions (tensors above the parallel threshold), lookups
 * of absent names, and that a failed write leaves no file behind.
 * Tolerance: none — F32 round trips are exact, and BF16 round trips must equal the
 * scalar round-to-nearest-even reference computed here on the same input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "model/safetensors.h"

#include "tests/check.h"

/* Expect st_write to fail with a sentence containing needle and to leave nothing. */
static void write_fails(const char *path, const st_write_tensor *t, int n, const char *meta,
                        const char *needle) {
    char err[SEED_ERRLEN] = "";
    int rc = st_write(path, t, n, meta, err, sizeof err);
    CHECK(rc < 0 && strstr(err, needle), "wanted an error with '%s', got rc=%d '%s'", needle, rc,
          err);
    CHECK(access(path, F_OK) != 0, "failed write left %s behind", path);
    if (rc < 0) printf("  ok: %s\n", err);
}

static uint16_t bf16_ref(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/unit.safetensors", dir);
    unlink(path);
    float v[6] = {1, 2, 3, 4, 5, 6};
    st_write_tensor ok = {.name = "a", .data = v, .ndim = 2, .shape = {2, 3}, .dtype = ST_F32};

    st_write_tensor t[2] = {ok, ok};
    t[0].name = "";
    write_fails(path, t, 1, NULL, "empty or reserved name");
    t[0].name = "__metadata__";
    write_fails(path, t, 1, NULL, "empty or reserved name");
    t[0] = ok;
    t[0].dtype = ST_F16;
    write_fails(path, t, 1, NULL, "output dtype F16 is not F32 or BF16");
    t[0] = ok;
    t[0].ndim = 9;
    write_fails(path, t, 1, NULL, "9 dims");
    t[0] = ok;
    t[0].shape[1] = -3;
    write_fails(path, t, 1, NULL, "negative or overflowing shape");
    t[0] = ok;
    t[0].ndim = 3;
    t[0].shape[0] = t[0].shape[1] = t[0].shape[2] = (int64_t)1 << 40;
    write_fails(path, t, 1, NULL, "negative or overflowing shape");
    t[0] = ok;
    t[0].data = NULL;
    write_fails(path, t, 1, NULL, "has no data");
    t[0] = ok;
    write_fails(path, t, 2, NULL, "'a' is given twice");
    write_fails(path, &ok, 1, "[1]", "metadata is not a JSON object of strings");
    write_fails(path, &ok, 1, "{\"a\": {}}", "metadata is not a JSON object of strings");
    write_fails(path, &ok, -1, NULL, "negative tensor count");

    /* An empty checkpoint is legal (header "{}" padded, no data). */
    char err[SEED_ERRLEN];
    CHECK(st_write(path, NULL, 0, NULL, err, sizeof err) == 0, "empty write: %s", err);
    st_file *f = NULL;
    CHECK(st_open(&f, path, err, sizeof err) == 0, "open empty: %s", err);
    if (f) {
        CHECK(st_count(f) == 0, "empty file has tensors");
        st_close(f);
    }

    /* Large tensors take the OpenMP paths; the zero-size and scalar ones the edges. */
    size_t n = (1u << 20) + 37;
    float *src = malloc(n * sizeof *src), *back = malloc(n * sizeof *back);
    seed_rng rng;
    seed_rng_init(&rng, 42);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)seed_rng_next(&rng);
        memcpy(&src[i], &u, 4); /* every bit pattern, NaNs and infinities included */
    }
    float scalar = 0.5f;
    st_write_tensor big[4] = {
        {.name = "big.bf16", .data = src, .ndim = 1, .shape = {(int64_t)n}, .dtype = ST_BF16},
        {.name = "big.f32", .data = src, .ndim = 2, .shape = {1, (int64_t)n}, .dtype = ST_F32},
        {.name = "empty", .data = NULL, .ndim = 2, .shape = {0, 5}, .dtype = ST_BF16},
        {.name = "scalar", .data = &scalar, .ndim = 0, .dtype = ST_F32},
    };
    CHECK(st_write(path, big, 4, "{\"format\":\"pt\"}", err, sizeof err) == 0, "write: %s", err);
    CHECK(st_open(&f, path, err, sizeof err) == 0, "open: %s", err);
    if (f) {
        st_tensor info;
        CHECK(st_count(f) == 4, "count %d", st_count(f));
        CHECK(st_find(f, "nope", &info) == -1, "found an absent name");
        CHECK(st_metadata(f, "format") && !strcmp(st_metadata(f, "format"), "pt"), "metadata");
        CHECK(st_metadata(f, "nope") == NULL, "absent metadata key");
        CHECK(st_find(f, "big.bf16", &info) == 0 && info.dtype == ST_BF16 && info.nbytes == 2 * n &&
                  ((uintptr_t)info.data & 1) == 0,
              "big.bf16 info");
        CHECK(st_find(f, "big.f32", &info) == 0 && ((uintptr_t)info.data & 3) == 0,
              "F32 data aligned in the map");
        int64_t shape[2] = {1, (int64_t)n};
        CHECK(st_read_f32(f, "big.f32", shape, 2, back, err, sizeof err) == 0, "%s", err);
        CHECK(memcmp(back, src, n * 4) == 0, "F32 round trip differs");
        CHECK(st_read_f32(f, "big.bf16", shape + 1, 1, back, err, sizeof err) == 0, "%s", err);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t want = (uint32_t)bf16_ref(src[i]) << 16, got;
            memcpy(&got, &back[i], 4);
            bad += got != want;
        }
        CHECK(bad == 0, "%zu BF16 values differ from the scalar reference", bad);
        int64_t es[2] = {0, 5};
        CHECK(st_read_f32(f, "empty", es, 2, NULL, err, sizeof err) == 0, "empty: %s", err);
        CHECK(st_read_f32(f, "scalar", NULL, 0, back, err, sizeof err) == 0 && back[0] == 0.5f,
              "scalar");
        CHECK(st_read_f32(f, "scalar", es, 1, back, err, sizeof err) < 0 &&
                  strstr(err, "has shape [] but [0] was expected"),
              "scalar shape error: %s", err);
        st_close(f);
    }
    free(src);
    free(back);
    unlink(path);
    printf("%s\n", check_failures ? "st_unit: FAILED" : "st_unit: all checks passed");
    return check_failures ? 1 : 0;
}
