/* reply_fuzz.c — libFuzzer target: the parser of the policy's answer into an env action
 * (envs/prompt.h, env_parse_response). The first input byte picks reject_cjk (bit 0)
 * and the action buffer's size (bits 1..7: 1..128 bytes), the rest is the reply (any
 * bytes, not NUL-terminated). Invariants: the action is NUL-terminated within its buffer
 * and action_len is its length; valid means reason ok and a non-empty action; the action
 * has no leading or trailing ASCII whitespace and no upper-case ASCII letter. */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/prompt.h"

static void fuzz_fail(const char *what) {
    fprintf(stderr, "reply_fuzz: invariant broken: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int reject_cjk = data[0] & 1;
    size_t cap = (size_t)(data[0] >> 1) + 1;
    /* an exact-size heap copy, so a read past the reply is an ASan report */
    size_t len = size - 1;
    char *reply = malloc(len ? len : 1);
    char *action = malloc(cap);
    if (!reply || !action) abort();
    if (len) memcpy(reply, data + 1, len);
    env_parsed p;
    env_parse_response(reply, len, reject_cjk, action, cap, &p);
    size_t n = strnlen(action, cap);
    if (n == cap) fuzz_fail("the action is not NUL-terminated in its buffer");
    if (n != p.action_len) fuzz_fail("action_len is not the action's length");
    if (p.valid != (p.reason == ENV_PARSE_OK)) fuzz_fail("valid disagrees with the reason");
    if (p.valid && n == 0) fuzz_fail("a valid step with an empty action");
    if (n &&
        (action[0] == ' ' || action[n - 1] == ' ' || action[0] == '\n' || action[n - 1] == '\n'))
        fuzz_fail("the action is not trimmed");
    for (size_t i = 0; i < n; i++)
        if (action[i] >= 'A' && action[i] <= 'Z') fuzz_fail("the action is not lower-cased");
    (void)env_parse_reason(p.reason);
    free(reply);
    free(action);
    return 0;
}
