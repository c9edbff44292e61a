/* tok_tool.c — command-line driver of the tokenizer for the Python reference tests.
 *
 *   tok_tool load TOKENIZER_JSON                 load; print the vocab size, or the error
 *   tok_tool encode TOKENIZER_JSON IN OUT [--split-special]
 *       IN holds records (u64 little-endian length + bytes) in pairs: a text and the bytes
 *       its ids must decode to (the text itself, or its NFC form). OUT gets one line of
 *       ids per text. For every text it also checks, and fails loudly otherwise, that
 *       decode(encode(x)) is the expected bytes and that streaming decode equals decode.
 *   tok_tool threads TOKENIZER_JSON IN N         encode IN from N threads at once on one
 *       tokenizer (one workspace each, 3 passes) and compare with a single-thread pass
 *   tok_tool decode TOKENIZER_JSON [--skip-special] ID...   print the decoded bytes
 *   tok_tool token TOKENIZER_JSON TEXT...        print "TEXT ID ID_TO_TOKEN(ID)" per TEXT
 *   tok_tool chat IN [--gen] [--system TEXT | --no-system]
 *       IN holds records role, content, role, content...; prints the rendered chat
 * Exit status: 0 ok, 1 an error (printed on stderr), 2 a failed check. */
#include "model/tokenizer.h"
#include "common/util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec {
    const char *p;
    size_t n;
} rec;

static int read_records(const char *path, char **buf, rec **out, size_t *n_out) {
    char err[SEED_ERRLEN];
    size_t len;
    if (seed_read_file(path, buf, &len, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    size_t cap = 16, n = 0, off = 0;
    rec *r = malloc(cap * sizeof *r);
    while (r && off < len) {
        uint64_t l = 0;
        if (len - off < 8) break;
        for (int i = 0; i < 8; i++) l |= (uint64_t)(unsigned char)(*buf)[off + i] << (8 * i);
        off += 8;
        if (l > len - off) break;
        if (n == cap) {
            rec *q = realloc(r, (cap *= 2) * sizeof *r);
            if (!q) break;
            r = q;
        }
        r[n].p = *buf + off;
        r[n].n = (size_t)l;
        n++;
        off += (size_t)l;
    }
    if (!r || off != len) {
        fprintf(stderr, "%s: malformed record file\n", path);
        free(r);
        return -1;
    }
    *out = r;
    *n_out = n;
    return 0;
}

static int load(const char *path, tok **t) {
    char err[SEED_ERRLEN];
    if (tok_load(t, path, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    return 0;
}

/* 1 when s[0..n) is valid UTF-8 (strict, as Python's decode) */
static int utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = u[i];
        int l = c < 0x80                ? 1
                : c >= 0xC2 && c < 0xE0 ? 2
                : c >= 0xE0 && c < 0xF0 ? 3
                : c >= 0xF0 && c < 0xF5 ? 4
                                        : 0;
        if (!l || i + (size_t)l > n) return 0;
        for (int k = 1; k < l; k++)
            if ((u[i + (size_t)k] & 0xC0) != 0x80) return 0;
        if ((c == 0xE0 && u[i + 1] < 0xA0) || (c == 0xED && u[i + 1] > 0x9F) ||
            (c == 0xF0 && u[i + 1] < 0x90) || (c == 0xF4 && u[i + 1] > 0x8F))
            return 0;
        i += (size_t)l;
    }
    return 1;
}

/* decode(encode(x)) == want and streaming == full decode, for one record's ids */
static int check_roundtrip(const tok *t, const rec *r, const rec *want, const tok_ids *ids,
                           size_t idx) {
    char err[SEED_ERRLEN];
    seed_sbuf full = {0}, st = {0};
    tok_stream s;
    int bad = 0;
    if (tok_decode(t, ids->v, ids->n, 0, &full, err, sizeof err)) {
        fprintf(stderr, "record %zu: decode: %s\n", idx, err);
        bad = 1;
    } else if (full.n != want->n || memcmp(full.p, want->p, want->n) != 0) {
        fprintf(stderr,
                "record %zu: decode(encode(x)) is not the expected text (%zu vs %zu bytes)\n", idx,
                full.n, want->n);
        bad = 1;
    }
    int valid = utf8_valid(r->p, r->n);
    tok_stream_init(&s, 0);
    for (size_t i = 0; i < ids->n && !bad; i++) {
        if (tok_stream_push(t, &s, ids->v[i], &st, err, sizeof err)) {
            fprintf(stderr, "record %zu: stream: %s\n", idx, err);
            bad = 1;
        }
        /* for valid UTF-8 text, what has been emitted so far is always whole characters */
        if (!bad && valid && !utf8_valid(st.p, st.n)) {
            fprintf(stderr, "record %zu: stream emitted a partial character after token %zu\n", idx,
                    i);
            bad = 1;
        }
    }
    if (!bad && tok_stream_flush(&s, &st, err, sizeof err)) bad = 1;
    if (!bad && (st.n != full.n || memcmp(st.p, full.p, full.n) != 0)) {
        fprintf(stderr, "record %zu: streaming decode != decode\n", idx);
        bad = 1;
    }
    seed_sbuf_free(&full);
    seed_sbuf_free(&st);
    return bad;
}

static int cmd_encode(int argc, char **argv) {
    if (argc < 5) return 1;
    int flags = argc > 5 && strcmp(argv[5], "--split-special") == 0 ? TOK_ENCODE_SPLIT_SPECIAL : 0;
    tok *t;
    char *buf = NULL, err[SEED_ERRLEN];
    rec *r = NULL;
    size_t n;
    if (load(argv[2], &t)) return 1;
    if (read_records(argv[3], &buf, &r, &n)) return 1;
    FILE *f = fopen(argv[4], "w");
    tok_ws *ws;
    if (!f || tok_ws_new(t, &ws, err, sizeof err)) {
        fprintf(stderr, "cannot open %s\n", argv[4]);
        return 1;
    }
    tok_ids ids = {0};
    int bad = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        ids.n = 0;
        if (tok_encode(t, ws, r[i].p, r[i].n, flags, &ids, err, sizeof err)) {
            fprintf(stderr, "record %zu: encode: %s\n", i / 2, err);
            return 1;
        }
        for (size_t j = 0; j < ids.n; j++) fprintf(f, j ? " %d" : "%d", ids.v[j]);
        fputc('\n', f);
        bad |= check_roundtrip(t, &r[i], &r[i + 1], &ids, i / 2);
    }
    fclose(f);
    tok_ids_free(&ids);
    tok_ws_free(ws);
    tok_free(t);
    free(r);
    free(buf);
    return bad ? 2 : 0;
}

typedef struct job {
    const tok *t;
    const rec *r;
    size_t n;
    tok_ids *want;
    int bad;
} job;

static void *thread_main(void *arg) {
    job *j = arg;
    char err[SEED_ERRLEN];
    tok_ws *ws;
    if (tok_ws_new(j->t, &ws, err, sizeof err)) {
        j->bad = 1;
        return NULL;
    }
    tok_ids ids = {0};
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < j->n; i++) {
            ids.n = 0;
            if (tok_encode(j->t, ws, j->r[i].p, j->r[i].n, 0, &ids, err, sizeof err) ||
                ids.n != j->want[i].n ||
                (ids.n && memcmp(ids.v, j->want[i].v, ids.n * sizeof(int)) != 0))
                j->bad = 1;
        }
    tok_ids_free(&ids);
    tok_ws_free(ws);
    return NULL;
}

static int cmd_threads(int argc, char **argv) {
    if (argc < 5) return 1;
    int nt = atoi(argv[4]);
    tok *t;
    char *buf = NULL, err[SEED_ERRLEN];
    rec *r = NULL;
    size_t n;
    if (nt < 1 || nt > 64 || load(argv[2], &t) || read_records(argv[3], &buf, &r, &n)) return 1;
    tok_ids *want = calloc(n, sizeof *want);
    for (size_t i = 0; i < n; i++)
        if (tok_encode(t, NULL, r[i].p, r[i].n, 0, &want[i], err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    pthread_t th[64];
    job jobs[64];
    for (int k = 0; k < nt; k++) {
        jobs[k] = (job){t, r, n, want, 0};
        pthread_create(&th[k], NULL, thread_main, &jobs[k]);
    }
    int bad = 0;
    for (int k = 0; k < nt; k++) {
        pthread_join(th[k], NULL);
        bad |= jobs[k].bad;
    }
    for (size_t i = 0; i < n; i++) tok_ids_free(&want[i]);
    free(want);
    free(r);
    free(buf);
    tok_free(t);
    printf("%d threads x %zu records: %s\n", nt, n, bad ? "MISMATCH" : "identical");
    return bad ? 2 : 0;
}

static int cmd_decode(int argc, char **argv) {
    tok *t;
    char err[SEED_ERRLEN];
    int flags = 0, first = 3;
    if (argc > 3 && strcmp(argv[3], "--skip-special") == 0) {
        flags = TOK_DECODE_SKIP_SPECIAL;
        first = 4;
    }
    if (load(argv[2], &t)) return 1;
    tok_ids ids = {0};
    for (int i = first; i < argc; i++) tok_ids_push(&ids, atoi(argv[i]));
    seed_sbuf out = {0};
    int rc = tok_decode(t, ids.v, ids.n, flags, &out, err, sizeof err);
    if (rc)
        fprintf(stderr, "error: %s\n", err);
    else
        fwrite(out.p, 1, out.n, stdout);
    seed_sbuf_free(&out);
    tok_ids_free(&ids);
    tok_free(t);
    return rc ? 1 : 0;
}

static int cmd_token(int argc, char **argv) {
    tok *t;
    if (load(argv[2], &t)) return 1;
    for (int i = 3; i < argc; i++) {
        int id = tok_token_to_id(t, argv[i]);
        const char *back = tok_id_to_token(t, id);
        printf("%s %d %s %d\n", argv[i], id, back ? back : "(null)", tok_is_special(t, id));
    }
    printf("vocab_size %d\n", tok_vocab_size(t));
    tok_free(t);
    return 0;
}

static int cmd_chat(int argc, char **argv) {
    char *buf = NULL, err[SEED_ERRLEN];
    rec *r = NULL;
    size_t n;
    int gen = 0;
    const char *sys = NULL;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--gen") == 0) gen = 1;
        if (strcmp(argv[i], "--no-system") == 0) sys = "";
        if (strcmp(argv[i], "--system") == 0 && i + 1 < argc) sys = argv[++i];
    }
    if (read_records(argv[2], &buf, &r, &n)) return 1;
    /* records are not NUL-terminated: copy them */
    tok_chat_msg *m = calloc(n / 2 + 1, sizeof *m);
    char **copies = calloc(n + 1, sizeof *copies);
    for (size_t i = 0; i < n; i++) {
        copies[i] = malloc(r[i].n + 1);
        memcpy(copies[i], r[i].p, r[i].n);
        copies[i][r[i].n] = 0;
    }
    for (size_t i = 0; i + 1 < n; i += 2) m[i / 2] = (tok_chat_msg){copies[i], copies[i + 1]};
    seed_sbuf out = {0};
    int rc = tok_chat_render(m, n / 2, sys, gen, &out, err, sizeof err);
    if (rc)
        fprintf(stderr, "error: %s\n", err);
    else
        fwrite(out.p, 1, out.n, stdout);
    for (size_t i = 0; i < n; i++) free(copies[i]);
    free(copies);
    free(m);
    free(r);
    free(buf);
    seed_sbuf_free(&out);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tok_tool load|encode|threads|decode|token|chat ...\n");
        return 1;
    }
    const char *c = argv[1];
    if (strcmp(c, "load") == 0) {
        tok *t;
        if (load(argv[2], &t)) return 1;
        printf("vocab_size %d\n", tok_vocab_size(t));
        tok_free(t);
        return 0;
    }
    if (strcmp(c, "encode") == 0) return cmd_encode(argc, argv);
    if (strcmp(c, "threads") == 0) return cmd_threads(argc, argv);
    if (strcmp(c, "decode") == 0) return cmd_decode(argc, argv);
    if (strcmp(c, "token") == 0) return cmd_token(argc, argv);
    if (strcmp(c, "chat") == 0) return cmd_chat(argc, argv);
    fprintf(stderr, "unknown command %s\n", c);
    return 1;
}
