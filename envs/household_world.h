/* household_world.h — the household env's world model, shared by its env, expert and
 * hindsight oracle (and by its tests, which read privileged state through it).
 *
 * Contract:
 *  - hh_tables holds the fixed, derived tables: which (object type, receptacle type)
 *    placements exist, which of them belong to the unseen split, and the 30 layout
 *    templates of each room type with their seen/unseen split. Built once by
 *    env_household_tables_init from the static data; a pure function of the code.
 *  - env_household_generate makes the level of (seed, split, families): same inputs,
 *    same level. A seen-split level (train, valid_seen) uses only seen placements and
 *    seen layouts; an unseen level only unseen ones, goal pairing included.
 *  - env_household_exec runs one command on a level with ALFWorld's semantics and
 *    writes ALFWorld's feedback text; every command not valid in the state gives
 *    "Nothing happens." and changes nothing. A command is valid iff it is in
 *    env_household_admissible's list (except "help", valid but not listed).
 *  - Nothing here allocates; all text goes into caller buffers, truncated safely. */
#ifndef SEED_HOUSEHOLD_WORLD_H
#define SEED_HOUSEHOLD_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "envs/env.h"

/* Receptacle types, in alphabetical order so that type order is name order. */
enum {
    HR_ARMCHAIR,
    HR_BATHTUBBASIN,
    HR_BED,
    HR_CABINET,
    HR_COFFEEMACHINE,
    HR_COFFEETABLE,
    HR_COUNTERTOP,
    HR_DESK,
    HR_DININGTABLE,
    HR_DRAWER,
    HR_DRESSER,
    HR_FRIDGE,
    HR_GARBAGECAN,
    HR_HANDTOWELHOLDER,
    HR_LAUNDRYHAMPER,
    HR_MICROWAVE,
    HR_SAFE,
    HR_SHELF,
    HR_SIDETABLE,
    HR_SINKBASIN,
    HR_SOFA,
    HR_STOVEBURNER,
    HR_TOASTER,
    HR_TOILET,
    HR_TOILETPAPERHANGER,
    HR_TOWELHOLDER,
    HR_TVSTAND,
    HR_COUNT
};

/* Object types, alphabetical as well. */
enum {
    HO_ALARMCLOCK,
    HO_APPLE,
    HO_BOOK,
    HO_BOWL,
    HO_BREAD,
    HO_BUTTERKNIFE,
    HO_CANDLE,
    HO_CD,
    HO_CELLPHONE,
    HO_CLOTH,
    HO_CREDITCARD,
    HO_CUP,
    HO_DESKLAMP,
    HO_DISHSPONGE,
    HO_EGG,
    HO_FLOORLAMP,
    HO_FORK,
    HO_HANDTOWEL,
    HO_KEYCHAIN,
    HO_KNIFE,
    HO_LADLE,
    HO_LAPTOP,
    HO_LETTUCE,
    HO_MUG,
    HO_NEWSPAPER,
    HO_PAN,
    HO_PEN,
    HO_PENCIL,
    HO_PEPPERSHAKER,
    HO_PILLOW,
    HO_PLATE,
    HO_POT,
    HO_POTATO,
    HO_REMOTECONTROL,
    HO_SALTSHAKER,
    HO_SOAPBAR,
    HO_SOAPBOTTLE,
    HO_SPATULA,
    HO_SPOON,
    HO_SPRAYBOTTLE,
    HO_STATUE,
    HO_TISSUEBOX,
    HO_TOILETPAPER,
    HO_TOMATO,
    HO_TOWEL,
    HO_VASE,
    HO_WATCH,
    HO_WINEBOTTLE,
    HO_COUNT
};

enum { HH_KITCHEN, HH_LIVINGROOM, HH_BEDROOM, HH_BATHROOM, HH_NROOM };

/* ALFWorld's six task families (TASK_TYPES in alfworld's alfred_tw_env.py). */
enum { HF_PICK, HF_LOOK, HF_CLEAN, HF_HEAT, HF_COOL, HF_TWO, HF_COUNT };

enum {
    HH_LAYOUTS = 30, /* layout templates per room type, like ALFWorld's 30 scenes */
    HH_MAX_RECEP = 48,
    HH_MAX_OBJ = 64,
    HH_MAX_PER_RECEP = 8, /* generation never puts more objects than this in one place */
    HH_NAME = 24,
    HH_TASK = 160,
    HH_MAX_ADM = 192,
    HH_ADM_ARENA = 12288,
    HH_OBS_CAP = 4096,
};

typedef struct hh_layout {
    uint8_t count[HR_COUNT]; /* instances of each receptacle type */
    int8_t lamp;             /* HO_DESKLAMP, HO_FLOORLAMP or -1 */
    uint32_t present;        /* bit r set when count[r] > 0 */
    uint64_t signature;      /* hash of (room, counts, lamp): equal layouts, equal hash */
} hh_layout;

typedef struct hh_tables {
    uint8_t allowed[HO_COUNT][HR_COUNT];     /* placement exists */
    uint8_t pair_unseen[HO_COUNT][HR_COUNT]; /* placement belongs to the unseen split */
    uint32_t hosts[2][HO_COUNT];             /* [unseen] bit r: placement in that split */
    hh_layout layout[HH_NROOM][HH_LAYOUTS];
    uint8_t layout_unseen[HH_NROOM][HH_LAYOUTS];
} hh_tables;

typedef struct hh_recep {
    uint8_t type, num, open;
    char name[HH_NAME]; /* "cabinet 4" */
} hh_recep;

enum { HH_HELD = -1 };

typedef struct hh_obj {
    uint8_t type, num;
    int8_t loc;    /* receptacle index, or HH_HELD */
    uint8_t floor; /* stands next to loc rather than in it (floorlamp) */
    uint8_t hot, cool, clean, on;
    char name[HH_NAME];
} hh_obj;

typedef struct hh_level {
    int room, layout, family, tmpl;
    int goal_obj;   /* object type X */
    int goal_recep; /* receptacle type R; -1 for look_at_obj_in_light */
    int lamp_type;  /* lamp object type of the look task, -1 otherwise */
    int need;       /* objects to place: 1, or 2 for pick_two_obj_and_place */
    int n_recep, n_obj;
    hh_recep recep[HH_MAX_RECEP]; /* display order: type name ascending, number descending */
    hh_obj obj[HH_MAX_OBJ];
    uint8_t obj_order[HH_MAX_OBJ];      /* objects in display order */
    uint8_t recep_sorted[HH_MAX_RECEP]; /* receptacles by strcmp of name (admissible order) */
    uint8_t obj_sorted[HH_MAX_OBJ];     /* objects by strcmp of name */
    int at;             /* receptacle index the agent faces, -1 = middle of the room */
    int held;           /* object index in hand, -1 = none */
    char task[HH_TASK]; /* "put a clean mug in coffeemachine." */
} hh_level;

/* What a command meant, valid or not (the oracle reads intent from it). */
enum {
    HA_UNKNOWN,
    HA_LOOK,
    HA_INVENTORY,
    HA_HELP,
    HA_GOTO,
    HA_OPEN,
    HA_CLOSE,
    HA_TAKE,
    HA_MOVE,
    HA_HEAT,
    HA_COOL,
    HA_CLEAN,
    HA_USE,
    HA_EXAMINE
};
typedef struct hh_event {
    int kind;  /* HA_* */
    int obj;   /* object index or -1 */
    int recep; /* receptacle index or -1 */
    int valid; /* 0 = "Nothing happens." */
} hh_event;

/* Static data access. */
const char *env_household_recep_name(int rtype);
const char *env_household_obj_name(int otype);
const char *env_household_room_name(int room);
const char *env_household_family_name(int family);
int env_household_family_parse(const char *s); /* name or alias -> HF_*, -1 if unknown */
int env_household_recep_openable(int rtype);

void env_household_tables_init(hh_tables *t);
int env_household_generate(const hh_tables *t, unsigned family_mask, uint64_t seed, env_split split,
                           hh_level *lv, char *err, size_t errlen);

/* Runs cmd (NULL = no action) and writes its feedback into obs. Returns ev.valid. */
int env_household_exec(hh_level *lv, const char *cmd, char *obs, size_t cap, hh_event *ev);
/* The opening text: welcome line, room overview and task line. */
void env_household_intro(const hh_level *lv, char *obs, size_t cap);
/* Sorted admissible commands written into arena; returns their number. */
int env_household_admissible(const hh_level *lv, char *arena, size_t cap, const char **out,
                             int max);
int env_household_won(const hh_level *lv);
/* The env's expert (env_vtable.expert): the next command from what the agent's prompt
 * shows, nothing hidden. It reads the task, the receptacle list, where the agent stands,
 * what it holds (with the heat/cool/clean it gave it, which the last steps show) and the
 * objects in sight there. To find an object it searches: the receptacles of the kinds
 * that can hold it (t->allowed), surfaces before containers, kinds by name, numbers
 * ascending, always going to the next one after where it stands (wrapping around);
 * a closed one is opened, the object taken as soon as it is in sight (the first by
 * name). The goal kind is skipped (goal objects never start there). Then it goes to the
 * lowest-numbered appliance (microwave, fridge, sinkbasin) and target receptacle of the
 * task's kind; a lamp is searched for like an object. Returns -1 when it has no move. */
int env_household_search_action(const hh_tables *t, const hh_level *lv, char *buf, size_t n);
/* The searching expert's reasoning for `action` (its own command at this state) in at
 * most n bytes: what the task still needs, what the prompt shows of it, why this command.
 * -1 when it does not fit. */
int env_household_search_reason(const hh_tables *t, const hh_level *lv, const char *action,
                                char *buf, size_t n);
/* The informed expert: the searching expert told what this episode's hindsight skill
 * says (the oracle's workflow names where the object it took was, and the lamp). It goes
 * straight to the first goal object by name (go, open, take) while none is in a
 * receptacle of the goal kind, and, holding the object in look, straight to the lamp;
 * otherwise it is the searching expert. Stage 0 plays it for the episodes whose prompts
 * carry the oracle's skill, so those demonstrations act on the skill. Its reasoning
 * cites the skill where it goes or opens on the skill's word; elsewhere it is the
 * searching expert's. */
int env_household_informed_action(const hh_tables *t, const hh_level *lv, char *buf, size_t n);
int env_household_informed_reason(const hh_tables *t, const hh_level *lv, const char *action,
                                  char *buf, size_t n);
/* "in" (cabinet, fridge, sinkbasin, ...) or "on" (countertop, shelf, ...): how the
 * observation and the oracle place an object in a receptacle of type rtype. */
const char *env_household_recep_prep(int rtype);
/* The omniscient direct route (privileged: it knows where every object is): the oracle's
 * yardstick for how short an episode can be, and tests that need the shortest plan. */
int env_household_omniscient_action(const hh_level *lv, char *buf, size_t n);

/* Oracle helpers shared with the expert. */
int env_household_needs_transform(const hh_level *lv); /* HA_HEAT/HA_COOL/HA_CLEAN or 0 */
int env_household_obj_done(const hh_level *lv, int o); /* has the property the task asks */

/* Config parsing shared by create and the oracle (keys: max_steps, families,
 * skill_facts). */
int env_household_config(const env_kv *kv, int n_kv, int *max_steps, unsigned *family_mask,
                         int *skill_observed, char *err, size_t errlen);
/* What the shared replay keeps after each step (env_vtable.trace_record): the level and
 * what the step's command meant (after the reset: HA_UNKNOWN, invalid). */
typedef struct hh_trace_rec {
    hh_level lv;
    hh_event ev;
} hh_trace_rec;
/* The rule-based hindsight oracle (env_vtable.oracle) over the replayed trace. */
int env_household_oracle(const env_trace *tr, env_skill *sk, char *err, size_t errlen);
/* The fixed tables of a household env. */
const hh_tables *env_household_tables(const env *e);
/* 1 when the env was configured skill_facts: observed (the oracle names only what the
 * episode saw), 0 for all. */
int env_household_skill_observed(const env *e);
extern const env_vtable env_household_vtable;
/* The live level of a household env (privileged state, for tests and tools). */
hh_level *env_household_level(env *e);

#endif
