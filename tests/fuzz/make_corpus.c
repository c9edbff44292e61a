/* make_corpus.c — writes the binary seeds of the fuzz corpus (tests/fuzz/make_corpus.sh
 * runs it): one packed envelope of every body type from the wire fixtures (wire/), the
 * weights receiver's messages (weights/: announce, in-place bucket, protobuf-c bucket,
 * fetch), env server replies (remote/) and small safetensors files and an index
 * (safetensors/, with the target's leading form byte). Usage: fuzz_make_corpus DIR. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/weights.h"
#include "proto/wire.h"
#include "wire_fixtures.h"

static void put(const char *dir, const char *sub, const char *name, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, n, 1, f) != 1) || fclose(f) != 0) {
        fprintf(stderr, "make_corpus: cannot write %s\n", path);
        exit(1);
    }
}

static void put_env(const char *dir, const char *sub, const char *name, Seed__Envelope *env) {
    wire_buf b = {0};
    char err[256];
    if (wire_pack(env, NULL, &b, err, sizeof err)) {
        fprintf(stderr, "make_corpus: %s\n", err);
        exit(1);
    }
    put(dir, sub, name, b.data, b.len);
    wire_buf_free(&b);
}

/* A one-file safetensors image: header JSON padded to 8 bytes, then data_len bytes. */
static void put_st(const char *dir, const char *name, const char *hdr, size_t data_len) {
    size_t hl = (strlen(hdr) + 7) / 8 * 8;
    uint8_t *img = calloc(1, 1 + 8 + hl + data_len);
    if (!img) exit(1);
    uint64_t h = hl;
    img[0] = 0; /* the target's form byte: one file */
    memcpy(img + 1, &h, 8);
    memset(img + 9, ' ', hl);
    memcpy(img + 9, hdr, strlen(hdr));
    for (size_t i = 0; i < data_len; i++) img[9 + hl + i] = (uint8_t)(i * 37 + 1);
    put(dir, "safetensors", name, img, 1 + 8 + hl + data_len);
    free(img);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    wfx_all a;
    wfx_all_make(&a, 5);
    Seed__Envelope env;
    char name[96];
    for (int i = 0; i < WFX_NCASES; i++) {
        wfx_envelope(&env, &a, wfx_cases[i], "seed-fuzz");
        snprintf(name, sizeof name, "%s.bin", wire_body_name(wfx_cases[i]));
        put_env(dir, "wire", name, &env);
    }
    /* a step with no prompt ids (protobuf-c decodes them as NULL): render_splice once read
     * NULL with memcpy's zero-length copy, which UBSan refuses (a fuzzer find) */
    wfx_envelope(&env, &a, SEED__ENVELOPE__BODY_EPISODE_GROUP, "seed-fuzz");
    Seed__Step *st0 = a.grp.g.episodes[0]->steps[0];
    st0->n_prompt_ids = 0;
    st0->prompt_ids = NULL;
    st0->skill_slot_episode = 0;
    st0->skill_slot_step = 0;
    put_env(dir, "wire", "crash-empty-prompt.bin", &env);
    /* weights */
    wfx_envelope(&env, &a, SEED__ENVELOPE__BODY_WEIGHT_ANNOUNCE, "learner");
    put_env(dir, "weights", "announce.bin", &env);
    a.ann.transport_dtype = SEED__DTYPE__DTYPE_BF16;
    a.ann.bucket_bytes = 1000;
    a.ann.n_buckets = 2;
    a.ann.n_bucket_crc32c = 2;
    put_env(dir, "weights", "announce_bf16.bin", &env);
    wfx_envelope(&env, &a, SEED__ENVELOPE__BODY_WEIGHT_BUCKET, "learner");
    put_env(dir, "weights", "bucket_protobuf.bin", &env);
    wfx_envelope(&env, &a, SEED__ENVELOPE__BODY_WEIGHT_FETCH, "actor");
    put_env(dir, "weights", "fetch.bin", &env);
    uint8_t msg[WEIGHTS_HEADER_MAX + 976];
    size_t h =
        weights_bucket_header(msg, WEIGHTS_HEADER_MAX, "learner", 9, 2, 2048, a.crcs[2], 952);
    memcpy(msg + h, a.blob + 2048, 952);
    put(dir, "weights", "bucket_plain.bin", msg, h + 952);
    /* remote env replies */
    wfx_envelope(&env, &a, SEED__ENVELOPE__BODY_ENV_REPLY, "envserver");
    put_env(dir, "remote", "reply.bin", &env);
    a.erep.observation = "You are in the kitchen.\nYou see a fridge 1, a countertop 1 and a "
                         "stove 1.\n\n  Nothing happens.  ";
    a.erep.n_admissible = 0;
    a.erep.done = 0;
    a.erep.won = 0;
    a.erep.task = "heat some egg and put it in countertop.";
    put_env(dir, "remote", "reply_free_form.bin", &env);
    a.erep.error = "unknown task";
    put_env(dir, "remote", "reply_error.bin", &env);
    /* safetensors */
    put_st(dir, "f32_bf16.bin",
           "{\"__metadata__\":{\"format\":\"pt\"},"
           "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
           "\"lm_head.weight\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[16,28]}}",
           28);
    put_st(dir, "f16_scalar_empty.bin",
           "{\"s\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[0,2]},"
           "\"e\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[2,2]},"
           "\"u\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[2,5]}}",
           5);
    const char *idx = "\001{\"metadata\":{\"total_size\":14},\"weight_map\":{"
                      "\"a\":\"model-00001-of-00002.safetensors\","
                      "\"b\":\"model-00002-of-00002.safetensors\"}}";
    put(dir, "safetensors", "index.bin", idx, strlen(idx));
    wfx_all_free(&a);
    return 0;
}
