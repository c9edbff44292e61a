/* skill.h — hindsight skills: the prompt an analyzer (the policy itself, or a model
 * trained in stage 1) answers to write an episode's skill, the parsing of a skill text
 * into the episode skill and its "step k: ..." lines, and the rule-based oracle path.
 *
 * A skill text is a paragraph (the episode skill) plus up to max_step_skills lines of
 * the form "step k: imperative sentence" (k counts from 1, as the prompt shows steps).
 * The analysis prompt renders the finished trajectory (task, each step's observation and
 * action, rewards, the outcome) and asks for the skill inside <skill> </skill>. */
#ifndef SEED_ROLES_SKILL_H
#define SEED_ROLES_SKILL_H

#include <stddef.h>

#include "common/skill_library.h"
#include "model/tokenizer.h"

typedef struct skill_traj_step {
    const char *observation;
    const char *action; /* "" for an invalid step */
    float reward;
} skill_traj_step;

typedef struct skill_traj {
    const char *env;
    const char *task;
    const skill_traj_step *steps;
    int n_steps;
    float episode_return;
    int won;
} skill_traj;

/* The analysis request as plain text (the user message), appended to out. Long
 * observations are cut to max_obs_chars, keeping their end. An external chat endpoint
 * gets this text as it is (the server applies its own chat template). */
int skill_request(const skill_traj *t, int max_obs_chars, seed_sbuf *out, char *err, size_t errlen);
/* The same request as chat text for the policy (ChatML, with the generation prompt),
 * appended to out. */
int skill_request_chat(const skill_traj *t, int max_obs_chars, seed_sbuf *out, char *err,
                       size_t errlen);

/* The answer stage 1 teaches for a skill: "<skill>TEXT</skill>". */
int skill_answer(const char *skill, seed_sbuf *out);

/* A parsed skill. episode and the step lines point into buf. At most SKILL_LIB_MAX_STEPS
 * step lines: the same limit analyzer.max_step_skills accepts and a library entry has. */
typedef struct skill_parsed {
    char buf[4096];
    const char *episode; /* the paragraph ("" when none) */
    int n_steps;
    int step_no[SKILL_LIB_MAX_STEPS];      /* 1-based step numbers */
    const char *step[SKILL_LIB_MAX_STEPS]; /* the sentence after "step k:" */
} skill_parsed;
/* A library entry's skill text fits whole: its episode skill in buf's first half and
 * its step lines, each under the parser's 512-byte line, in the second. */
_Static_assert(SKILL_LIB_TEXT_MAX < 4096 / 2 && SKILL_LIB_LINE_MAX + 8 < 512,
               "skill library bounds exceed skill_parsed");

/* Parse a skill text (the part inside <skill></skill> when the tags are there), keeping
 * at most max_steps (capped at SKILL_LIB_MAX_STEPS) step lines; never fails (an empty
 * text gives an empty skill). */
void skill_parse(const char *text, size_t len, int max_steps, skill_parsed *out);
/* A parsed skill written back as a skill text: the paragraph, then one "step k: ..."
 * line per step skill. Returns -1 when it was cut to fit len. */
int skill_format(const skill_parsed *s, char *out, size_t len);
/* skill_parse for the skill of an episode of n_steps steps: a step line is kept only when
 * its number is in 1..n_steps and no earlier line named it (the line skill_for_step
 * returns), and only kept lines count against max_steps. A skill the policy writes may
 * name steps the episode never took or one step twice; those lines are never read, must
 * not crowd out the lines of steps it took, and the wire refuses more step skills than
 * steps. */
void skill_parse_episode(const char *text, size_t len, int max_steps, int n_steps,
                         skill_parsed *out);
/* The step skill for 1-based step k, or NULL. */
const char *skill_for_step(const skill_parsed *s, int k);

#endif
