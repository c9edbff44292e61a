/* env.c — the env registry and the generic calls of env.h.
 *
 * Contract: the registry is one const table; an env is added by one line below (each
 * env exports `extern const env_vtable env_<name>_vtable;`). The generic calls dispatch
 * through the vtable and own what every env shares: the `max_steps` key, the step
 * counter and the end of an episode (see env.h). No mutable global state except the
 * names string that env_names() builds once (pthread_once) and never changes. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "envs/env.h"

#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

extern const env_vtable env_sokoban_vtable;
extern const env_vtable env_ezpoints_vtable;
extern const env_vtable env_household_vtable;
extern const env_vtable env_webshop_vtable;
extern const env_vtable env_searchqa_vtable;
extern const env_vtable env_remote_vtable;

/* The registry: add one line per env. */
// clang-format off
static const env_vtable *const env_table[] = {
    &env_sokoban_vtable,
    &env_ezpoints_vtable,
    &env_household_vtable,
    &env_webshop_vtable,
    &env_searchqa_vtable,
    &env_remote_vtable,
};
// clang-format on

enum { ENV_N = (int)(sizeof env_table / sizeof env_table[0]) };

int env_count(void) {
    return ENV_N;
}

const env_vtable *env_at(int i) {
    return i >= 0 && i < ENV_N ? env_table[i] : NULL;
}

const env_vtable *env_lookup(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < ENV_N; i++)
        if (strcmp(env_table[i]->name, name) == 0) return env_table[i];
    return NULL;
}

static pthread_once_t env_names_once = PTHREAD_ONCE_INIT;
static char env_names_buf[512];

static void env_names_build(void) {
    size_t off = 0;
    for (int i = 0; i < ENV_N && off < sizeof env_names_buf; i++)
        off += (size_t)snprintf(env_names_buf + off, sizeof env_names_buf - off, "%s%s",
                                i ? ", " : "", env_table[i]->name);
}

const char *env_names(void) {
    pthread_once(&env_names_once, env_names_build);
    return env_names_buf;
}

/* ---- config helpers ---- */

const char *env_kv_get(const env_kv *kv, int n_kv, const char *key) {
    for (int i = 0; i < n_kv; i++)
        if (kv[i].key && strcmp(kv[i].key, key) == 0) return kv[i].value;
    return NULL;
}

int env_kv_check(const char *env_name, const env_kv *kv, int n_kv, const char *const *known,
                 char *err, size_t errlen) {
    if (n_kv < 0 || (n_kv > 0 && !kv))
        return seed_errf(err, errlen, "%s: the config list is malformed", env_name);
    for (int i = 0; i < n_kv; i++) {
        const char *k = kv[i].key;
        if (!k || !kv[i].value)
            return seed_errf(err, errlen, "%s: config entry %d has no key or no value", env_name,
                             i);
        int ok = strcmp(k, "max_steps") == 0;
        for (int j = 0; !ok && known && known[j]; j++) ok = strcmp(k, known[j]) == 0;
        if (!ok) {
            char list[256];
            size_t off = 0;
            for (int j = 0; known && known[j] && off < sizeof list; j++)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s, ", known[j]);
            if (off < sizeof list) snprintf(list + off, sizeof list - off, "max_steps");
            return seed_errf(err, errlen, "%s: unknown config key '%s' (expected one of: %s)",
                             env_name, k, list);
        }
        for (int j = 0; j < i; j++)
            if (strcmp(kv[j].key, k) == 0)
                return seed_errf(err, errlen, "%s: config key '%s' is given twice", env_name, k);
    }
    return 0;
}

int env_kv_int(const char *env_name, const env_kv *kv, int n_kv, const char *key, int def, int lo,
               int hi, int *out, char *err, size_t errlen) {
    const char *v = env_kv_get(kv, n_kv, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (end && (*end == ' ' || *end == '\t')) end++;
    if (end == v || !end || *end || errno || x < lo || x > hi)
        return seed_errf(err, errlen,
                         "%s: config key '%s' has value '%s'; expected an integer from %d to %d",
                         env_name, key, v, lo, hi);
    *out = (int)x;
    return 0;
}

/* ---- splits and seeds ---- */

int env_split_parse(const char *s, env_split *out) {
    static const char *const names[] = {"train", "seen", "unseen"};
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (env_split)i;
            return 0;
        }
    return -1;
}

const char *env_split_name(env_split s) {
    switch (s) {
    case ENV_SPLIT_TRAIN:
        return "train";
    case ENV_SPLIT_SEEN:
        return "seen";
    case ENV_SPLIT_UNSEEN:
        return "unseen";
    }
    return "?";
}

uint32_t env_level_seed(uint64_t seed, env_split split) {
    if (split == ENV_SPLIT_TRAIN && seed <= UINT32_MAX) return (uint32_t)seed;
    uint64_t h = seed_hash_mix(seed_hash_mix(0x5eed5eedULL, (uint64_t)split), seed);
    if (split == ENV_SPLIT_TRAIN) return (uint32_t)h;
    return (uint32_t)(65536u + h % (4294967295ULL - 65536u));
}

/* ---- generic calls ---- */

int env_create(env **out, const char *name, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    if (!out) return seed_errf(err, errlen, "env_create: no output pointer");
    *out = NULL;
    const env_vtable *vt = env_lookup(name);
    if (!vt)
        return seed_errf(err, errlen, "unknown env '%s' (known: %s)", name ? name : "(null)",
                         env_names());
    int max_steps = 0;
    if (env_kv_int(vt->name, kv, n_kv, "max_steps", vt->max_steps_default, 1, 1000000, &max_steps,
                   err, errlen))
        return -1;
    env *e = NULL;
    if (vt->create(&e, kv, n_kv, err, errlen)) return -1;
    e->vt = vt;
    e->max_steps = max_steps;
    e->steps = 0;
    e->done = 1; /* no episode until the first reset */
    *out = e;
    return 0;
}

void env_destroy(env *e) {
    if (e) e->vt->destroy(e);
}

int env_reset(env *e, uint64_t seed, env_split split, env_obs *obs, char *err, size_t errlen) {
    if (!e || !obs) return seed_errf(err, errlen, "env_reset: no env or no observation");
    if (split != ENV_SPLIT_TRAIN && split != ENV_SPLIT_SEEN && split != ENV_SPLIT_UNSEEN)
        return seed_errf(err, errlen, "%s: split %d is not train, seen or unseen", e->vt->name,
                         (int)split);
    e->steps = 0;
    e->done = 1;
    if (e->vt->reset(e, seed, split, obs, err, errlen)) return -1;
    e->done = obs->done;
    return 0;
}

int env_step(env *e, const char *action, env_obs *obs, char *err, size_t errlen) {
    if (!e || !obs) return seed_errf(err, errlen, "env_step: no env or no observation");
    if (e->done)
        return seed_errf(err, errlen,
                         "%s: the episode is over (or was never reset); call "
                         "env_reset first",
                         e->vt->name);
    e->steps++;
    if (e->vt->step(e, action, obs, err, errlen)) return -1;
    if (!obs->done && e->steps >= e->max_steps) {
        obs->done = 1;
        obs->won = 0;
    }
    e->done = obs->done;
    return 0;
}

int env_expert(env *e, char *buf, size_t buflen, char *err, size_t errlen) {
    if (!e) return seed_errf(err, errlen, "env_expert: no env");
    if (!e->vt->expert) return seed_errf(err, errlen, "%s has no expert", e->vt->name);
    if (e->done) return seed_errf(err, errlen, "%s: the episode is over", e->vt->name);
    return e->vt->expert(e, buf, buflen, err, errlen);
}

int env_expert_reason(env *e, const char *action, char *buf, size_t buflen, char *err,
                      size_t errlen) {
    if (buflen) buf[0] = 0;
    if (!e) return seed_errf(err, errlen, "env_expert_reason: no env");
    if (!e->vt->expert_reason) return 1;
    if (e->done) return seed_errf(err, errlen, "%s: the episode is over", e->vt->name);
    return e->vt->expert_reason(e, action, buf, buflen, err, errlen) ? -1 : 0;
}

int env_expert_informed(env *e, char *buf, size_t buflen, char *err, size_t errlen) {
    if (!e || !e->vt->expert_informed) return env_expert(e, buf, buflen, err, errlen);
    if (e->done) return seed_errf(err, errlen, "%s: the episode is over", e->vt->name);
    return e->vt->expert_informed(e, buf, buflen, err, errlen);
}

int env_expert_informed_reason(env *e, const char *action, char *buf, size_t buflen, char *err,
                               size_t errlen) {
    if (!e || !e->vt->expert_informed_reason)
        return env_expert_reason(e, action, buf, buflen, err, errlen);
    if (buflen) buf[0] = 0;
    if (e->done) return seed_errf(err, errlen, "%s: the episode is over", e->vt->name);
    return e->vt->expert_informed_reason(e, action, buf, buflen, err, errlen) ? -1 : 0;
}

int env_action_valid(const env *e, const char *action) {
    if (!e || !action) return 0;
    return e->vt->action_valid ? e->vt->action_valid(e, action) : 1;
}

int env_hindsight(const char *name, const env_kv *kv, int n_kv, uint64_t seed, env_split split,
                  const char *const *actions, int n_actions, char *skill, size_t skill_len,
                  char *err, size_t errlen) {
    const env_vtable *vt = env_lookup(name);
    if (!vt)
        return seed_errf(err, errlen, "unknown env '%s' (known: %s)", name ? name : "(null)",
                         env_names());
    if (!vt->oracle) return seed_errf(err, errlen, "%s has no hindsight oracle", vt->name);
    if (n_actions < 0 || (n_actions > 0 && !actions))
        return seed_errf(err, errlen, "%s: hindsight needs the episode's actions", vt->name);
    if (!skill || skill_len == 0) return seed_errf(err, errlen, "%s: no skill buffer", vt->name);
    return env_hindsight_replay(vt, kv, n_kv, seed, split, actions, n_actions, skill, skill_len,
                                err, errlen);
}

/* ---- hindsight: one replay, then the env's oracle ---- */

void env_trace_free(env_trace *tr) {
    if (!tr) return;
    for (int t = 0; tr->step && t <= tr->n; t++) {
        free(tr->step[t].observation);
        free(tr->step[t].info);
        free(tr->step[t].state);
    }
    free(tr->step);
    env_destroy(tr->e);
    memset(tr, 0, sizeof *tr);
}

/* Copies what the last env call returned into step t. */
static int env_trace_keep(env_trace *tr, int t, const char *action, const env_obs *obs) {
    env_trace_step *st = &tr->step[t];
    const env_vtable *vt = tr->e->vt;
    st->action = action;
    st->observation = strdup(obs->observation ? obs->observation : "");
    st->info = strdup(obs->info ? obs->info : "");
    st->reward = obs->reward;
    st->done = obs->done;
    st->won = obs->won;
    if (vt->trace_size) {
        st->state = calloc(1, vt->trace_size);
        if (st->state) vt->trace_record(tr->e, st->state);
    }
    return !st->observation || !st->info || (vt->trace_size && !st->state) ? -1 : 0;
}

int env_replay(const env_vtable *vt, const env_kv *kv, int n_kv, uint64_t seed, env_split split,
               const char *const *actions, int n_actions, env_trace *tr, char *err, size_t errlen) {
    memset(tr, 0, sizeof *tr);
    if (!vt) return seed_errf(err, errlen, "env_replay: no env");
    if (n_actions < 0 || (n_actions > 0 && !actions))
        return seed_errf(err, errlen, "%s: hindsight got %d actions and no action array", vt->name,
                         n_actions);
    if (vt->trace_size && !vt->trace_record)
        return seed_errf(err, errlen, "%s: trace_size without trace_record", vt->name);
    env_obs obs;
    if (env_create(&tr->e, vt->name, kv, n_kv, err, errlen)) return -1;
    tr->seed = seed;
    tr->split = split;
    tr->step = calloc((size_t)n_actions + 1, sizeof *tr->step);
    if (!tr->step) {
        env_trace_free(tr);
        return seed_errf(err, errlen, "%s: out of memory replaying %d steps", vt->name, n_actions);
    }
    int rc = env_reset(tr->e, seed, split, &obs, err, errlen);
    if (!rc && env_trace_keep(tr, 0, NULL, &obs))
        rc = seed_errf(err, errlen, "%s: out of memory in the replay", vt->name);
    for (int t = 0; !rc && t < n_actions && !obs.done; t++) {
        rc = env_step(tr->e, actions[t], &obs, err, errlen);
        tr->n = t + 1;
        if (!rc && env_trace_keep(tr, t + 1, actions[t], &obs))
            rc = seed_errf(err, errlen, "%s: out of memory in the replay", vt->name);
    }
    if (rc) {
        env_trace_free(tr);
        return -1;
    }
    tr->won = tr->step[tr->n].won;
    return 0;
}

void env_skill_put(env_skill *sk, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    seed_sbuf_vappendf(&sk->text, fmt, ap);
    va_end(ap);
}

void env_skill_step(env_skill *sk, int step, const char *fmt, ...) {
    /* a line names a step of this episode: the analyzer splices it into that step */
    if (sk->n_lines >= ENV_SKILL_LINES || step < 1 || step > sk->n_steps) return;
    for (int i = 0; i < sk->n_lines; i++)
        if (sk->line_step[i] == step) return; /* one line per step */
    char *out = sk->line[sk->n_lines];
    int k = snprintf(out, ENV_SKILL_LINE_CAP, "step %d: ", step);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + k, ENV_SKILL_LINE_CAP - (size_t)k, fmt, ap);
    va_end(ap);
    sk->line_step[sk->n_lines++] = step;
}

int env_hindsight_replay(const env_vtable *vt, const env_kv *kv, int n_kv, uint64_t seed,
                         env_split split, const char *const *actions, int n_actions, char *skill,
                         size_t skill_len, char *err, size_t errlen) {
    if (!vt || !vt->oracle)
        return seed_errf(err, errlen, "%s has no hindsight oracle", vt ? vt->name : "(null)");
    if (!skill || skill_len == 0)
        return seed_errf(err, errlen, "%s: hindsight needs an output buffer", vt->name);
    env_trace tr;
    if (env_replay(vt, kv, n_kv, seed, split, actions, n_actions, &tr, err, errlen)) return -1;
    env_skill *sk = calloc(1, sizeof *sk);
    if (!sk) {
        env_trace_free(&tr);
        return seed_errf(err, errlen, "%s: out of memory in hindsight", vt->name);
    }
    seed_sbuf_init_fixed(&sk->text, skill, skill_len);
    sk->n_steps = tr.n;
    int rc = vt->oracle(&tr, sk, err, errlen);
    /* the step lines in step order, after the episode skill */
    int order[ENV_SKILL_LINES];
    for (int i = 0; i < sk->n_lines; i++) order[i] = i;
    for (int i = 1; i < sk->n_lines; i++)
        for (int j = i; j > 0 && sk->line_step[order[j - 1]] > sk->line_step[order[j]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    for (int i = 0; !rc && i < sk->n_lines; i++)
        seed_sbuf_appendf(&sk->text, "\n%s", sk->line[order[i]]);
    if (!rc && seed_sbuf_failed(&sk->text))
        rc = seed_errf(err, errlen,
                       "%s: the skill text did not fit in %zu bytes (a skill that does not fit "
                       "is refused, never cut)",
                       vt->name, skill_len);
    if (rc) skill[0] = 0;
    free(sk);
    env_trace_free(&tr);
    return rc;
}

int env_kv_mask(const char *env_name, const env_kv *kv, int n_kv, const char *key,
                int (*parse)(const char *name), unsigned all, const char *expected, unsigned *out,
                char *err, size_t errlen) {
    const char *v = env_kv_get(kv, n_kv, key);
    *out = all;
    if (!v || !strcmp(v, "all")) return 0;
    unsigned mask = 0;
    for (const char *p = v;;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        while (len && *p == ' ') p++, len--;
        while (len && p[len - 1] == ' ') len--;
        char name[32];
        int bit = -1;
        if (len && len < sizeof name) {
            memcpy(name, p, len);
            name[len] = 0;
            bit = parse(name);
        }
        if (bit < 0 || bit >= 32)
            return seed_errf(err, errlen,
                             "%s: config key '%s' has value '%s'; expected all or a comma list of "
                             "%s",
                             env_name, key, v, expected);
        mask |= 1u << bit;
        if (!q) break;
        p = q + 1;
    }
    *out = mask;
    return 0;
}
