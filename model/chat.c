/* chat.c — ChatML rendering, identical to Qwen2.5's chat template without tools (see
 * tok_chat_render in tokenizer.h). The text is rendered, not tokenized: tok_encode
 * matches the <|im_start|> / <|im_end|> special tokens in it. */
#include "tokenizer.h"
#include "common/util.h"

#include <string.h>

static int turn(seed_sbuf *out, const char *role, const char *content) {
    return seed_sbuf_puts(out, "<|im_start|>") || seed_sbuf_puts(out, role) ||
           seed_sbuf_puts(out, "\n") || seed_sbuf_puts(out, content) ||
           seed_sbuf_puts(out, "<|im_end|>\n");
}

int tok_chat_render(const tok_chat_msg *msgs, size_t n, const char *default_system,
                    int add_generation_prompt, seed_sbuf *out, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++) {
        const char *r = msgs[i].role;
        if (!r || !msgs[i].content)
            return seed_errf(err, errlen, "chat message %zu has a NULL %s", i,
                             r ? "content" : "role");
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool"))
            return seed_errf(err, errlen,
                             "chat message %zu has role '%.40s'; expected system, user, "
                             "assistant or tool",
                             i, r);
    }
    if (n == 0) return seed_errf(err, errlen, "chat has no messages");
    size_t i0 = 0;
    int rc = 0;
    if (strcmp(msgs[0].role, "system") == 0) {
        rc = turn(out, "system", msgs[0].content);
        i0 = 1;
    } else {
        const char *sys = default_system ? default_system : TOK_QWEN25_SYSTEM;
        if (sys[0]) rc = turn(out, "system", sys);
    }
    for (size_t i = i0; i < n && rc == 0; i++) {
        const char *r = msgs[i].role;
        if (strcmp(r, "tool") != 0) {
            rc = turn(out, r, msgs[i].content);
            continue;
        }
        /* consecutive tool results share one user turn */
        int first = i == 0 || strcmp(msgs[i - 1].role, "tool") != 0;
        int last = i + 1 == n || strcmp(msgs[i + 1].role, "tool") != 0;
        rc = (first && seed_sbuf_puts(out, "<|im_start|>user")) ||
             seed_sbuf_puts(out, "\n<tool_response>\n") || seed_sbuf_puts(out, msgs[i].content) ||
             seed_sbuf_puts(out, "\n</tool_response>") ||
             (last && seed_sbuf_puts(out, "<|im_end|>\n"));
    }
    if (rc == 0 && add_generation_prompt) rc = seed_sbuf_puts(out, "<|im_start|>assistant\n");
    if (rc == 0 && !out->p) rc = seed_sbuf_append(out, "", 0);
    return rc ? seed_errf(err, errlen, "out of memory rendering a chat") : 0;
}
