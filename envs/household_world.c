/* household_world.c — the household env's rules: command parsing and execution with
 * ALFWorld's feedback texts, the admissible command list, the goal test and the experts
 * (the searching one the env plays and the omniscient direct route).
 *
 * Contract (see household_world.h): texts follow alfworld/data/alfred.twl2, quirks
 * included ("a apple", "you see nothing.", lists joined with ", " and ", and ").
 * Receptacles and objects are listed type-alphabetically with numbers descending, as
 * ALFWorld prints them. Commands are matched exactly (lower case, single spaces; outer
 * whitespace is ignored). Carry at most one object. Opening is needed to see into,
 * take from or put into a cabinet, drawer, fridge, microwave or safe; heat, cool and
 * clean need the microwave, fridge or sinkbasin the agent faces. */
#define _POSIX_C_SOURCE 200809L
#include "envs/household_world.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const nothing_happens = "Nothing happens.";

static int accessible(const hh_level *lv, int r) {
    return !env_household_recep_openable(lv->recep[r].type) || lv->recep[r].open;
}

static int is_lamp(int otype) {
    return otype == HO_DESKLAMP || otype == HO_FLOORLAMP;
}

/* "a X, a Y, and a Z" (ALFWorld's list separators) or "nothing". */
static void list_objects(const hh_level *lv, seed_sbuf *b, int r, int floor) {
    int n = 0, total = 0;
    for (int i = 0; i < lv->n_obj; i++) {
        const hh_obj *o = &lv->obj[i];
        total += o->loc == r && o->floor == floor;
    }
    if (total == 0) {
        seed_sbuf_puts(b, "nothing");
        return;
    }
    for (int k = 0; k < lv->n_obj; k++) {
        const hh_obj *o = &lv->obj[lv->obj_order[k]];
        if (o->loc != r || o->floor != floor) continue;
        seed_sbuf_puts(b, n == 0 ? "a " : n == total - 1 ? ", and a " : ", a ");
        seed_sbuf_puts(b, o->name);
        n++;
    }
}

static void examine_recep(const hh_level *lv, seed_sbuf *b, int r) {
    const hh_recep *rc = &lv->recep[r];
    if (env_household_recep_openable(rc->type) && rc->open) {
        seed_sbuf_cats(b, "The ", rc->name, " is open. In it, you see ", NULL);
        list_objects(lv, b, r, 0);
        seed_sbuf_puts(b, ".");
    } else if (env_household_recep_openable(rc->type)) {
        seed_sbuf_cats(b, "The ", rc->name, " is closed.", NULL);
    } else {
        seed_sbuf_cats(b, "On the ", rc->name, ", you see ", NULL);
        list_objects(lv, b, r, 0);
        seed_sbuf_puts(b, ".");
    }
}

static void look_text(const hh_level *lv, seed_sbuf *b) {
    if (lv->at < 0) {
        seed_sbuf_puts(b, "You are in the middle of a room. Looking quickly around you, you see ");
        for (int r = 0; r < lv->n_recep; r++) {
            seed_sbuf_puts(b, r == 0 ? "a " : r == lv->n_recep - 1 ? ", and a " : ", a ");
            seed_sbuf_puts(b, lv->recep[r].name);
        }
        seed_sbuf_puts(b, ".");
    } else {
        seed_sbuf_cats(b, "You are facing the ", lv->recep[lv->at].name, ". Next to it, you see ",
                       NULL);
        list_objects(lv, b, lv->at, 1);
        seed_sbuf_puts(b, ".");
    }
}

/* The examineObject rules of alfred.twl2, first match wins (a receptacle object such
 * as a mug reports its contents before its temperature: ALFWorld's quirk). */
static void examine_obj(const hh_level *lv, seed_sbuf *b, int oi) {
    const hh_obj *o = &lv->obj[oi];
    int t = o->type;
    int recobj =
        t == HO_MUG || t == HO_CUP || t == HO_BOWL || t == HO_PLATE || t == HO_PAN || t == HO_POT;
    if (recobj)
        seed_sbuf_cats(b, "This is a normal ", o->name, ". In it, you see nothing.", NULL);
    else if (o->clean && o->hot)
        seed_sbuf_cats(b, "This is a hot and clean ", o->name, ".", NULL);
    else if (o->clean && o->cool)
        seed_sbuf_cats(b, "This is a cool and clean ", o->name, ".", NULL);
    else if (o->hot)
        seed_sbuf_cats(b, "This is a hot ", o->name, ".", NULL);
    else if (o->clean)
        seed_sbuf_cats(b, "This is a clean ", o->name, ".", NULL);
    else if (o->cool)
        seed_sbuf_cats(b, "This is a cold ", o->name, ".", NULL);
    else if (is_lamp(t))
        seed_sbuf_cats(b, "This ", o->name, " is ", o->on ? "on" : "off", ".", NULL);
    else
        seed_sbuf_cats(b, "There's nothing special about ", o->name, ".", NULL);
}

void env_household_intro(const hh_level *lv, char *obs, size_t cap) {
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, obs, cap);
    seed_sbuf_puts(&b, "-= Welcome to TextWorld, ALFRED! =-\n\n");
    look_text(lv, &b);
    seed_sbuf_cats(&b, "\n\nYour task is to: ", lv->task, NULL);
}

/* ---- parsing ---- */

static int lookup_type(const char *s, size_t n, int objects) {
    int count = objects ? HO_COUNT : HR_COUNT;
    for (int t = 0; t < count; t++) {
        const char *name = objects ? env_household_obj_name(t) : env_household_recep_name(t);
        if (strlen(name) == n && memcmp(name, s, n) == 0) return t;
    }
    return -1;
}

/* Splits "type num" (exactly one space, num 1..99 without a leading zero). */
static int split_name(const char *s, size_t n, size_t *tlen, int *num) {
    if (n < 3 || n > HH_NAME) return -1;
    size_t sp = n;
    while (sp > 0 && s[sp - 1] != ' ') sp--;
    if (sp < 2) return -1;
    size_t dl = n - sp;
    if (dl < 1 || dl > 2 || s[sp] == '0') return -1;
    int v = 0;
    for (size_t i = sp; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *tlen = sp - 1;
    *num = v;
    return 0;
}

static int find_recep(const hh_level *lv, const char *s, size_t n) {
    size_t tl;
    int num;
    if (split_name(s, n, &tl, &num)) return -1;
    int t = lookup_type(s, tl, 0);
    if (t < 0) return -1;
    for (int r = 0; r < lv->n_recep; r++)
        if (lv->recep[r].type == t && lv->recep[r].num == num) return r;
    return -1;
}

static int find_obj(const hh_level *lv, const char *s, size_t n) {
    size_t tl;
    int num;
    if (split_name(s, n, &tl, &num)) return -1;
    int t = lookup_type(s, tl, 1);
    if (t < 0) return -1;
    for (int i = 0; i < lv->n_obj; i++)
        if (lv->obj[i].type == t && lv->obj[i].num == num) return i;
    return -1;
}

static int starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Parses "VERB A SEP B": A must be an object, B a receptacle. */
static int parse_pair(const hh_level *lv, const char *rest, const char *sep, int *o, int *r) {
    const char *m = strstr(rest, sep);
    if (!m) return -1;
    *o = find_obj(lv, rest, (size_t)(m - rest));
    const char *b = m + strlen(sep);
    *r = find_recep(lv, b, strlen(b));
    return *o >= 0 && *r >= 0 ? 0 : -1;
}

static void parse(const hh_level *lv, const char *c, hh_event *ev) {
    ev->kind = HA_UNKNOWN;
    ev->obj = ev->recep = -1;
    int o, r;
    if (strcmp(c, "look") == 0) {
        ev->kind = HA_LOOK;
    } else if (strcmp(c, "inventory") == 0) {
        ev->kind = HA_INVENTORY;
    } else if (strcmp(c, "help") == 0) {
        ev->kind = HA_HELP;
    } else if (starts(c, "go to ")) {
        if ((r = find_recep(lv, c + 6, strlen(c + 6))) >= 0) ev->kind = HA_GOTO, ev->recep = r;
    } else if (starts(c, "open ")) {
        if ((r = find_recep(lv, c + 5, strlen(c + 5))) >= 0) ev->kind = HA_OPEN, ev->recep = r;
    } else if (starts(c, "close ")) {
        if ((r = find_recep(lv, c + 6, strlen(c + 6))) >= 0) ev->kind = HA_CLOSE, ev->recep = r;
    } else if (starts(c, "take ")) {
        if (parse_pair(lv, c + 5, " from ", &o, &r) == 0)
            ev->kind = HA_TAKE, ev->obj = o, ev->recep = r;
    } else if (starts(c, "move ")) {
        if (parse_pair(lv, c + 5, " to ", &o, &r) == 0)
            ev->kind = HA_MOVE, ev->obj = o, ev->recep = r;
    } else if (starts(c, "put ")) { /* ALFWorld's older grammar: "put X in/on Y" */
        if (parse_pair(lv, c + 4, " in/on ", &o, &r) == 0 ||
            parse_pair(lv, c + 4, " in ", &o, &r) == 0 ||
            parse_pair(lv, c + 4, " on ", &o, &r) == 0)
            ev->kind = HA_MOVE, ev->obj = o, ev->recep = r;
    } else if (starts(c, "heat ") || starts(c, "cool ")) {
        if (parse_pair(lv, c + 5, " with ", &o, &r) == 0)
            ev->kind = c[0] == 'h' ? HA_HEAT : HA_COOL, ev->obj = o, ev->recep = r;
    } else if (starts(c, "clean ")) {
        if (parse_pair(lv, c + 6, " with ", &o, &r) == 0)
            ev->kind = HA_CLEAN, ev->obj = o, ev->recep = r;
    } else if (starts(c, "use ")) {
        if ((o = find_obj(lv, c + 4, strlen(c + 4))) >= 0) ev->kind = HA_USE, ev->obj = o;
    } else if (starts(c, "examine ")) {
        const char *a = c + 8;
        if ((r = find_recep(lv, a, strlen(a))) >= 0)
            ev->kind = HA_EXAMINE, ev->recep = r;
        else if ((o = find_obj(lv, a, strlen(a))) >= 0)
            ev->kind = HA_EXAMINE, ev->obj = o;
    }
}

static int appliance_type(int kind) {
    return kind == HA_HEAT ? HR_MICROWAVE : kind == HA_COOL ? HR_FRIDGE : HR_SINKBASIN;
}

/* Whether the parsed command is valid in the state (the admissible rule). */
static int valid(const hh_level *lv, const hh_event *ev) {
    int at = lv->at, r = ev->recep, o = ev->obj;
    switch (ev->kind) {
    case HA_LOOK:
    case HA_INVENTORY:
    case HA_HELP:
        return 1;
    case HA_GOTO:
        return r != at;
    case HA_OPEN:
        return r == at && env_household_recep_openable(lv->recep[r].type) && !lv->recep[r].open;
    case HA_CLOSE:
        return r == at && env_household_recep_openable(lv->recep[r].type) && lv->recep[r].open;
    case HA_TAKE:
        return r == at && accessible(lv, r) && lv->held < 0 && lv->obj[o].loc == r &&
               !lv->obj[o].floor && !is_lamp(lv->obj[o].type);
    case HA_MOVE:
        return r == at && accessible(lv, r) && lv->held == o;
    case HA_HEAT:
    case HA_COOL:
    case HA_CLEAN:
        return r == at && lv->held == o && lv->recep[r].type == appliance_type(ev->kind);
    case HA_USE:
        return at >= 0 && is_lamp(lv->obj[o].type) && lv->obj[o].loc == at;
    case HA_EXAMINE:
        return r >= 0 ? r == at : lv->held == o;
    default:
        return 0;
    }
}

static void apply(hh_level *lv, const hh_event *ev, seed_sbuf *b) {
    int r = ev->recep, o = ev->obj;
    switch (ev->kind) {
    case HA_LOOK:
        look_text(lv, b);
        break;
    case HA_INVENTORY:
        if (lv->held >= 0)
            seed_sbuf_cats(b, "You are carrying: a ", lv->obj[lv->held].name, ".", NULL);
        else
            seed_sbuf_puts(b, "You are not carrying anything.");
        break;
    case HA_HELP:
        seed_sbuf_puts(b,
                       "\nAvailable commands:\n"
                       "  look:                             look around your current location\n"
                       "  inventory:                        check your current inventory\n"
                       "  go to (receptacle):               move to a receptacle\n"
                       "  open (receptacle):                open a receptacle\n"
                       "  close (receptacle):               close a receptacle\n"
                       "  take (object) from (receptacle):  take an object from a receptacle\n"
                       "  move (object) to (receptacle):    place an object in or on a receptacle\n"
                       "  examine (something):              examine a receptacle or an object\n"
                       "  use (object):                     use an object\n"
                       "  heat (object) with (receptacle):  heat an object using a receptacle\n"
                       "  clean (object) with (receptacle): clean an object using a receptacle\n"
                       "  cool (object) with (receptacle):  cool an object using a receptacle\n");
        break;
    case HA_GOTO:
        lv->at = r;
        seed_sbuf_cats(b, "You arrive at ", lv->recep[r].name, ". ", NULL);
        examine_recep(lv, b, r);
        break;
    case HA_OPEN:
        lv->recep[r].open = 1;
        seed_sbuf_cats(b, "You open the ", lv->recep[r].name, ". ", NULL);
        examine_recep(lv, b, r);
        break;
    case HA_CLOSE:
        lv->recep[r].open = 0;
        seed_sbuf_cats(b, "You close the ", lv->recep[r].name, ".", NULL);
        break;
    case HA_TAKE:
        lv->obj[o].loc = HH_HELD;
        lv->held = o;
        seed_sbuf_cats(b, "You pick up the ", lv->obj[o].name, " from the ", lv->recep[r].name, ".",
                       NULL);
        break;
    case HA_MOVE:
        lv->obj[o].loc = (int8_t)r;
        lv->held = -1;
        seed_sbuf_cats(b, "You move the ", lv->obj[o].name, " to the ", lv->recep[r].name, ".",
                       NULL);
        break;
    case HA_HEAT:
        lv->obj[o].hot = 1;
        lv->obj[o].cool = 0;
        seed_sbuf_cats(b, "You heat the ", lv->obj[o].name, " using the ", lv->recep[r].name, ".",
                       NULL);
        break;
    case HA_COOL:
        lv->obj[o].cool = 1;
        lv->obj[o].hot = 0;
        seed_sbuf_cats(b, "You cool the ", lv->obj[o].name, " using the ", lv->recep[r].name, ".",
                       NULL);
        break;
    case HA_CLEAN:
        lv->obj[o].clean = 1;
        seed_sbuf_cats(b, "You clean the ", lv->obj[o].name, " using the ", lv->recep[r].name, ".",
                       NULL);
        break;
    case HA_USE:
        lv->obj[o].on = 1;
        seed_sbuf_cats(b, "You turn on the ", lv->obj[o].name, ".", NULL);
        break;
    case HA_EXAMINE:
        if (r >= 0)
            examine_recep(lv, b, r);
        else
            examine_obj(lv, b, o);
        break;
    }
}

int env_household_exec(hh_level *lv, const char *cmd, char *obs, size_t cap, hh_event *ev) {
    seed_sbuf b;
    seed_sbuf_init_fixed(&b, obs, cap);
    ev->kind = HA_UNKNOWN;
    ev->obj = ev->recep = -1;
    ev->valid = 0;
    /* Longer than any command (e.g. a megabyte of text): not parsed at all. */
    if (cmd && strnlen(cmd, 256) < 256) {
        size_t n = strlen(cmd);
        while (n > 0 && (*cmd == ' ' || *cmd == '\t' || *cmd == '\n' || *cmd == '\r')) cmd++, n--;
        while (n > 0 && (cmd[n - 1] == ' ' || cmd[n - 1] == '\t' || cmd[n - 1] == '\n' ||
                         cmd[n - 1] == '\r'))
            n--;
        if (n > 0 && n < 96) {
            char c[96];
            memcpy(c, cmd, n);
            c[n] = '\0';
            parse(lv, c, ev);
        }
    }
    if (ev->kind != HA_UNKNOWN && valid(lv, ev)) {
        ev->valid = 1;
        apply(lv, ev, &b);
    } else {
        seed_sbuf_puts(&b, nothing_happens);
    }
    return ev->valid;
}

/* ---- admissible commands ---- */

typedef struct adm {
    char *arena;
    size_t cap, used;
    const char **out;
    int max, n;
} adm;

/* Appends one command made of the strings up to the NULL sentinel; a command that does
 * not fit is left out whole. */
static void adm_cats(adm *a, ...) __attribute__((sentinel));
static void adm_cats(adm *a, ...) {
    if (a->n >= a->max) return;
    size_t start = a->used, pos = start;
    va_list ap;
    va_start(ap, a);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *)) {
        size_t k = strlen(s);
        if (pos + k + 1 > a->cap) {
            va_end(ap);
            return;
        }
        memcpy(a->arena + pos, s, k);
        pos += k;
    }
    va_end(ap);
    a->arena[pos] = '\0';
    a->out[a->n++] = a->arena + start;
    a->used = pos + 1;
}

/* Emitted directly in strcmp order (the order ALFWorld's sorted list has): the verb
 * groups are alphabetical (clean < close < cool < examine < go < heat < inventory <
 * look < move < open < take < use) and within a group names follow the level's
 * precomputed name orders, so no sort runs per step. */
int env_household_admissible(const hh_level *lv, char *arena, size_t cap, const char **out,
                             int max) {
    adm a = {arena, cap, 0, out, max, 0};
    int at = lv->at, h = lv->held;
    const hh_recep *rc = at >= 0 ? &lv->recep[at] : NULL;
    const char *held = h >= 0 ? lv->obj[h].name : NULL;
    int openable = rc && env_household_recep_openable(rc->type);
    if (held && rc && rc->type == HR_SINKBASIN)
        adm_cats(&a, "clean ", held, " with ", rc->name, NULL);
    if (openable && rc->open) adm_cats(&a, "close ", rc->name, NULL);
    if (held && rc && rc->type == HR_FRIDGE) adm_cats(&a, "cool ", held, " with ", rc->name, NULL);
    if (held && rc) {
        int first_held = strcmp(held, rc->name) < 0;
        adm_cats(&a, "examine ", first_held ? held : rc->name, NULL);
        adm_cats(&a, "examine ", first_held ? rc->name : held, NULL);
    } else if (held || rc) {
        adm_cats(&a, "examine ", held ? held : rc->name, NULL);
    }
    for (int k = 0; k < lv->n_recep; k++) {
        int r = lv->recep_sorted[k];
        if (r != at) adm_cats(&a, "go to ", lv->recep[r].name, NULL);
    }
    if (held && rc && rc->type == HR_MICROWAVE)
        adm_cats(&a, "heat ", held, " with ", rc->name, NULL);
    adm_cats(&a, "inventory", NULL);
    adm_cats(&a, "look", NULL);
    int reach = rc && (!openable || rc->open);
    if (held && reach) adm_cats(&a, "move ", held, " to ", rc->name, NULL);
    if (openable && !rc->open) adm_cats(&a, "open ", rc->name, NULL);
    if (!held && reach)
        for (int k = 0; k < lv->n_obj; k++) {
            const hh_obj *o = &lv->obj[lv->obj_sorted[k]];
            if (o->loc == at && !o->floor && !is_lamp(o->type))
                adm_cats(&a, "take ", o->name, " from ", rc->name, NULL);
        }
    if (rc)
        for (int k = 0; k < lv->n_obj; k++) {
            const hh_obj *o = &lv->obj[lv->obj_sorted[k]];
            if (o->loc == at && is_lamp(o->type)) adm_cats(&a, "use ", o->name, NULL);
        }
    return a.n;
}

/* ---- goal ---- */

int env_household_needs_transform(const hh_level *lv) {
    return lv->family == HF_HEAT    ? HA_HEAT
           : lv->family == HF_COOL  ? HA_COOL
           : lv->family == HF_CLEAN ? HA_CLEAN
                                    : 0;
}

int env_household_obj_done(const hh_level *lv, int o) {
    const hh_obj *ob = &lv->obj[o];
    switch (lv->family) {
    case HF_HEAT:
        return ob->hot;
    case HF_COOL:
        return ob->cool;
    case HF_CLEAN:
        return ob->clean;
    default:
        return 1;
    }
}

/* Objects of the goal type with the goal property inside receptacle r. */
static int goal_count_in(const hh_level *lv, int r) {
    int n = 0;
    for (int i = 0; i < lv->n_obj; i++)
        n += lv->obj[i].loc == r && !lv->obj[i].floor && lv->obj[i].type == lv->goal_obj &&
             env_household_obj_done(lv, i);
    return n;
}

static int find_lamp(const hh_level *lv) {
    for (int i = 0; i < lv->n_obj; i++)
        if (lv->obj[i].type == lv->lamp_type) return i;
    return -1;
}

int env_household_won(const hh_level *lv) {
    if (lv->family == HF_LOOK) {
        int l = find_lamp(lv);
        return l >= 0 && lv->held >= 0 && lv->obj[lv->held].type == lv->goal_obj && lv->obj[l].on &&
               lv->at >= 0 && lv->obj[l].loc == lv->at;
    }
    for (int r = 0; r < lv->n_recep; r++)
        if (lv->recep[r].type == lv->goal_recep && goal_count_in(lv, r) >= lv->need) return 1;
    return 0;
}

/* ---- omniscient expert: reads where every object is ---- */

static int first_recep(const hh_level *lv, int type) {
    for (int r = 0; r < lv->n_recep; r++)
        if (lv->recep[r].type == type) return r;
    return -1;
}

/* Go to r, open it if closed: the step that makes r usable, or 0 when it is. */
static int reach(const hh_level *lv, int r, char *buf, size_t n) {
    if (lv->at != r) return snprintf(buf, n, "go to %s", lv->recep[r].name), 1;
    if (!accessible(lv, r)) return snprintf(buf, n, "open %s", lv->recep[r].name), 1;
    return 0;
}

static int fetch(const hh_level *lv, int o, char *buf, size_t n) {
    int r = lv->obj[o].loc;
    if (reach(lv, r, buf, n)) return 0;
    snprintf(buf, n, "take %s from %s", lv->obj[o].name, lv->recep[r].name);
    return 0;
}

/* Put down a held object that the task does not need: here if possible. */
static int drop(const hh_level *lv, char *buf, size_t n) {
    int h = lv->held, r = lv->at;
    if (r < 0) {
        for (int i = 0; i < lv->n_recep; i++)
            if (!env_household_recep_openable(lv->recep[i].type)) {
                r = i;
                break;
            }
        if (r < 0) r = 0;
    }
    if (reach(lv, r, buf, n)) return 0;
    snprintf(buf, n, "move %s to %s", lv->obj[h].name, lv->recep[r].name);
    return 0;
}

int env_household_omniscient_action(const hh_level *lv, char *buf, size_t n) {
    int X = lv->goal_obj, h = lv->held;
    if (lv->family == HF_LOOK) {
        int l = find_lamp(lv);
        if (l < 0) return -1;
        if (h >= 0 && lv->obj[h].type == X) {
            if (lv->at != lv->obj[l].loc)
                return snprintf(buf, n, "go to %s", lv->recep[lv->obj[l].loc].name), 0;
            return snprintf(buf, n, "use %s", lv->obj[l].name), 0;
        }
        if (h >= 0) return drop(lv, buf, n);
        for (int i = 0; i < lv->n_obj; i++)
            if (lv->obj[i].type == X) return fetch(lv, i, buf, n);
        return -1;
    }
    /* Target receptacle: the one already holding the most finished goal objects, else
     * the one the agent faces, else the first of its type. */
    int T = -1, best = 0;
    for (int r = 0; r < lv->n_recep; r++) {
        if (lv->recep[r].type != lv->goal_recep) continue;
        int c = goal_count_in(lv, r);
        if (T < 0 || c > best || (c == best && best == 0 && r == lv->at)) T = r, best = c;
    }
    if (T < 0) return -1;
    if (h >= 0 && lv->obj[h].type == X) {
        int kind = env_household_needs_transform(lv);
        if (kind && !env_household_obj_done(lv, h)) {
            int A = first_recep(lv, appliance_type(kind));
            if (A < 0) return -1;
            if (lv->at != A) return snprintf(buf, n, "go to %s", lv->recep[A].name), 0;
            const char *verb = kind == HA_HEAT ? "heat" : kind == HA_COOL ? "cool" : "clean";
            return snprintf(buf, n, "%s %s with %s", verb, lv->obj[h].name, lv->recep[A].name), 0;
        }
        if (reach(lv, T, buf, n)) return 0;
        return snprintf(buf, n, "move %s to %s", lv->obj[h].name, lv->recep[T].name), 0;
    }
    if (h >= 0) return drop(lv, buf, n);
    /* Fetch a goal object not already finished inside T; prefer ones outside T. */
    int pick = -1;
    for (int pass = 0; pass < 2 && pick < 0; pass++)
        for (int i = 0; i < lv->n_obj && pick < 0; i++) {
            const hh_obj *o = &lv->obj[i];
            if (o->type != X || o->loc < 0) continue;
            int in_t = o->loc == T;
            if (pass == 0 && !in_t) pick = i;
            if (pass == 1 && in_t && !env_household_obj_done(lv, i)) pick = i;
        }
    if (pick < 0) return -1;
    return fetch(lv, pick, buf, n);
}

const char *env_household_recep_prep(int rtype) {
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

/* ---- informed expert: the searching one, told what the episode's skill says ---- */

/* The goal object the informed expert fetches: the first by name, while no object of the
 * goal type is in a receptacle of the goal kind (pick two's second one is searched for:
 * the skill's workflow names where only the first was). -1: search. */
static int informed_target(const hh_level *lv) {
    int X = lv->goal_obj;
    for (int i = 0; i < lv->n_obj; i++)
        if (lv->obj[i].type == X && lv->obj[i].loc >= 0 &&
            lv->recep[lv->obj[i].loc].type == lv->goal_recep)
            return -1;
    for (int k = 0; k < lv->n_obj; k++) {
        int i = lv->obj_sorted[k];
        if (lv->obj[i].type == X && lv->obj[i].loc >= 0 && !lv->obj[i].floor) return i;
    }
    return -1;
}

/* The lamp the informed expert goes to while it holds the goal object (look), or -1. */
static int informed_lamp(const hh_level *lv) {
    int h = lv->held;
    if (lv->family != HF_LOOK || h < 0 || lv->obj[h].type != lv->goal_obj) return -1;
    int l = find_lamp(lv);
    return l >= 0 && lv->obj[l].loc >= 0 ? l : -1;
}

int env_household_informed_action(const hh_tables *t, const hh_level *lv, char *buf, size_t n) {
    int o = lv->held < 0 ? informed_target(lv) : -1, l = informed_lamp(lv);
    if (o >= 0) return fetch(lv, o, buf, n);
    if (l >= 0) {
        if (lv->at != lv->obj[l].loc)
            return snprintf(buf, n, "go to %s", lv->recep[lv->obj[l].loc].name), 0;
        return snprintf(buf, n, "use %s", lv->obj[l].name), 0;
    }
    return env_household_search_action(t, lv, buf, n);
}

int env_household_informed_reason(const hh_tables *t, const hh_level *lv, const char *action,
                                  char *buf, size_t n) {
    int o = lv->held < 0 ? informed_target(lv) : -1, l = informed_lamp(lv), w = -1;
    int go = !strncmp(action, "go to ", 6), open = !strncmp(action, "open ", 5);
    if (o >= 0 && (go || open)) {
        const hh_recep *r = &lv->recep[lv->obj[o].loc];
        w = go ? snprintf(buf, n, "The skill says the %s was %s the %s: I go straight there.",
                          lv->obj[o].name, env_household_recep_prep(r->type), r->name)
               : snprintf(buf, n, "The skill says the %s is in the %s, which is closed: I open it.",
                          lv->obj[o].name, r->name);
    } else if (l >= 0 && go) {
        w = snprintf(buf, n, "I hold %s. The skill says the %s is at the %s: I go there.",
                     lv->obj[lv->held].name, lv->obj[l].name, lv->recep[lv->obj[l].loc].name);
    } else {
        return env_household_search_reason(t, lv, action, buf, n);
    }
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* ---- searching expert: acts only on what the agent's prompt shows ---- */

/* The one search order, over all receptacles: the open surfaces first (a look costs one
 * step), then the containers (go and open: two); within each, receptacle kinds in
 * name order, then numbers ascending ("cabinet 1" before "cabinet 2"). */
static int search_key(const hh_level *lv, int r) {
    int t = lv->recep[r].type;
    return (env_household_recep_openable(t) * HR_COUNT + t) * 256 + lv->recep[r].num;
}

/* The receptacle to look at next for objects of type otype: the first after the current
 * one in the search order among the kinds where otype can be kept (tables->allowed, both
 * splits: general knowledge, not this level's), leaving out skip_type; wraps around. */
static int next_search(const hh_tables *t, const hh_level *lv, int otype, int skip_type) {
    int here = lv->at >= 0 ? search_key(lv, lv->at) : -1, best = -1, first = -1;
    for (int r = 0; r < lv->n_recep; r++) {
        int ty = lv->recep[r].type;
        if (!t->allowed[otype][ty] || ty == skip_type) continue;
        int k = search_key(lv, r);
        if (first < 0 || k < search_key(lv, first)) first = r;
        if (k > here && (best < 0 || k < search_key(lv, best))) best = r;
    }
    return best >= 0 ? best : first;
}

/* The lowest-numbered receptacle of a kind: "sinkbasin 1", "cabinet 1". */
static int lowest_of(const hh_level *lv, int type) {
    int best = -1;
    for (int r = 0; r < lv->n_recep; r++)
        if (lv->recep[r].type == type && (best < 0 || lv->recep[r].num < lv->recep[best].num))
            best = r;
    return best;
}

/* An object of type otype the agent sees where it stands (what its admissible take or use
 * commands list): the first by name, or -1. Lamps count as seen only for use. */
static int seen_here(const hh_level *lv, int otype) {
    int at = lv->at;
    if (at < 0) return -1;
    for (int k = 0; k < lv->n_obj; k++) {
        int i = lv->obj_sorted[k];
        const hh_obj *o = &lv->obj[i];
        if (o->type != otype || o->loc != at) continue;
        if (is_lamp(otype) || (accessible(lv, at) && !o->floor)) return i;
    }
    return -1;
}

/* One step of the search for otype: take it if it is here (unless excluded), open the
 * closed container we stand at if it is one to search, else go on to the next one. */
static int search_step(const hh_tables *t, const hh_level *lv, int otype, int skip_type,
                       int take_ok, char *buf, size_t n) {
    int at = lv->at, o = seen_here(lv, otype);
    if (o >= 0 && take_ok)
        return snprintf(buf, n, "take %s from %s", lv->obj[o].name, lv->recep[at].name), 0;
    if (at >= 0 && !accessible(lv, at) && t->allowed[otype][lv->recep[at].type] &&
        lv->recep[at].type != skip_type)
        return snprintf(buf, n, "open %s", lv->recep[at].name), 0;
    int r = next_search(t, lv, otype, skip_type);
    if (r < 0) return -1;
    if (r == at) return -1; /* the only place to search, already searched */
    return snprintf(buf, n, "go to %s", lv->recep[r].name), 0;
}

/* The searching expert's reasoning for its command at this state, in few words (stage 0
 * teaches it as the reply's think text, which max_new_tokens bounds): what the task still
 * needs, what the prompt shows of it, and why this command. */
int env_household_search_reason(const hh_tables *t, const hh_level *lv, const char *action,
                                char *buf, size_t n) {
    (void)t;
    int X = lv->goal_obj, h = lv->held, at = lv->at;
    char xn[64]; /* "a cup", "an egg" */
    const char *name = env_household_obj_name(X);
    snprintf(xn, sizeof xn, "%s %s", strchr("aeiou", name[0]) ? "an" : "a", name);
    int holding_x = h >= 0 && lv->obj[h].type == X;
    int go = !strncmp(action, "go to ", 6), open = !strncmp(action, "open ", 5);
    const char *where = go ? action + 6 : open ? action + 5 : "";
    int w;
    if (h >= 0 && !holding_x) {
        w = snprintf(buf, n, "I hold %s, which the task does not need, so I put it down.",
                     lv->obj[h].name);
    } else if (holding_x && lv->family == HF_LOOK) {
        if (!strncmp(action, "use ", 4))
            w = snprintf(buf, n, "I hold %s and a lamp is here: I turn it on.", lv->obj[h].name);
        else
            w = snprintf(buf, n, "I hold %s. I need a lamp; next I look at %s.", lv->obj[h].name,
                         where);
    } else if (holding_x && env_household_needs_transform(lv) && !env_household_obj_done(lv, h)) {
        int kind = env_household_needs_transform(lv);
        const char *done = kind == HA_HEAT ? "heated" : kind == HA_COOL ? "cooled" : "cleaned";
        int A = lowest_of(lv, appliance_type(kind));
        const char *an = A >= 0 ? lv->recep[A].name : "?";
        if (go)
            w = snprintf(buf, n, "I hold %s. It must be %s with %s first, so I go there.",
                         lv->obj[h].name, done, an);
        else
            w = snprintf(buf, n, "I hold %s and %s is here: it gets %s now.", lv->obj[h].name, an,
                         done);
    } else if (holding_x) {
        const char *tn = lv->goal_recep >= 0 ? env_household_recep_name(lv->goal_recep) : "?";
        if (go)
            w = snprintf(buf, n, "I hold %s, ready for the %s: I go to %s.", lv->obj[h].name, tn,
                         where);
        else if (open)
            w = snprintf(buf, n, "I hold %s. %s is closed: I open it to put it in.",
                         lv->obj[h].name, where);
        else
            w = snprintf(buf, n, "I hold %s and the %s is here: I put it in.", lv->obj[h].name, tn);
    } else if (!strncmp(action, "take ", 5)) {
        const char *o = action + 5, *from = strstr(o, " from ");
        w = snprintf(buf, n, "I need %s and I see %.*s here: I take it.", xn,
                     (int)(from ? from - o : (ptrdiff_t)strlen(o)), o);
    } else if (open) {
        w = snprintf(buf, n, "I need %s. %s is closed and may hold one: I open it.", xn, where);
    } else if (go && at >= 0) {
        w = snprintf(buf, n, "I need %s and see none at %s; next I look at %s.", xn,
                     lv->recep[at].name, where);
    } else if (go) {
        w = snprintf(buf, n, "I need %s. I have looked nowhere yet; first I look at %s.", xn,
                     where);
    } else {
        w = snprintf(buf, n, "I need %s.", xn);
    }
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int env_household_search_action(const hh_tables *t, const hh_level *lv, char *buf, size_t n) {
    int X = lv->goal_obj, h = lv->held, at = lv->at;
    int holding_x = h >= 0 && lv->obj[h].type == X;
    if (h >= 0 && !holding_x) return drop(lv, buf, n);
    if (lv->family == HF_LOOK) {
        if (!holding_x) return search_step(t, lv, X, -1, 1, buf, n);
        int l = seen_here(lv, lv->lamp_type);
        if (l >= 0) return snprintf(buf, n, "use %s", lv->obj[l].name), 0;
        int r = next_search(t, lv, lv->lamp_type, -1);
        if (r < 0 || r == at) return -1;
        return snprintf(buf, n, "go to %s", lv->recep[r].name), 0;
    }
    int T = lowest_of(lv, lv->goal_recep);
    if (T < 0) return -1;
    if (holding_x) {
        int kind = env_household_needs_transform(lv);
        if (kind && !env_household_obj_done(lv, h)) {
            int A = lowest_of(lv, appliance_type(kind));
            if (A < 0) return -1;
            if (at != A) return snprintf(buf, n, "go to %s", lv->recep[A].name), 0;
            const char *verb = kind == HA_HEAT ? "heat" : kind == HA_COOL ? "cool" : "clean";
            return snprintf(buf, n, "%s %s with %s", verb, lv->obj[h].name, lv->recep[A].name), 0;
        }
        if (reach(lv, T, buf, n)) return 0;
        return snprintf(buf, n, "move %s to %s", lv->obj[h].name, lv->recep[T].name), 0;
    }
    /* Goal objects never start in the goal kind, so the search skips it; in T an object
     * of the task is one this episode put there (pick two: leave it). */
    return search_step(t, lv, X, lv->goal_recep, !(lv->family == HF_TWO && at == T), buf, n);
}
