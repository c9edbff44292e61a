/* household_oracle.c — the household env's rule-based hindsight analyzer.
 *
 * Contract: env_household_oracle reads the episode as the shared replay left it
 * (env_trace: the level after every step and what each command meant) and writes the
 * skill text through the builder:
 *   the episode skill. A success starts "Success:" and gives the workflow that worked;
 *           a failure starts "Failure:" and names the mistake and the rule that avoids it
 *           (object never found / seen but not taken / heat-cool-clean step missing or
 *           wrong / placed in the wrong receptacle / only one of two placed / lamp not
 *           used while holding the object), plus loops and wasted commands.
 *   then up to 5 lines "step k: imperative sentence", k the 1-based step number of the
 *           episode (action i is step i + 1).
 * Three parts: fact collection (hh_collect: what the trace shows), the success summary
 * (hh_success) and one diagnosis per failure family (hh_failures, first match wins).
 * With the env's skill_facts: observed, a skill names where an object is only when the
 * episode's observations showed it (F->observed, known()): a goal object the agent never
 * found is not located; the skill names instead the receptacles where such objects are
 * kept that the episode never went to. Every level's receptacles are in its first
 * observation, so that skill is one an analyzer reading the trajectory could write.
 * Deterministic: the same inputs give the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "envs/household_world.h"
#include "common/util.h"

/* What the trace shows about the goal object type X, collected once. */
typedef struct hh_facts {
    const env_trace *tr;
    const hh_tables *tab;
    const hh_level *init, *lv; /* the level at the reset and at the end */
    int n, won, max_steps, unseen, observed;
    int X, kind;                             /* goal object type; HA_HEAT/COOL/CLEAN or 0 */
    const char *Xn, *Rn;                     /* their names ("" for no receptacle) */
    char Xs[48], Xcap[48];                   /* "mugs", "Mugs" */
    int seen_step[HH_MAX_OBJ];               /* first step an object was in sight, 0 = never */
    int first_take, take_obj;                /* first step that took an X */
    int first_seen, seen_obj;                /* first step an X was in sight */
    int transform_step;                      /* first step that did the transform the task asks */
    int wrong_kind, wrong_step;              /* first other transform of an X */
    int raw_move_step, raw_move_recep;       /* moved into an R before the transform */
    int wrong_place_step, wrong_place_recep; /* moved into a receptacle not of type R */
    int closed_try_step, closed_try_recep;   /* tried to move into a closed R */
    int lamp_use_step, lamp_use_holding, drop_step;
    int n_invalid, n_null;
    int first_x, lamp, target_r, app; /* first X, the lamp, the first R, the appliance */
    int placed_total, other_x;        /* X done and in an R; an X elsewhere */
} hh_facts;

static const hh_trace_rec *rec_after(const hh_facts *F, int step) {
    return F->tr->step[step].state;
}
/* What the command of step i + 1 meant, and the level before it. */
static const hh_event *ev_of(const hh_facts *F, int i) {
    return &rec_after(F, i + 1)->ev;
}
static const hh_level *lv_before(const hh_facts *F, int i) {
    return &rec_after(F, i)->lv;
}

/* "mugs", "knives", "shelves", "potatoes", "boxes". */
static void plural(const char *name, char *out, size_t n) {
    size_t L = strlen(name);
    if (L >= 4 && strcmp(name + L - 4, "nife") == 0)
        snprintf(out, n, "%.*sves", (int)(L - 2), name);
    else if (L >= 1 && name[L - 1] == 'f')
        snprintf(out, n, "%.*sves", (int)(L - 1), name);
    else if (L >= 1 &&
             (name[L - 1] == 'o' || name[L - 1] == 'x' || name[L - 1] == 's' ||
              (L >= 2 && name[L - 1] == 'h' && (name[L - 2] == 's' || name[L - 2] == 'c'))))
        snprintf(out, n, "%ses", name);
    else
        snprintf(out, n, "%ss", name);
}

static const char *prep(int rtype) {
    return env_household_recep_prep(rtype);
}

static int count_type(const hh_level *lv, int rtype) {
    int n = 0;
    for (int r = 0; r < lv->n_recep; r++) n += lv->recep[r].type == rtype;
    return n;
}

static int first_recep(const hh_level *lv, int rtype) {
    for (int r = 0; r < lv->n_recep; r++)
        if (lv->recep[r].type == rtype) return r;
    return -1;
}

/* Is receptacle type r where objects of type X are kept in this level's split (the
 * tables' placement mask, what the generator places by), and not the task's goal? */
static int is_host(const hh_tables *tab, const hh_level *init, int X, int unseen, int r) {
    return (tab->hosts[unseen][X] >> r & 1u) && r != init->goal_recep;
}

/* Where objects of type X may sit in this level: "in cabinets, on countertops and in
 * the coffeemachine". Returns the number of host types. */
static int hosts_phrase(const hh_tables *tab, const hh_level *init, int X, int unseen,
                        env_skill *b) {
    int types[HR_COUNT], n = 0;
    for (int r = 0; r < HR_COUNT; r++)
        if (is_host(tab, init, X, unseen, r) && count_type(init, r) > 0) types[n++] = r;
    for (int i = 0; i < n; i++) {
        char pl[48];
        int c = count_type(init, types[i]);
        if (c > 1)
            plural(env_household_recep_name(types[i]), pl, sizeof pl);
        else
            snprintf(pl, sizeof pl, "the %s", env_household_recep_name(types[i]));
        env_skill_put(b, "%s%s %s", i == 0 ? "" : i == n - 1 ? " and " : ", ", prep(types[i]), pl);
    }
    return n;
}

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; s[i] && i < 256; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ? h : 1;
}

static uint32_t act_hash(const hh_facts *F, int i) {
    const char *a = F->tr->step[i + 1].action;
    return a ? hash_str(a) : 0;
}

/* Expert steps from the start: the length of the direct route. */
static int expert_len(const hh_level *init, int max_steps) {
    hh_level lv = *init;
    char cmd[128], obs[HH_OBS_CAP];
    hh_event ev;
    for (int s = 1; s <= max_steps; s++) {
        if (env_household_omniscient_action(&lv, cmd, sizeof cmd)) return -1;
        env_household_exec(&lv, cmd, obs, sizeof obs, &ev);
        if (env_household_won(&lv)) return s;
    }
    return -1;
}

static const char *verb_of(int kind) {
    return kind == HA_HEAT ? "heat" : kind == HA_COOL ? "cool" : "clean";
}
static const char *past_of(int kind) {
    return kind == HA_HEAT ? "heated" : kind == HA_COOL ? "cooled" : "cleaned";
}
static const char *adj_of(int kind) {
    return kind == HA_HEAT ? "hot" : kind == HA_COOL ? "cool" : "clean";
}
static int appliance_of(int kind) {
    return kind == HA_HEAT ? HR_MICROWAVE : kind == HA_COOL ? HR_FRIDGE : HR_SINKBASIN;
}

/* Loops: the longest stretch in which every action repeats the one 1 or 2 steps back. */
static void find_loop(const hh_facts *F, int *start, int *len, int *period) {
    *start = *len = *period = 0;
    for (int p = 1; p <= 2; p++) {
        int run = 0;
        for (int i = p; i < F->n; i++) {
            uint32_t h = act_hash(F, i);
            if (h && h == act_hash(F, i - p))
                run++;
            else
                run = 0;
            if (run + p > *len) {
                *len = run + p;
                *start = i - run - p + 2; /* 1-based step of the stretch's first action */
                *period = p;
            }
        }
    }
}

/* ---- fact collection ---- */

static void hh_collect(const env_trace *tr, hh_facts *F) {
    memset(F, 0, sizeof *F);
    F->tr = tr;
    F->tab = env_household_tables(tr->e);
    F->init = &rec_after(F, 0)->lv;
    F->lv = &rec_after(F, tr->n)->lv;
    F->n = tr->n;
    F->won = tr->won;
    F->max_steps = tr->e->max_steps;
    F->unseen = tr->split == ENV_SPLIT_UNSEEN;
    F->observed = env_household_skill_observed(tr->e);
    const hh_level *lv = F->lv;
    const int X = F->X = lv->goal_obj, kind = F->kind = env_household_needs_transform(lv);
    F->take_obj = F->seen_obj = F->raw_move_recep = F->wrong_place_recep = -1;
    F->closed_try_recep = -1;
    for (int i = 0; i < F->n; i++) {
        const hh_event *ev = ev_of(F, i);
        const hh_level *after = &rec_after(F, i + 1)->lv;
        int step = i + 1;
        /* what came into sight: a receptacle gone to, opened or examined, when open */
        if (ev->valid && (ev->kind == HA_GOTO || ev->kind == HA_OPEN || ev->kind == HA_EXAMINE) &&
            ev->recep >= 0 &&
            (!env_household_recep_openable(after->recep[ev->recep].type) ||
             after->recep[ev->recep].open))
            for (int o = 0; o < after->n_obj; o++)
                if (after->obj[o].loc == ev->recep && !after->obj[o].floor && !F->seen_step[o])
                    F->seen_step[o] = step;
        if (!F->tr->step[step].action)
            F->n_null++;
        else if (!ev->valid)
            F->n_invalid++;
        int o = ev->obj;
        int isX = o >= 0 && lv->obj[o].type == X;
        if (ev->valid && ev->kind == HA_TAKE && isX && !F->first_take)
            F->first_take = step, F->take_obj = o;
        if (ev->valid && (ev->kind == HA_HEAT || ev->kind == HA_COOL || ev->kind == HA_CLEAN) &&
            isX) {
            if (ev->kind == kind && !F->transform_step) F->transform_step = step;
            if (ev->kind != kind && kind && !F->wrong_step)
                F->wrong_kind = ev->kind, F->wrong_step = step;
        }
        if (ev->kind == HA_MOVE && isX && ev->recep >= 0) {
            int rt = lv->recep[ev->recep].type;
            if (ev->valid && lv->family != HF_LOOK && rt == lv->goal_recep && kind &&
                !F->transform_step && !F->raw_move_step)
                F->raw_move_step = step, F->raw_move_recep = ev->recep;
            if (ev->valid && lv->family != HF_LOOK && rt != lv->goal_recep && !F->wrong_place_step)
                F->wrong_place_step = step, F->wrong_place_recep = ev->recep;
            if (!ev->valid && rt == lv->goal_recep && lv_before(F, i)->at == ev->recep &&
                !F->closed_try_step)
                F->closed_try_step = step, F->closed_try_recep = ev->recep;
            if (ev->valid && lv->family == HF_LOOK && !F->drop_step) F->drop_step = step;
        }
        if (ev->valid && ev->kind == HA_USE && !F->lamp_use_step) {
            int held = lv_before(F, i)->held;
            F->lamp_use_step = step;
            F->lamp_use_holding = held >= 0 && lv->obj[held].type == X;
        }
    }
    for (int i = 0; i < lv->n_obj; i++)
        if (lv->obj[i].type == X && F->seen_step[i] &&
            (!F->first_seen || F->seen_step[i] < F->first_seen))
            F->first_seen = F->seen_step[i], F->seen_obj = i;
    F->Xn = env_household_obj_name(X);
    plural(F->Xn, F->Xs, sizeof F->Xs);
    snprintf(F->Xcap, sizeof F->Xcap, "%s", F->Xs);
    if (F->Xcap[0] >= 'a' && F->Xcap[0] <= 'z') F->Xcap[0] = (char)(F->Xcap[0] - 'a' + 'A');
    F->Rn = lv->goal_recep >= 0 ? env_household_recep_name(lv->goal_recep) : "";
    F->first_x = F->lamp = -1;
    for (int i = 0; i < F->init->n_obj && F->first_x < 0; i++)
        if (F->init->obj[i].type == X) F->first_x = i;
    for (int i = 0; i < lv->n_obj && F->lamp < 0; i++)
        if (lv->lamp_type >= 0 && lv->obj[i].type == lv->lamp_type) F->lamp = i;
    F->target_r = first_recep(lv, lv->goal_recep);
    F->app = kind ? first_recep(lv, appliance_of(kind)) : -1;
    F->other_x = -1;
    for (int r = 0; r < lv->n_recep; r++) {
        if (lv->recep[r].type != lv->goal_recep) continue;
        for (int i = 0; i < lv->n_obj; i++)
            F->placed_total +=
                lv->obj[i].loc == r && lv->obj[i].type == X && env_household_obj_done(lv, i);
    }
    for (int i = 0; i < lv->n_obj && F->other_x < 0; i++)
        if (lv->obj[i].type == X && lv->obj[i].loc >= 0 &&
            lv->recep[lv->obj[i].loc].type != lv->goal_recep)
            F->other_x = i;
}

/* ---- the success summary: the workflow that worked and its key steps ---- */

static void hh_success(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv, *init = F->init;
    const int X = F->X, kind = F->kind;
    env_skill_put(b, "Success: \"%s\" solved in %d steps. Workflow that worked: find a %s (",
                  lv->task, F->n, F->Xn);
    if (F->take_obj >= 0)
        env_skill_put(b, "the %s was %s the %s; ", init->obj[F->take_obj].name,
                      prep(init->recep[init->obj[F->take_obj].loc].type),
                      init->recep[init->obj[F->take_obj].loc].name);
    env_skill_put(b, "%s here are kept ", F->Xs);
    hosts_phrase(F->tab, init, X, F->unseen, b);
    env_skill_put(b, "), open its receptacle if it is closed, take it");
    if (kind) env_skill_put(b, ", go to the %s and %s it", lv->recep[F->app].name, verb_of(kind));
    if (lv->family == HF_LOOK && F->lamp >= 0)
        env_skill_put(b, ", then go to the %s where the %s is and use the %s while holding the %s.",
                      lv->recep[lv->obj[F->lamp].loc].name, lv->obj[F->lamp].name,
                      lv->obj[F->lamp].name, F->Xn);
    else if (lv->family == HF_TWO)
        env_skill_put(b, ", move it to a %s, then find a second %s and move it to the same %s.",
                      F->Rn, F->Xn, F->Rn);
    else
        env_skill_put(b, ", then go to a %s and move it there.", F->Rn);
    int best = expert_len(init, F->max_steps);
    if (best > 0 && F->n > best + 3)
        env_skill_put(b,
                      " It took %d steps where %d suffice: go first to the receptacles where %s "
                      "are kept.",
                      F->n, best, F->Xs);
    /* key steps of the winning route */
    for (int i = 0; i < F->n; i++) {
        const hh_event *ev = ev_of(F, i);
        if (!ev->valid || ev->obj < 0) continue;
        const hh_obj *ob = &lv->obj[ev->obj];
        int step = i + 1;
        if (ev->kind == HA_TAKE && ob->type == X)
            env_skill_step(b, step, "take the %s from the %s as soon as you see it.", ob->name,
                           lv->recep[ev->recep].name);
        else if (ev->kind == kind && kind && ob->type == X)
            env_skill_step(b, step, "%s the %s with the %s before placing it.", verb_of(kind),
                           ob->name, lv->recep[ev->recep].name);
        else if (ev->kind == HA_MOVE && ob->type == X &&
                 lv->recep[ev->recep].type == lv->goal_recep)
            env_skill_step(b, step, "move the %s to the %s.", ob->name, lv->recep[ev->recep].name);
        else if (ev->kind == HA_USE && lv->family == HF_LOOK)
            env_skill_step(b, step, "use the %s while holding the %s.", ob->name, F->Xn);
    }
}

/* ---- one diagnosis per failure family (after "Failure: ") ---- */

/* May the skill say where object o is? Always with skill_facts: all; with observed, only
 * when the episode had it in sight. */
static int known(const hh_facts *F, int o) {
    return !F->observed || (o >= 0 && F->seen_step[o] > 0);
}

/* Did the episode go to receptacle r (a valid "go to")? */
static int went_to(const hh_facts *F, int r) {
    for (int i = 0; i < F->n; i++)
        if (ev_of(F, i)->valid && ev_of(F, i)->kind == HA_GOTO && ev_of(F, i)->recep == r) return 1;
    return 0;
}

/* The receptacles of this level where X is kept that the episode never went to, in the
 * order of the first observation: up to `cap` of their indices. */
static int unchecked_hosts(const hh_facts *F, int *out, int cap) {
    int n = 0;
    for (int r = 0; r < F->init->n_recep && n < cap; r++)
        if (is_host(F->tab, F->init, F->X, F->unseen, F->init->recep[r].type) && !went_to(F, r))
            out[n++] = r;
    return n;
}

static int never_found_applies(const hh_facts *F) {
    return !F->first_take && !F->first_seen;
}

static void never_found(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv, *init = F->init;
    env_skill_put(b, "you never found a %s.", F->Xn);
    int nv = 0;
    for (int i = 0; i < F->n; i++) nv += ev_of(F, i)->valid && ev_of(F, i)->kind == HA_GOTO;
    if (nv > 0) {
        env_skill_put(b, " You searched ");
        int k = 0, shown = 0;
        for (int i = 0; i < F->n && shown < 4; i++) {
            const hh_event *ev = ev_of(F, i);
            if (!ev->valid || ev->kind != HA_GOTO) continue;
            int dup = 0;
            for (int j = 0; j < i; j++)
                dup |= ev_of(F, j)->valid && ev_of(F, j)->kind == HA_GOTO &&
                       ev_of(F, j)->recep == ev->recep;
            if (dup) continue;
            env_skill_put(b, "%s%s", k++ ? ", " : "the ", lv->recep[ev->recep].name);
            shown++;
        }
        /* "..., and more, but the mug 1 was ..." (all) or a sentence of its own (observed) */
        env_skill_put(b, "%s%s", nv > shown ? " and more" : "",
                      F->observed  ? "."
                      : nv > shown ? ","
                                   : "");
    } else {
        env_skill_put(b, " You never went to any receptacle%s", F->observed ? "." : ",");
    }
    /* where to look instead: where the first X was (all), or the first place where Xs are
     * kept that the episode never went to (observed) */
    const char *x_at = F->first_x >= 0 ? init->recep[init->obj[F->first_x].loc].name : "";
    int unchecked[4], n_un = 0;
    if (F->observed) {
        n_un = unchecked_hosts(F, unchecked, 4);
        x_at = n_un > 0 ? init->recep[unchecked[0]].name : "";
        env_skill_put(b, " %s in this house are kept ", F->Xcap);
    } else if (F->first_x >= 0) {
        env_skill_put(b, " but the %s was %s the %s. %s in this house are kept ",
                      init->obj[F->first_x].name, prep(init->recep[init->obj[F->first_x].loc].type),
                      x_at, F->Xcap);
    }
    hosts_phrase(F->tab, init, F->X, F->unseen, b);
    env_skill_put(b, "; check those first, and open closed receptacles to see inside.");
    for (int k = 0; k < n_un; k++)
        env_skill_put(b, "%s%s",
                      k == 0          ? " You never went to the "
                      : k == n_un - 1 ? " or the "
                                      : ", the ",
                      init->recep[unchecked[k]].name);
    if (n_un > 0) env_skill_put(b, ".");
    /* step lines: searches where X never is, closed places left unopened */
    for (int i = 0; i < F->n; i++) {
        const hh_event *ev = ev_of(F, i);
        if (!ev->valid || ev->kind != HA_GOTO) continue;
        int rt = lv->recep[ev->recep].type, step = i + 1;
        if (!F->tab->allowed[F->X][rt] && x_at[0])
            env_skill_step(b, step, "do not search the %s for a %s; go to the %s instead.",
                           lv->recep[ev->recep].name, F->Xn, x_at);
        else if (env_household_recep_openable(rt) &&
                 (i + 1 >= F->n || ev_of(F, i + 1)->kind != HA_OPEN || !ev_of(F, i + 1)->valid))
            env_skill_step(b, step + 1 <= F->n ? step + 1 : step,
                           "open the %s to see what is inside.", lv->recep[ev->recep].name);
    }
}

static int seen_not_taken_applies(const hh_facts *F) {
    return !F->first_take;
}

static void seen_not_taken(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv;
    const hh_obj *so = &lv->obj[F->seen_obj];
    int where = ev_of(F, F->first_seen - 1)->recep;
    env_skill_put(b,
                  "you saw the %s %s the %s at step %d but never took it. Take the %s as soon "
                  "as you see it.",
                  so->name, where >= 0 ? prep(lv->recep[where].type) : "in",
                  where >= 0 ? lv->recep[where].name : "room", F->first_seen, F->Xn);
    if (where >= 0)
        env_skill_step(b, F->first_seen + 1, "take the %s from the %s now.", so->name,
                       lv->recep[where].name);
}

static int lamp_unused_applies(const hh_facts *F) {
    return F->lv->family == HF_LOOK;
}

static void lamp_unused(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv;
    const char *Xn = F->Xn;
    const char *ln = F->lamp >= 0 ? lv->obj[F->lamp].name : "lamp";
    /* the lamp's receptacle; NULL where the episode never saw the lamp (observed) */
    const char *host = F->lamp < 0         ? "lamp"
                       : known(F, F->lamp) ? lv->recep[lv->obj[F->lamp].loc].name
                                           : NULL;
    if (!F->lamp_use_step && host)
        env_skill_put(b,
                      "you took the %s but never turned on the %s. Carry the %s to the %s, "
                      "where the %s is, and use the %s while holding it.",
                      Xn, ln, Xn, host, ln, ln);
    else if (!F->lamp_use_step)
        env_skill_put(b,
                      "you took the %s but never turned on the %s. Find the %s, carry the %s "
                      "to it and use the %s while holding the %s.",
                      Xn, ln, ln, Xn, ln, Xn);
    else if (!F->lamp_use_holding)
        env_skill_put(b,
                      "you turned on the %s at step %d without holding the %s, and never came "
                      "back with it. Take the %s first, then bring it to the %s while the %s is "
                      "on.",
                      ln, F->lamp_use_step, Xn, Xn, host ? host : ln, ln);
    else
        env_skill_put(b,
                      "you used the %s but were not holding the %s next to it at the end. Keep "
                      "the %s in hand at the %s while the %s is on.",
                      ln, Xn, Xn, host ? host : ln, ln);
    if (F->drop_step)
        env_skill_step(b, F->drop_step, "keep holding the %s; do not put it down.", Xn);
    if (host)
        env_skill_step(b, F->first_take, "after taking the %s, go to the %s and use the %s.", Xn,
                       host, ln);
    else
        env_skill_step(b, F->first_take, "after taking the %s, find the %s and use it.", Xn, ln);
}

/* The heat/cool/clean families share the line after the take. */
static void transform_line(const hh_facts *F, env_skill *b) {
    int step = F->first_take + 1 <= F->n ? F->first_take + 1 : F->first_take;
    env_skill_step(b, step, "after taking the %s, go to the %s and %s it.", F->Xn,
                   F->lv->recep[F->app].name, verb_of(F->kind));
}

static int wrong_transform_applies(const hh_facts *F) {
    return F->kind && !F->transform_step && F->wrong_step;
}

static void wrong_transform(const hh_facts *F, env_skill *b) {
    const char *Xn = F->Xn, *app = F->lv->recep[F->app].name;
    env_skill_put(b,
                  "you %s the %s at step %d, but the task asks for a %s %s: %s it with the %s "
                  "instead.",
                  past_of(F->wrong_kind), Xn, F->wrong_step, adj_of(F->kind), Xn, verb_of(F->kind),
                  app);
    env_skill_step(b, F->wrong_step, "%s the %s with the %s, not %s it.", verb_of(F->kind), Xn, app,
                   verb_of(F->wrong_kind));
    transform_line(F, b);
}

static int untransformed_move_applies(const hh_facts *F) {
    return F->kind && !F->transform_step && F->raw_move_step;
}

static void untransformed_move(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv;
    const char *Xn = F->Xn, *app = lv->recep[F->app].name;
    const char *to = lv->recep[F->raw_move_recep].name;
    env_skill_put(b,
                  "you moved the %s to the %s at step %d without %s it. A %s must be %s with "
                  "the %s before it goes %s the %s.",
                  Xn, to, F->raw_move_step,
                  F->kind == HA_HEAT   ? "heating"
                  : F->kind == HA_COOL ? "cooling"
                                       : "cleaning",
                  Xn, past_of(F->kind), app, prep(lv->goal_recep), F->Rn);
    env_skill_step(b, F->raw_move_step, "go to the %s and %s the %s before moving it to the %s.",
                   app, verb_of(F->kind), Xn, to);
    transform_line(F, b);
}

static int never_transformed_applies(const hh_facts *F) {
    return F->kind && !F->transform_step;
}

static void never_transformed(const hh_facts *F, env_skill *b) {
    env_skill_put(b,
                  "you took the %s but never %s it. Go to the %s and %s the %s before putting "
                  "it %s a %s.",
                  F->Xn, past_of(F->kind), F->lv->recep[F->app].name, verb_of(F->kind), F->Xn,
                  prep(F->lv->goal_recep), F->Rn);
    transform_line(F, b);
}

static int two_apart_applies(const hh_facts *F) {
    return F->lv->family == HF_TWO && F->placed_total >= 2;
}

static void two_apart(const hh_facts *F, env_skill *b) {
    env_skill_put(b, "you put the two %s in different %s; both must go in the same %s.", F->Xs,
                  F->Rn, F->Rn);
}

static int one_of_two_applies(const hh_facts *F) {
    return F->lv->family == HF_TWO && F->placed_total == 1;
}

static void one_of_two(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv;
    env_skill_put(b, "you put only one %s %s a %s. Find a second %s", F->Xn, prep(lv->goal_recep),
                  F->Rn, F->Xn);
    if (F->other_x >= 0 && known(F, F->other_x))
        env_skill_put(b, " (the %s is %s the %s)", lv->obj[F->other_x].name,
                      prep(lv->recep[lv->obj[F->other_x].loc].type),
                      lv->recep[lv->obj[F->other_x].loc].name);
    env_skill_put(b, " and put it in the same %s.", F->Rn);
}

static int wrong_place_applies(const hh_facts *F) {
    return F->wrong_place_step > 0;
}

static void wrong_place(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv;
    const char *to = lv->recep[F->wrong_place_recep].name;
    env_skill_put(b,
                  "you moved the %s to the %s at step %d, but the task asks for a %s. Put it "
                  "%s a %s.",
                  F->Xn, to, F->wrong_place_step, F->Rn, prep(lv->goal_recep), F->Rn);
    env_skill_step(b, F->wrong_place_step, "go to the %s and move the %s there, not to the %s.",
                   lv->recep[F->target_r].name, F->Xn, to);
}

static int closed_target_applies(const hh_facts *F) {
    return F->closed_try_step > 0;
}

static void closed_target(const hh_facts *F, env_skill *b) {
    const char *r = F->lv->recep[F->closed_try_recep].name;
    env_skill_put(b,
                  "you tried to put the %s into the closed %s at step %d. Open the %s first, "
                  "then move the %s into it.",
                  F->Xn, r, F->closed_try_step, r, F->Xn);
    env_skill_step(b, F->closed_try_step, "open the %s before moving the %s into it.", r, F->Xn);
}

static int always(const hh_facts *F) {
    (void)F;
    return 1;
}

static void never_placed(const hh_facts *F, env_skill *b) {
    const hh_level *lv = F->lv;
    env_skill_put(b,
                  "you had the %s%s%s but never put it %s a %s. Go to the %s and move the %s "
                  "there.",
                  F->kind ? adj_of(F->kind) : "", F->kind ? " " : "", F->Xn, prep(lv->goal_recep),
                  F->Rn, lv->recep[F->target_r].name, F->Xn);
    int last = F->kind ? F->transform_step : F->first_take;
    if (last + 1 <= F->n) last++;
    env_skill_step(b, last, "go to the %s and move the %s there.", lv->recep[F->target_r].name,
                   F->Xn);
}

/* First match wins: each entry's test assumes the ones above it did not match. */
static const struct {
    int (*applies)(const hh_facts *F);
    void (*diagnose)(const hh_facts *F, env_skill *b);
} hh_failures[] = {
    {never_found_applies, never_found},
    {seen_not_taken_applies, seen_not_taken},
    {lamp_unused_applies, lamp_unused},
    {wrong_transform_applies, wrong_transform},
    {untransformed_move_applies, untransformed_move},
    {never_transformed_applies, never_transformed},
    {two_apart_applies, two_apart},
    {one_of_two_applies, one_of_two},
    {wrong_place_applies, wrong_place},
    {closed_target_applies, closed_target},
    {always, never_placed},
};

/* What every failure adds: loops, wasted commands, steps without an action, the end. */
static void hh_failure_habits(const hh_facts *F, env_skill *b) {
    int ls, ll, lp;
    find_loop(F, &ls, &ll, &lp);
    if (ll >= 4) {
        const char *a = F->tr->step[ls].action ? F->tr->step[ls].action : "(no action)";
        env_skill_put(b,
                      " You looped on '%.60s'%s for %d steps (from step %d); when a command "
                      "changes nothing, do something else.",
                      a, lp == 2 ? " and back" : "", ll, ls);
        env_skill_step(b, ls + lp,
                       "stop repeating '%.60s'; go to a receptacle you have not checked.", a);
    }
    if (F->n_invalid > 0)
        env_skill_put(b,
                      " %d of your commands did nothing (\"Nothing happens.\"); choose only "
                      "admissible actions.",
                      F->n_invalid);
    if (F->n_null > 0) env_skill_put(b, " %d steps had no valid action.", F->n_null);
    if (F->n >= F->max_steps)
        env_skill_put(b, " The episode ran out of its %d steps.", F->max_steps);
}

int env_household_oracle(const env_trace *tr, env_skill *b, char *err, size_t errlen) {
    hh_facts *F = malloc(sizeof *F);
    if (!F) return seed_errf(err, errlen, "household: out of memory");
    hh_collect(tr, F);
    if (F->won) {
        hh_success(F, b);
    } else {
        env_skill_put(b, "Failure: ");
        size_t k = 0;
        while (!hh_failures[k].applies(F)) k++;
        hh_failures[k].diagnose(F, b);
        hh_failure_habits(F, b);
    }
    free(F);
    return 0;
}
