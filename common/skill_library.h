/* skill_library.h — a fixed skill library: for each env and task family, an episode
 * skill and up to SKILL_LIB_MAX_STEPS step skills, read from JSON. The baselines that
 * use skills written once instead of hindsight skills read it: `skill_prompt` (the
 * actor puts them in its acting prompt) and `static_skills` (the analyzer uses them as
 * the teacher context of q). It lives in common/ so the actor and the analyzer share
 * it without including each other's headers.
 *
 * File format (one file per env; deploy/skills/<env>.json ships one per built-in env,
 * written by tests/skills/skill_gen from the env's hindsight oracle):
 *
 *   {
 *     "format": "seed-skill-library/1",
 *     "env": "sokoban",
 *     "skills": {
 *       "sokoban": {"episode": "Workflow that worked: ...",
 *                   "steps": ["step 1: Push ...", "step 3: ..."]},
 *       "*":       {"episode": "...", "steps": []}
 *     }
 *   }
 *
 *  - "format" is optional; when present it must be "seed-skill-library/1".
 *  - "env": the env's registry name. "skills": one entry per task family (the env's
 *    env_obs.family names, e.g. household's "pick_clean_then_place_in_recep"); the
 *    family "*" serves every family without an entry of its own. At least one entry.
 *  - "episode": non-empty text. "steps" (optional): up to SKILL_LIB_MAX_STEPS lines
 *    "step k: sentence" (k >= 1, strictly increasing) — the form roles/skill.h
 *    parses; step skill k goes into the step slot of the episode's k-th prompt.
 *  - Bounds: a file of at most SKILL_LIB_MAX_FILE bytes, SKILL_LIB_MAX_FAMILIES
 *    entries, family names under SKILL_LIB_NAME_LEN bytes, step lines of at most
 *    SKILL_LIB_LINE_MAX bytes, and an entry's whole skill text (the episode skill plus
 *    its step lines, one per line) of at most SKILL_LIB_TEXT_MAX bytes.
 *  - Any other key is an error (a misspelt key would otherwise be ignored). Errors name
 *    the file, the key path (`skills.heat.steps[2]`) and what was expected.
 *
 * algorithm.skill_library is one such file (a job with one env) or a directory with
 * <env>.json for each env of the job; empty means the shipped deploy/skills directory,
 * found like the tiny model (job_resolve fills it in the modes that read a library). */
#ifndef SEED_SKILL_LIBRARY_H
#define SEED_SKILL_LIBRARY_H

#include <stddef.h>

enum {
    /* The one limit on step skills per skill: the upper bound of analyzer.max_step_skills,
     * what skill_parsed (roles/skill.h) keeps, and a library entry's "steps". */
    SKILL_LIB_MAX_STEPS = 16,
    SKILL_LIB_MAX_FILE = 1 << 20,
    SKILL_LIB_MAX_FAMILIES = 64,
    SKILL_LIB_NAME_LEN = 64,
    SKILL_LIB_LINE_MAX = 500,
    SKILL_LIB_TEXT_MAX = 2000,
    SKILL_LIB_MAX_ENVS = 16,
};

typedef struct skill_lib_entry {
    char env[SKILL_LIB_NAME_LEN];
    char family[SKILL_LIB_NAME_LEN]; /* "*": the env-wide fallback */
    char *episode;                   /* malloc'd */
    int n_steps;
    int step_no[SKILL_LIB_MAX_STEPS]; /* 1-based, increasing */
    char *step[SKILL_LIB_MAX_STEPS];  /* malloc'd: the sentence after "step k:" */
} skill_lib_entry;

typedef struct skill_lib {
    int n;
    skill_lib_entry *e;
    int n_files;
    char env_of_file[SKILL_LIB_MAX_ENVS][SKILL_LIB_NAME_LEN]; /* one file per env */
} skill_lib;

/* Parse one library document (name is the file name errors show) and add its env's
 * entries to lib (zero-initialised before the first call). A second document for the
 * same env is an error. On error lib is unchanged. */
int skill_lib_parse(skill_lib *lib, const char *text, size_t len, const char *name, char *err,
                    size_t errlen);
/* Read and parse one file. */
int skill_lib_load_file(skill_lib *lib, const char *path, char *err, size_t errlen);
/* What a job reads: algorithm.skill_library (a file or a directory of <env>.json) for
 * every env of the job; an env of the job the library does not cover is an error. */
struct job_config;
int skill_lib_load_job(skill_lib *lib, const struct job_config *job, char *err, size_t errlen);
void skill_lib_free(skill_lib *lib);

/* The entry for (env, family): the family's own, else the env's "*", else NULL. */
const skill_lib_entry *skill_lib_find(const skill_lib *lib, const char *env, const char *family);
/* The step skill for 1-based step k among the entry's first max_steps, or NULL. */
const char *skill_lib_step(const skill_lib_entry *e, int k, int max_steps);
/* The entry as one skill text: the episode skill, then "step k: sentence" lines (the
 * first max_steps), newline-separated — what skill_parse reads. Returns the
 * length, or -1 when it does not fit in n bytes. */
int skill_lib_text(const skill_lib_entry *e, int max_steps, char *buf, size_t n);

/* Recognise one trimmed line "step k: sentence" (case-insensitive "step", k >= 1):
 * 1 with *k and *sentence (spaces after the colon skipped), else 0. */
int skill_lib_step_line(const char *line, int *k, const char **sentence);

#endif
