/* household_data.c — the household env's static world data and its level generator.
 *
 * Contract (see household_world.h): the room recipes, object types with the receptacle
 * types they may sit in, the deterministic seen/unseen partition of placements and
 * layouts, and env_household_generate, which turns (seed, split, families) into a
 * level. The data follow ALFWorld (ALFRED scenes): kitchens, living rooms, bedrooms
 * and bathrooms with numbered receptacles; objects as in ALFRED's object classes.
 *
 * Split design: a placement (object type, receptacle type) is unseen when its position
 * i in the object's list satisfies (i + object) % 3 == 0 (at least one seen and one
 * unseen per object with two or more placements). A layout is unseen when its
 * signature hash is among the 6 smallest distinct hashes of its room's 30 templates,
 * so two templates that happen to be equal always fall on the same side. Seen-split
 * levels use only seen placements and layouts, unseen levels only unseen ones. */
#include "envs/household_world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { RK = 1 << HH_KITCHEN, RL = 1 << HH_LIVINGROOM, RB = 1 << HH_BEDROOM, RT = 1 << HH_BATHROOM };
enum { F_HEAT = 1, F_COOL = 2, F_CLEAN = 4, F_LOOK = 8, F_TWO = 16, F_LAMP = 32 };

static const char *const recep_names[HR_COUNT] = {
    "armchair",    "bathtubbasin", "bed",        "cabinet",         "coffeemachine",
    "coffeetable", "countertop",   "desk",       "diningtable",     "drawer",
    "dresser",     "fridge",       "garbagecan", "handtowelholder", "laundryhamper",
    "microwave",   "safe",         "shelf",      "sidetable",       "sinkbasin",
    "sofa",        "stoveburner",  "toaster",    "toilet",          "toiletpaperhanger",
    "towelholder", "tvstand"};

typedef struct hh_odef {
    const char *name;
    uint8_t rooms, flags;
    int8_t place[12]; /* receptacle types, -1 terminated */
} hh_odef;

#define P(...)                                                                                     \
    { __VA_ARGS__, -1 }
static const hh_odef obj_defs[HO_COUNT] = {
    [HO_ALARMCLOCK] = {"alarmclock", RB, F_LOOK | F_TWO,
                       P(HR_DESK, HR_DRESSER, HR_SHELF, HR_SIDETABLE)},
    [HO_APPLE] = {"apple", RK, F_HEAT | F_COOL | F_CLEAN,
                  P(HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_GARBAGECAN, HR_MICROWAVE,
                    HR_SINKBASIN)},
    [HO_BOOK] = {"book", RL | RB, F_LOOK | F_TWO,
                 P(HR_BED, HR_COFFEETABLE, HR_DESK, HR_DININGTABLE, HR_DRESSER, HR_SHELF,
                   HR_SIDETABLE, HR_SOFA, HR_ARMCHAIR)},
    [HO_BOWL] = {"bowl", RK | RL | RB, F_COOL | F_CLEAN | F_LOOK | F_TWO,
                 P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_MICROWAVE, HR_SHELF,
                   HR_SINKBASIN, HR_DESK, HR_COFFEETABLE, HR_SIDETABLE)},
    [HO_BREAD] = {"bread", RK, F_HEAT | F_COOL,
                  P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_MICROWAVE)},
    [HO_BUTTERKNIFE] = {"butterknife", RK, F_CLEAN | F_TWO,
                        P(HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SINKBASIN)},
    [HO_CANDLE] = {"candle", RT | RL, F_TWO,
                   P(HR_CABINET, HR_COUNTERTOP, HR_SHELF, HR_TOILET, HR_COFFEETABLE, HR_SIDETABLE,
                     HR_DRESSER)},
    [HO_CD] = {"cd", RL | RB, F_LOOK | F_TWO,
               P(HR_DESK, HR_DRAWER, HR_DRESSER, HR_SAFE, HR_SHELF, HR_SIDETABLE, HR_GARBAGECAN)},
    [HO_CELLPHONE] = {"cellphone", RL | RB, F_LOOK | F_TWO,
                      P(HR_BED, HR_DESK, HR_DRAWER, HR_DRESSER, HR_SIDETABLE, HR_SOFA, HR_ARMCHAIR,
                        HR_COFFEETABLE, HR_SHELF)},
    [HO_CLOTH] = {"cloth", RT | RB, F_CLEAN | F_TWO,
                  P(HR_BATHTUBBASIN, HR_CABINET, HR_COUNTERTOP, HR_DRAWER, HR_SINKBASIN, HR_TOILET,
                    HR_LAUNDRYHAMPER, HR_DRESSER)},
    [HO_CREDITCARD] = {"creditcard", RL | RB, F_LOOK | F_TWO,
                       P(HR_ARMCHAIR, HR_COFFEETABLE, HR_DESK, HR_DRAWER, HR_DRESSER, HR_SHELF,
                         HR_SIDETABLE, HR_SOFA)},
    [HO_CUP] = {"cup", RK, F_HEAT | F_COOL | F_CLEAN | F_TWO,
                P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_MICROWAVE, HR_SHELF,
                  HR_SINKBASIN)},
    [HO_DESKLAMP] = {"desklamp", RL | RB, F_LAMP, P(HR_DESK, HR_DRESSER, HR_SIDETABLE)},
    [HO_DISHSPONGE] = {"dishsponge", RK | RT, F_CLEAN | F_TWO,
                       P(HR_CABINET, HR_COUNTERTOP, HR_DRAWER, HR_SINKBASIN, HR_TOILET, HR_SHELF)},
    [HO_EGG] = {"egg", RK, F_HEAT | F_COOL | F_CLEAN,
                P(HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_GARBAGECAN, HR_MICROWAVE,
                  HR_SINKBASIN)},
    [HO_FLOORLAMP] = {"floorlamp", RL | RB, F_LAMP, P(HR_ARMCHAIR, HR_BED, HR_SIDETABLE, HR_SOFA)},
    [HO_FORK] = {"fork", RK, F_CLEAN | F_TWO,
                 P(HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SINKBASIN)},
    [HO_HANDTOWEL] = {"handtowel", RT, 0, P(HR_HANDTOWELHOLDER)},
    [HO_KEYCHAIN] = {"keychain", RL | RB, F_LOOK | F_TWO,
                     P(HR_ARMCHAIR, HR_COFFEETABLE, HR_DESK, HR_DRAWER, HR_DRESSER, HR_SAFE,
                       HR_SHELF, HR_SIDETABLE, HR_SOFA)},
    [HO_KNIFE] = {"knife", RK, F_CLEAN | F_TWO,
                  P(HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SINKBASIN)},
    [HO_LADLE] = {"ladle", RK, F_CLEAN, P(HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SINKBASIN)},
    [HO_LAPTOP] = {"laptop", RL | RB, F_LOOK,
                   P(HR_ARMCHAIR, HR_BED, HR_COFFEETABLE, HR_DESK, HR_DININGTABLE, HR_DRESSER,
                     HR_SOFA)},
    [HO_LETTUCE] = {"lettuce", RK, F_COOL | F_CLEAN,
                    P(HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_SINKBASIN)},
    [HO_MUG] = {"mug", RK | RB, F_HEAT | F_COOL | F_CLEAN | F_LOOK | F_TWO,
                P(HR_CABINET, HR_COFFEEMACHINE, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE,
                  HR_MICROWAVE, HR_SHELF, HR_SINKBASIN, HR_DESK)},
    [HO_NEWSPAPER] = {"newspaper", RL, F_TWO,
                      P(HR_ARMCHAIR, HR_COFFEETABLE, HR_DININGTABLE, HR_SIDETABLE, HR_SOFA,
                        HR_TVSTAND)},
    [HO_PAN] = {"pan", RK, F_COOL | F_CLEAN,
                P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_SINKBASIN,
                  HR_STOVEBURNER)},
    [HO_PEN] = {"pen", RL | RB, F_LOOK | F_TWO,
                P(HR_DESK, HR_DRAWER, HR_DRESSER, HR_SHELF, HR_SIDETABLE)},
    [HO_PENCIL] = {"pencil", RL | RB, F_LOOK | F_TWO,
                   P(HR_DESK, HR_DRAWER, HR_DRESSER, HR_SHELF, HR_SIDETABLE)},
    [HO_PEPPERSHAKER] = {"peppershaker", RK, F_TWO,
                         P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SHELF)},
    [HO_PILLOW] = {"pillow", RL | RB, F_LOOK | F_TWO, P(HR_ARMCHAIR, HR_BED, HR_SOFA)},
    [HO_PLATE] = {"plate", RK, F_HEAT | F_COOL | F_CLEAN | F_TWO,
                  P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_MICROWAVE, HR_SHELF,
                    HR_SINKBASIN)},
    [HO_POT] = {"pot", RK, F_COOL | F_CLEAN,
                P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_SINKBASIN,
                  HR_STOVEBURNER)},
    [HO_POTATO] = {"potato", RK, F_HEAT | F_COOL | F_CLEAN,
                   P(HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_GARBAGECAN, HR_MICROWAVE,
                     HR_SINKBASIN)},
    [HO_REMOTECONTROL] = {"remotecontrol", RL | RB, F_LOOK | F_TWO,
                          P(HR_ARMCHAIR, HR_COFFEETABLE, HR_DRESSER, HR_SIDETABLE, HR_SOFA,
                            HR_TVSTAND, HR_DRAWER)},
    [HO_SALTSHAKER] = {"saltshaker", RK, F_TWO,
                       P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SHELF)},
    [HO_SOAPBAR] = {"soapbar", RT, F_CLEAN | F_TWO,
                    P(HR_BATHTUBBASIN, HR_CABINET, HR_COUNTERTOP, HR_GARBAGECAN, HR_SINKBASIN,
                      HR_TOILET)},
    [HO_SOAPBOTTLE] = {"soapbottle", RT | RK, F_TWO,
                       P(HR_CABINET, HR_COUNTERTOP, HR_GARBAGECAN, HR_SHELF, HR_SINKBASIN,
                         HR_TOILET)},
    [HO_SPATULA] = {"spatula", RK, F_CLEAN,
                    P(HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SINKBASIN)},
    [HO_SPOON] = {"spoon", RK, F_CLEAN | F_TWO,
                  P(HR_COUNTERTOP, HR_DININGTABLE, HR_DRAWER, HR_SINKBASIN)},
    [HO_SPRAYBOTTLE] = {"spraybottle", RT, F_TWO,
                        P(HR_CABINET, HR_COUNTERTOP, HR_GARBAGECAN, HR_SHELF, HR_TOILET)},
    [HO_STATUE] = {"statue", RL, F_LOOK,
                   P(HR_COFFEETABLE, HR_DININGTABLE, HR_DRESSER, HR_SHELF, HR_SIDETABLE,
                     HR_TVSTAND)},
    [HO_TISSUEBOX] = {"tissuebox", RL | RT, F_TWO,
                      P(HR_COFFEETABLE, HR_COUNTERTOP, HR_DRESSER, HR_SHELF, HR_SIDETABLE,
                        HR_TOILET, HR_CABINET)},
    [HO_TOILETPAPER] = {"toiletpaper", RT, F_TWO,
                        P(HR_CABINET, HR_COUNTERTOP, HR_GARBAGECAN, HR_SHELF, HR_TOILET,
                          HR_TOILETPAPERHANGER)},
    [HO_TOMATO] = {"tomato", RK, F_HEAT | F_COOL | F_CLEAN,
                   P(HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_GARBAGECAN, HR_MICROWAVE,
                     HR_SINKBASIN)},
    [HO_TOWEL] = {"towel", RT, F_TWO,
                  P(HR_TOWELHOLDER, HR_BATHTUBBASIN, HR_CABINET, HR_COUNTERTOP)},
    [HO_VASE] = {"vase", RL, F_LOOK,
                 P(HR_COFFEETABLE, HR_DRESSER, HR_SHELF, HR_SIDETABLE, HR_TVSTAND, HR_DININGTABLE)},
    [HO_WATCH] = {"watch", RL | RB, F_LOOK | F_TWO,
                  P(HR_COFFEETABLE, HR_DESK, HR_DRESSER, HR_DRAWER, HR_SAFE, HR_SHELF,
                    HR_SIDETABLE)},
    [HO_WINEBOTTLE] = {"winebottle", RK, F_COOL,
                       P(HR_CABINET, HR_COUNTERTOP, HR_DININGTABLE, HR_FRIDGE, HR_SHELF)},
};
#undef P

typedef struct hh_recipe {
    int8_t type;
    uint8_t lo, hi;
} hh_recipe;

#define END                                                                                        \
    { -1, 0, 0 }
static const hh_recipe kitchen_recipe[] = {{HR_CABINET, 3, 12},
                                           {HR_COFFEEMACHINE, 1, 1},
                                           {HR_COUNTERTOP, 1, 3},
                                           {HR_DININGTABLE, 0, 1},
                                           {HR_DRAWER, 1, 8},
                                           {HR_FRIDGE, 1, 1},
                                           {HR_GARBAGECAN, 1, 1},
                                           {HR_MICROWAVE, 1, 1},
                                           {HR_SHELF, 0, 3},
                                           {HR_SINKBASIN, 1, 1},
                                           {HR_STOVEBURNER, 2, 4},
                                           {HR_TOASTER, 0, 1},
                                           END};
static const hh_recipe living_recipe[] = {{HR_ARMCHAIR, 0, 2},
                                          {HR_CABINET, 0, 4},
                                          {HR_COFFEETABLE, 1, 2},
                                          {HR_DININGTABLE, 0, 1},
                                          {HR_DRAWER, 0, 4},
                                          {HR_DRESSER, 0, 1},
                                          {HR_GARBAGECAN, 1, 1},
                                          {HR_SAFE, 0, 1},
                                          {HR_SHELF, 0, 6},
                                          {HR_SIDETABLE, 1, 3},
                                          {HR_SOFA, 1, 1},
                                          {HR_TVSTAND, 0, 1},
                                          END};
static const hh_recipe bedroom_recipe[] = {{HR_ARMCHAIR, 0, 1},
                                           {HR_BED, 1, 1},
                                           {HR_DESK, 0, 2},
                                           {HR_DRAWER, 2, 8},
                                           {HR_DRESSER, 0, 1},
                                           {HR_GARBAGECAN, 1, 1},
                                           {HR_LAUNDRYHAMPER, 0, 1},
                                           {HR_SAFE, 0, 1},
                                           {HR_SHELF, 0, 6},
                                           {HR_SIDETABLE, 0, 2},
                                           END};
static const hh_recipe bathroom_recipe[] = {{HR_BATHTUBBASIN, 0, 1}, {HR_CABINET, 2, 4},
                                            {HR_COUNTERTOP, 1, 1},   {HR_DRAWER, 0, 4},
                                            {HR_GARBAGECAN, 1, 1},   {HR_HANDTOWELHOLDER, 0, 2},
                                            {HR_SHELF, 0, 3},        {HR_SINKBASIN, 1, 2},
                                            {HR_TOILET, 1, 1},       {HR_TOILETPAPERHANGER, 1, 1},
                                            {HR_TOWELHOLDER, 0, 1},  END};
#undef END

static const hh_recipe *const room_recipes[HH_NROOM] = {kitchen_recipe, living_recipe,
                                                        bedroom_recipe, bathroom_recipe};
static const char *const room_names[HH_NROOM] = {"kitchen", "livingroom", "bedroom", "bathroom"};
static const int room_has_lamp[HH_NROOM] = {0, 1, 1, 0};

static const char *const family_names[HF_COUNT] = {
    "pick_and_place_simple",          "look_at_obj_in_light",
    "pick_clean_then_place_in_recep", "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",  "pick_two_obj_and_place"};
static const char *const family_aliases[HF_COUNT] = {"pick", "look", "clean",
                                                     "heat", "cool", "pick_two"};
/* Rooms where a family can be posed: heat and cool need the kitchen's microwave and
 * fridge, clean a sinkbasin, look a lamp. */
static const unsigned family_rooms[HF_COUNT] = {RK | RL | RB | RT, RL | RB, RK | RT, RK, RK,
                                                RK | RL | RB | RT};
static const unsigned family_flag[HF_COUNT] = {0, F_LOOK, F_CLEAN, F_HEAT, F_COOL, F_TWO};

/* ALFWorld's two goal templates per family (alfworld/gen/goal_library.py). */
static const char *const family_templates[HF_COUNT][2] = {
    {"put a %s in %s.", "put some %s on %s."},
    {"look at %s under the %s.", "examine the %s with the %s."},
    {"put a clean %s in %s.", "clean some %s and put it in %s."},
    {"put a hot %s in %s.", "heat some %s and put it in %s."},
    {"put a cool %s in %s.", "cool some %s and put it in %s."},
    {"put two %s in %s.", "find two %s and put them in %s."},
};

const char *env_household_recep_name(int t) {
    return t >= 0 && t < HR_COUNT ? recep_names[t] : "?";
}
const char *env_household_obj_name(int t) {
    return t >= 0 && t < HO_COUNT ? obj_defs[t].name : "?";
}
const char *env_household_room_name(int r) {
    return r >= 0 && r < HH_NROOM ? room_names[r] : "?";
}
const char *env_household_family_name(int f) {
    return f >= 0 && f < HF_COUNT ? family_names[f] : "?";
}

int env_household_family_parse(const char *s) {
    for (int f = 0; f < HF_COUNT; f++)
        if (strcmp(s, family_names[f]) == 0 || strcmp(s, family_aliases[f]) == 0) return f;
    if (strcmp(s, "pick_and_place") == 0) return HF_PICK; /* verl-agent's metric name */
    return -1;
}

int env_household_recep_openable(int t) {
    return t == HR_CABINET || t == HR_DRAWER || t == HR_FRIDGE || t == HR_MICROWAVE || t == HR_SAFE;
}

static uint64_t layout_signature(int room, const hh_layout *l) {
    uint8_t buf[HR_COUNT + 2];
    buf[0] = (uint8_t)room;
    memcpy(buf + 1, l->count, HR_COUNT);
    buf[HR_COUNT + 1] = (uint8_t)(l->lamp + 1);
    return seed_fnv1a64(buf, sizeof buf);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void env_household_tables_init(hh_tables *t) {
    memset(t, 0, sizeof *t);
    for (int o = 0; o < HO_COUNT; o++) {
        int k = 0;
        while (obj_defs[o].place[k] >= 0) k++;
        int n_unseen = 0;
        for (int i = 0; i < k; i++) {
            int r = obj_defs[o].place[i];
            t->allowed[o][r] = 1;
            t->pair_unseen[o][r] = (uint8_t)((i + o) % 3 == 0 && k >= 2);
            n_unseen += t->pair_unseen[o][r];
        }
        if (k >= 2 && n_unseen == 0) t->pair_unseen[o][obj_defs[o].place[k - 1]] = 1;
        for (int r = 0; r < HR_COUNT; r++)
            if (t->allowed[o][r]) t->hosts[t->pair_unseen[o][r]][o] |= 1u << r;
    }
    for (int room = 0; room < HH_NROOM; room++) {
        uint64_t sig[HH_LAYOUTS];
        for (int id = 0; id < HH_LAYOUTS; id++) {
            hh_layout *l = &t->layout[room][id];
            seed_rng r;
            seed_rng_init(&r, seed_hash_mix(0x686f757365ULL + (uint64_t)room, (uint64_t)id));
            for (const hh_recipe *it = room_recipes[room]; it->type >= 0; it++)
                l->count[it->type] =
                    (uint8_t)(it->lo + seed_rng_below(&r, (uint64_t)(it->hi - it->lo + 1)));
            l->lamp = -1;
            if (room_has_lamp[room]) {
                int desk_hosts = l->count[HR_DESK] + l->count[HR_DRESSER] + l->count[HR_SIDETABLE];
                l->lamp =
                    (seed_rng_below(&r, 2) == 0 && desk_hosts > 0) ? HO_DESKLAMP : HO_FLOORLAMP;
            }
            for (int rt = 0; rt < HR_COUNT; rt++)
                if (l->count[rt]) l->present |= 1u << rt;
            l->signature = layout_signature(room, l);
            sig[id] = l->signature;
        }
        /* The 6 smallest distinct signatures of the room are its unseen layouts. */
        qsort(sig, HH_LAYOUTS, sizeof sig[0], cmp_u64);
        uint64_t thresh = sig[0];
        for (int i = 1, distinct = 1; i < HH_LAYOUTS && distinct < 6; i++)
            if (sig[i] != sig[i - 1]) {
                thresh = sig[i];
                distinct++;
            }
        for (int id = 0; id < HH_LAYOUTS; id++)
            t->layout_unseen[room][id] = (uint8_t)(t->layout[room][id].signature <= thresh);
    }
}

/* Adds an object of type o on a random host allowed in the split (not of type
 * avoid_type); returns its index or -1 when there is no host or no room left. fill[r]
 * counts the objects placed in receptacle r so far. */
static int place_obj(const hh_tables *t, hh_level *lv, uint8_t *fill, seed_rng *rng, int o,
                     int avoid_type, int unseen) {
    if (lv->n_obj >= HH_MAX_OBJ) return -1;
    uint32_t ok = t->hosts[unseen][o] & ~(avoid_type >= 0 ? 1u << avoid_type : 0u);
    int hosts[HH_MAX_RECEP], nh = 0;
    for (int r = 0; r < lv->n_recep; r++)
        if ((ok >> lv->recep[r].type & 1u) && fill[r] < HH_MAX_PER_RECEP) hosts[nh++] = r;
    if (nh == 0) return -1;
    hh_obj *ob = &lv->obj[lv->n_obj];
    memset(ob, 0, sizeof *ob);
    ob->type = (uint8_t)o;
    int r = hosts[seed_rng_below(rng, (uint64_t)nh)];
    ob->loc = (int8_t)r;
    ob->floor = o == HO_FLOORLAMP;
    fill[r]++;
    return lv->n_obj++;
}

/* "cabinet 12" without printf (generation builds dozens of names per level). */
static void make_name(char *out, const char *type, int num) {
    size_t n = strlen(type);
    if (n > HH_NAME - 4) n = HH_NAME - 4;
    memcpy(out, type, n);
    out[n++] = ' ';
    if (num >= 10) out[n++] = (char)('0' + num / 10 % 10);
    out[n++] = (char)('0' + num % 10);
    out[n] = '\0';
}

static int cmp_obj_display(const hh_level *lv, int a, int b) {
    const hh_obj *x = &lv->obj[a], *y = &lv->obj[b];
    if (x->type != y->type) return x->type < y->type ? -1 : 1;
    return x->num > y->num ? -1 : x->num < y->num;
}

static void finish_level(hh_level *lv) {
    int next[HO_COUNT];
    for (int i = 0; i < HO_COUNT; i++) next[i] = 1;
    for (int i = 0; i < lv->n_obj; i++) {
        hh_obj *o = &lv->obj[i];
        o->num = (uint8_t)next[o->type]++;
        make_name(o->name, obj_defs[o->type].name, o->num);
    }
    for (int i = 0; i < lv->n_obj; i++) lv->obj_order[i] = (uint8_t)i;
    for (int i = 1; i < lv->n_obj; i++) /* insertion sort: n is small */
        for (int j = i; j > 0 && cmp_obj_display(lv, lv->obj_order[j - 1], lv->obj_order[j]) > 0;
             j--) {
            uint8_t tmp = lv->obj_order[j];
            lv->obj_order[j] = lv->obj_order[j - 1];
            lv->obj_order[j - 1] = tmp;
        }
    /* Name orders for the admissible list, which ALFWorld sorts as strings. */
    for (int i = 0; i < lv->n_recep; i++) lv->recep_sorted[i] = (uint8_t)i;
    for (int i = 1; i < lv->n_recep; i++)
        for (int j = i; j > 0 && strcmp(lv->recep[lv->recep_sorted[j - 1]].name,
                                        lv->recep[lv->recep_sorted[j]].name) > 0;
             j--) {
            uint8_t tmp = lv->recep_sorted[j];
            lv->recep_sorted[j] = lv->recep_sorted[j - 1];
            lv->recep_sorted[j - 1] = tmp;
        }
    for (int i = 0; i < lv->n_obj; i++) lv->obj_sorted[i] = (uint8_t)i;
    for (int i = 1; i < lv->n_obj; i++)
        for (int j = i; j > 0 && strcmp(lv->obj[lv->obj_sorted[j - 1]].name,
                                        lv->obj[lv->obj_sorted[j]].name) > 0;
             j--) {
            uint8_t tmp = lv->obj_sorted[j];
            lv->obj_sorted[j] = lv->obj_sorted[j - 1];
            lv->obj_sorted[j - 1] = tmp;
        }
    lv->at = -1;
    lv->held = -1;
}

typedef struct goal_cand {
    int8_t obj, recep;
} goal_cand;

int env_household_generate(const hh_tables *t, unsigned family_mask, uint64_t seed, env_split split,
                           hh_level *lv, char *err, size_t errlen) {
    /* a level is all bytes of (seed, split): no stale name tails from the last one */
    memset(lv, 0, sizeof *lv);
    int unseen = split == ENV_SPLIT_UNSEEN;
    int fams[HF_COUNT], nf = 0;
    for (int f = 0; f < HF_COUNT; f++)
        if (family_mask & (1u << f)) fams[nf++] = f;
    if (nf == 0) return seed_errf(err, errlen, "household: no task family enabled");
    seed_rng rng;
    seed_rng_init(&rng, seed_hash_mix(seed_hash_mix(seed, (uint64_t)split + 1), 0x68686c766cULL));
    /* The family is drawn once, so families stay uniform; the rest is redrawn until
     * the family can be posed in the split. */
    int fam = fams[seed_rng_below(&rng, (uint64_t)nf)];
    for (int attempt = 0; attempt < 256; attempt++) {
        memset(lv, 0, offsetof(hh_level, recep));
        lv->n_recep = lv->n_obj = 0;
        int rooms[HH_NROOM], nr = 0;
        for (int r = 0; r < HH_NROOM; r++)
            if (family_rooms[fam] & (1u << r)) rooms[nr++] = r;
        int room = rooms[seed_rng_below(&rng, (uint64_t)nr)];
        int ids[HH_LAYOUTS], ni = 0;
        for (int id = 0; id < HH_LAYOUTS; id++)
            if (t->layout_unseen[room][id] == unseen) ids[ni++] = id;
        int lid = ids[seed_rng_below(&rng, (uint64_t)ni)];
        const hh_layout *L = &t->layout[room][lid];

        int lamp_ok = L->lamp >= 0 && (t->hosts[unseen][L->lamp] & L->present) != 0;
        goal_cand cand[HO_COUNT * HR_COUNT];
        int nc = 0;
        for (int o = 0; o < HO_COUNT; o++) {
            const hh_odef *d = &obj_defs[o];
            if (!(d->rooms & (1u << room)) || (d->flags & F_LAMP)) continue;
            if (family_flag[fam] && !(d->flags & family_flag[fam])) continue;
            uint32_t m = t->hosts[unseen][o] & L->present;
            if (fam == HF_LOOK) {
                if (lamp_ok && m) cand[nc++] = (goal_cand){(int8_t)o, -1};
                continue;
            }
            /* a goal receptacle type, with another type to start from */
            for (int r = 0; r < HR_COUNT; r++)
                if ((m >> r & 1u) && (m & ~(1u << r)))
                    cand[nc++] = (goal_cand){(int8_t)o, (int8_t)r};
        }
        if (nc == 0) continue;
        goal_cand g = cand[seed_rng_below(&rng, (uint64_t)nc)];

        lv->room = room;
        lv->layout = lid;
        lv->family = fam;
        lv->goal_obj = g.obj;
        lv->goal_recep = g.recep;
        lv->lamp_type = fam == HF_LOOK ? L->lamp : -1;
        lv->need = fam == HF_TWO ? 2 : 1;
        for (int r = 0; r < HR_COUNT; r++)
            for (int num = L->count[r]; num >= 1; num--) {
                hh_recep *rc = &lv->recep[lv->n_recep++];
                rc->type = (uint8_t)r;
                rc->num = (uint8_t)num;
                rc->open = 0;
                make_name(rc->name, recep_names[r], num);
            }
        uint8_t fill[HH_MAX_RECEP] = {0};
        if (lamp_ok) place_obj(t, lv, fill, &rng, L->lamp, -1, unseen);
        if (fam == HF_LOOK && lv->n_obj == 0) continue;

        int n_goal = (fam == HF_TWO ? 2 : 1) + (int)seed_rng_below(&rng, 2);
        int placed = 0;
        for (int i = 0; i < n_goal; i++)
            placed += place_obj(t, lv, fill, &rng, g.obj, g.recep, unseen) >= 0;
        if (placed < lv->need) continue;

        int pool[HO_COUNT], np = 0;
        for (int o = 0; o < HO_COUNT; o++)
            if ((obj_defs[o].rooms & (1u << room)) && !(obj_defs[o].flags & F_LAMP) && o != g.obj)
                pool[np++] = o;
        int per_type[HO_COUNT] = {0};
        int n_distract = 6 + (int)seed_rng_below(&rng, 13);
        for (int i = 0; i < n_distract && np > 0; i++) {
            int o = pool[seed_rng_below(&rng, (uint64_t)np)];
            if (per_type[o] >= 3) continue;
            if (place_obj(t, lv, fill, &rng, o, -1, unseen) >= 0) per_type[o]++;
        }
        lv->tmpl = (int)seed_rng_below(&rng, 2);
        const char *what = fam == HF_LOOK ? obj_defs[L->lamp].name : recep_names[g.recep];
        snprintf(lv->task, sizeof lv->task, family_templates[fam][lv->tmpl], obj_defs[g.obj].name,
                 what);
        finish_level(lv);
        return 0;
    }
    return seed_errf(err, errlen, "household: could not generate a level for seed %llu",
                     (unsigned long long)seed);
}
