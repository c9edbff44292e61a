/* household.c — the built-in "household" env: an ALFWorld-like text world (env.h).
 *
 * Contract: env_household_vtable. A level is a function of (config, seed, split); the
 * observation texts, command grammar and task phrasings are ALFWorld's (TextWorld
 * ALFRED, as verl-agent plays it): reward 10 and done/won when the goal holds, 0
 * otherwise; the episode ends after max_steps steps. A NULL action (the policy gave no
 * parsable action) costs a step and answers "Nothing happens.". Stepping after the end
 * is an error. Config keys: max_steps (default 50), families ("all" or a comma list of
 * ALFWorld task types or their short aliases pick, look, clean, heat, cool, pick_two),
 * skill_facts (what the hindsight oracle may name: "all", the default, reads the level's
 * privileged state, e.g. where an object the agent never saw was; "observed" names only
 * places the episode's observations showed, so its skill is one an analyzer reading the
 * trajectory could write).
 * Reset and step allocate nothing: texts live in buffers inside the env. The expert
 * (what stage 0 imitates) is the searching one: every command it gives follows from what
 * the agent's prompt shows (env_household_search_action). */
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/household_world.h"
#include "common/util.h"

typedef struct hh_env {
    env base;
    hh_tables tab;
    unsigned family_mask;
    int skill_observed; /* skill_facts: observed */
    int steps, done, won;
    hh_level lv;
    hh_event last_ev; /* what the last step's command meant (read by the trace) */
    char obs[HH_OBS_CAP];
    char adm_arena[HH_ADM_ARENA];
    const char *adm[HH_MAX_ADM];
    int n_adm;
} hh_env;

int env_household_config(const env_kv *kv, int n_kv, int *max_steps, unsigned *family_mask,
                         int *skill_observed, char *err, size_t errlen) {
    *max_steps = 50;
    *family_mask = (1u << HF_COUNT) - 1;
    *skill_observed = 0;
    for (int i = 0; i < n_kv; i++) {
        const char *k = kv[i].key, *v = kv[i].value ? kv[i].value : "";
        if (!k) return seed_errf(err, errlen, "household: config entry %d has no key", i);
        for (int j = 0; j < i; j++)
            if (kv[j].key && strcmp(kv[j].key, k) == 0)
                return seed_errf(err, errlen, "household: config key '%s' is given twice", k);
        if (strcmp(k, "max_steps") == 0) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*v == '\0' || *end != '\0' || x < 1 || x > 1000000)
                return seed_errf(err, errlen,
                                 "household: max_steps must be an integer in 1..1000000, got '%s'",
                                 v);
            *max_steps = (int)x;
        } else if (strcmp(k, "families") == 0) {
            if (strcmp(v, "all") == 0) {
                *family_mask = (1u << HF_COUNT) - 1;
                continue;
            }
            unsigned mask = 0;
            const char *p = v;
            while (1) {
                const char *q = strchr(p, ',');
                size_t len = q ? (size_t)(q - p) : strlen(p);
                while (len > 0 && *p == ' ') p++, len--;
                while (len > 0 && p[len - 1] == ' ') len--;
                char name[48];
                if (len == 0 || len >= sizeof name)
                    return seed_errf(
                        err, errlen,
                        "household: families has an empty or overlong entry in '%s' (expected all "
                        "or a comma list of task types)",
                        v);
                memcpy(name, p, len);
                name[len] = '\0';
                int f = env_household_family_parse(name);
                if (f < 0)
                    return seed_errf(
                        err, errlen,
                        "household: unknown task family '%s' in families (expected all, or "
                        "pick_and_place_simple, look_at_obj_in_light, "
                        "pick_clean_then_place_in_recep, pick_heat_then_place_in_recep, "
                        "pick_cool_then_place_in_recep, pick_two_obj_and_place, or the aliases "
                        "pick, look, clean, heat, cool, pick_two)",
                        name);
                mask |= 1u << f;
                if (!q) break;
                p = q + 1;
            }
            *family_mask = mask;
        } else if (strcmp(k, "skill_facts") == 0) {
            if (strcmp(v, "all") != 0 && strcmp(v, "observed") != 0)
                return seed_errf(err, errlen,
                                 "household: skill_facts must be all or observed, got '%s'", v);
            *skill_observed = strcmp(v, "observed") == 0;
        } else {
            return seed_errf(err, errlen,
                             "household: unknown config key '%s' (expected max_steps, families, "
                             "skill_facts)",
                             k);
        }
    }
    return 0;
}

static int hh_create(env **out, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    int max_steps, observed;
    unsigned mask;
    if (env_household_config(kv, n_kv, &max_steps, &mask, &observed, err, errlen)) return -1;
    hh_env *e = calloc(1, sizeof *e);
    if (!e) return seed_errf(err, errlen, "household: out of memory");
    e->base.vt = &env_household_vtable;
    e->base.max_steps = max_steps;
    e->family_mask = mask;
    e->skill_observed = observed;
    e->done = 1; /* no episode until reset */
    env_household_tables_init(&e->tab);
    *out = &e->base;
    return 0;
}

static void hh_destroy(env *base) {
    free(base);
}

static void fill(hh_env *e, env_obs *obs, float reward) {
    e->n_adm =
        env_household_admissible(&e->lv, e->adm_arena, sizeof e->adm_arena, e->adm, HH_MAX_ADM);
    obs->task = e->lv.task;
    obs->observation = e->obs;
    obs->n_admissible = e->n_adm;
    obs->admissible = e->adm;
    obs->reward = reward;
    obs->done = e->done;
    obs->won = e->won;
    obs->family = env_household_family_name(e->lv.family);
    obs->info = "";
}

static int hh_reset(env *base, uint64_t seed, env_split split, env_obs *obs, char *err,
                    size_t errlen) {
    hh_env *e = (hh_env *)base;
    if (split != ENV_SPLIT_TRAIN && split != ENV_SPLIT_SEEN && split != ENV_SPLIT_UNSEEN)
        return seed_errf(err, errlen, "household: unknown split %d", (int)split);
    if (env_household_generate(&e->tab, e->family_mask, seed, split, &e->lv, err, errlen))
        return -1;
    e->steps = e->done = e->won = 0;
    e->last_ev = (hh_event){.kind = HA_UNKNOWN, .obj = -1, .recep = -1, .valid = 0};
    env_household_intro(&e->lv, e->obs, sizeof e->obs);
    fill(e, obs, 0.0f);
    return 0;
}

static int hh_step(env *base, const char *action, env_obs *obs, char *err, size_t errlen) {
    hh_env *e = (hh_env *)base;
    if (e->done)
        return seed_errf(err, errlen, "household: step after the episode ended; call reset first");
    env_household_exec(&e->lv, action, e->obs, sizeof e->obs, &e->last_ev);
    e->steps++;
    float reward = 0.0f;
    if (env_household_won(&e->lv)) {
        e->won = e->done = 1;
        reward = 10.0f;
    } else if (e->steps >= e->base.max_steps) {
        e->done = 1;
    }
    fill(e, obs, reward);
    return 0;
}

static int hh_expert(env *base, char *buf, size_t buflen, char *err, size_t errlen) {
    hh_env *e = (hh_env *)base;
    if (e->done)
        return seed_errf(err, errlen, "household: no expert action, the episode has ended");
    if (env_household_search_action(&e->tab, &e->lv, buf, buflen))
        return seed_errf(err, errlen, "household: the expert found no plan for this state");
    return 0;
}

static int hh_expert_reason(env *base, const char *action, char *buf, size_t buflen, char *err,
                            size_t errlen) {
    hh_env *e = (hh_env *)base;
    if (env_household_search_reason(&e->tab, &e->lv, action, buf, buflen))
        return seed_errf(err, errlen, "household: the expert's reasoning does not fit %zu bytes",
                         buflen);
    return 0;
}

static int hh_expert_informed(env *base, char *buf, size_t buflen, char *err, size_t errlen) {
    hh_env *e = (hh_env *)base;
    if (env_household_informed_action(&e->tab, &e->lv, buf, buflen))
        return seed_errf(err, errlen,
                         "household: the informed expert found no plan for this state");
    return 0;
}

static int hh_expert_informed_reason(env *base, const char *action, char *buf, size_t buflen,
                                     char *err, size_t errlen) {
    hh_env *e = (hh_env *)base;
    if (env_household_informed_reason(&e->tab, &e->lv, action, buf, buflen))
        return seed_errf(err, errlen,
                         "household: the informed expert's reasoning does not fit %zu bytes",
                         buflen);
    return 0;
}

hh_level *env_household_level(env *base) {
    return &((hh_env *)base)->lv;
}

const hh_tables *env_household_tables(const env *base) {
    return &((const hh_env *)base)->tab;
}

int env_household_skill_observed(const env *base) {
    return ((const hh_env *)base)->skill_observed;
}

static void hh_trace_record(env *base, void *state) {
    const hh_env *e = (const hh_env *)base;
    hh_trace_rec *r = state;
    r->lv = e->lv;
    r->ev = e->last_ev;
}

const env_vtable env_household_vtable = {
    .name = "household",
    .instructions = "You are an expert agent operating in the ALFRED Embodied Environment.",
    .create = hh_create,
    .destroy = hh_destroy,
    .reset = hh_reset,
    .step = hh_step,
    .expert = hh_expert,
    .expert_reason = hh_expert_reason,
    .expert_informed = hh_expert_informed,
    .expert_informed_reason = hh_expert_informed_reason,
    .max_steps_default = 50,
    .prompt_style = &env_prompt_style_default,
    .trace_size = sizeof(hh_trace_rec),
    .trace_record = hh_trace_record,
    .oracle = env_household_oracle,
};
