/* dp_tool — the learner's data-parallel layer (learner/dp.h) on CPU ranks: real
 * processes (fork + exec of this tool) talking over real ZeroMQ sockets (ipc://).
 *
 *   dp_tool plan        bucket plan, readiness order, ZeRO-1 slices (in process)
 *   dp_tool bootstrap   hub handshake: success, a missing rank (timeout naming it), a rank
 *                       with another parameter count, a bad world/rank
 *   dp_tool parity      K steps of the same data on 1 rank and on 2 ranks: same weights
 *   dp_tool failure     a rank that crashes (rank 0 times out naming it) or fails (the
 *                       other stops at once): never a hang, and the survivor's checkpoint
 *                       holds the last completed step's weights
 *   dp_tool rank R W ENDPOINT STEPS OUTDIR [crash_at=K] [fail_at=K] [timeout=S]
 *                       one rank of a training run (what the drivers exec)
 *
 * The training step: rank 0 makes each step's sequences, keeps its share and deals the
 * others theirs (round robin), every rank runs forward/backward per sequence with the
 * loss scaled by the GLOBAL target count, the gradients are summed over the ranks
 * (learner_dp_sync) and every rank steps AdamW. With the sums made on rank 0 in rank
 * order, both ranks hold bit-identical weights; against one rank, the only difference
 * is the order of the fp32 gradient sums (~1e-7 relative). Adam divides each update by
 * sqrt(v), so for the few elements whose gradient nearly cancels that noise is
 * amplified: measured 1e-5 after K = 6 steps of lr 1e-2 (weights move by up to 0.06).
 * TOL_PARITY = 1e-4 absolute (0.2% of the largest movement) leaves a 10x margin and is
 * still 500 times below what one step of a wrong or missing gradient moves (~lr). */
#define _GNU_SOURCE
#include "learner/dp.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOL_PARITY 1e-4
#define GUARD_S 120.0 /* a child still running after this is a hang: the test fails */

static int failures;
static const char *self;

static void check(int ok, const char *what) {
    printf("%-70s %s\n", what, ok ? "ok" : "FAIL");
    if (!ok) failures++;
}

static model_config tiny_config(void) {
    model_config c = {.vocab_size = 97,
                      .hidden_size = 32,
                      .intermediate_size = 64,
                      .num_hidden_layers = 2,
                      .num_attention_heads = 2,
                      .num_key_value_heads = 1,
                      .head_dim = 16,
                      .max_position_embeddings = 128,
                      .rms_norm_eps = 1e-6f,
                      .rope_theta = 10000.0f,
                      .tie_word_embeddings = 1};
    return c;
}

static model *tiny_model(void) {
    model_config c = tiny_config();
    model_limits lim = {
        .max_batch_seqs = 1, .max_seq_len = 64, .max_train_tokens = 64, .threads = 1};
    char err[SEED_ERRLEN];
    model *m;
    if (model_create(&m, &c, &lim, "cpu", err, sizeof err)) {
        fprintf(stderr, "dp_tool: %s\n", err);
        exit(2);
    }
    model_init_random(m, 7, 0.1f);
    return m;
}

/* ---- plan ---- */

static int cmd_plan(void) {
    char err[SEED_ERRLEN];
    model *m = tiny_model();
    const int nt = model_num_tensors(m);
    const size_t np = model_num_params(m);
    const size_t sizes[] = {1, 4096, 20000, (size_t)1 << 30};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        learner_dp_plan p;
        char what[160];
        if (learner_dp_plan_make(&p, m, sizes[si], err, sizeof err)) {
            printf("plan: %s\n", err);
            return 1;
        }
        /* contiguous, whole tensors, layout order, covering everything, each bucket at
         * least the size unless last */
        int ok = p.b[0].offset == 0 && p.b[0].first == 0 && p.b[p.n_buckets - 1].end == nt;
        size_t covered = 0;
        for (int k = 0; k < p.n_buckets; k++) {
            const learner_dp_bucket *b = &p.b[k];
            ok &= b->offset == covered && b->offset == model_tensor(m, b->first)->offset;
            ok &= k == 0 || b->first == p.b[k - 1].end;
            ok &= k == p.n_buckets - 1 || b->numel * sizeof(float) >= sizes[si];
            size_t sum = 0;
            for (int i = b->first; i < b->end; i++) sum += model_tensor(m, i)->numel;
            ok &= sum == b->numel;
            /* a bucket closes as soon as it reaches the size */
            ok &= b->end - b->first == 1 ||
                  (b->numel - model_tensor(m, b->end - 1)->numel) * sizeof(float) < sizes[si];
            covered += b->numel;
        }
        ok &= covered == np;
        snprintf(what, sizeof what, "plan %zu bytes: %d buckets, contiguous, whole tensors",
                 sizes[si], p.n_buckets);
        check(ok, what);
        if (sizes[si] == 1) check(p.n_buckets == nt, "plan 1 byte: one bucket per tensor");
        if (sizes[si] == ((size_t)1 << 30)) check(p.n_buckets == 1, "plan 1 GiB: one bucket");

        /* readiness in the backward's order: head/norm, layers last to first, embedding */
        int *ready = calloc((size_t)p.n_buckets, sizeof(int)), seen = 0, order_ok = 1;
        int *when = calloc((size_t)p.n_buckets, sizeof(int));
        const int L = tiny_config().num_hidden_layers;
        int marks[16][2], nm = 0;
        marks[nm][0] = 1 + 12 * L;
        marks[nm++][1] = nt;
        for (int l = L - 1; l >= 0; l--) {
            marks[nm][0] = 1 + 12 * l;
            marks[nm++][1] = 13 + 12 * l;
        }
        marks[nm][0] = 0;
        marks[nm++][1] = 1;
        int prev = p.n_buckets;
        unsigned char *marked = calloc((size_t)nt, 1);
        for (int i = 0; i < nm; i++) {
            int n = learner_dp_plan_mark(&p, marks[i][0], marks[i][1], ready);
            for (int t = marks[i][0]; t < marks[i][1]; t++) marked[t] = 1;
            for (int j = 0; j < n; j++) {
                const learner_dp_bucket *b = &p.b[ready[j]];
                for (int t = b->first; t < b->end; t++) order_ok &= marked[t]; /* all final */
                order_ok &= ready[j] < prev; /* strictly descending over the backward */
                prev = ready[j];
                when[ready[j]]++;
                seen++;
            }
        }
        free(marked);
        for (int k = 0; k < p.n_buckets; k++) order_ok &= when[k] == 1;
        snprintf(what, sizeof what, "plan %zu bytes: each bucket ready once, last first",
                 sizes[si]);
        check(order_ok && seen == p.n_buckets, what);
        /* marking again is ignored; reset starts a new backward */
        check(learner_dp_plan_mark(&p, 0, nt, ready) == 0, "marking twice releases nothing");
        learner_dp_plan_reset(&p);
        check(learner_dp_plan_mark(&p, 0, 1, ready) == (p.b[0].end == 1 ? 1 : 0),
              "after reset, the embedding alone releases only a bucket holding only it");
        free(ready);
        free(when);
        learner_dp_plan_free(&p);
    }
    learner_dp_plan p;
    check(learner_dp_plan_make(&p, m, 0, err, sizeof err) != 0 && strstr(err, "bucket size 0"),
          "plan of 0 bytes is refused with a sentence");

    /* ZeRO-1 slices: cover [0, n) once, aligned, balanced */
    const size_t ns[] = {0, 1, 63, 64, 1000, 123457};
    const int worlds[] = {1, 2, 3, 8};
    int zok = 1;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
            size_t next = 0, maxlen = 0, minlen = (size_t)-1;
            for (int r = 0; r < worlds[w]; r++) {
                size_t lo, hi;
                learner_dp_shard(ns[a], worlds[w], r, 64, &lo, &hi);
                zok &= lo == next && hi >= lo && hi <= ns[a];
                zok &= lo % 64 == 0 || lo == ns[a];
                zok &= hi % 64 == 0 || hi == ns[a];
                next = hi;
                if (hi - lo > maxlen) maxlen = hi - lo;
                if (hi > lo && hi - lo < minlen) minlen = hi - lo;
            }
            zok &= next == ns[a];
            /* no slice exceeds ceil(n / world) rounded up to the alignment */
            size_t cap = ((ns[a] + worlds[w] - 1) / worlds[w] + 63) / 64 * 64;
            zok &= maxlen <= cap;
        }
    check(zok, "ZeRO-1 slices: contiguous, aligned, cover every parameter once, balanced");
    model_free(m);
    return failures ? 1 : 0;
}

/* ---- one rank of a training run ---- */

typedef struct step_data {
    int n_seqs, denom;
    int len[16];
    int tok[16][40];
} step_data;

/* The step's sequences: deterministic in (step), lengths 5..39. */
static void make_step(int step, step_data *d) {
    seed_rng r;
    seed_rng_init(&r, 1000 + (uint64_t)step);
    d->n_seqs = 7;
    d->denom = 0;
    for (int k = 0; k < d->n_seqs; k++) {
        d->len[k] = 5 + (int)seed_rng_below(&r, 35);
        for (int j = 0; j < d->len[k]; j++) d->tok[k][j] = (int)seed_rng_below(&r, 97);
        d->denom += d->len[k] - 1;
    }
}

static void write_params(const char *path, model *m) {
    FILE *f = fopen(path, "wb");
    if (!f ||
        fwrite(model_params(m), sizeof(float), model_num_params(m), f) != model_num_params(m) ||
        fclose(f) != 0) {
        fprintf(stderr, "dp_tool: cannot write %s\n", path);
        exit(2);
    }
}

static int cmd_rank(int argc, char **argv) {
    const int rank = atoi(argv[2]), world = atoi(argv[3]), steps = atoi(argv[5]);
    const char *endpoint = argv[4], *outdir = argv[6];
    int crash_at = -1, fail_at = -1;
    double timeout = 30;
    for (int i = 7; i < argc; i++) {
        sscanf(argv[i], "crash_at=%d", &crash_at);
        sscanf(argv[i], "fail_at=%d", &fail_at);
        sscanf(argv[i], "timeout=%lf", &timeout);
    }
    char err[SEED_ERRLEN], path[1024];
    model *m = tiny_model();
    learner_dp_config cfg = {.rank = rank,
                             .world = world,
                             .endpoint = endpoint,
                             .timeout_s = timeout,
                             .bucket_bytes = 4096,
                             .backend = "zmq",
                             .n_params = model_num_params(m)};
    learner_dp *dp = NULL;
    if (learner_dp_open(&dp, &cfg, err, sizeof err) ||
        learner_dp_attach(dp, m, 4096, err, sizeof err)) {
        fprintf(stderr, "dp_tool rank %d: %s\n", rank, err);
        learner_dp_close(dp, 1);
        return 3;
    }
    model_adamw opt = {.lr = 1e-2f,
                       .beta1 = 0.9f,
                       .beta2 = 0.999f,
                       .eps = 1e-8f,
                       .weight_decay = 0.01f,
                       .max_grad_norm = 1.0f};
    int completed = 0;
    for (int s = 0; s < steps; s++) {
        if (s == crash_at) _exit(9); /* a crash: no goodbye to anyone */
        if (s == fail_at) {
            fprintf(stderr, "dp_tool rank %d: failing at step %d on purpose\n", rank, s);
            goto failed_quiet;
        }
        /* rank 0 deals round robin: [denom, n, len..., tokens...] per rank */
        int mine[1 + 1 + 16 + 16 * 40], *msg;
        if (rank == 0) {
            step_data d;
            make_step(s, &d);
            static int parts[64][1 + 1 + 16 + 16 * 40];
            const void *pp[64];
            size_t lens[64];
            for (int r = 0; r < world; r++) {
                int *q = parts[r], n = 0, at = 2;
                q[0] = d.denom;
                for (int k = r; k < d.n_seqs; k += world) n++;
                q[1] = n;
                at = 2 + n;
                int i = 0;
                for (int k = r; k < d.n_seqs; k += world, i++) {
                    q[2 + i] = d.len[k];
                    memcpy(q + at, d.tok[k], sizeof(int) * (size_t)d.len[k]);
                    at += d.len[k];
                }
                pp[r] = q;
                lens[r] = sizeof(int) * (size_t)at;
            }
            if (world > 1 && learner_dp_deal(dp, pp, lens, err, sizeof err)) goto failed;
            memcpy(mine, parts[0], lens[0]);
            msg = mine;
        } else {
            void *buf;
            size_t len;
            if (learner_dp_take(dp, &buf, &len, err, sizeof err)) goto failed;
            memcpy(mine, buf, len < sizeof mine ? len : sizeof mine);
            free(buf);
            msg = mine;
        }
        const int denom = msg[0], n = msg[1];
        const int *lens = msg + 2, *tok = msg + 2 + n;
        model_zero_grad(m);
        for (int k = 0; k < n; k++) {
            int cu[2] = {0, lens[k]}, tg[40];
            float lp[40], dl[40];
            for (int j = 0; j < lens[k]; j++) {
                tg[j] = j + 1 < lens[k] ? tok[j + 1] : -1;
                dl[j] = tg[j] >= 0 ? -1.0f / (float)denom : 0.0f;
            }
            model_batch b = {
                .n_tokens = lens[k], .n_seqs = 1, .tokens = tok, .cu_seqlens = cu, .targets = tg};
            if (k == n - 1) learner_dp_arm(dp);
            if (model_train_forward(m, &b, lp, NULL, err, sizeof err) ||
                model_train_backward(m, &b, dl, NULL, err, sizeof err))
                goto failed;
            tok += lens[k];
        }
        if (n == 0) learner_dp_arm(dp);
        if (learner_dp_sync(dp, err, sizeof err)) goto failed;
        float gn;
        if (model_adamw_step(m, &opt, &gn, err, sizeof err)) goto failed;
        completed = s + 1;
    }
    snprintf(path, sizeof path, "%s/params-rank%d.bin", outdir, rank);
    write_params(path, m);
    learner_dp_close(dp, 0);
    model_free(m);
    return 0;
failed:
    fprintf(stderr, "dp_tool rank %d: step %d: %s\n", rank, completed, err);
failed_quiet:
    /* the checkpoint of the last completed step: the failed step never updated */
    snprintf(path, sizeof path, "%s/ckpt-rank%d-step%d.bin", outdir, rank, completed);
    write_params(path, m);
    learner_dp_close(dp, 1);
    model_free(m);
    return 3;
}

/* ---- drivers ---- */

typedef struct child {
    pid_t pid;
    int status;
    double t_end;
} child;

/* Start `dp_tool rank ...` with stderr to errpath. */
static pid_t spawn(const char *errpath, char *const extra[]) {
    char *args[16];
    int n = 0;
    args[n++] = (char *)self;
    args[n++] = "rank";
    for (int i = 0; extra[i]; i++) args[n++] = extra[i];
    args[n] = NULL;
    pid_t p = fork();
    if (p == 0) {
        if (!freopen(errpath, "w", stderr)) _exit(127);
        execv(self, args);
        _exit(127);
    }
    return p;
}

/* Wait for all, each bounded by GUARD_S from now (a child past it is killed and fails). */
static int wait_all(child *c, int n) {
    const double deadline = seed_now() + GUARD_S;
    int left = n, hung = 0;
    for (int i = 0; i < n; i++) c[i].status = -1;
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (c[i].status != -1) continue;
            int st;
            pid_t r = waitpid(c[i].pid, &st, WNOHANG);
            if (r == c[i].pid) {
                c[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                left--;
            }
        }
        if (left > 0 && seed_now() > deadline) {
            for (int i = 0; i < n; i++)
                if (c[i].status == -1) {
                    kill(c[i].pid, SIGKILL);
                    waitpid(c[i].pid, NULL, 0);
                    c[i].status = 999;
                    hung = 1;
                    left--;
                }
        }
        if (left > 0) usleep(20000);
    }
    return hung;
}

static float *read_params(const char *path, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    float *p = malloc(n * sizeof(float));
    size_t got = fread(p, sizeof(float), n, f);
    fclose(f);
    if (got != n) {
        free(p);
        return NULL;
    }
    return p;
}

static double max_diff(const float *a, const float *b, size_t n) {
    if (!a || !b) return INFINITY;
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static int file_has(const char *path, const char *needle) {
    char *buf;
    size_t len;
    if (seed_read_file(path, &buf, &len, NULL, 0)) return 0;
    int yes = strstr(buf, needle) != NULL;
    if (!yes) printf("   (%s says: %s)\n", path, buf);
    free(buf);
    return yes;
}

static char tmpdir[256];

static void run_world(int world, const char *steps, const char *sub, char *const *opts_by_rank[],
                      child *c) {
    char ep[512], out[512];
    snprintf(out, sizeof out, "%s/%s", tmpdir, sub);
    mkdir(out, 0777);
    snprintf(ep, sizeof ep, "ipc://%s/hub", out);
    char ws[8], rs[8][8];
    snprintf(ws, sizeof ws, "%d", world);
    for (int r = 0; r < world; r++) {
        snprintf(rs[r], sizeof rs[r], "%d", r);
        char *args[12] = {rs[r], ws, ep, (char *)steps, out, "timeout=3"};
        int n = 6;
        for (int i = 0; opts_by_rank && opts_by_rank[r] && opts_by_rank[r][i]; i++)
            args[n++] = opts_by_rank[r][i];
        args[n] = NULL;
        char errp[600];
        snprintf(errp, sizeof errp, "%s/err-rank%d.txt", out, r);
        c[r].pid = spawn(errp, args);
    }
}

static int cmd_parity(void) {
    model *m = tiny_model();
    const size_t np = model_num_params(m);
    child one[1], two[2];
    run_world(1, "6", "w1", NULL, one);
    run_world(2, "6", "w2", NULL, two);
    int hung = wait_all(one, 1) | wait_all(two, 2);
    check(!hung, "no rank hung");
    check(one[0].status == 0 && two[0].status == 0 && two[1].status == 0,
          "1-rank and 2-rank runs finished");
    char p[600];
    snprintf(p, sizeof p, "%s/w1/params-rank0.bin", tmpdir);
    float *a = read_params(p, np);
    snprintf(p, sizeof p, "%s/w2/params-rank0.bin", tmpdir);
    float *b = read_params(p, np);
    snprintf(p, sizeof p, "%s/w2/params-rank1.bin", tmpdir);
    float *c = read_params(p, np);
    double d01 = max_diff(b, c, np), d12 = max_diff(a, b, np),
           moved = max_diff(a, model_params(m), np);
    printf("   max |w(2 ranks) - w(1 rank)| = %.3g, ranks 0 vs 1 = %.3g, moved %.3g\n", d12, d01,
           moved);
    check(d01 == 0.0, "2 ranks: bit-identical weights on both ranks");
    check(d12 <= TOL_PARITY, "2 ranks vs 1 rank after 6 AdamW steps: |dw| <= 1e-4");
    check(moved > 1e-2, "training moved the weights (the comparison is not vacuous)");
    free(a);
    free(b);
    free(c);
    model_free(m);
    return failures ? 1 : 0;
}

static int cmd_failure(void) {
    model *m = tiny_model();
    const size_t np = model_num_params(m);
    char p[600];
    /* the reference: 1 rank, 2 steps */
    child ref[1];
    run_world(1, "2", "ref", NULL, ref);
    wait_all(ref, 1);
    snprintf(p, sizeof p, "%s/ref/params-rank0.bin", tmpdir);
    float *want = read_params(p, np);
    check(ref[0].status == 0 && want, "reference run (1 rank, 2 steps)");

    /* rank 1 crashes at step 2: rank 0 times out naming it, checkpoints step 2 */
    char *crash[] = {"crash_at=2", NULL};
    char *const *o1[2] = {NULL, crash};
    child c[2];
    run_world(2, "5", "crash", o1, c);
    int hung = wait_all(c, 2);
    check(!hung, "crash: no rank hung");
    check(c[1].status == 9 && c[0].status == 3, "crash: rank 1 died, rank 0 stopped with an error");
    snprintf(p, sizeof p, "%s/crash/err-rank0.txt", tmpdir);
    /* rank 0 notices at its deal (the connection is gone) or at its all-reduce (3 s
     * timeout), whichever comes first: either way the sentence names rank 1 */
    check(file_has(p, "rank 1"), "crash: rank 0's error names rank 1");
    snprintf(p, sizeof p, "%s/crash/ckpt-rank0-step2.bin", tmpdir);
    float *got = read_params(p, np);
    double d = max_diff(got, want, np);
    printf("   max |checkpoint - 1-rank run after 2 steps| = %.3g\n", d);
    check(d <= TOL_PARITY, "crash: rank 0's checkpoint holds the last completed step (2)");
    free(got);

    /* rank 0 fails at step 1 on purpose: rank 1 stops at once, told by rank 0 */
    char *fail[] = {"fail_at=1", NULL};
    char *const *o2[2] = {fail, NULL};
    run_world(2, "5", "fail", o2, c);
    hung = wait_all(c, 2);
    check(!hung, "failure: no rank hung");
    check(c[0].status == 3 && c[1].status == 3, "failure: both ranks stopped with an error");
    snprintf(p, sizeof p, "%s/fail/err-rank1.txt", tmpdir);
    check(file_has(p, "rank 0 stopped"), "failure: rank 1's error says rank 0 stopped");
    snprintf(p, sizeof p, "%s/fail/ckpt-rank1-step1.bin", tmpdir);
    check(access(p, F_OK) == 0, "failure: rank 1 checkpointed its last completed step (1)");
    free(want);
    model_free(m);
    return failures ? 1 : 0;
}

static int cmd_bootstrap(void) {
    char err[SEED_ERRLEN], ep[512];
    snprintf(ep, sizeof ep, "ipc://%s/boot", tmpdir);
    learner_dp *dp = NULL;
    /* rank 0 of 3 with only itself: the timeout names how many came */
    learner_dp_config cfg = {
        .rank = 0, .world = 3, .endpoint = ep, .timeout_s = 0.5, .n_params = 10};
    int rc = learner_dp_open(&dp, &cfg, err, sizeof err);
    printf("   %s\n", err);
    check(rc != 0 && strstr(err, "1 of 3 ranks said hello within 0.5 s"),
          "bootstrap: missing ranks time out with a sentence");
    learner_dp_close(dp, 1);
    dp = NULL;
    /* a rank with another parameter count is refused by rank 0 */
    pid_t kid = fork();
    if (kid == 0) {
        learner_dp *d2 = NULL;
        char e2[SEED_ERRLEN];
        learner_dp_config c2 = {
            .rank = 1, .world = 2, .endpoint = ep, .timeout_s = 2, .n_params = 11};
        int r2 = learner_dp_open(&d2, &c2, e2, sizeof e2);
        learner_dp_close(d2, r2 != 0);
        _exit(r2 ? 3 : 0);
    }
    cfg.world = 2;
    cfg.timeout_s = 10;
    rc = learner_dp_open(&dp, &cfg, err, sizeof err);
    printf("   %s\n", err);
    check(rc != 0 && strstr(err, "11 parameters") && strstr(err, "10 parameters"),
          "bootstrap: a parameter-count mismatch is refused naming both counts");
    learner_dp_close(dp, 1);
    dp = NULL;
    child k = {kid, 0, 0};
    check(!wait_all(&k, 1) && k.status == 3, "bootstrap: the mismatched rank stops too");
    /* bad arguments */
    learner_dp_config bad = {.rank = 2, .world = 2, .endpoint = ep, .timeout_s = 1};
    check(learner_dp_open(&dp, &bad, err, sizeof err) != 0 && strstr(err, "rank 2 of world 2"),
          "bootstrap: a rank outside the world is refused");
    learner_dp_close(dp, 0);
    dp = NULL;
    bad = (learner_dp_config){.rank = 0, .world = 1, .timeout_s = 1, .backend = "mpi"};
    check(learner_dp_open(&dp, &bad, err, sizeof err) != 0 && strstr(err, "\"mpi\""),
          "bootstrap: an unknown collective backend is refused");
    learner_dp_close(dp, 0);
    dp = NULL;
    bad = (learner_dp_config){.rank = 0, .world = 2, .timeout_s = 0};
    check(learner_dp_open(&dp, &bad, err, sizeof err) != 0 && strstr(err, "timeout"),
          "bootstrap: a timeout of 0 is refused");
    learner_dp_close(dp, 0);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    self = argv[0];
    if (argc >= 7 && strcmp(argv[1], "rank") == 0) return cmd_rank(argc, argv);
    if (argc != 2) {
        fprintf(stderr, "usage: dp_tool plan|bootstrap|parity|failure\n");
        return 2;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dp_tool.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    int rc = 2;
    if (strcmp(argv[1], "plan") == 0) rc = cmd_plan();
    if (strcmp(argv[1], "bootstrap") == 0) rc = cmd_bootstrap();
    if (strcmp(argv[1], "parity") == 0) rc = cmd_parity();
    if (strcmp(argv[1], "failure") == 0) rc = cmd_failure();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "dp_tool: could not remove %s\n", tmpdir);
    printf("%s\n", rc == 0 ? "PASS" : "FAIL");
    return rc;
}
