/* household_oracle.c — the household env's rule-based hindsight analyzer.
 *
 * Contract: env_household_hindsight rebuilds the level from (config, seed, split),
 * replays the episode's actions (NULL = a step without a valid action) up to the end
 * of the episode, reads the privileged state, and writes the skill text:
 *   line 1: the episode skill. A success starts "Success:" and gives the workflow that
 *           worked; a failure starts "Failure:" and names the mistake and the rule that
 *           avoids it (object never found / seen but not taken / heat-cool-clean step
 *           missing or wrong / placed in the wrong receptacle / only one of two placed /
 *           lamp not used while holding the object), plus loops and wasted commands.
 *   then up to 5 lines "step k: imperative sentence", k the 1-based step number of the
 *           episode (action i is step i + 1).
 * Deterministic: the same inputs give the same bytes. Returns an error when the
 * config is bad, the level cannot be built, or skill_len is too small for the text. */
#include <stdlib.h>
#include <string.h>

#include "envs/household_world.h"
#include "common/util.h"

enum { HH_MAX_REPLAY = 1000, HH_MAX_LINES = 5 };

typedef struct step_rec {
    hh_event ev;
    int at_before, held_before;
    uint32_t action_hash; /* 0 for a NULL action */
} step_rec;

typedef struct oracle {
    hh_tables tab;
    hh_level init, lv;
    char obs[HH_OBS_CAP];
    step_rec rec[HH_MAX_REPLAY];
    int seen_step[HH_MAX_OBJ]; /* first step an object was in sight, 0 = never */
    int n;                     /* steps replayed */
    int won, max_steps;
    char lines[HH_MAX_LINES][192];
    int line_step[HH_MAX_LINES];
    int n_lines;
} oracle;

static void add_line(oracle *O, int step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_line(oracle *O, int step, const char *fmt, ...) {
    if (O->n_lines >= HH_MAX_LINES || step < 1) return;
    for (int i = 0; i < O->n_lines; i++)
        if (O->line_step[i] == step) return; /* one line per step */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(O->lines[O->n_lines], sizeof O->lines[0], fmt, ap);
    va_end(ap);
    O->line_step[O->n_lines++] = step;
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
    switch (rtype) {
    case HR_CABINET:
    case HR_DRAWER:
    case HR_FRIDGE:
    case HR_MICROWAVE:
    case HR_SAFE:
    case HR_GARBAGECAN:
    case HR_SINKBASIN:
    case HR_BATHTUBBASIN:
    case HR_LAUNDRYHAMPER:
    case HR_COFFEEMACHINE:
    case HR_TOASTER:
        return "in";
    default:
        return "on";
    }
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

/* Where objects of type X may sit in this level: "in cabinets, on countertops and in
 * the coffeemachine". Returns the number of host types. */
static int hosts_phrase(const oracle *O, int X, int unseen, hh_text *b) {
    int types[HR_COUNT], n = 0;
    for (int r = 0; r < HR_COUNT; r++)
        if (O->tab.allowed[X][r] && O->tab.pair_unseen[X][r] == unseen &&
            count_type(&O->init, r) > 0 && r != O->init.goal_recep)
            types[n++] = r;
    for (int i = 0; i < n; i++) {
        char pl[48];
        int c = count_type(&O->init, types[i]);
        if (c > 1)
            plural(env_household_recep_name(types[i]), pl, sizeof pl);
        else
            snprintf(pl, sizeof pl, "the %s", env_household_recep_name(types[i]));
        hh_text_putf(b, "%s%s %s", i == 0 ? "" : i == n - 1 ? " and " : ", ", prep(types[i]), pl);
    }
    return n;
}

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; s[i] && i < 256; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ? h : 1;
}

static void mark_seen(oracle *O, int r, int step) {
    for (int i = 0; i < O->lv.n_obj; i++)
        if (O->lv.obj[i].loc == r && !O->lv.obj[i].floor && !O->seen_step[i])
            O->seen_step[i] = step;
}

/* Expert steps from the start: the length of the direct route. */
static int expert_len(const hh_level *init, int max_steps) {
    hh_level lv = *init;
    char cmd[128], obs[HH_OBS_CAP];
    hh_event ev;
    for (int s = 1; s <= max_steps; s++) {
        if (env_household_expert_action(&lv, cmd, sizeof cmd)) return -1;
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
static void find_loop(const oracle *O, int *start, int *len, int *period) {
    *start = *len = *period = 0;
    for (int p = 1; p <= 2; p++) {
        int run = 0;
        for (int i = p; i < O->n; i++) {
            if (O->rec[i].action_hash && O->rec[i].action_hash == O->rec[i - p].action_hash)
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

int env_household_hindsight(const env_kv *kv, int n_kv, uint64_t seed, env_split split,
                            const char *const *actions, int n_actions, char *skill,
                            size_t skill_len, char *err, size_t errlen) {
    int max_steps;
    unsigned mask;
    if (!skill || skill_len == 0)
        return seed_errf(err, errlen, "household: hindsight needs an output buffer");
    if (n_actions < 0 || (n_actions > 0 && !actions))
        return seed_errf(err, errlen, "household: hindsight got %d actions and no action array",
                         n_actions);
    if (env_household_config(kv, n_kv, &max_steps, &mask, err, errlen)) return -1;
    oracle *O = calloc(1, sizeof *O);
    if (!O) return seed_errf(err, errlen, "household: out of memory");
    env_household_tables_init(&O->tab);
    if (env_household_generate(&O->tab, mask, seed, split, &O->init, err, errlen)) {
        free(O);
        return -1;
    }
    O->lv = O->init;
    O->max_steps = max_steps;
    hh_level *lv = &O->lv;
    const int X = lv->goal_obj, unseen = split == ENV_SPLIT_UNSEEN;
    const int kind = env_household_needs_transform(lv);

    /* Replay, recording what each step meant. */
    int limit = n_actions < max_steps ? n_actions : max_steps;
    if (limit > HH_MAX_REPLAY) limit = HH_MAX_REPLAY;
    for (int i = 0; i < limit && !O->won; i++) {
        step_rec *s = &O->rec[i];
        s->at_before = lv->at;
        s->held_before = lv->held;
        s->action_hash = actions[i] ? hash_str(actions[i]) : 0;
        env_household_exec(lv, actions[i], O->obs, sizeof O->obs, &s->ev);
        O->n = i + 1;
        const hh_event *ev = &s->ev;
        if (ev->valid && (ev->kind == HA_GOTO || ev->kind == HA_OPEN || ev->kind == HA_EXAMINE) &&
            ev->recep >= 0 &&
            (!env_household_recep_openable(lv->recep[ev->recep].type) || lv->recep[ev->recep].open))
            mark_seen(O, ev->recep, i + 1);
        O->won = env_household_won(lv);
    }

    /* Facts about the goal object type. */
    int first_take = 0, take_obj = -1, first_seen = 0, seen_obj = -1;
    int transform_step = 0, wrong_kind = 0, wrong_step = 0;
    int raw_move_step = 0, raw_move_recep = -1; /* moved into an R before the transform */
    int wrong_place_step = 0, wrong_place_recep = -1;
    int closed_try_step = 0, closed_try_recep = -1;
    int lamp_use_step = 0, lamp_use_holding = 0, drop_step = 0;
    int n_invalid = 0, n_null = 0;
    for (int i = 0; i < O->n; i++) {
        const step_rec *s = &O->rec[i];
        const hh_event *ev = &s->ev;
        int step = i + 1;
        if (!s->action_hash)
            n_null++;
        else if (!ev->valid)
            n_invalid++;
        int o = ev->obj;
        int isX = o >= 0 && lv->obj[o].type == X;
        if (ev->valid && ev->kind == HA_TAKE && isX && !first_take) first_take = step, take_obj = o;
        if (ev->valid && (ev->kind == HA_HEAT || ev->kind == HA_COOL || ev->kind == HA_CLEAN) &&
            isX) {
            if (ev->kind == kind && !transform_step) transform_step = step;
            if (ev->kind != kind && kind && !wrong_step) wrong_kind = ev->kind, wrong_step = step;
        }
        if (ev->kind == HA_MOVE && isX && ev->recep >= 0) {
            int rt = lv->recep[ev->recep].type;
            if (ev->valid && lv->family != HF_LOOK && rt == lv->goal_recep && kind &&
                !transform_step && !raw_move_step)
                raw_move_step = step, raw_move_recep = ev->recep;
            if (ev->valid && lv->family != HF_LOOK && rt != lv->goal_recep && !wrong_place_step)
                wrong_place_step = step, wrong_place_recep = ev->recep;
            if (!ev->valid && rt == lv->goal_recep && s->at_before == ev->recep && !closed_try_step)
                closed_try_step = step, closed_try_recep = ev->recep;
            if (ev->valid && lv->family == HF_LOOK && !drop_step) drop_step = step;
        }
        if (ev->valid && ev->kind == HA_USE && !lamp_use_step) {
            lamp_use_step = step;
            lamp_use_holding = s->held_before >= 0 && lv->obj[s->held_before].type == X;
        }
    }
    for (int i = 0; i < lv->n_obj; i++)
        if (lv->obj[i].type == X && O->seen_step[i] &&
            (!first_seen || O->seen_step[i] < first_seen))
            first_seen = O->seen_step[i], seen_obj = i;

    char Xs[48], Xcap[48];
    const char *Xn = env_household_obj_name(X);
    plural(Xn, Xs, sizeof Xs);
    snprintf(Xcap, sizeof Xcap, "%s", Xs);
    if (Xcap[0] >= 'a' && Xcap[0] <= 'z') Xcap[0] = (char)(Xcap[0] - 'a' + 'A');
    const char *Rn = lv->goal_recep >= 0 ? env_household_recep_name(lv->goal_recep) : "";
    int first_x = -1; /* first goal object, for "it was in ..." */
    for (int i = 0; i < O->init.n_obj && first_x < 0; i++)
        if (O->init.obj[i].type == X) first_x = i;
    int lamp = -1;
    for (int i = 0; i < lv->n_obj && lamp < 0; i++)
        if (lv->lamp_type >= 0 && lv->obj[i].type == lv->lamp_type) lamp = i;
    int target_r = first_recep(lv, lv->goal_recep);
    int app = kind ? first_recep(lv, appliance_of(kind)) : -1;

    char body[2048];
    hh_text b;
    hh_text_init(&b, body, sizeof body);
    if (O->won) {
        hh_text_putf(&b, "Success: \"%s\" solved in %d steps. Workflow that worked: find a %s (",
                     lv->task, O->n, Xn);
        if (take_obj >= 0)
            hh_text_putf(&b, "the %s was %s the %s; ", O->init.obj[take_obj].name,
                         prep(O->init.recep[O->init.obj[take_obj].loc].type),
                         O->init.recep[O->init.obj[take_obj].loc].name);
        hh_text_putf(&b, "%s here are kept ", Xs);
        hosts_phrase(O, X, unseen, &b);
        hh_text_put(&b, "), open its receptacle if it is closed, take it");
        if (kind) hh_text_putf(&b, ", go to the %s and %s it", lv->recep[app].name, verb_of(kind));
        if (lv->family == HF_LOOK && lamp >= 0)
            hh_text_putf(
                &b, ", then go to the %s where the %s is and use the %s while holding the %s.",
                lv->recep[lv->obj[lamp].loc].name, lv->obj[lamp].name, lv->obj[lamp].name, Xn);
        else if (lv->family == HF_TWO)
            hh_text_putf(&b, ", move it to a %s, then find a second %s and move it to the same %s.",
                         Rn, Xn, Rn);
        else
            hh_text_putf(&b, ", then go to a %s and move it there.", Rn);
        int best = expert_len(&O->init, max_steps);
        if (best > 0 && O->n > best + 3)
            hh_text_putf(
                &b,
                " It took %d steps where %d suffice: go first to the receptacles where %s are "
                "kept.",
                O->n, best, Xs);
        /* Key steps of the winning route. */
        for (int i = 0; i < O->n; i++) {
            const hh_event *ev = &O->rec[i].ev;
            if (!ev->valid || ev->obj < 0) continue;
            const hh_obj *ob = &lv->obj[ev->obj];
            int step = i + 1;
            if (ev->kind == HA_TAKE && ob->type == X)
                add_line(O, step, "step %d: take the %s from the %s as soon as you see it.", step,
                         ob->name, lv->recep[ev->recep].name);
            else if (ev->kind == kind && kind && ob->type == X)
                add_line(O, step, "step %d: %s the %s with the %s before placing it.", step,
                         verb_of(kind), ob->name, lv->recep[ev->recep].name);
            else if (ev->kind == HA_MOVE && ob->type == X &&
                     lv->recep[ev->recep].type == lv->goal_recep)
                add_line(O, step, "step %d: move the %s to the %s.", step, ob->name,
                         lv->recep[ev->recep].name);
            else if (ev->kind == HA_USE && lv->family == HF_LOOK)
                add_line(O, step, "step %d: use the %s while holding the %s.", step, ob->name, Xn);
        }
    } else {
        hh_text_put(&b, "Failure: ");
        int holdX = first_take > 0;
        if (!holdX && !first_seen) {
            hh_text_putf(&b, "you never found a %s.", Xn);
            int nv = 0;
            for (int i = 0; i < O->n; i++)
                if (O->rec[i].ev.valid && O->rec[i].ev.kind == HA_GOTO) nv++;
            if (nv > 0) {
                hh_text_put(&b, " You searched ");
                int k = 0, shown = 0;
                for (int i = 0; i < O->n && shown < 4; i++) {
                    const hh_event *ev = &O->rec[i].ev;
                    if (!ev->valid || ev->kind != HA_GOTO) continue;
                    int dup = 0;
                    for (int j = 0; j < i; j++)
                        dup |= O->rec[j].ev.valid && O->rec[j].ev.kind == HA_GOTO &&
                               O->rec[j].ev.recep == ev->recep;
                    if (dup) continue;
                    hh_text_putf(&b, "%s%s", k++ ? ", " : "the ", lv->recep[ev->recep].name);
                    shown++;
                }
                hh_text_put(&b, nv > shown ? " and more," : "");
            } else {
                hh_text_put(&b, " You never went to any receptacle,");
            }
            if (first_x >= 0)
                hh_text_putf(&b, " but the %s was %s the %s. %s in this house are kept ",
                             O->init.obj[first_x].name,
                             prep(O->init.recep[O->init.obj[first_x].loc].type),
                             O->init.recep[O->init.obj[first_x].loc].name, Xcap);
            hosts_phrase(O, X, unseen, &b);
            hh_text_put(&b, "; check those first, and open closed receptacles to see inside.");
            /* Step lines: searches where X never is, closed places left unopened. */
            for (int i = 0; i < O->n; i++) {
                const hh_event *ev = &O->rec[i].ev;
                if (!ev->valid || ev->kind != HA_GOTO) continue;
                int rt = lv->recep[ev->recep].type, step = i + 1;
                if (!O->tab.allowed[X][rt] && first_x >= 0)
                    add_line(O, step,
                             "step %d: do not search the %s for a %s; go to the %s instead.", step,
                             lv->recep[ev->recep].name, Xn,
                             O->init.recep[O->init.obj[first_x].loc].name);
                else if (env_household_recep_openable(rt) &&
                         (i + 1 >= O->n || O->rec[i + 1].ev.kind != HA_OPEN ||
                          !O->rec[i + 1].ev.valid))
                    add_line(O, step + 1 <= O->n ? step + 1 : step,
                             "step %d: open the %s to see what is inside.",
                             step + 1 <= O->n ? step + 1 : step, lv->recep[ev->recep].name);
            }
        } else if (!holdX) {
            const hh_obj *so = &lv->obj[seen_obj];
            int where = -1;
            for (int i = 0; i < O->n && where < 0; i++)
                if (i + 1 == first_seen) where = O->rec[i].ev.recep;
            hh_text_putf(
                &b,
                "you saw the %s %s the %s at step %d but never took it. Take the %s as soon as "
                "you see it.",
                so->name, where >= 0 ? prep(lv->recep[where].type) : "in",
                where >= 0 ? lv->recep[where].name : "room", first_seen, Xn);
            if (where >= 0 && first_seen + 1 <= O->n)
                add_line(O, first_seen + 1, "step %d: take the %s from the %s now.", first_seen + 1,
                         so->name, lv->recep[where].name);
        } else if (lv->family == HF_LOOK) {
            const char *ln = lamp >= 0 ? lv->obj[lamp].name : "lamp";
            const char *host = lamp >= 0 ? lv->recep[lv->obj[lamp].loc].name : "lamp";
            if (!lamp_use_step)
                hh_text_putf(
                    &b,
                    "you took the %s but never turned on the %s. Carry the %s to the %s, where "
                    "the %s is, "
                    "and use the %s while holding it.",
                    Xn, ln, Xn, host, ln, ln);
            else if (!lamp_use_holding)
                hh_text_putf(
                    &b,
                    "you turned on the %s at step %d without holding the %s, and never came "
                    "back with it. "
                    "Take the %s first, then bring it to the %s while the %s is on.",
                    ln, lamp_use_step, Xn, Xn, host, ln);
            else
                hh_text_putf(
                    &b,
                    "you used the %s but were not holding the %s next to it at the end. Keep "
                    "the %s in "
                    "hand at the %s while the %s is on.",
                    ln, Xn, Xn, host, ln);
            if (drop_step)
                add_line(O, drop_step, "step %d: keep holding the %s; do not put it down.",
                         drop_step, Xn);
            add_line(O, first_take, "step %d: after taking the %s, go to the %s and use the %s.",
                     first_take, Xn, host, ln);
        } else if (kind && !transform_step) {
            if (wrong_step) {
                hh_text_putf(
                    &b,
                    "you %s the %s at step %d, but the task asks for a %s %s: %s it with the "
                    "%s instead.",
                    past_of(wrong_kind), Xn, wrong_step, adj_of(kind), Xn, verb_of(kind),
                    lv->recep[app].name);
                add_line(O, wrong_step, "step %d: %s the %s with the %s, not %s it.", wrong_step,
                         verb_of(kind), Xn, lv->recep[app].name, verb_of(wrong_kind));
            } else if (raw_move_step) {
                hh_text_putf(
                    &b,
                    "you moved the %s to the %s at step %d without %s it. A %s must be %s with "
                    "the %s "
                    "before it goes %s the %s.",
                    Xn, lv->recep[raw_move_recep].name, raw_move_step,
                    kind == HA_HEAT   ? "heating"
                    : kind == HA_COOL ? "cooling"
                                      : "cleaning",
                    Xn, past_of(kind), lv->recep[app].name, prep(lv->goal_recep), Rn);
                add_line(O, raw_move_step,
                         "step %d: go to the %s and %s the %s before moving it to the %s.",
                         raw_move_step, lv->recep[app].name, verb_of(kind), Xn,
                         lv->recep[raw_move_recep].name);
            } else {
                hh_text_putf(&b,
                             "you took the %s but never %s it. Go to the %s and %s the %s before "
                             "putting it %s a %s.",
                             Xn, past_of(kind), lv->recep[app].name, verb_of(kind), Xn,
                             prep(lv->goal_recep), Rn);
            }
            add_line(O, first_take + 1 <= O->n ? first_take + 1 : first_take,
                     "step %d: after taking the %s, go to the %s and %s it.",
                     first_take + 1 <= O->n ? first_take + 1 : first_take, Xn, lv->recep[app].name,
                     verb_of(kind));
        } else {
            int placed_best = 0, placed_total = 0, other_x = -1;
            for (int r = 0; r < lv->n_recep; r++) {
                if (lv->recep[r].type != lv->goal_recep) continue;
                int c = 0;
                for (int i = 0; i < lv->n_obj; i++)
                    c += lv->obj[i].loc == r && lv->obj[i].type == X &&
                         env_household_obj_done(lv, i);
                placed_total += c;
                if (c > placed_best) placed_best = c;
            }
            for (int i = 0; i < lv->n_obj && other_x < 0; i++)
                if (lv->obj[i].type == X && lv->obj[i].loc >= 0 &&
                    lv->recep[lv->obj[i].loc].type != lv->goal_recep)
                    other_x = i;
            if (lv->family == HF_TWO && placed_total >= 2) {
                hh_text_putf(&b, "you put the two %s in different %s; both must go in the same %s.",
                             Xs, Rn, Rn);
            } else if (lv->family == HF_TWO && placed_total == 1) {
                hh_text_putf(&b, "you put only one %s %s a %s. Find a second %s", Xn,
                             prep(lv->goal_recep), Rn, Xn);
                if (other_x >= 0)
                    hh_text_putf(&b, " (the %s is %s the %s)", lv->obj[other_x].name,
                                 prep(lv->recep[lv->obj[other_x].loc].type),
                                 lv->recep[lv->obj[other_x].loc].name);
                hh_text_putf(&b, " and put it in the same %s.", Rn);
            } else if (wrong_place_step) {
                hh_text_putf(
                    &b,
                    "you moved the %s to the %s at step %d, but the task asks for a %s. Put it "
                    "%s a %s.",
                    Xn, lv->recep[wrong_place_recep].name, wrong_place_step, Rn,
                    prep(lv->goal_recep), Rn);
                add_line(O, wrong_place_step,
                         "step %d: go to the %s and move the %s there, not to the %s.",
                         wrong_place_step, lv->recep[target_r].name, Xn,
                         lv->recep[wrong_place_recep].name);
            } else if (closed_try_step) {
                hh_text_putf(
                    &b,
                    "you tried to put the %s into the closed %s at step %d. Open the %s first, "
                    "then move the "
                    "%s into it.",
                    Xn, lv->recep[closed_try_recep].name, closed_try_step,
                    lv->recep[closed_try_recep].name, Xn);
                add_line(O, closed_try_step, "step %d: open the %s before moving the %s into it.",
                         closed_try_step, lv->recep[closed_try_recep].name, Xn);
            } else {
                hh_text_putf(
                    &b,
                    "you had the %s%s%s but never put it %s a %s. Go to the %s and move the %s "
                    "there.",
                    kind ? adj_of(kind) : "", kind ? " " : "", Xn, prep(lv->goal_recep), Rn,
                    lv->recep[target_r].name, Xn);
                int last = kind ? transform_step : first_take;
                if (last + 1 <= O->n) last++;
                add_line(O, last, "step %d: go to the %s and move the %s there.", last,
                         lv->recep[target_r].name, Xn);
            }
        }
        /* Loops and wasted commands. */
        int ls, ll, lp;
        find_loop(O, &ls, &ll, &lp);
        if (ll >= 4) {
            const char *a = actions[ls - 1] ? actions[ls - 1] : "(no action)";
            hh_text_putf(
                &b,
                " You looped on '%.60s'%s for %d steps (from step %d); when a command changes "
                "nothing, do "
                "something else.",
                a, lp == 2 ? " and back" : "", ll, ls);
            add_line(O, ls + lp,
                     "step %d: stop repeating '%.60s'; go to a receptacle you have not checked.",
                     ls + lp, a);
        }
        if (n_invalid > 0)
            hh_text_putf(&b,
                         " %d of your commands did nothing (\"Nothing happens.\"); choose only "
                         "admissible actions.",
                         n_invalid);
        if (n_null > 0) hh_text_putf(&b, " %d steps had no valid action.", n_null);
        if (O->n >= max_steps) hh_text_putf(&b, " The episode ran out of its %d steps.", max_steps);
    }

    /* Step lines in step order. */
    int order[HH_MAX_LINES];
    for (int i = 0; i < O->n_lines; i++) order[i] = i;
    for (int i = 1; i < O->n_lines; i++)
        for (int j = i; j > 0 && O->line_step[order[j - 1]] > O->line_step[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    hh_text out;
    hh_text_init(&out, skill, skill_len);
    hh_text_put(&out, body);
    for (int i = 0; i < O->n_lines; i++) {
        hh_text_put(&out, "\n");
        hh_text_put(&out, O->lines[order[i]]);
    }
    int full = hh_text_full(&out) || hh_text_full(&b);
    free(O);
    if (full)
        return seed_errf(err, errlen, "household: the skill text did not fit in %zu bytes",
                         skill_len);
    return 0;
}
