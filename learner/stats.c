/* stats.c — see stats.h. */
#include "learner/stats.h"

#include "proto/seed.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int learner_stats_init(learner_stats *s, int window) {
    memset(s, 0, sizeof *s);
    s->window = window > 0 ? window : 100;
    return 0;
}

void learner_stats_free(learner_stats *s) {
    for (int i = 0; i < s->n_rolls; i++) {
        free(s->rolls[i].ret);
        free(s->rolls[i].won);
    }
    s->n_rolls = 0;
}

static learner_roll *roll_get(learner_stats *s, const char *key) {
    for (int i = 0; i < s->n_rolls; i++)
        if (!strcmp(s->rolls[i].key, key)) return &s->rolls[i];
    if (s->n_rolls == LEARNER_MAX_KEYS) return NULL;
    learner_roll *r = &s->rolls[s->n_rolls];
    memset(r, 0, sizeof *r);
    snprintf(r->key, sizeof r->key, "%s", key);
    r->cap = s->window;
    r->ret = calloc((size_t)r->cap, sizeof(float));
    r->won = calloc((size_t)r->cap, 1);
    if (!r->ret || !r->won) {
        free(r->ret);
        free(r->won);
        return NULL;
    }
    s->n_rolls++;
    return r;
}

static void roll_add(learner_roll *r, float ret, int won) {
    if (!r) return;
    r->ret[r->head] = ret;
    r->won[r->head] = (unsigned char)(won != 0);
    r->head = (r->head + 1) % r->cap;
    if (r->n < r->cap) r->n++;
    r->total++;
}

void learner_stats_episode(learner_stats *s, const char *env, const char *family, float ret,
                           int won) {
    roll_add(roll_get(s, env), ret, won);
    if (family && family[0] && strcmp(family, env)) {
        char key[96];
        snprintf(key, sizeof key, "%s/%s", env, family);
        roll_add(roll_get(s, key), ret, won);
    }
}

void learner_stats_snapshot(learner_stats *s, double now) {
    s->snap_t[s->snap_head] = now;
    memcpy(s->snap_c[s->snap_head], s->counters, sizeof s->counters);
    s->snap_head = (s->snap_head + 1) % LEARNER_RATE_SLOTS;
    if (s->snap_n < LEARNER_RATE_SLOTS) s->snap_n++;
}

double learner_stats_rate(const learner_stats *s, int c, double seconds) {
    if (s->snap_n < 2) return 0.0;
    int newest = (s->snap_head - 1 + LEARNER_RATE_SLOTS) % LEARNER_RATE_SLOTS;
    int oldest = newest;
    for (int k = 1; k < s->snap_n; k++) {
        int i = (newest - k + LEARNER_RATE_SLOTS) % LEARNER_RATE_SLOTS;
        oldest = i;
        if (s->snap_t[newest] - s->snap_t[i] >= seconds) break;
    }
    double dt = s->snap_t[newest] - s->snap_t[oldest];
    if (dt <= 0) return 0.0;
    return (double)(s->snap_c[newest][c] - s->snap_c[oldest][c]) / dt;
}

learner_peer *learner_stats_find(learner_stats *s, const char *id) {
    for (int i = 0; i < s->n_peers; i++)
        if (!strcmp(s->peers[i].id, id)) return &s->peers[i];
    return NULL;
}

learner_peer *learner_stats_peer(learner_stats *s, const char *id, double now) {
    learner_peer *found = learner_stats_find(s, id);
    if (found) return found;
    if (s->n_peers == LEARNER_MAX_PEERS) return NULL;
    learner_peer *p = &s->peers[s->n_peers++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    p->first_seen = p->last_seen = now;
    p->alive = 1;
    s->peers_joined++;
    return p;
}

int learner_stats_expire(learner_stats *s, double now, double timeout_s) {
    int dropped = 0;
    for (int i = 0; i < s->n_peers;) {
        if (now - s->peers[i].last_seen > timeout_s) {
            learner_stats_lose_peer(s, "peer_timeout", &s->peers[i]);
            s->peers_lost++;
            s->peers[i] = s->peers[--s->n_peers];
            dropped++;
        } else {
            i++;
        }
    }
    return dropped;
}

void learner_reasons_add(learner_reasons *r, const char *text, uint64_t n) {
    char key[LEARNER_REASON_LEN + 1];
    size_t len = strcspn(text, ":");
    if (len > LEARNER_REASON_LEN) len = LEARNER_REASON_LEN;
    memcpy(key, text, len);
    key[len] = '\0';
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->reason[i], key)) {
            r->count[i] += n;
            return;
        }
    if (r->n == LEARNER_MAX_REASONS) {
        r->other += n;
        return;
    }
    memcpy(r->reason[r->n], key, len + 1);
    r->count[r->n++] = n;
}

void learner_reasons_merge(learner_reasons *dst, const learner_reasons *src) {
    for (int i = 0; i < src->n; i++) learner_reasons_add(dst, src->reason[i], src->count[i]);
    dst->other += src->other;
}

uint64_t learner_peer_in_flight(const learner_peer *p) {
    return p->in_flight > p->outstanding ? p->in_flight : p->outstanding;
}

uint64_t learner_stats_dealt(const learner_stats *s) {
    uint64_t n = 0;
    for (int i = 0; i < s->n_peers; i++) n += s->peers[i].outstanding;
    return n;
}

void learner_stats_lose(learner_stats *s, const char *reason, uint64_t n) {
    if (!n) return;
    s->episodes_lost += n;
    learner_reasons_add(&s->lost, reason, n);
}

void learner_stats_lose_peer(learner_stats *s, const char *reason, const learner_peer *p) {
    /* an analyzer: what the hub dealt it and did not get back (a group it holds that no
     * ledger of this learner has, dealt before a restart, is the orphan ledger's) */
    int analyzer = p->role == SEED__ROLE__ROLE_ANALYZER;
    uint64_t n = analyzer ? p->outstanding : learner_peer_in_flight(p);
    learner_stats_lose(s, reason, n);
    s->episodes_lost_received += p->outstanding; /* also a peer not yet known by its role */
}

int learner_stats_incarnation(learner_stats *s, learner_peer *p, uint64_t inc, double now) {
    if (!inc || p->incarnation == inc) return 0;
    if (!p->incarnation) {
        p->incarnation = inc;
        return 0;
    }
    learner_stats_lose_peer(s, "peer_restarted", p);
    s->peers_lost++;
    s->peers_joined++;
    learner_peer fresh;
    memset(&fresh, 0, sizeof fresh);
    memcpy(fresh.id, p->id, sizeof fresh.id);
    fresh.first_seen = fresh.last_seen = now;
    fresh.alive = 1;
    fresh.incarnation = inc;
    *p = fresh;
    return 1;
}

int learner_stats_log_due(learner_stats *s, uint64_t key, double now, double interval_s,
                          uint64_t *suppressed) {
    *suppressed = 0;
    learner_log_slot *oldest = &s->log[0];
    for (int i = 0; i < LEARNER_LOG_SLOTS; i++) {
        learner_log_slot *l = &s->log[i];
        if (l->key == key && l->t > 0) {
            if (now - l->t < interval_s) {
                l->suppressed++;
                return 0;
            }
            *suppressed = l->suppressed;
            l->suppressed = 0;
            l->t = now;
            return 1;
        }
        if (l->t < oldest->t) oldest = l;
    }
    /* a new peer takes the slot logged longest ago (its count goes with it) */
    oldest->key = key;
    oldest->t = now;
    oldest->suppressed = 0;
    return 1;
}
