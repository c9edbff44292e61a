/* test_envs.c — unit tests of the env library: config errors, the generic calls, reply
 * parsing (tags missing/duplicated/nested/upper-case, CJK, empty, 1 MB, invalid UTF-8),
 * prompt parts and skill slots, the experts on 1,000 seeds per env and split, the
 * sokoban expert's reasoning, and the hindsight oracles. Run as `test_envs NAME`; each NAME is one
 * ctest test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/sokoban.h"
#include "common/util.h"

#include "tests/check.h"

/* ---------------- config ---------------- */

static void expect_create_error(const char *name, const char *key, const char *value,
                                const char *must1, const char *must2) {
    env_kv kv[2] = {{key, value}, {key, value}};
    int n = strcmp(must1, "twice") == 0 ? 2 : 1;
    char err[SEED_ERRLEN] = "";
    env *e = NULL;
    int r = env_create(&e, name, kv, n, err, sizeof err);
    CHECK(r < 0 && e == NULL, "%s %s=%s was accepted", name, key, value);
    CHECK(strstr(err, must1) != NULL, "error '%s' does not name '%s'", err, must1);
    if (must2) CHECK(strstr(err, must2) != NULL, "error '%s' does not name '%s'", err, must2);
}

static void test_config(void) {
    expect_create_error("sokoban", "roomsize", "6", "'roomsize'", "room_size");
    expect_create_error("sokoban", "room_size", "abc", "'room_size'", "'abc'");
    expect_create_error("sokoban", "room_size", "3", "'3'", "expected");
    expect_create_error("sokoban", "room_size", "6x", "'6x'", "ROWSxCOLS");
    expect_create_error("sokoban", "room_size", "6x99", "'6x99'", "4 to 16");
    expect_create_error("sokoban", "boxes", "0", "'boxes'", "1 to 6");
    expect_create_error("sokoban", "boxes", "2.5", "'2.5'", "integer");
    expect_create_error("sokoban", "search_depth", "", "'search_depth'", "integer");
    /* depths 1 and 2 can never generate a level (every reset failed): refused up front */
    expect_create_error("sokoban", "search_depth", "2", "'2'", "from 3 to");
    expect_create_error("sokoban", "generator", "gym", "'gym'", "verl-agent");
    expect_create_error("sokoban", "max_steps", "-3", "'max_steps'", "'-3'");
    expect_create_error("sokoban", "max_steps", "ten", "'ten'", "integer");
    expect_create_error("sokoban", "boxes", "twice", "twice", "'boxes'");
    expect_create_error("ezpoints", "target", "12", "'target'", "max_steps");
    expect_create_error("ezpoints", "max_steps", "0", "'max_steps'", "1 to");
    expect_create_error("nosuchenv", "a", "b", "'nosuchenv'", "sokoban");

    char err[SEED_ERRLEN];
    env *e;
    env_obs obs;
    env_kv ok[3] = {{"room_size", "7x8"}, {"boxes", "2"}, {"max_steps", "4"}};
    CHECK(env_create(&e, "sokoban", ok, 3, err, sizeof err) == 0, "%s", err);
    CHECK(env_step(e, "up", &obs, err, sizeof err) < 0, "step before reset was accepted");
    CHECK(env_reset(e, 1, (env_split)7, &obs, err, sizeof err) < 0 && strstr(err, "split"),
          "bad split accepted: %s", err);
    CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "%s", err);
    int rows, cols;
    env_sokoban_level(e, &rows, &cols, NULL, NULL);
    CHECK(rows == 7 && cols == 8, "room_size 7x8 gave %dx%d", rows, cols);
    for (int i = 0; i < 4; i++) CHECK(env_step(e, "still", &obs, err, sizeof err) == 0, "%s", err);
    CHECK(obs.done == 1 && obs.won == 0 && obs.reward == 0.0f, "max_steps did not end the episode");
    CHECK(env_step(e, "up", &obs, err, sizeof err) < 0 && strstr(err, "over"),
          "step after the end was accepted");
    CHECK(env_expert(e, err, sizeof err, err, sizeof err) < 0, "expert after the end");
    CHECK(env_action_valid(e, "Move UP") == 1 && env_action_valid(e, "jump") == 0 &&
              env_action_valid(e, NULL) == 0,
          "sokoban action_valid");
    char big[2100];
    memset(big, 'x', 2000);
    strcpy(big + 2000, "RiGhT");
    CHECK(env_action_valid(e, big) == 1, "long sokoban action");
    env_destroy(e);
    CHECK(env_create(&e, "ezpoints", NULL, 0, err, sizeof err) == 0, "%s", err);
    char longer[2100];
    memset(longer, 'x', 2000);
    strcpy(longer + 2000, "7");
    CHECK(env_action_valid(e, longer) && env_action_valid(e, "1010") &&
              !env_action_valid(e, "1105"),
          "ezpoints long / repeated-10 actions");
    CHECK(env_action_valid(e, "10") && env_action_valid(e, "'+'") && !env_action_valid(e, "5+5") &&
              !env_action_valid(e, "plus"),
          "ezpoints action_valid");
    env_destroy(e);
    CHECK(env_lookup("sokoban") && env_lookup("ezpoints") && !env_lookup("x"), "lookup");
    CHECK(strstr(env_names(), "sokoban") && strstr(env_names(), "ezpoints"), "names");
    env_split sp;
    CHECK(env_split_parse("unseen", &sp) == 0 && sp == ENV_SPLIT_UNSEEN &&
              env_split_parse("test", &sp) < 0,
          "split parse");
    CHECK(env_level_seed(5, ENV_SPLIT_TRAIN) == 5 && env_level_seed(5, ENV_SPLIT_SEEN) >= 65536 &&
              env_level_seed(5, ENV_SPLIT_SEEN) != env_level_seed(5, ENV_SPLIT_UNSEEN),
          "level seeds");
}

/* ---------------- parsing ---------------- */

static void expect_parse(const char *text, size_t len, int cjk, int valid, int reason,
                         const char *action) {
    char act[256];
    env_parsed r;
    env_parse_response(text, len, cjk, act, sizeof act, &r);
    CHECK(r.valid == valid && r.reason == reason, "'%.60s': valid %d reason %s, expected %d %s",
          text, r.valid, env_parse_reason(r.reason), valid, env_parse_reason(reason));
    if (action)
        CHECK(strcmp(act, action) == 0 && r.action_len == strlen(action),
              "'%.60s': action '%s', expected '%s'", text, act, action);
}

#define P(s, cjk, v, reason, act) expect_parse(s, strlen(s), cjk, v, reason, act)

static void test_parse(void) {
    P("<think>box is left</think><action>left</action>", 0, 1, ENV_PARSE_OK, "left");
    P("<think>x</think>\n<action>  Go To Cabinet 1 \n</action>", 1, 1, ENV_PARSE_OK,
      "go to cabinet 1");
    P("<action>up</action>", 0, 0, ENV_PARSE_NO_THINK, "up");
    P("<think>x</think>up", 0, 0, ENV_PARSE_NO_ACTION, "");
    P("<think>x</think><action>up", 0, 0, ENV_PARSE_NO_ACTION, "");
    P("<think>x</think></action>up<action>", 0, 0, ENV_PARSE_NO_ACTION, "");
    P("</think>x<think><action>up</action>", 0, 0, ENV_PARSE_NO_THINK, "up");
    P("<think>a</think><action>left</action><action>right</action>", 0, 1, ENV_PARSE_OK, "left");
    P("<think>a</think><action><action>up</action></action>", 0, 1, ENV_PARSE_OK, "<action>up");
    P("<think>a<think>b</think></think><action>down</action>", 0, 1, ENV_PARSE_OK, "down");
    P("<THINK>a</THINK><action>up</action>", 0, 0, ENV_PARSE_NO_THINK, "up");
    P("<think>a</think><ACTION> Up </Action>", 0, 1, ENV_PARSE_OK, "up");
    P("<think>\xe5\x90\x91\xe4\xb8\x8a</think><action>up</action>", 1, 0, ENV_PARSE_CJK, "up");
    P("<think>\xe5\x90\x91\xe4\xb8\x8a</think><action>up</action>", 0, 1, ENV_PARSE_OK, "up");
    P("<think>x</think><action>\xe5\x90\x91\xe4\xb8\x8a</action>", 0, 1, ENV_PARSE_OK,
      "\xe5\x90\x91\xe4\xb8\x8a");
    P("<think>x</think><action>\xe3\x82\xa2</action>", 1, 1, ENV_PARSE_OK, "\xe3\x82\xa2");
    P("<think></think><action></action>", 0, 0, ENV_PARSE_EMPTY, "");
    P("<think></think><action> \t\n</action>", 0, 0, ENV_PARSE_EMPTY, "");
    P("", 0, 0, ENV_PARSE_NO_ACTION, "");
    /* U+3000 and U+00A0 are whitespace to Python's strip(); É lower-cases to é */
    P("<think>.</think><action>\xe3\x80\x80\xc3\x89T\xc3\x89\xc2\xa0</action>", 0, 1, ENV_PARSE_OK,
      "\xc3\xa9t\xc3\xa9");
    P("<think>.</think><action>up\xff</action>", 0, 0, ENV_PARSE_BAD_UTF8, "");
    P("<think>.</think><action>\xc0\xaf</action>", 0, 0, ENV_PARSE_BAD_UTF8, "");
    P("<think>.</think><action>\xed\xa0\x80</action>", 0, 0, ENV_PARSE_BAD_UTF8, "");
    P("\xff\xfe<think>.</think>\x80<action>up</action>\xc3", 1, 1, ENV_PARSE_OK, "up");
    /* an embedded NUL is just a byte */
    expect_parse("<think>.</think>\0<action>up</action>", 36, 0, 1, ENV_PARSE_OK, "up");
    expect_parse(NULL, 10, 0, 0, ENV_PARSE_NO_ACTION, "");

    /* 1 MB of text: tags at the very end, no tags at all, and a 1 MB action */
    size_t big = 1 << 20;
    char *t = malloc(big + 64);
    memset(t, 'a', big);
    memcpy(t + big, "<think>x</think><action>right</action>", 39);
    expect_parse(t, big + 38, 1, 1, ENV_PARSE_OK, "right");
    memset(t, '<', big);
    expect_parse(t, big, 1, 0, ENV_PARSE_NO_ACTION, "");
    memcpy(t, "<think>x</think><action>", 24);
    memset(t + 24, 'x', big);
    memcpy(t + 24 + big, "</action>", 9);
    expect_parse(t, big + 33, 0, 0, ENV_PARSE_TOO_LONG, "");
    free(t);
    char one[1];
    env_parsed r;
    env_parse_response("<think>x</think><action>u</action>", 34, 0, one, 1, &r);
    CHECK(!r.valid && r.reason == ENV_PARSE_TOO_LONG && one[0] == 0, "1-byte buffer");
    CHECK(env_parse_step_reward(1.0f, 0, ENV_INVALID_PENALTY_DEFAULT) == 1.0f - 0.1f &&
              env_parse_step_reward(1.0f, 1, 0.1f) == 1.0f,
          "penalty");
    CHECK(env_parse_rejects_cjk("household") && !env_parse_rejects_cjk("sokoban"), "cjk styles");
}

/* ---------------- prompts ---------------- */

static void test_prompt(void) {
    char err[SEED_ERRLEN];
    env *e;
    env_obs obs;
    CHECK(env_create(&e, "sokoban", NULL, 0, err, sizeof err) == 0, "%s", err);
    CHECK(env_reset(e, 3, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "%s", err);
    env_prompt p;
    env_prompt_init(&p);
    char full[16384], join[16384];
    CHECK(env_prompt_render(&p, "sokoban", e->vt->instructions, &obs, NULL, 0, 2, err,
                            sizeof err) == 0,
          "%s", err);
    CHECK(strstr(p.head, "Your task is to: push every box") && p.head[p.head_len - 1] == '\n',
          "head: %s", p.head);
    /* prompt.h's slot rule: a blank line belongs to the part before a slot, and the
     * part after a slot starts with a printable character */
    CHECK(p.head_len > 2 && !strcmp(p.head + p.head_len - 2, "\n\n"), "head ends: %s", p.head);
    CHECK(strncmp(p.middle, "# Current Step\nYour current observation is:\n", 43) == 0,
          "first-step middle: %.80s", p.middle);
    CHECK(!strcmp(p.middle + p.middle_len - 3, ".\n\n") &&
              !strncmp(p.tail, "Now it's your turn", 18),
          "middle/tail boundary: %s|%.40s", p.middle + p.middle_len - 3, p.tail);
    CHECK(
        strstr(p.middle, "Your admissible actions are [\"up\", \"down\", \"left\", \"right\"].\n"),
        "sokoban admissible list");
    CHECK(strstr(p.tail, "<think> </think>") && strstr(p.tail, "<action> </action>"), "tail");
    snprintf(full, sizeof full, "%s%s%s", p.head, p.middle, p.tail);
    CHECK(env_prompt_join(&p, NULL, "", join, sizeof join) == strlen(full) &&
              strcmp(full, join) == 0,
          "join without skills != head+middle+tail");

    /* step 3 with H=2: steps 2 and 3 shown, numbered from 1 */
    env_prompt_step hist[3] = {{"obs one", "up"}, {"obs two", "left"}, {"obs three", ""}};
    CHECK(env_prompt_render(&p, "sokoban", e->vt->instructions, &obs, hist, 3, 2, err,
                            sizeof err) == 0,
          "%s", err);
    CHECK(strstr(p.middle, "Prior to this step, you have already taken 3 step(s). Below are the "
                           "most recent 2 observations and the corresponding actions you took: "
                           "[Observation 2: 'obs two', Action 2: 'left']\n"
                           "[Observation 3: 'obs three', Action 3: '']\n"
                           "You are now at step 4 and your current observation is:\n"),
          "history block: %s", p.middle);
    CHECK(!strstr(p.middle, "obs one"), "history longer than H");
    size_t need =
        env_prompt_join(&p, "Push boxes away from walls.\n\n", "Move up now.", join, sizeof join);
    CHECK(need == strlen(join), "join length");
    char block[512];
    env_prompt_skill_block(ENV_SKILL_EPISODE, "Push boxes away from walls.", block, sizeof block);
    snprintf(full, sizeof full, "%s%s", p.head, block);
    CHECK(strncmp(join, full, strlen(full)) == 0, "episode skill not right after the task line");
    env_prompt_skill_block(ENV_SKILL_STEP, "Move up now.", block, sizeof block);
    snprintf(full, sizeof full, "%s%s", block, p.tail);
    CHECK(strcmp(join + strlen(join) - strlen(full), full) == 0,
          "step skill not right before the final instruction");
    CHECK(env_prompt_skill_block(ENV_SKILL_STEP, "  \n", block, sizeof block) == 0 && !block[0],
          "empty skill");
    char small[8];
    size_t want = p.head_len + p.middle_len + p.tail_len +
                  env_prompt_skill_block(ENV_SKILL_EPISODE, "a", NULL, 0) +
                  env_prompt_skill_block(ENV_SKILL_STEP, "b", NULL, 0);
    CHECK(env_prompt_join(&p, "a", "b", small, sizeof small) == want && small[0] == 0,
          "join into a small buffer");
    env_destroy(e);

    /* default (ALFWorld) style: task line on the instructions line, quoted list */
    const char *adm[2] = {"go to desk 1", "look"};
    env_obs o2 = {"put a mug in the sink", "You are in a room.", 2, adm, 0, 0, 0, "x", ""};
    CHECK(env_prompt_render(&p, "household", "You are an expert agent.", &o2, hist, 1, 2, err,
                            sizeof err) == 0,
          "%s", err);
    CHECK(strcmp(p.head, "You are an expert agent. Your task is to: put a mug in the sink\n") == 0,
          "default head: %s", p.head);
    CHECK(strstr(p.middle, "current observation is: You are in a room.\nYour admissible actions "
                           "of the current situation are: ['go to desk 1'\n 'look'].\n"),
          "default middle: %s", p.middle);
    o2.n_admissible = 0;
    CHECK(env_prompt_render(&p, NULL, "I.", &o2, hist, 1, 0, err, sizeof err) == 0 &&
              !strstr(p.middle, "admissible") && strstr(p.middle, "Your current observation is:"),
          "no admissible list / no history: %s", p.middle);
    env_prompt_free(&p);
}

/* ---------------- experts: every level is solvable ---------------- */

static void test_expert(const char *name, int n, const char *max_steps) {
    char err[SEED_ERRLEN], act[64];
    env_kv kv[1] = {{"max_steps", max_steps}};
    env *e;
    CHECK(env_create(&e, name, kv, 1, err, sizeof err) == 0, "%s", err);
    for (int split = 0; split < 3; split++) {
        int won = 0, total_steps = 0, longest = 0, over15 = 0;
        for (int s = 0; s < n; s++) {
            env_obs obs;
            if (env_reset(e, (uint64_t)s, (env_split)split, &obs, err, sizeof err)) {
                CHECK(0, "%s", err);
                continue;
            }
            int steps = 0;
            while (!obs.done) {
                if (env_expert(e, act, sizeof act, err, sizeof err) ||
                    env_step(e, act, &obs, err, sizeof err)) {
                    CHECK(0, "%s seed %d: %s", name, s, err);
                    break;
                }
                steps++;
            }
            CHECK(obs.won, "%s split %d seed %d: the expert did not win", name, split, s);
            won += obs.won;
            total_steps += steps;
            longest = SEED_MAX(longest, steps);
            over15 += steps > 15;
        }
        printf("%s %s: expert won %d/%d, mean %.2f steps, longest %d, %d need > 15 steps\n", name,
               env_split_name((env_split)split), won, n, (double)total_steps / n, longest, over15);
    }
    env_destroy(e);
}

static void test_experts(void) {
    test_expert("sokoban", 1000, "200");
    test_expert("ezpoints", 1000, "10");
    /* more boxes / another size, fewer seeds */
    char err[SEED_ERRLEN], act[64];
    env_kv kv[3] = {{"boxes", "2"}, {"room_size", "7x8"}, {"max_steps", "300"}};
    env *e;
    CHECK(env_create(&e, "sokoban", kv, 3, err, sizeof err) == 0, "%s", err);
    int won = 0;
    for (int s = 0; s < 100; s++) {
        env_obs obs;
        CHECK(env_reset(e, (uint64_t)s, ENV_SPLIT_UNSEEN, &obs, err, sizeof err) == 0, "%s", err);
        while (!obs.done && !env_expert(e, act, sizeof act, err, sizeof err))
            env_step(e, act, &obs, err, sizeof err);
        won += obs.won;
    }
    CHECK(won == 100, "7x8 2 boxes: expert won %d/100", won);
    env_destroy(e);
}

/* The sokoban expert's reasoning (stage 0's think text) is true of the board: it names
 * the player's cell, a box and the target, and ends in the expert's own move; a push is
 * said only when the move pushes the box it names. Envs without reasoning say so. */
static void test_reason(void) {
    char err[SEED_ERRLEN], act[64], why[1024];
    env *e;
    CHECK(env_create(&e, "sokoban", NULL, 0, err, sizeof err) == 0, "%s", err);
    static const char *const dirs[4] = {"up", "down", "left", "right"};
    static const int dr[4] = {-1, 1, 0, 0}, dc[4] = {0, 0, -1, 1};
    int steps = 0, pushes = 0;
    for (int split = 0; split < 3; split++)
        for (int s = 0; s < 100; s++) {
            env_obs obs;
            CHECK(env_reset(e, (uint64_t)s, (env_split)split, &obs, err, sizeof err) == 0, "%s",
                  err);
            while (!obs.done && !env_expert(e, act, sizeof act, err, sizeof err)) {
                CHECK(env_expert_reason(e, act, why, sizeof why, err, sizeof err) == 0, "%s", err);
                if (split == 0 && s == 0 && steps == 0) printf("sokoban reasoning: %s\n", why);
                int rows, cols;
                uint8_t fixed[ENV_SOKOBAN_MAX_CELLS], state[ENV_SOKOBAN_MAX_CELLS];
                env_sokoban_level(e, &rows, &cols, fixed, state);
                int pr = 0, pc = 0, br = 0, bc = 0, tr = 0, tc = 0, n = 0;
                char tail[128] = "";
                int got = sscanf(why,
                                 "I am at (row %d, column %d). The box at (row %d, column %d) goes "
                                 "to the target at (row %d, column %d). %n",
                                 &pr, &pc, &br, &bc, &tr, &tc, &n);
                CHECK(got == 6 && n > 0, "reasoning '%s' does not parse", why);
                if (got != 6 || n <= 0) break;
                snprintf(tail, sizeof tail, "%s", why + n);
                int p = (pr - 1) * cols + (pc - 1), b = (br - 1) * cols + (bc - 1),
                    t = (tr - 1) * cols + (tc - 1);
                CHECK(state[p] == 5, "'%s': no player there", why);
                CHECK(state[b] == 4 || state[b] == 3, "'%s': no box there", why);
                CHECK(fixed[t] == 2, "'%s': no target there", why);
                int d = 0;
                while (d < 4 && strcmp(dirs[d], act)) d++;
                CHECK(d < 4, "expert move '%s'", act);
                char want[64];
                int push = d < 4 && p + dr[d] * cols + dc[d] == b;
                if (push)
                    snprintf(want, sizeof want, "I push it %s.", act);
                else
                    snprintf(want, sizeof want, " I move %s.", act);
                size_t lt = strlen(tail), lw = strlen(want);
                CHECK(lt >= lw && !strcmp(tail + lt - lw, want), "'%s' does not end in '%s'", why,
                      want);
                pushes += push;
                steps++;
                if (env_step(e, act, &obs, err, sizeof err)) break;
            }
            CHECK(obs.won, "split %d seed %d: the expert did not win", split, s);
        }
    printf("sokoban reasoning checked on %d expert steps (%d pushes)\n", steps, pushes);
    CHECK(pushes > 0 && pushes < steps, "%d pushes of %d steps", pushes, steps);
    env_destroy(e);
    CHECK(env_create(&e, "ezpoints", NULL, 0, err, sizeof err) == 0, "%s", err);
    env_obs obs;
    CHECK(env_reset(e, 1, ENV_SPLIT_TRAIN, &obs, err, sizeof err) == 0, "%s", err);
    CHECK(env_expert(e, act, sizeof act, err, sizeof err) == 0, "%s", err);
    strcpy(why, "x");
    CHECK(env_expert_reason(e, act, why, sizeof why, err, sizeof err) == 1 && why[0] == 0,
          "ezpoints has no reasoning: expected 1 and an empty text");
    env_destroy(e);
}

/* ---------------- hindsight ---------------- */

static void check_skill_format(const char *skill, int n_actions) {
    const char *nl = strchr(skill, '\n');
    CHECK(nl && nl > skill + 20, "no episode paragraph: %s", skill);
    int lines = 0;
    for (const char *l = nl ? nl + 1 : ""; *l; lines++) {
        int k = -1;
        CHECK(sscanf(l, "step %d: ", &k) == 1 && k >= 1 && k <= n_actions,
              "bad step line '%.60s' (n=%d)", l, n_actions);
        const char *end = strchr(l, '\n');
        CHECK(end != NULL, "unterminated line");
        l = end ? end + 1 : l + strlen(l);
    }
    CHECK(lines >= 1 && lines <= 5, "%d step lines", lines);
}

static int play_expert(env *e, uint64_t seed, const char **acts, char (*store)[16], int cap) {
    char err[SEED_ERRLEN];
    env_obs obs;
    int n = 0;
    env_reset(e, seed, ENV_SPLIT_TRAIN, &obs, err, sizeof err);
    while (!obs.done && n < cap && !env_expert(e, store[n], 16, err, sizeof err)) {
        acts[n] = store[n];
        env_step(e, acts[n++], &obs, err, sizeof err);
    }
    return n;
}

static void test_hindsight(void) {
    char err[SEED_ERRLEN], skill[4096], store[64][16];
    const char *acts[64];
    env *e;
    CHECK(env_create(&e, "sokoban", NULL, 0, err, sizeof err) == 0, "%s", err);
    /* success */
    int n = play_expert(e, 2, acts, store, 64);
    CHECK(env_hindsight("sokoban", NULL, 0, 2, ENV_SPLIT_TRAIN, acts, n, skill, sizeof skill, err,
                        sizeof err) == 0,
          "%s", err);
    CHECK(strncmp(skill, "Success", 7) == 0, "expected success: %s", skill);
    check_skill_format(skill, n);
    printf("--- sokoban success ---\n%s", skill);

    /* deadlock: find a seed and a step where one push makes the level unsolvable */
    int found = 0;
    for (uint64_t seed = 0; seed < 200 && !found; seed++) {
        env_obs obs;
        n = play_expert(e, seed, acts, store, 64);
        for (int k = 0; k < n && !found; k++) {
            for (int d = 0; d < 4 && !found; d++) {
                static const char *dirs[4] = {"up", "down", "left", "right"};
                env_reset(e, seed, ENV_SPLIT_TRAIN, &obs, err, sizeof err);
                for (int i = 0; i < k; i++) env_step(e, acts[i], &obs, err, sizeof err);
                if (env_sokoban_distance(e) < 0) continue;
                env_step(e, dirs[d], &obs, err, sizeof err);
                if (obs.done || env_sokoban_distance(e) != -1) continue;
                const char *bad[16];
                for (int i = 0; i < k; i++) bad[i] = acts[i];
                bad[k] = dirs[d];
                for (int i = k + 1; i < 16; i++) bad[i] = i % 2 ? "left" : NULL;
                CHECK(env_hindsight("sokoban", NULL, 0, seed, ENV_SPLIT_TRAIN, bad, 16, skill,
                                    sizeof skill, err, sizeof err) == 0,
                      "%s", err);
                char want[32];
                snprintf(want, sizeof want, "at step %d the move %s", k + 1, dirs[d]);
                CHECK(strstr(skill, want), "deadlock step not named (%s): %s", want, skill);
                check_skill_format(skill, 16);
                printf("--- sokoban deadlock (seed %llu) ---\n%s", (unsigned long long)seed, skill);
                found = 1;
            }
        }
    }
    CHECK(found, "no deadlocking push found in 200 levels");

    /* too slow: invalid replies and wall bumps only */
    const char *slow[15] = {NULL, "still", "jump", "up", "up", "up", "up", NULL};
    for (int i = 8; i < 15; i++) slow[i] = "down";
    CHECK(env_hindsight("sokoban", NULL, 0, 5, ENV_SPLIT_SEEN, slow, 15, skill, sizeof skill, err,
                        sizeof err) == 0,
          "%s", err);
    CHECK(strncmp(skill, "Failure", 7) == 0, "expected failure: %s", skill);
    check_skill_format(skill, 15);
    printf("--- sokoban too slow ---\n%s", skill);
    CHECK(env_hindsight("sokoban", NULL, 0, 5, ENV_SPLIT_SEEN, slow, 15, skill, 40, err,
                        sizeof err) < 0 &&
              strstr(err, "bytes"),
          "small skill buffer accepted");
    env_kv badkv[1] = {{"boxes", "x"}};
    CHECK(env_hindsight("sokoban", badkv, 1, 5, ENV_SPLIT_SEEN, slow, 15, skill, sizeof skill, err,
                        sizeof err) < 0,
          "bad config accepted by hindsight");
    env_destroy(e);

    /* ezpoints */
    CHECK(env_create(&e, "ezpoints", NULL, 0, err, sizeof err) == 0, "%s", err);
    n = play_expert(e, 7, acts, store, 64);
    CHECK(env_hindsight("ezpoints", NULL, 0, 7, ENV_SPLIT_TRAIN, acts, n, skill, sizeof skill, err,
                        sizeof err) == 0 &&
              strncmp(skill, "Success", 7) == 0,
          "%s %s", err, skill);
    check_skill_format(skill, n);
    printf("--- ezpoints success ---\n%s", skill);
    const char *wrong[4] = {"hello", acts[0], "=", "+"};
    CHECK(env_hindsight("ezpoints", NULL, 0, 7, ENV_SPLIT_TRAIN, wrong, 4, skill, sizeof skill, err,
                        sizeof err) == 0 &&
              strstr(skill, "At step 3"),
          "%s %s", err, skill);
    check_skill_format(skill, 4);
    printf("--- ezpoints early '=' ---\n%s", skill);
    const char *none[3] = {NULL, NULL, "x"};
    CHECK(env_hindsight("ezpoints", NULL, 0, 7, ENV_SPLIT_TRAIN, none, 3, skill, sizeof skill, err,
                        sizeof err) == 0 &&
              strncmp(skill, "Failure", 7) == 0,
          "%s %s", err, skill);
    check_skill_format(skill, 3);
    CHECK(env_hindsight("nosuch", NULL, 0, 7, ENV_SPLIT_TRAIN, none, 3, skill, sizeof skill, err,
                        sizeof err) < 0,
          "unknown env");
    env_destroy(e);
}

/* Different seeds give different levels; splits differ from each other. */
static void test_distinct(void) {
    const char *names[2] = {"sokoban", "ezpoints"};
    for (int k = 0; k < 2; k++) {
        char err[SEED_ERRLEN];
        env *e;
        env_obs obs;
        CHECK(env_create(&e, names[k], NULL, 0, err, sizeof err) == 0, "%s", err);
        uint64_t h[3][200];
        for (int split = 0; split < 3; split++)
            for (int s = 0; s < 200; s++) {
                env_reset(e, (uint64_t)s, (env_split)split, &obs, err, sizeof err);
                h[split][s] = seed_fnv1a64(obs.observation, strlen(obs.observation));
            }
        int distinct = 0, same_across = 0;
        for (int s = 0; s < 200; s++) {
            int dup = 0;
            for (int t = 0; t < s; t++) dup |= h[0][t] == h[0][s];
            distinct += !dup;
            same_across += h[0][s] == h[1][s] && h[1][s] == h[2][s];
        }
        /* ezpoints has only 4*4*(distinct card pairs) tasks, sokoban thousands */
        int want = k == 0 ? 190 : 40;
        printf("%s: %d distinct levels in 200 seeds, %d seeds equal across all splits\n", names[k],
               distinct, same_across);
        CHECK(distinct >= want, "%s: only %d distinct levels in 200 seeds", names[k], distinct);
        CHECK(same_across < (k == 0 ? 5 : 30), "%s: splits do not differ", names[k]);
        env_destroy(e);
    }
}

int main(int argc, char **argv) {
    const char *t = argc > 1 ? argv[1] : "all";
    int all = strcmp(t, "all") == 0;
    if (all || !strcmp(t, "config")) test_config();
    if (all || !strcmp(t, "parse")) test_parse();
    if (all || !strcmp(t, "prompt")) test_prompt();
    if (all || !strcmp(t, "expert")) test_experts();
    if (all || !strcmp(t, "reason")) test_reason();
    if (all || !strcmp(t, "hindsight")) test_hindsight();
    if (all || !strcmp(t, "distinct")) test_distinct();
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    else
        printf("ok\n");
    return check_failures ? 1 : 0;
}
