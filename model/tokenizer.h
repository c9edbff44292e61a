/* tokenizer.h — Hugging Face tokenizer.json (byte-level BPE, Qwen2 family) in C.
 *
 * Contract:
 * - tok_load reads a tokenizer.json and gives ids identical to the `tokenizers` library
 *   for the structure Qwen2/Qwen2.5/Qwen3 use: normalizer NFC (or null, or a Sequence of
 *   NFC), pre-tokenizer Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)] or a
 *   lone ByteLevel (GPT-2 regex), model BPE (merges as "a b" strings or [a, b] pairs,
 *   ignore_merges), ByteLevel decoder, added tokens (special or not; lstrip, rstrip,
 *   single_word, normalized) matched before the split. Anything else is refused with an
 *   error that names the field, its value and what seed reads.
 * - A loaded tok is immutable: any number of threads may encode and decode with one tok
 *   at once, each with its own tok_ws (workspace: regex match data, scratch buffers and a
 *   bounded per-word cache). The encode hot path allocates only when a workspace or
 *   output buffer must grow.
 * - Input text is bytes. Valid UTF-8 runs are encoded exactly as `tokenizers` encodes
 *   that str; each byte that is not part of a valid UTF-8 sequence becomes its own
 *   byte-level token (the runs on either side are encoded separately), so every input
 *   encodes and decode(encode(x)) == x for every byte string x.
 * - Decoding concatenates each token's bytes (the ByteLevel decoder's byte mapping; an
 *   added token gives its content). `tokenizers` then replaces invalid UTF-8 with U+FFFD
 *   and also maps added tokens through the byte alphabet, which garbles non-ASCII added
 *   tokens; seed returns raw bytes, identical whenever the bytes form valid UTF-8 and the
 *   added tokens are ASCII (as all of Qwen2's are).
 * - Fallible functions return 0 or a negative value and write one sentence into err. */
#ifndef SEED_TOKENIZER_H
#define SEED_TOKENIZER_H

#include <stddef.h>

#include "common/sbuf.h"

typedef struct tok tok;       /* a loaded tokenizer, read-only after tok_load */
typedef struct tok_ws tok_ws; /* one caller's encode workspace */

/* Growable outputs owned by the caller. Zero-initialise, reuse across calls, free with
 * tok_ids_free / seed_sbuf_free. Encode and decode APPEND (set n = 0 to start over).
 * Text comes out in a seed_sbuf (common/sbuf.h), seed's one string builder. */
typedef struct tok_ids {
    int *v;
    size_t n, cap;
} tok_ids;
void tok_ids_free(tok_ids *ids);
int tok_ids_push(tok_ids *ids, int id); /* 0, or -1 when out of memory */

int tok_load(tok **out, const char *tokenizer_json_path, char *err, size_t errlen);
/* Same from the JSON text itself (len bytes, need not be NUL-terminated). */
int tok_load_json(tok **out, const char *json, size_t len, char *err, size_t errlen);
void tok_free(tok *t);

/* Number of ids: 1 + the largest id of the vocabulary and added tokens (what
 * tokenizers' get_vocab_size(with_added_tokens=True) gives for a gap-free vocabulary).
 * A model's embedding table may be larger (Qwen pads to a multiple of 128). */
int tok_vocab_size(const tok *t);
/* Id of a token written as in tokenizer.json ("<|im_end|>", "Ġhello"), or -1. */
int tok_token_to_id(const tok *t, const char *token);
/* The token's text as in tokenizer.json, NUL-terminated; NULL for an id without token. */
const char *tok_id_to_token(const tok *t, int id);
/* The bytes a token decodes to (*len set); NULL for an id without token. */
const char *tok_id_to_bytes(const tok *t, int id, size_t *len);
/* 1 when id is an added token marked special (skipped by TOK_DECODE_SKIP_SPECIAL). */
int tok_is_special(const tok *t, int id);

int tok_ws_new(const tok *t, tok_ws **out, char *err, size_t errlen);
void tok_ws_free(tok_ws *ws);

enum {
    /* Treat special added tokens in the text as plain text (tokenizers'
     * encode_special_tokens = True): for untrusted text inside a prompt. Non-special
     * added tokens are still matched, as tokenizers does. */
    TOK_ENCODE_SPLIT_SPECIAL = 1,
};
/* Append the ids of text[0..len) to out. ws may be NULL (a temporary workspace is made,
 * which is slow: keep one per thread). */
int tok_encode(const tok *t, tok_ws *ws, const char *text, size_t len, int flags, tok_ids *out,
               char *err, size_t errlen);

enum { TOK_DECODE_SKIP_SPECIAL = 1 };
/* Append the bytes of ids to out. An id without a token is an error naming it. */
int tok_decode(const tok *t, const int *ids, size_t n, int flags, seed_sbuf *out, char *err,
               size_t errlen);

/* Streaming decode for printing tokens as they are generated: push ids one at a time;
 * out receives bytes as soon as they cannot be the start of a longer UTF-8 character,
 * and an incomplete multi-byte sequence at the end is held back (at most 3 bytes) until
 * it completes or proves invalid. tok_stream_flush emits what is held. The
 * concatenation of everything appended equals tok_decode of the same ids. */
typedef struct tok_stream {
    unsigned char held[4];
    int nheld;
    int flags; /* TOK_DECODE_* */
} tok_stream;
void tok_stream_init(tok_stream *s, int flags);
int tok_stream_push(const tok *t, tok_stream *s, int id, seed_sbuf *out, char *err, size_t errlen);
int tok_stream_flush(tok_stream *s, seed_sbuf *out, char *err, size_t errlen);

/* ---- ChatML (the Qwen2.5 chat template, without tools) ---- */
#define TOK_QWEN25_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
typedef struct tok_chat_msg {
    const char *role; /* "system", "user", "assistant" or "tool" */
    const char *content;
} tok_chat_msg;
/* Append the chat text to out, exactly as transformers' apply_chat_template(...,
 * tokenize=False) renders Qwen2.5's template: "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per
 * message, consecutive tool messages grouped into one user turn of <tool_response>
 * blocks, a system turn with default_system first when the first message is not a system
 * message (default_system NULL: TOK_QWEN25_SYSTEM; "": no system turn), and
 * "<|im_start|>assistant\n" when add_generation_prompt. An unknown role or a NULL field
 * is an error (the template would drop the message silently). */
int tok_chat_render(const tok_chat_msg *msgs, size_t n, const char *default_system,
                    int add_generation_prompt, seed_sbuf *out, char *err, size_t errlen);

#endif
