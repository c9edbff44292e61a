/* tokenizer_fuzz.c — libFuzzer target: a tokenizer.json (model/tokenizer.h, tok_load_json:
 * what tok_load does with the file's bytes). A tokenizer that loads then encodes a fixed
 * text of mixed scripts, digits, whitespace runs and special-token look-alikes, with and
 * without TOK_ENCODE_SPLIT_SPECIAL, and decodes the ids again, in one call and streamed.
 * Invariant: every id it gives is a token it can decode, and the streamed decode equals
 * the whole one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/tokenizer.h"

static void fuzz_fail(const char *what, const char *err) {
    fprintf(stderr, "tokenizer_fuzz: invariant broken: %s%s%s\n", what, err ? ": " : "",
            err ? err : "");
    abort();
}

static const char TEXT[] =
    "<|im_start|>user\nHello, World! It's 2024-05-01; x=3.14159   tabs\t\tand\r\n"
    "newlines\n\n  <think>go</think><action>push up</action><|im_end|>\n"
    "caf\xc3\xa9 e\xcc\x81 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 \xd0\xbf\xd1\x80\xd0\xb8 "
    "ABC's we'll 12345678 \xff\xfe <|endoftext|>";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tok *t = NULL;
    char err[SEED_ERRLEN];
    if (tok_load_json(&t, (const char *)data, size, err, sizeof err) != 0) return 0;
    tok_ws *ws = NULL;
    if (tok_ws_new(t, &ws, err, sizeof err) != 0)
        fuzz_fail("no workspace for a loaded tokenizer", err);
    int vocab = tok_vocab_size(t);
    for (int flags = 0; flags <= TOK_ENCODE_SPLIT_SPECIAL; flags++) {
        tok_ids ids = {0};
        seed_sbuf whole = {0}, streamed = {0};
        if (tok_encode(t, ws, TEXT, sizeof TEXT - 1, flags, &ids, err, sizeof err) == 0) {
            for (size_t i = 0; i < ids.n; i++)
                if (ids.v[i] < 0 || ids.v[i] >= vocab)
                    fuzz_fail("an id outside the vocabulary", NULL);
            if (tok_decode(t, ids.v, ids.n, 0, &whole, err, sizeof err) != 0)
                fuzz_fail("an encoded id does not decode", err);
            tok_stream s;
            tok_stream_init(&s, 0);
            for (size_t i = 0; i < ids.n; i++)
                if (tok_stream_push(t, &s, ids.v[i], &streamed, err, sizeof err) != 0)
                    fuzz_fail("an encoded id does not stream", err);
            if (tok_stream_flush(&s, &streamed, err, sizeof err) != 0)
                fuzz_fail("the stream does not flush", err);
            if (whole.n != streamed.n || (whole.n && memcmp(whole.p, streamed.p, whole.n) != 0))
                fuzz_fail("the streamed decode differs from the whole one", NULL);
        }
        tok_ids_free(&ids);
        seed_sbuf_free(&whole);
        seed_sbuf_free(&streamed);
    }
    for (int id = 0; id < vocab && id < 64; id++) {
        size_t n;
        (void)tok_id_to_bytes(t, id, &n);
        (void)tok_id_to_token(t, id);
        (void)tok_is_special(t, id);
    }
    tok_ws_free(ws);
    tok_free(t);
    return 0;
}
