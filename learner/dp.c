/* dp.c — ranks, the rank-0 hub, the ZeroMQ collectives, gradient buckets and the
 * ZeRO-1 plan (dp.h). Rank 0 binds a ROUTER; rank k connects a DEALER whose routing id
 * is "rank<k>". Every frame is a dp_hdr followed by its payload. */
#define _GNU_SOURCE
#include "learner/dp_impl.h"
#include "proto/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* ---- gradient buckets ---- */

int learner_dp_plan_make(learner_dp_plan *p, const model *m, size_t bucket_bytes, char *err,
                         size_t errlen) {
    memset(p, 0, sizeof *p);
    if (bucket_bytes == 0)
        return seed_errf(err, errlen, "learner dp: bucket size 0 bytes (expected > 0)");
    const int nt = model_num_tensors(m);
    p->n_tensors = nt;
    p->b = calloc((size_t)nt, sizeof *p->b);
    p->bucket_of = calloc((size_t)nt, sizeof(int));
    p->pending = calloc((size_t)nt, sizeof(int));
    p->done = calloc((size_t)nt, 1);
    if (!p->b || !p->bucket_of || !p->pending || !p->done) {
        learner_dp_plan_free(p);
        return seed_errf(err, errlen, "learner dp: out of memory for the bucket plan");
    }
    const size_t cap = (bucket_bytes + sizeof(float) - 1) / sizeof(float);
    learner_dp_bucket *cur = NULL;
    for (int i = 0; i < nt; i++) {
        const model_tensor_info *t = model_tensor(m, i);
        if (!cur || cur->numel >= cap) {
            cur = &p->b[p->n_buckets++];
            cur->offset = t->offset;
            cur->first = i;
        }
        cur->numel += t->numel;
        cur->end = i + 1;
        p->bucket_of[i] = p->n_buckets - 1;
    }
    learner_dp_plan_reset(p);
    return 0;
}

void learner_dp_plan_free(learner_dp_plan *p) {
    free(p->b);
    free(p->bucket_of);
    free(p->pending);
    free(p->done);
    memset(p, 0, sizeof *p);
}

void learner_dp_plan_reset(learner_dp_plan *p) {
    memset(p->done, 0, (size_t)p->n_tensors);
    for (int k = 0; k < p->n_buckets; k++) p->pending[k] = p->b[k].end - p->b[k].first;
}

int learner_dp_plan_mark(learner_dp_plan *p, int first, int end, int *ready) {
    int n = 0;
    if (first < 0) first = 0;
    if (end > p->n_tensors) end = p->n_tensors;
    /* walk down so buckets finishing in one mark come out highest first */
    for (int i = end - 1; i >= first; i--) {
        if (p->done[i]) continue;
        p->done[i] = 1;
        const int k = p->bucket_of[i];
        if (--p->pending[k] == 0) ready[n++] = k;
    }
    return n;
}

/* ---- ZeRO-1 ---- */

void learner_dp_shard(size_t n, int world, int rank, size_t align, size_t *lo, size_t *hi) {
    if (align == 0) align = 1;
    if (world < 1) world = 1;
    size_t chunk = (n + (size_t)world - 1) / (size_t)world;
    chunk = (chunk + align - 1) / align * align;
    size_t a = chunk * (size_t)rank;
    *lo = a < n ? a : n;
    *hi = a + chunk < n ? a + chunk : n;
}

/* ---- frames ---- */

#define DP_MAGIC 0x53454450u /* "SEDP" */
enum { DP_HELLO = 1, DP_WELCOME, DP_REDUCE, DP_RESULT, DP_BCAST, DP_DEAL, DP_ABORT };

typedef struct dp_hdr {
    uint32_t magic, kind;
    uint64_t seq;
    int32_t rank;
    uint32_t world;
    uint64_t n; /* payload bytes (hello: n_params) */
} dp_hdr;

static const char *kind_name(uint32_t k) {
    static const char *names[] = {"?",      "hello", "welcome", "reduce",
                                  "result", "bcast", "deal",    "abort"};
    return k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* Send hdr + payload, to rank `to` when this is rank 0 (ROUTER). */
static int dp_send(learner_dp *dp, int to, uint32_t kind, uint64_t seq, uint64_t n_field,
                   const void *data, size_t len, char *err, size_t errlen) {
    dp_hdr h = {DP_MAGIC, kind, seq, dp->rank, (uint32_t)dp->world, n_field};
    if (dp->rank == 0) {
        char rid[32];
        int rl = snprintf(rid, sizeof rid, "rank%d", to);
        if (zmq_send(dp->sock, rid, (size_t)rl, ZMQ_SNDMORE) < 0)
            return seed_errf(err, errlen, "learner dp: cannot send %s to rank %d: %s",
                             kind_name(kind), to, zmq_strerror(zmq_errno()));
    }
    if (zmq_send(dp->sock, &h, sizeof h, len ? ZMQ_SNDMORE : 0) < 0 ||
        (len && zmq_send(dp->sock, data, len, 0) < 0))
        return seed_errf(err, errlen, "learner dp: cannot send %s to rank %d: %s", kind_name(kind),
                         to, zmq_strerror(zmq_errno()));
    return 0;
}

/* One received frame: sender rank, header, payload (owned by msg). */
typedef struct dp_frame {
    int from;
    dp_hdr h;
    zmq_msg_t msg;
    int has_msg;
} dp_frame;

static void frame_close(dp_frame *f) {
    if (f->has_msg) zmq_msg_close(&f->msg);
    f->has_msg = 0;
}

/* Wait until deadline for one frame. -2: timed out (err says what was awaited). An abort
 * frame from a peer becomes an error naming it. */
static int dp_recv(learner_dp *dp, dp_frame *f, double deadline, const char *awaited, char *err,
                   size_t errlen) {
    memset(f, 0, sizeof *f);
    for (;;) {
        double left = deadline - seed_now();
        if (left <= 0) return seed_errf(err, errlen, "%s", awaited), -2;
        zmq_pollitem_t it = {dp->sock, 0, ZMQ_POLLIN, 0};
        int rc = zmq_poll(&it, 1, (long)(left * 1000.0) + 1);
        if (rc < 0) {
            if (zmq_errno() == EINTR) continue;
            return seed_errf(err, errlen, "learner dp: poll failed: %s", zmq_strerror(zmq_errno()));
        }
        if (rc == 0) continue;
        int from = 0;
        if (dp->rank == 0) {
            char rid[32] = {0};
            int rl = zmq_recv(dp->sock, rid, sizeof rid - 1, 0);
            if (rl < 0 || sscanf(rid, "rank%d", &from) != 1 || from < 1 || from >= dp->world) {
                /* a stranger on the hub's port: drop its frames, keep waiting */
                int more = 1;
                size_t ml = sizeof more;
                while (zmq_getsockopt(dp->sock, ZMQ_RCVMORE, &more, &ml) == 0 && more) {
                    zmq_msg_t junk;
                    zmq_msg_init(&junk);
                    zmq_msg_recv(&junk, dp->sock, 0);
                    zmq_msg_close(&junk);
                }
                continue;
            }
        }
        int n = zmq_recv(dp->sock, &f->h, sizeof f->h, 0);
        int more = 0;
        size_t ml = sizeof more;
        zmq_getsockopt(dp->sock, ZMQ_RCVMORE, &more, &ml);
        if (more) {
            zmq_msg_init(&f->msg);
            f->has_msg = 1;
            if (zmq_msg_recv(&f->msg, dp->sock, 0) < 0) {
                frame_close(f);
                return seed_errf(err, errlen, "learner dp: receive failed: %s",
                                 zmq_strerror(zmq_errno()));
            }
            while (zmq_getsockopt(dp->sock, ZMQ_RCVMORE, &more, &ml) == 0 && more) {
                zmq_msg_t junk; /* frames past the payload are not ours: drop */
                zmq_msg_init(&junk);
                zmq_msg_recv(&junk, dp->sock, 0);
                zmq_msg_close(&junk);
            }
        }
        if (n != (int)sizeof f->h || f->h.magic != DP_MAGIC) {
            frame_close(f);
            return seed_errf(err, errlen,
                             "learner dp: a malformed frame from rank %d (%d header bytes)",
                             dp->rank == 0 ? from : 0, n);
        }
        f->from = dp->rank == 0 ? from : 0;
        if (f->h.kind == DP_ABORT) {
            const char *why = f->has_msg ? (const char *)zmq_msg_data(&f->msg) : "";
            int wl = f->has_msg ? (int)zmq_msg_size(&f->msg) : 0;
            seed_errf(err, errlen, "learner dp: rank %d stopped: %.*s", f->h.rank, wl, why);
            frame_close(f);
            return -1;
        }
        return 0;
    }
}

static size_t payload_len(const dp_frame *f) {
    return f->has_msg ? zmq_msg_size((zmq_msg_t *)&f->msg) : 0;
}

/* A frame must be of kind and sequence seq with len payload bytes. */
static int expect(learner_dp *dp, const dp_frame *f, uint32_t kind, uint64_t seq, size_t len,
                  const char *what, char *err, size_t errlen) {
    if (f->h.kind != kind || f->h.seq != seq || payload_len(f) != len)
        return seed_errf(err, errlen,
                         "learner dp: %s: rank %d sent %s #%llu of %zu bytes, expected %s #%llu "
                         "of %zu bytes (the ranks disagree on the step's collectives)",
                         what, f->h.rank, kind_name(f->h.kind), (unsigned long long)f->h.seq,
                         payload_len(f), kind_name(kind), (unsigned long long)seq, len);
    (void)dp;
    return 0;
}

static int fail(learner_dp *dp) {
    dp->failed = 1;
    return -1;
}

static int check_usable(learner_dp *dp, char *err, size_t errlen) {
    if (dp->failed)
        return seed_errf(err, errlen,
                         "learner dp: an earlier collective failed; the ranks cannot go on");
    return 0;
}

/* ---- the ZeroMQ collectives ---- */

/* Sum one piece (len floats) over the ranks, in rank order on rank 0. */
static int zmq_reduce_piece(learner_dp *dp, float *buf, size_t len, char *err, size_t errlen) {
    const uint64_t seq = ++dp->seq;
    const size_t bytes = len * sizeof(float);
    const double deadline = seed_now() + dp->timeout_s;
    char awaited[256];
    if (dp->rank != 0) {
        if (dp_send(dp, 0, DP_REDUCE, seq, bytes, buf, bytes, err, errlen)) return fail(dp);
        dp_frame f;
        snprintf(awaited, sizeof awaited,
                 "learner dp: all-reduce #%llu: rank 0 sent no result within %g s (it failed, "
                 "exited or stalled)",
                 (unsigned long long)seq, dp->timeout_s);
        int rc = dp_recv(dp, &f, deadline, awaited, err, errlen);
        if (rc) return fail(dp);
        if (expect(dp, &f, DP_RESULT, seq, bytes, "all-reduce", err, errlen)) {
            frame_close(&f);
            return fail(dp);
        }
        memcpy(buf, zmq_msg_data(&f.msg), bytes);
        frame_close(&f);
        return 0;
    }
    unsigned char got[1024] = {0};
    for (int have = 1; have < dp->world;) {
        dp_frame f;
        char missing[128] = "";
        size_t ml = 0;
        for (int r = 1; r < dp->world && ml + 8 < sizeof missing; r++)
            if (!got[r])
                ml +=
                    (size_t)snprintf(missing + ml, sizeof missing - ml, "%s%d", ml ? ", " : "", r);
        snprintf(awaited, sizeof awaited,
                 "learner dp: all-reduce #%llu: no contribution from rank %s within %g s (it "
                 "failed, exited or stalled)",
                 (unsigned long long)seq, missing, dp->timeout_s);
        if (dp_recv(dp, &f, deadline, awaited, err, errlen)) return fail(dp);
        if (expect(dp, &f, DP_REDUCE, seq, bytes, "all-reduce", err, errlen) || got[f.from]) {
            if (got[f.from])
                seed_errf(err, errlen, "learner dp: all-reduce #%llu: rank %d sent twice",
                          (unsigned long long)seq, f.from);
            frame_close(&f);
            return fail(dp);
        }
        memcpy(dp->scratch + (size_t)(f.from - 1) * (dp->piece / sizeof(float)),
               zmq_msg_data(&f.msg), bytes);
        frame_close(&f);
        got[f.from] = 1;
        have++;
    }
    /* rank order, whatever the arrival order: every run sums alike */
    for (int r = 1; r < dp->world; r++) {
        const float *src = dp->scratch + (size_t)(r - 1) * (dp->piece / sizeof(float));
        for (size_t i = 0; i < len; i++) buf[i] += src[i];
    }
    for (int r = 1; r < dp->world; r++)
        if (dp_send(dp, r, DP_RESULT, seq, bytes, buf, bytes, err, errlen)) return fail(dp);
    return 0;
}

static int zmq_allreduce(learner_dp *dp, float *buf, size_t n, char *err, size_t errlen) {
    const size_t per = dp->piece / sizeof(float);
    for (size_t o = 0; o < n; o += per)
        if (zmq_reduce_piece(dp, buf + o, n - o < per ? n - o : per, err, errlen)) return -1;
    return 0;
}

static int zmq_broadcast(learner_dp *dp, void *buf, size_t bytes, char *err, size_t errlen) {
    for (size_t o = 0; o < bytes; o += dp->piece) {
        const size_t len = bytes - o < dp->piece ? bytes - o : dp->piece;
        const uint64_t seq = ++dp->seq;
        if (dp->rank == 0) {
            for (int r = 1; r < dp->world; r++)
                if (dp_send(dp, r, DP_BCAST, seq, len, (char *)buf + o, len, err, errlen))
                    return fail(dp);
        } else {
            char awaited[200];
            snprintf(awaited, sizeof awaited,
                     "learner dp: broadcast #%llu: nothing from rank 0 within %g s",
                     (unsigned long long)seq, dp->timeout_s);
            dp_frame f;
            if (dp_recv(dp, &f, seed_now() + dp->timeout_s, awaited, err, errlen)) return fail(dp);
            if (expect(dp, &f, DP_BCAST, seq, len, "broadcast", err, errlen)) {
                frame_close(&f);
                return fail(dp);
            }
            memcpy((char *)buf + o, zmq_msg_data(&f.msg), len);
            frame_close(&f);
        }
    }
    return 0;
}

static const learner_coll_ops zmq_ops = {"zmq", NULL, NULL, zmq_allreduce, zmq_broadcast,
                                         NULL,  NULL, NULL, NULL};

/* ---- ranks ---- */

int learner_dp_open(learner_dp **out, const learner_dp_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    if (cfg->world < 1 || cfg->world > 1023 || cfg->rank < 0 || cfg->rank >= cfg->world)
        return seed_errf(err, errlen,
                         "learner dp: rank %d of world %d (expected 0 <= rank < world <= 1023)",
                         cfg->rank, cfg->world);
    if (!(cfg->timeout_s > 0))
        return seed_errf(err, errlen, "learner dp: timeout %g s (expected > 0)", cfg->timeout_s);
    const char *be = cfg->backend && *cfg->backend ? cfg->backend : "zmq";
    const learner_coll_ops *ops = NULL;
    if (strcmp(be, "zmq") == 0) ops = &zmq_ops;
#ifdef SEED_HAVE_NCCL
    if (strcmp(be, "nccl") == 0) ops = &learner_dp_nccl_ops;
#endif
    if (!ops)
        return seed_errf(err, errlen, "learner dp: collective backend \"%s\" (known: zmq%s)", be,
#ifdef SEED_HAVE_NCCL
                         ", nccl"
#else
                         "; nccl needs a build with CUDA and nccl.h"
#endif
        );
    learner_dp *dp = calloc(1, sizeof *dp);
    if (!dp) return seed_errf(err, errlen, "learner dp: out of memory");
    dp->rank = cfg->rank;
    dp->world = cfg->world;
    dp->timeout_s = cfg->timeout_s;
    dp->piece =
        (cfg->bucket_bytes ? cfg->bucket_bytes : (size_t)4 << 20) / sizeof(float) * sizeof(float);
    if (dp->piece == 0) dp->piece = sizeof(float);
    dp->ops = ops;
    *out = dp;
    if (dp->world == 1)
        return ops->init ? ops->init(dp, (unsigned char[LEARNER_DP_ID_BYTES]){0}, err, errlen) : 0;
    if (!cfg->endpoint || !*cfg->endpoint)
        return seed_errf(err, errlen, "learner dp: %d ranks need an endpoint", dp->world);
    dp->zctx = zmq_ctx_new();
    wire_sockopts o;
    wire_sockopts_init(&o);
    o.max_msg_bytes = (int64_t)dp->piece + 4096;
    o.sndhwm = o.rcvhwm = 0; /* pieces are flow-controlled by the protocol itself */
    dp->sock = wire_socket(dp->zctx, dp->rank == 0 ? ZMQ_ROUTER : ZMQ_DEALER, &o, err, errlen);
    if (!dp->sock) return -1;
    if (dp->rank == 0) {
        int one = 1;
        zmq_setsockopt(dp->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
        dp->scratch = malloc(dp->piece * (size_t)(dp->world - 1));
        if (!dp->scratch) return seed_errf(err, errlen, "learner dp: out of memory");
        if (wire_bind(dp->sock, cfg->endpoint, NULL, 0, err, errlen)) return -1;
    } else {
        char rid[32];
        int rl = snprintf(rid, sizeof rid, "rank%d", dp->rank);
        zmq_setsockopt(dp->sock, ZMQ_ROUTING_ID, rid, (size_t)rl);
        if (wire_connect(dp->sock, cfg->connect ? cfg->connect : cfg->endpoint, err, errlen))
            return -1;
    }
    const double deadline = seed_now() + dp->timeout_s;
    unsigned char id[LEARNER_DP_ID_BYTES] = {0};
    if (dp->rank == 0) {
        unsigned char got[1024] = {0};
        for (int have = 1; have < dp->world;) {
            dp_frame f;
            char awaited[200];
            snprintf(awaited, sizeof awaited,
                     "learner dp: bootstrap: %d of %d ranks said hello within %g s at %s", have,
                     dp->world, dp->timeout_s, cfg->endpoint);
            if (dp_recv(dp, &f, deadline, awaited, err, errlen)) return fail(dp);
            frame_close(&f);
            if (f.h.kind != DP_HELLO || f.h.rank != f.from || (int)f.h.world != dp->world ||
                f.h.n != cfg->n_params)
                return seed_errf(err, errlen,
                                 "learner dp: bootstrap: rank %d says it is rank %d of %u with "
                                 "%llu parameters; this job has %d ranks and %zu parameters",
                                 f.from, f.h.rank, f.h.world, (unsigned long long)f.h.n, dp->world,
                                 cfg->n_params),
                       fail(dp);
            if (got[f.from])
                return seed_errf(err, errlen, "learner dp: bootstrap: two processes are rank %d",
                                 f.from),
                       fail(dp);
            got[f.from] = 1;
            have++;
        }
        if (ops->make_id && ops->make_id(dp, id, err, errlen)) return fail(dp);
        for (int r = 1; r < dp->world; r++)
            if (dp_send(dp, r, DP_WELCOME, 0, sizeof id, id, sizeof id, err, errlen))
                return fail(dp);
    } else {
        if (dp_send(dp, 0, DP_HELLO, 0, cfg->n_params, NULL, 0, err, errlen)) return fail(dp);
        dp_frame f;
        char awaited[200];
        snprintf(awaited, sizeof awaited,
                 "learner dp: bootstrap: rank 0 did not answer within %g s at %s", dp->timeout_s,
                 cfg->connect ? cfg->connect : cfg->endpoint);
        if (dp_recv(dp, &f, deadline, awaited, err, errlen)) return fail(dp);
        if (expect(dp, &f, DP_WELCOME, 0, sizeof id, "bootstrap", err, errlen)) {
            frame_close(&f);
            return fail(dp);
        }
        memcpy(id, zmq_msg_data(&f.msg), sizeof id);
        frame_close(&f);
    }
    if (ops->init && ops->init(dp, id, err, errlen)) return fail(dp);
    return 0;
}

void learner_dp_close(learner_dp *dp, int aborting) {
    if (!dp) return;
    if (dp->ops && dp->ops->fini) dp->ops->fini(dp, aborting);
    if (dp->sock && (aborting || dp->failed)) {
        static const char why[] = "a rank failed; stopping";
        char e[SEED_ERRLEN];
        if (dp->rank == 0)
            for (int r = 1; r < dp->world; r++)
                dp_send(dp, r, DP_ABORT, dp->seq, 0, why, sizeof why - 1, e, sizeof e);
        else
            dp_send(dp, 0, DP_ABORT, dp->seq, 0, why, sizeof why - 1, e, sizeof e);
    }
    wire_close(dp->sock);
    if (dp->zctx) zmq_ctx_term(dp->zctx);
    learner_dp_plan_free(&dp->plan);
    free(dp->scratch);
    free(dp);
}

int learner_dp_rank(const learner_dp *dp) {
    return dp->rank;
}
int learner_dp_world(const learner_dp *dp) {
    return dp->world;
}
const char *learner_dp_backend(const learner_dp *dp) {
    return dp->ops->name;
}

int learner_dp_allreduce(learner_dp *dp, float *buf, size_t n, char *err, size_t errlen) {
    if (check_usable(dp, err, errlen)) return -1;
    if (dp->world == 1 && dp->ops == &zmq_ops) return 0;
    return dp->ops->allreduce(dp, buf, n, err, errlen);
}

int learner_dp_broadcast(learner_dp *dp, void *buf, size_t bytes, char *err, size_t errlen) {
    if (check_usable(dp, err, errlen)) return -1;
    if (dp->world == 1 && dp->ops == &zmq_ops) return 0;
    return dp->ops->broadcast(dp, buf, bytes, err, errlen);
}

int learner_dp_deal(learner_dp *dp, const void *const *parts, const size_t *lens, char *err,
                    size_t errlen) {
    if (check_usable(dp, err, errlen)) return -1;
    if (dp->rank != 0) return seed_errf(err, errlen, "learner dp: only rank 0 deals");
    const uint64_t seq = ++dp->seq;
    for (int r = 1; r < dp->world; r++) {
        if (lens[r] > dp->piece)
            return seed_errf(err, errlen,
                             "learner dp: rank %d's micro-batches are %zu bytes, more than the "
                             "%zu a frame may carry",
                             r, lens[r], dp->piece),
                   fail(dp);
        if (dp_send(dp, r, DP_DEAL, seq, lens[r], parts[r], lens[r], err, errlen)) return fail(dp);
    }
    return 0;
}

int learner_dp_take(learner_dp *dp, void **out, size_t *len, char *err, size_t errlen) {
    *out = NULL;
    *len = 0;
    if (check_usable(dp, err, errlen)) return -1;
    if (dp->rank == 0) return seed_errf(err, errlen, "learner dp: rank 0 deals, it takes nothing");
    const uint64_t seq = ++dp->seq;
    char awaited[200];
    snprintf(awaited, sizeof awaited,
             "learner dp: rank 0 dealt no micro-batches within %g s (deal #%llu)", dp->timeout_s,
             (unsigned long long)seq);
    dp_frame f;
    if (dp_recv(dp, &f, seed_now() + dp->timeout_s, awaited, err, errlen)) return fail(dp);
    if (f.h.kind != DP_DEAL || f.h.seq != seq) {
        expect(dp, &f, DP_DEAL, seq, payload_len(&f), "deal", err, errlen);
        frame_close(&f);
        return fail(dp);
    }
    *len = payload_len(&f);
    *out = malloc(*len ? *len : 1);
    if (!*out) {
        frame_close(&f);
        return seed_errf(err, errlen, "learner dp: out of memory for %zu dealt bytes", *len),
               fail(dp);
    }
    if (*len) memcpy(*out, zmq_msg_data(&f.msg), *len);
    frame_close(&f);
    return 0;
}

int learner_dp_reduce_grads(learner_dp *dp, const learner_dp_plan *plan, float *grads, char *err,
                            size_t errlen) {
    /* the backward's order (last bucket first), as the readiness hook would issue them */
    for (int k = plan->n_buckets - 1; k >= 0; k--)
        if (learner_dp_allreduce(dp, grads + plan->b[k].offset, plan->b[k].numel, err, errlen))
            return -1;
    return 0;
}

int learner_dp_attach(learner_dp *dp, model *m, size_t bucket_bytes, char *err, size_t errlen) {
    learner_dp_plan_free(&dp->plan);
    dp->m = m;
    if (learner_dp_plan_make(&dp->plan, m, bucket_bytes ? bucket_bytes : (size_t)4 << 20, err,
                             errlen))
        return -1;
    if (dp->ops->attach) return dp->ops->attach(dp, err, errlen);
    if (!model_grads(m))
        return seed_errf(err, errlen,
                         "learner dp: the model has no host gradients (created without "
                         "training, or on a device backend: use the nccl collectives)");
    return 0;
}

void learner_dp_arm(learner_dp *dp) {
    learner_dp_plan_reset(&dp->plan);
    dp->armed = 1;
    if (dp->ops->arm) dp->ops->arm(dp);
}

int learner_dp_sync(learner_dp *dp, char *err, size_t errlen) {
    if (!dp->m) return seed_errf(err, errlen, "learner dp: no model attached");
    dp->armed = 0;
    if (dp->ops->sync) return dp->ops->sync(dp, err, errlen);
    return learner_dp_reduce_grads(dp, &dp->plan, model_grads(dp->m), err, errlen);
}
