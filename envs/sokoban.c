/* sokoban.c — Sokoban as verl-agent plays it: gym-sokoban's level generator and step
 * rules, verl-agent's text rendering, an optimal solver (expert) and a hindsight oracle.
 *
 * Contract:
 *  - Levels: gym-sokoban's generate_room, ported line by line: a random-walk room
 *    topology, the player and the box targets placed at random, then reverse play — a
 *    depth-first search over pulls from the solved state, scored by box swaps x total box
 *    displacement, keeping the best state — retried when the score is 0. The Python
 *    random streams are reproduced (pyrandom.h), so for the same 32-bit seed
 *    (env_level_seed) the level is identical to the Python one. `generator=verl-agent`
 *    (default) is verl-agent's copy (pulls only, depth = search_depth, default 30, then
 *    1-3 random player steps); `generator=gym-sokoban` is the installed package's
 *    original (pulls and moves, depth 300 unless search_depth is given). Where Python
 *    retries a failed room with hash(str(seed)) (not reproducible), seed continues the
 *    same streams.
 *  - Steps: verl-agent's actions 1-4 (gym-sokoban's "push up/down/left/right": push a box
 *    if one is ahead, else walk). Rewards -0.1 per step, +1 box onto a target, -1 box off
 *    a target, +10 when every box is on a target (done, won). An action without a
 *    direction word (or NULL) is a no-op with reward 0 that gym-sokoban never sees, as in
 *    verl-agent; the caller applies the invalid-step penalty.
 *  - Observation: verl-agent's text grid (" # \t" per cell, rows joined by "\n").
 *  - No global mutable state; all scratch memory lives in the env and is reused. */
#include "envs/sokoban.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/prompt.h"
#include "envs/pyrandom.h"
#include "common/util.h"

enum { SK_WALL = 0, SK_FLOOR = 1, SK_TARGET = 2, SK_BOX_ON = 3, SK_BOX = 4, SK_PLAYER = 5 };
enum { SK_GEN_VERL = 0, SK_GEN_GYM = 1 };
enum {
    SK_MAXC = ENV_SOKOBAN_MAX_CELLS,
    SK_MAXB = ENV_SOKOBAN_MAX_BOXES,
    SK_OBS_CAP = ENV_SOKOBAN_MAX_DIM * (ENV_SOKOBAN_MAX_DIM * 6 + 1) + 8,
    SK_EXPLORED_CAP = 300000, /* gym-sokoban's cap on reverse-play states */
    /* gym-sokoban's search spends one unit of depth before it scores the solved state and
     * one more before it scores a pull, so depths 1 and 2 never score a level: every reset
     * would fail. 3 is one pull from the solved state (the easiest levels). */
    SK_MIN_DEPTH = 3,
    SK_SOLVER_LIMIT = 1000000, /* BFS states before the solver gives up */
    SK_GEN_ATTEMPTS = 1000,    /* generate_room calls before reset gives up */
    SK_PLAN_CAP = 1024,
};

static const int sk_dr[4] = {-1, 1, 0, 0}; /* gym-sokoban CHANGE_COORDINATES: up down left right */
static const int sk_dc[4] = {0, 0, -1, 1};
static const char *const sk_dir_name[4] = {"up", "down", "left", "right"};
static const char *const sk_admissible[4] = {"up", "down", "left", "right"};

extern const env_vtable env_sokoban_vtable;

/* Open-addressing hash set of fixed-width keys; cleared in O(1) by bumping an epoch. */
typedef struct sk_set {
    uint64_t *keys;  /* cap * kw words */
    uint32_t *epoch; /* cap */
    int32_t *val;    /* cap (optional payload) */
    size_t cap, n, kw;
    uint32_t cur;
} sk_set;

typedef struct sk_node {
    uint64_t key;
    int32_t parent;
    uint8_t move;
} sk_node;

typedef struct sokoban {
    env base;
    int rows, cols, ncell, nboxes, search_depth, gen_steps, generator;
    uint8_t fixed[SK_MAXC]; /* room_fixed */
    uint8_t state[SK_MAXC]; /* room_state */
    uint8_t live[SK_MAXC];  /* a box here can still reach some target (ignoring other boxes) */
    int player, boxes_on_target;
    int last_pushed;      /* the last step pushed a box (read by the trace) */
    int targets[SK_MAXB]; /* target cells */
    /* reverse-play scratch */
    sk_set explored;
    uint8_t rp_grid[SK_MAXC], rp_best[SK_MAXC];
    uint64_t rp_key[8];
    int rp_player, rp_nb, rp_target[SK_MAXB], rp_pos[SK_MAXB], rp_best_pos[SK_MAXB];
    long long rp_best_score;
    int rp_pull_only, rp_pass_new_last;
    /* solver scratch */
    sk_set seen;
    sk_node *nodes;
    size_t nodes_cap;
    uint8_t plan[SK_PLAN_CAP];
    uint64_t plan_keys[SK_PLAN_CAP];
    int plan_len;
    char obs_text[SK_OBS_CAP];
} sokoban;

/* ---------------- hash set ---------------- */

static uint64_t sk_hash(const uint64_t *k, size_t kw) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < kw; i++) {
        h ^= k[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h;
}

static void sk_set_free(sk_set *s) {
    free(s->keys);
    free(s->epoch);
    free(s->val);
    memset(s, 0, sizeof *s);
}

static int sk_set_alloc(sk_set *s, size_t cap, size_t kw) {
    uint64_t *k = malloc(cap * kw * sizeof *k);
    uint32_t *e = calloc(cap, sizeof *e);
    int32_t *v = malloc(cap * sizeof *v);
    if (!k || !e || !v) {
        free(k);
        free(e);
        free(v);
        return -1;
    }
    sk_set_free(s);
    s->keys = k;
    s->epoch = e;
    s->val = v;
    s->cap = cap;
    s->kw = kw;
    s->cur = 1;
    return 0;
}

static int sk_set_clear(sk_set *s, size_t kw) {
    if (!s->cap || s->kw != kw) return sk_set_alloc(s, 1024, kw);
    s->n = 0;
    if (++s->cur == 0) { /* epoch wrapped: really clear */
        memset(s->epoch, 0, s->cap * sizeof *s->epoch);
        s->cur = 1;
    }
    return 0;
}

/* Slot of key: the existing one, or the empty one where it would go. */
static size_t sk_set_slot(const sk_set *s, const uint64_t *key, int *found) {
    size_t mask = s->cap - 1, i = (size_t)sk_hash(key, s->kw) & mask;
    for (;;) {
        if (s->epoch[i] != s->cur) {
            *found = 0;
            return i;
        }
        if (memcmp(s->keys + i * s->kw, key, s->kw * sizeof *key) == 0) {
            *found = 1;
            return i;
        }
        i = (i + 1) & mask;
    }
}

static int sk_set_grow(sk_set *s) {
    sk_set big = {0};
    if (sk_set_alloc(&big, s->cap * 2, s->kw)) return -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->epoch[i] != s->cur) continue;
        int found;
        size_t j = sk_set_slot(&big, s->keys + i * s->kw, &found);
        memcpy(big.keys + j * big.kw, s->keys + i * s->kw, s->kw * sizeof *s->keys);
        big.epoch[j] = big.cur;
        big.val[j] = s->val[i];
    }
    big.n = s->n;
    sk_set_free(s);
    *s = big;
    return 0;
}

/* Insert key with payload v: 1 when new, 0 when present (*v_out = its payload), -1 OOM. */
static int sk_set_insert(sk_set *s, const uint64_t *key, int32_t v, int32_t *v_out) {
    if ((s->n + 1) * 2 > s->cap && sk_set_grow(s)) return -1;
    int found;
    size_t i = sk_set_slot(s, key, &found);
    if (found) {
        if (v_out) *v_out = s->val[i];
        return 0;
    }
    memcpy(s->keys + i * s->kw, key, s->kw * sizeof *key);
    s->epoch[i] = s->cur;
    s->val[i] = v;
    s->n++;
    return 1;
}

/* ---------------- level generation (gym-sokoban room_utils.py) ---------------- */

static void sk_topology(sokoban *s, env_mt19937 *py, uint8_t *level) {
    static const uint8_t masks[5][3][3] = {{{0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
                                           {{0, 1, 0}, {0, 1, 0}, {0, 1, 0}},
                                           {{0, 0, 0}, {1, 1, 0}, {0, 1, 0}},
                                           {{0, 0, 0}, {1, 1, 0}, {1, 1, 0}},
                                           {{0, 0, 0}, {0, 1, 1}, {0, 1, 0}}};
    static const int dirs[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
    const int R = s->rows, C = s->cols;
    int d = (int)env_pyrandom_below(py, 4);
    int x = 1 + (int)env_pyrandom_below(py, (uint32_t)(R - 1));
    int y = 1 + (int)env_pyrandom_below(py, (uint32_t)(C - 1));
    memset(level, 0, (size_t)(R * C));
    for (int step = 0; step < s->gen_steps; step++) {
        if (env_pyrandom_random(py) < 0.35) d = (int)env_pyrandom_below(py, 4);
        x += dirs[d][0];
        y += dirs[d][1];
        x = SEED_MAX(SEED_MIN(x, R - 2), 1);
        y = SEED_MAX(SEED_MIN(y, C - 2), 1);
        int m = (int)env_pyrandom_below(py, 5);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                if (masks[m][i][j]) level[(x - 1 + i) * C + (y - 1 + j)] = 1;
    }
    for (int r = 0; r < R; r++) level[r * C] = level[r * C + C - 1] = 0;
    for (int c = 0; c < C; c++) level[c] = level[(R - 1) * C + c] = 0;
}

/* The ind-th cell (row-major) holding value v, as numpy.where orders them. */
static int sk_nth(const uint8_t *level, int n, uint8_t v, uint32_t ind) {
    for (int i = 0; i < n; i++)
        if (level[i] == v && ind-- == 0) return i;
    return -1;
}

static int sk_count(const uint8_t *level, int n, uint8_t v) {
    int k = 0;
    for (int i = 0; i < n; i++) k += level[i] == v;
    return k;
}

static int sk_place(sokoban *s, env_mt19937 *np, uint8_t *room) {
    int n = sk_count(room, s->ncell, SK_FLOOR);
    if (n <= s->nboxes + 1) return -1; /* gym-sokoban: RuntimeError, not enough free spots */
    int cell = sk_nth(room, s->ncell, SK_FLOOR, env_nprandom_randint(np, (uint32_t)n));
    if (cell < 0) return -1;
    room[cell] = SK_PLAYER;
    for (int b = 0; b < s->nboxes; b++) {
        n = sk_count(room, s->ncell, SK_FLOOR);
        cell = sk_nth(room, s->ncell, SK_FLOOR, env_nprandom_randint(np, (uint32_t)n));
        if (cell < 0) return -1;
        room[cell] = SK_TARGET;
    }
    return 0;
}

/* Reverse play keeps the dynamic layer of the grid as a 2-bit key per cell
 * (0 nothing, 1 player, 2 pulled box "3", 3 unmoved box "4"): the same identity as
 * gym-sokoban's marshal.dumps(room_state) for a fixed room. */
static void rp_set(sokoban *s, int cell, uint8_t v) {
    static const uint64_t code[6] = {0, 0, 0, 2, 3, 1};
    uint64_t old = code[s->rp_grid[cell]], nw = code[v];
    int w = cell >> 5, sh = (cell & 31) * 2;
    s->rp_key[w] ^= (old ^ nw) << sh;
    s->rp_grid[cell] = v;
}

static long long rp_displacement(const sokoban *s, const int *pos) {
    long long d = 0;
    for (int k = 0; k < s->rp_nb; k++) {
        int a = s->rp_target[k], b = pos[k];
        d += abs(a / s->cols - b / s->cols) + abs(a % s->cols - b % s->cols);
    }
    return d;
}

static int rp_dfs(sokoban *s, int ttl, long long swaps, int last_pull) {
    if (--ttl <= 0 || s->explored.n >= SK_EXPLORED_CAP) return 0;
    int ins = sk_set_insert(&s->explored, s->rp_key, 0, NULL);
    if (ins <= 0) return ins; /* explored already (0) or out of memory (-1) */
    long long score = swaps * rp_displacement(s, s->rp_pos);
    int empty = 0;
    for (int k = 0; k < s->rp_nb; k++) empty += s->rp_grid[s->rp_target[k]] == SK_TARGET;
    if (empty != s->rp_nb) score = 0;
    if (score > s->rp_best_score) {
        s->rp_best_score = score;
        memcpy(s->rp_best, s->rp_grid, (size_t)s->ncell);
        memcpy(s->rp_best_pos, s->rp_pos, sizeof s->rp_pos);
    }
    const uint8_t *fx = s->fixed;
    for (int a = 0; a < (s->rp_pull_only ? 4 : 8); a++) {
        int p = s->rp_player, off = sk_dr[a % 4] * s->cols + sk_dc[a % 4], nx = p + off;
        uint8_t nv = s->rp_grid[nx];
        if (nv != SK_FLOOR && nv != SK_TARGET) continue; /* no move: same state, explored */
        rp_set(s, p, fx[p]);
        rp_set(s, nx, SK_PLAYER);
        s->rp_player = nx;
        int pulled = -1, box = p - off, new_last = last_pull;
        uint8_t box_v = 0;
        if (a < 4 && (s->rp_grid[box] == SK_BOX_ON || s->rp_grid[box] == SK_BOX)) {
            box_v = s->rp_grid[box];
            rp_set(s, p, SK_BOX_ON);
            rp_set(s, box, fx[box]);
            for (int k = 0; k < s->rp_nb; k++)
                if (s->rp_pos[k] == box) {
                    s->rp_pos[k] = p;
                    pulled = k;
                }
            new_last = pulled;
        }
        long long swaps_next = swaps + (new_last != last_pull);
        /* gym-sokoban passes the old last_pull down (its bug); verl-agent the new one */
        int r = rp_dfs(s, ttl, swaps_next, s->rp_pass_new_last ? new_last : last_pull);
        if (pulled >= 0) {
            s->rp_pos[pulled] = box;
            rp_set(s, box, box_v);
        }
        rp_set(s, p, SK_PLAYER);
        rp_set(s, nx, nv);
        s->rp_player = p;
        if (r < 0) return r;
    }
    return 0;
}

/* verl-agent's add_random_player_movement. */
static void sk_random_player_moves(sokoban *s, env_mt19937 *py, uint8_t *room, double move_p) {
    if (env_pyrandom_random(py) > move_p) return;
    int player = -1;
    for (int i = 0; i < s->ncell && player < 0; i++)
        if (room[i] == SK_PLAYER) player = i;
    int prev[4] = {player}, nprev = 1, steps = 0;
    while (steps < 3) {
        int valid[4], nv = 0;
        for (int a = 0; a < 4; a++) {
            int nx = player + sk_dr[a] * s->cols + sk_dc[a], seen = 0;
            for (int i = 0; i < nprev; i++) seen |= prev[i] == nx;
            if ((room[nx] == SK_FLOOR || room[nx] == SK_TARGET) && !seen) valid[nv++] = nx;
        }
        if (!nv) break;
        int nx = valid[env_pyrandom_below(py, (uint32_t)nv)];
        room[player] = s->fixed[player];
        room[nx] = SK_PLAYER;
        player = nx;
        prev[nprev++] = nx;
        steps++;
        if (steps >= 3 || env_pyrandom_random(py) > 0.5) break;
    }
}

/* gym-sokoban generate_room (tries=4): 0 ok, 1 retry (RuntimeError / RuntimeWarning in
 * Python), -1 out of memory. Fills s->fixed and s->state. */
static int sk_generate_room(sokoban *s, env_mt19937 *py, env_mt19937 *np) {
    uint8_t room[SK_MAXC];
    long long score = 0;
    for (int t = 0; t < 4; t++) {
        sk_topology(s, py, room);
        if (sk_place(s, np, room)) return 1;
        s->rp_nb = 0;
        for (int i = 0; i < s->ncell; i++) {
            s->fixed[i] = room[i] == SK_PLAYER ? SK_FLOOR : room[i];
            if (room[i] == SK_TARGET) {
                s->rp_target[s->rp_nb] = s->rp_pos[s->rp_nb] = i;
                s->rp_nb++;
            }
        }
        memset(s->rp_grid, 0, sizeof s->rp_grid);
        memset(s->rp_key, 0, sizeof s->rp_key);
        for (int i = 0; i < s->ncell; i++) {
            rp_set(s, i, room[i] == SK_TARGET ? SK_BOX : room[i]);
            if (room[i] == SK_PLAYER) s->rp_player = i;
        }
        if (sk_set_clear(&s->explored, (size_t)(s->ncell * 2 + 63) / 64)) return -1;
        s->rp_best_score = -1;
        if (rp_dfs(s, s->search_depth, 0, -1) < 0) return -1;
        score = s->rp_best_score;
        if (score > 0) break;
    }
    if (score <= 0) return 1;
    for (int i = 0; i < s->ncell; i++)
        s->state[i] = s->rp_best[i] == SK_BOX_ON ? SK_BOX : s->rp_best[i];
    if (s->generator == SK_GEN_VERL)
        sk_random_player_moves(s, py, s->state,
                               rp_displacement(s, s->rp_best_pos) == 1 ? 0.8 : 0.5);
    return 0;
}

/* Cells from which a lone box can still be pushed onto some target. */
static void sk_compute_live(sokoban *s) {
    int queue[SK_MAXC], qh = 0, qt = 0;
    memset(s->live, 0, sizeof s->live);
    for (int i = 0; i < s->ncell; i++)
        if (s->fixed[i] == SK_TARGET) {
            s->live[i] = 1;
            queue[qt++] = i;
        }
    while (qh < qt) {
        int c = queue[qh++];
        for (int a = 0; a < 4; a++) {
            int off = sk_dr[a] * s->cols + sk_dc[a], b = c + off, p = c + 2 * off;
            int br = c / s->cols + 2 * sk_dr[a], bc = c % s->cols + 2 * sk_dc[a];
            if (br < 0 || br >= s->rows || bc < 0 || bc >= s->cols) continue;
            /* a box at b is pushed to c by a player standing at p */
            if (s->fixed[b] != SK_WALL && s->fixed[p] != SK_WALL && !s->live[b]) {
                s->live[b] = 1;
                queue[qt++] = b;
            }
        }
    }
}

/* ---------------- state, step rules, rendering ---------------- */

static int sk_empty_targets(const sokoban *s) {
    int k = 0;
    for (int i = 0; i < s->nboxes; i++) {
        uint8_t v = s->state[s->targets[i]];
        k += v == SK_TARGET || v == SK_PLAYER;
    }
    return k;
}

/* gym-sokoban _push for verl-agent actions 1-4; returns the reward (gym _calc_reward). */
static double sk_apply(sokoban *s, int dir, int *moved, int *pushed) {
    int p = s->player, off = sk_dr[dir] * s->cols + sk_dc[dir], nx = p + off;
    int br = p / s->cols + 2 * sk_dr[dir], bc = p % s->cols + 2 * sk_dc[dir];
    *moved = *pushed = 0;
    if (br < s->rows && bc < s->cols) { /* gym checks only the upper bounds */
        uint8_t nv = s->state[nx];
        int bx = nx + off;
        if ((nv == SK_BOX_ON || nv == SK_BOX) && br >= 0 && bc >= 0 &&
            (s->state[bx] == SK_FLOOR || s->state[bx] == SK_TARGET)) {
            s->state[nx] = SK_PLAYER;
            s->state[p] = s->fixed[p];
            s->state[bx] = s->fixed[bx] == SK_TARGET ? SK_BOX_ON : SK_BOX;
            s->player = nx;
            *moved = *pushed = 1;
        } else if (nv == SK_FLOOR || nv == SK_TARGET) {
            s->state[nx] = SK_PLAYER;
            s->state[p] = s->fixed[p];
            s->player = nx;
            *moved = 1;
        }
    }
    double r = -0.1;
    int empty = sk_empty_targets(s), on = s->nboxes - empty;
    if (on > s->boxes_on_target)
        r += 1.0;
    else if (on < s->boxes_on_target)
        r += -1.0;
    if (empty == 0) r += 10.0;
    s->boxes_on_target = on;
    return r;
}

static void sk_render(sokoban *s) {
    /* 8-byte chunks copied whole (the buffer has room), advanced by the real length */
    static const char cell[7][8] = {" # \t", " _ \t", " O \t", " \xe2\x88\x9a \t",
                                    " X \t", " P \t", " S \t"};
    static const uint8_t len[7] = {4, 4, 4, 6, 4, 4, 4};
    char *o = s->obs_text;
    for (int r = 0; r < s->rows; r++) {
        if (r) *o++ = '\n';
        for (int c = 0; c < s->cols; c++) {
            int i = r * s->cols + c, v = s->state[i];
            if (v == SK_PLAYER && s->fixed[i] == SK_TARGET) v = 6;
            memcpy(o, cell[v], 8);
            o += len[v];
        }
    }
    *o = 0;
}

static void sk_fill_obs(sokoban *s, env_obs *obs, double reward) {
    sk_render(s);
    obs->task = "push every box (X) onto a target (O)";
    obs->observation = s->obs_text;
    obs->n_admissible = 4;
    obs->admissible = sk_admissible;
    obs->reward = (float)reward;
    obs->won = s->boxes_on_target == s->nboxes;
    obs->done = obs->won;
    obs->family = "sokoban";
    obs->info = "";
}

/* ASCII case-insensitive substring test (the words are lower-case ASCII). */
static int sk_contains(const char *hay, const char *word) {
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        for (; word[i]; i++) {
            char c = p[i];
            if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
            if (c != word[i]) break;
        }
        if (!word[i]) return 1;
    }
    return 0;
}

/* verl-agent's sokoban_projection: the first of up/down/left/right/still (in that order)
 * contained in the lower-cased text. 0-3 a direction, 4 still, -1 none. */
static int sk_action_word(const char *a) {
    static const char *const words[5] = {"up", "down", "left", "right", "still"};
    if (!a) return -1;
    for (int i = 0; i < 4; i++) /* the common case: exactly the word */
        if (strcmp(a, words[i]) == 0) return i;
    for (int i = 0; i < 5; i++)
        if (sk_contains(a, words[i])) return i;
    return -1;
}

static int sk_action_valid(const env *e, const char *action) {
    (void)e;
    return sk_action_word(action) >= 0;
}

/* ---------------- solver (BFS over player + boxes) ---------------- */

static uint64_t sk_pack(int player, const int *boxes, int nb) {
    int b[SK_MAXB];
    memcpy(b, boxes, (size_t)nb * sizeof *b);
    for (int i = 1; i < nb; i++)
        for (int j = i; j > 0 && b[j - 1] > b[j]; j--) {
            int t = b[j];
            b[j] = b[j - 1];
            b[j - 1] = t;
        }
    uint64_t k = (uint64_t)player;
    for (int i = 0; i < nb; i++) k |= (uint64_t)b[i] << (8 * (i + 1));
    return k;
}

static void sk_unpack(uint64_t k, int nb, int *player, int *boxes) {
    *player = (int)(k & 0xff);
    for (int i = 0; i < nb; i++) boxes[i] = (int)((k >> (8 * (i + 1))) & 0xff);
}

static uint64_t sk_current_key(const sokoban *s) {
    int boxes[SK_MAXB], nb = 0;
    for (int i = 0; i < s->ncell && nb < SK_MAXB; i++)
        if (s->state[i] == SK_BOX || s->state[i] == SK_BOX_ON) boxes[nb++] = i;
    return sk_pack(s->player, boxes, nb);
}

static int sk_is_goal(const sokoban *s, const int *boxes) {
    for (int i = 0; i < s->nboxes; i++)
        if (s->fixed[boxes[i]] != SK_TARGET) return 0;
    return 1;
}

/* Shortest solution from state `start`: 1 found (plan and plan_keys filled), 0 none
 * exists, -1 state limit or out of memory. Pushes onto dead cells are pruned (exact). */
static int sk_solve(sokoban *s, uint64_t start) {
    const int nb = s->nboxes;
    int player, boxes[SK_MAXB];
    s->plan_len = 0;
    sk_unpack(start, nb, &player, boxes);
    if (sk_is_goal(s, boxes)) return 1;
    if (sk_set_clear(&s->seen, 1)) return -1;
    size_t head = 0, tail = 0;
    if (!s->nodes_cap) {
        s->nodes = malloc(4096 * sizeof *s->nodes);
        if (!s->nodes) return -1;
        s->nodes_cap = 4096;
    }
    s->nodes[tail++] = (sk_node){start, -1, 0};
    if (sk_set_insert(&s->seen, &start, 0, NULL) < 0) return -1;
    uint8_t occ[SK_MAXC] = {0};
    while (head < tail) {
        sk_node cur = s->nodes[head];
        sk_unpack(cur.key, nb, &player, boxes);
        for (int i = 0; i < nb; i++) occ[boxes[i]] = (uint8_t)(i + 1);
        for (int a = 0; a < 4; a++) {
            int off = sk_dr[a] * s->cols + sk_dc[a], nx = player + off, nbx[SK_MAXB];
            if (s->fixed[nx] == SK_WALL) continue;
            memcpy(nbx, boxes, sizeof nbx);
            if (occ[nx]) {
                int bx = nx + off;
                if (s->fixed[bx] == SK_WALL || occ[bx] || !s->live[bx]) continue;
                nbx[occ[nx] - 1] = bx;
            }
            uint64_t k = sk_pack(nx, nbx, nb);
            int ins = sk_set_insert(&s->seen, &k, (int32_t)tail, NULL);
            if (ins < 0) return -1;
            if (!ins) continue;
            if (tail >= SK_SOLVER_LIMIT) return -1;
            if (tail == s->nodes_cap) {
                sk_node *bigger = realloc(s->nodes, 2 * s->nodes_cap * sizeof *bigger);
                if (!bigger) return -1;
                s->nodes = bigger;
                s->nodes_cap *= 2;
            }
            s->nodes[tail] = (sk_node){k, (int32_t)head, (uint8_t)a};
            if (sk_is_goal(s, nbx)) {
                int len = 0;
                for (int32_t i = (int32_t)tail; s->nodes[i].parent >= 0; i = s->nodes[i].parent)
                    len++;
                if (len > SK_PLAN_CAP) return -1;
                s->plan_len = len;
                for (int32_t i = (int32_t)tail; s->nodes[i].parent >= 0; i = s->nodes[i].parent) {
                    len--;
                    s->plan[len] = s->nodes[i].move;
                    s->plan_keys[len] = s->nodes[s->nodes[i].parent].key;
                }
                return 1;
            }
            tail++;
        }
        for (int i = 0; i < nb; i++) occ[boxes[i]] = 0;
        head++;
    }
    return 0;
}

int env_sokoban_distance(env *e) {
    if (!e || e->vt != &env_sokoban_vtable) return -2;
    sokoban *s = (sokoban *)e;
    int r = sk_solve(s, sk_current_key(s));
    return r == 1 ? s->plan_len : r == 0 ? -1 : -2;
}

int env_sokoban_level(const env *e, int *rows, int *cols, uint8_t *fixed, uint8_t *state) {
    if (!e || e->vt != &env_sokoban_vtable) return -1;
    const sokoban *s = (const sokoban *)e;
    if (rows) *rows = s->rows;
    if (cols) *cols = s->cols;
    if (fixed) memcpy(fixed, s->fixed, (size_t)s->ncell);
    if (state) memcpy(state, s->state, (size_t)s->ncell);
    return 0;
}

/* ---------------- env interface ---------------- */

static int sk_create(env **out, const env_kv *kv, int n_kv, char *err, size_t errlen) {
    static const char *const known[] = {"room_size", "boxes",     "search_depth",
                                        "generator", "gen_steps", NULL};
    if (env_kv_check("sokoban", kv, n_kv, known, err, errlen)) return -1;
    int rows = 6, cols = 6, boxes, depth, gen_steps, generator = SK_GEN_VERL;
    const char *rs = env_kv_get(kv, n_kv, "room_size");
    if (rs) {
        char *end;
        long r = strtol(rs, &end, 10), c = r;
        if (end != rs && (*end == 'x' || *end == 'X')) {
            const char *cs = end + 1;
            c = strtol(cs, &end, 10);
            if (end == cs) c = -1;
        }
        if (end == rs || *end || r < 4 || r > ENV_SOKOBAN_MAX_DIM || c < 4 ||
            c > ENV_SOKOBAN_MAX_DIM)
            return seed_errf(err, errlen,
                             "sokoban: config key 'room_size' has value '%s'; expected N or "
                             "ROWSxCOLS with each from 4 to %d (e.g. 6 or 6x8)",
                             rs, ENV_SOKOBAN_MAX_DIM);
        rows = (int)r;
        cols = (int)c;
    }
    const char *g = env_kv_get(kv, n_kv, "generator");
    if (g) {
        if (strcmp(g, "verl-agent") == 0)
            generator = SK_GEN_VERL;
        else if (strcmp(g, "gym-sokoban") == 0)
            generator = SK_GEN_GYM;
        else
            return seed_errf(err, errlen,
                             "sokoban: config key 'generator' has value '%s'; expected "
                             "'verl-agent' or 'gym-sokoban'",
                             g);
    }
    if (env_kv_int("sokoban", kv, n_kv, "boxes", 1, 1, SK_MAXB, &boxes, err, errlen) ||
        env_kv_int("sokoban", kv, n_kv, "search_depth", generator == SK_GEN_VERL ? 30 : 300,
                   SK_MIN_DEPTH, 100000, &depth, err, errlen) ||
        env_kv_int("sokoban", kv, n_kv, "gen_steps", (int)(1.7 * (rows + cols)), 1, 100000,
                   &gen_steps, err, errlen))
        return -1;
    sokoban *s = calloc(1, sizeof *s);
    if (!s) return seed_errf(err, errlen, "sokoban: out of memory");
    s->rows = rows;
    s->cols = cols;
    s->ncell = rows * cols;
    s->nboxes = boxes;
    s->search_depth = depth;
    s->gen_steps = gen_steps;
    s->generator = generator;
    s->rp_pull_only = generator == SK_GEN_VERL;
    s->rp_pass_new_last = generator == SK_GEN_VERL;
    *out = &s->base;
    return 0;
}

static void sk_destroy(env *e) {
    sokoban *s = (sokoban *)e;
    sk_set_free(&s->explored);
    sk_set_free(&s->seen);
    free(s->nodes);
    free(s);
}

static int sk_reset(env *e, uint64_t seed, env_split split, env_obs *obs, char *err,
                    size_t errlen) {
    sokoban *s = (sokoban *)e;
    uint32_t ls = env_level_seed(seed, split);
    env_mt19937 py, np;
    env_pyrandom_seed(&py, ls);
    env_nprandom_seed(&np, ls);
    int r = 1;
    for (int attempt = 0; attempt < SK_GEN_ATTEMPTS && r == 1; attempt++)
        r = sk_generate_room(s, &py, &np);
    if (r < 0) return seed_errf(err, errlen, "sokoban: out of memory while generating a level");
    if (r)
        return seed_errf(err, errlen,
                         "sokoban: no level after %d attempts for a %dx%d room with %d boxes "
                         "(room too small for the boxes?)",
                         SK_GEN_ATTEMPTS, s->rows, s->cols, s->nboxes);
    for (int i = 0, k = 0; i < s->ncell; i++) {
        if (s->state[i] == SK_PLAYER) s->player = i;
        if (s->fixed[i] == SK_TARGET && k < SK_MAXB) s->targets[k++] = i;
    }
    s->boxes_on_target = 0;
    s->last_pushed = 0;
    s->plan_len = 0;
    sk_compute_live(s);
    sk_fill_obs(s, obs, 0.0);
    return 0;
}

static int sk_step(env *e, const char *action, env_obs *obs, char *err, size_t errlen) {
    sokoban *s = (sokoban *)e;
    int w = sk_action_word(action), moved = 0, pushed = 0;
    double r = 0.0;
    if (w >= 0 && w < 4) r = sk_apply(s, w, &moved, &pushed);
    s->last_pushed = pushed;
    sk_fill_obs(s, obs, r);
    if (w < 0 || w == 4)
        obs->info = action ? "no-op: the action names no direction" : "no-op: invalid step";
    return 0;
}

static int sk_expert(env *e, char *buf, size_t buflen, char *err, size_t errlen) {
    sokoban *s = (sokoban *)e;
    uint64_t k = sk_current_key(s);
    for (int i = 0; i < s->plan_len; i++)
        if (s->plan_keys[i] == k) {
            snprintf(buf, buflen, "%s", sk_dir_name[s->plan[i]]);
            return 0;
        }
    int r = sk_solve(s, k);
    if (r < 0) return seed_errf(err, errlen, "sokoban: the solver hit its state limit");
    if (r == 0 || s->plan_len == 0)
        return seed_errf(err, errlen, "sokoban: the level can no longer be solved");
    snprintf(buf, buflen, "%s", sk_dir_name[s->plan[0]]);
    return 0;
}

/* The expert's reasoning for its move at this state (stage 0's think text): where the
 * player and the box of the plan's next push are, where that box goes, and how this move
 * serves the push. Cells are named as the oracle names them, so a skill's cells and the
 * policy's own reasoning speak the same language. */
static void sk_cell_name(const sokoban *s, int cell, char *out, size_t n);

static int sk_expert_reason(env *e, const char *action, char *buf, size_t buflen, char *err,
                            size_t errlen) {
    sokoban *s = (sokoban *)e;
    char first[16];
    if (sk_expert(e, first, sizeof first, err, errlen)) return -1;
    uint64_t k = sk_current_key(s);
    int i = 0;
    while (i < s->plan_len && s->plan_keys[i] != k) i++;
    /* walk the plan from here to its next push (walking never moves a box) */
    int p = s->player, box = -1, dir = -1;
    for (int j = i; j < s->plan_len && box < 0; j++) {
        int nx = p + sk_dr[s->plan[j]] * s->cols + sk_dc[s->plan[j]];
        if (s->state[nx] == SK_BOX || s->state[nx] == SK_BOX_ON) {
            box = nx;
            dir = s->plan[j];
        }
        p = nx;
    }
    char me[48], bx[48], tg[48];
    sk_cell_name(s, s->player, me, sizeof me);
    int n;
    if (box < 0) {
        n = snprintf(buf, buflen, "I am at %s. I move %s.", me, action);
    } else {
        sk_cell_name(s, box, bx, sizeof bx);
        /* one box: its target; several: which target the plan means is not named */
        if (s->nboxes == 1)
            sk_cell_name(s, s->targets[0], tg, sizeof tg);
        else
            snprintf(tg, sizeof tg, "a target");
        int push_now = s->player + sk_dr[dir] * s->cols + sk_dc[dir] == box &&
                       !strcmp(action, sk_dir_name[dir]);
        if (push_now)
            n = snprintf(buf, buflen,
                         "I am at %s. The box at %s goes to the target at %s. I push it %s.", me,
                         bx, tg, sk_dir_name[dir]);
        else
            n = snprintf(
                buf, buflen,
                "I am at %s. The box at %s goes to the target at %s. To push it %s I move %s.", me,
                bx, tg, sk_dir_name[dir], action);
    }
    if (n < 0 || (size_t)n >= buflen)
        return seed_errf(err, errlen, "sokoban: the expert's reasoning does not fit %zu bytes",
                         buflen);
    return 0;
}

/* ---------------- hindsight oracle ---------------- */

enum { SK_T_INVALID, SK_T_BUMP, SK_T_WALK, SK_T_PUSH };

typedef struct sk_tstep {
    int kind, dir, best, box_from, box_to, dist_before, dist_after;
} sk_tstep;

/* Why a box at cell b (not a target) is stuck: "corner", "wall" or NULL. */
static const char *sk_stuck_reason(const sokoban *s, int b) {
    if (s->fixed[b] == SK_TARGET) return NULL;
    int up = s->fixed[b - s->cols] == SK_WALL, dn = s->fixed[b + s->cols] == SK_WALL;
    int lf = s->fixed[b - 1] == SK_WALL, rt = s->fixed[b + 1] == SK_WALL;
    if ((up || dn) && (lf || rt)) return "corner";
    if (!s->live[b]) return "wall";
    return NULL;
}

static void sk_cell_name(const sokoban *s, int cell, char *out, size_t n) {
    snprintf(out, n, "(row %d, column %d)", cell / s->cols + 1, cell % s->cols + 1);
}

/* What the replay keeps after each step: the board (player and boxes) and whether the
 * step pushed a box. */
typedef struct sk_trace_rec {
    uint64_t key;
    int player, pushed;
} sk_trace_rec;

static void sk_trace_record(env *e, void *state) {
    const sokoban *s = (const sokoban *)e;
    sk_trace_rec *r = state;
    r->key = sk_current_key(s);
    r->player = s->player;
    r->pushed = s->last_pushed;
}

/* The replayed steps read as moves: kind, direction, the box pushed, and the solver's
 * distance and best move before and after each one. Returns the first step (0-based)
 * after which the level could no longer be solved, or -1. */
static int sk_read_trace(const env_trace *tr, sk_tstep *out, int *dist0) {
    sokoban *s = (sokoban *)tr->e;
    const sk_trace_rec *r0 = tr->step[0].state;
    int r = sk_solve(s, r0->key);
    int dist = r == 1 ? s->plan_len : r == 0 ? -1 : -2, best = s->plan_len ? s->plan[0] : -1;
    int fatal = -1;
    *dist0 = dist;
    for (int t = 0; t < tr->n; t++) {
        const sk_trace_rec *before = tr->step[t].state, *after = tr->step[t + 1].state;
        sk_tstep *st = &out[t];
        int w = sk_action_word(tr->step[t + 1].action);
        st->dir = w >= 0 && w < 4 ? w : -1;
        st->best = best;
        st->dist_before = dist;
        st->box_from = st->box_to = -1;
        if (st->dir < 0)
            st->kind = SK_T_INVALID;
        else
            st->kind = after->player == before->player ? SK_T_BUMP
                       : after->pushed                 ? SK_T_PUSH
                                                       : SK_T_WALK;
        if (st->kind == SK_T_PUSH) {
            st->box_from = after->player;
            st->box_to = after->player + sk_dr[w] * s->cols + sk_dc[w];
        }
        if (st->kind == SK_T_PUSH || st->kind == SK_T_WALK) { /* the state changed */
            r = sk_solve(s, after->key);
            dist = r == 1 ? s->plan_len : r == 0 ? -1 : -2;
            best = s->plan_len ? s->plan[0] : -1;
        }
        st->dist_after = dist;
        if (fatal < 0 && st->dist_before >= 0 && st->dist_after == -1) fatal = t;
    }
    return fatal;
}

static int sk_oracle(const env_trace *trace, env_skill *b, char *err, size_t errlen) {
    const sokoban *s = (const sokoban *)trace->e;
    sk_tstep *tr = calloc((size_t)trace->n + 1, sizeof *tr);
    if (!tr) return seed_errf(err, errlen, "sokoban: out of memory in hindsight");
    int dist0;
    const int fatal = sk_read_trace(trace, tr, &dist0), steps = trace->n, won = trace->won;
    int lines[5], nl = 0;
    char at[48], at2[48];
    if (won) {
        env_skill_put(b, "Success: every box reached a target in %d step%s", steps,
                      steps == 1 ? "" : "s");
        if (dist0 >= 0) env_skill_put(b, " (the shortest solution takes %d)", dist0);
        env_skill_put(
            b, ". Workflow that worked: locate each box and the target it should go to, walk "
               "around the box to the side opposite the push direction without touching it, "
               "then push it straight toward the target and re-position only where the box "
               "has to change direction.");
        int wasted = 0;
        for (int t = 0; t < steps; t++)
            wasted += tr[t].kind == SK_T_INVALID || tr[t].kind == SK_T_BUMP ||
                      (tr[t].dist_before >= 0 && tr[t].dist_after >= tr[t].dist_before);
        if (wasted)
            env_skill_put(b, " %d step%s did not bring the solution closer; skip such detours.",
                          wasted, wasted == 1 ? "" : "s");
        env_skill_put(b, "\n");
        /* the pushes that start a new push direction, and the final push */
        int last_dir = -1;
        for (int t = 0; t < steps; t++) {
            if (tr[t].kind != SK_T_PUSH) continue;
            int final = t == steps - 1;
            if ((tr[t].dir != last_dir && nl < 4) || (final && nl < 5)) lines[nl++] = t;
            last_dir = tr[t].dir;
        }
        for (int i = 0; i < nl; i++) {
            const sk_tstep *st = &tr[lines[i]];
            sk_cell_name(s, st->box_from, at, sizeof at);
            sk_cell_name(s, st->box_to, at2, sizeof at2);
            if (s->fixed[st->box_to] == SK_TARGET)
                env_skill_put(b, "step %d: Push the box %s from %s onto the target at %s.\n",
                              lines[i] + 1, sk_dir_name[st->dir], at, at2);
            else
                env_skill_put(b, "step %d: Push the box %s from %s to %s, toward its target.\n",
                              lines[i] + 1, sk_dir_name[st->dir], at, at2);
        }
    } else if (fatal >= 0) {
        const sk_tstep *st = &tr[fatal];
        const char *why = st->box_to >= 0 ? sk_stuck_reason(s, st->box_to) : NULL;
        const char *what = !why                    ? "where it can no longer reach a target"
                           : strcmp(why, "corner") ? "against a wall that has no target along it"
                                                   : "into a corner that is not a target";
        sk_cell_name(s, st->box_to >= 0 ? st->box_to : s->player, at, sizeof at);
        env_skill_put(
            b,
            "Failure: at step %d the move %s pushed the box to %s, %s, so the level could "
            "no longer be solved and every later step was wasted. Rule: before each push, "
            "check the cell the box will land on; never push a box %s, and keep a free "
            "path for the box to its target.",
            fatal + 1, sk_dir_name[st->dir], at, what,
            !why ? "where it blocks its own way to every target" : what);
        if (st->best >= 0)
            env_skill_put(b, " The safe move at step %d was %s.", fatal + 1, sk_dir_name[st->best]);
        env_skill_put(b, "\n");
        for (int t = 0; t < fatal && nl < 4; t++)
            if (tr[t].kind == SK_T_INVALID || tr[t].kind == SK_T_BUMP) lines[nl++] = t;
        lines[nl++] = fatal;
        for (int i = 0; i < nl; i++) {
            const sk_tstep *x = &tr[lines[i]];
            if (lines[i] == fatal) {
                if (x->best >= 0)
                    env_skill_put(
                        b, "step %d: Move %s instead of %s; pushing the box %s traps it %s.\n",
                        fatal + 1, sk_dir_name[x->best], sk_dir_name[x->dir], sk_dir_name[x->dir],
                        what);
                else
                    env_skill_put(b, "step %d: Do not push the box %s; that traps it %s.\n",
                                  fatal + 1, sk_dir_name[x->dir], what);
            } else if (x->kind == SK_T_INVALID)
                env_skill_put(b,
                              "step %d: Reason inside <think> </think> and give exactly one of up, "
                              "down, left or right inside <action> </action>.\n",
                              lines[i] + 1);
            else
                env_skill_put(
                    b,
                    "step %d: Move %s instead of %s; %s runs into a wall or a blocked box "
                    "and changes nothing.\n",
                    lines[i] + 1, x->best >= 0 ? sk_dir_name[x->best] : "another way",
                    sk_dir_name[x->dir], sk_dir_name[x->dir]);
        }
    } else {
        int inval = 0, bump = 0, detour = 0;
        for (int t = 0; t < steps; t++) {
            const sk_tstep *x = &tr[t];
            int wasted = x->kind == SK_T_INVALID || x->kind == SK_T_BUMP ||
                         (x->dist_before >= 0 && x->dist_after >= x->dist_before);
            inval += x->kind == SK_T_INVALID;
            bump += x->kind == SK_T_BUMP;
            detour += x->kind >= SK_T_WALK && wasted;
            if (wasted && nl < 5) lines[nl++] = t;
        }
        env_skill_put(
            b, "Failure: the level was still solvable when the episode ended after %d step%s",
            steps, steps == 1 ? "" : "s");
        if (dist0 >= 0) env_skill_put(b, "; the shortest solution takes %d moves", dist0);
        env_skill_put(
            b,
            ". Of the steps taken, %d were invalid replies, %d ran into a wall or a blocked "
            "box, and %d moved away from the solution. Rule: plan the whole route first — "
            "which side of the box to stand on and which way to push — then walk the "
            "shortest way there, and never repeat a move that left the board unchanged.\n",
            inval, bump, detour);
        for (int i = 0; i < nl; i++) {
            const sk_tstep *x = &tr[lines[i]];
            const char *bst = x->best >= 0 ? sk_dir_name[x->best] : "toward the box";
            if (x->kind == SK_T_INVALID)
                env_skill_put(b,
                              "step %d: Reason inside <think> </think> and give exactly one of up, "
                              "down, left or right inside <action> </action>.\n",
                              lines[i] + 1);
            else if (x->kind == SK_T_BUMP)
                env_skill_put(
                    b,
                    "step %d: Move %s instead of %s; %s runs into a wall or a blocked box "
                    "and changes nothing.\n",
                    lines[i] + 1, bst, sk_dir_name[x->dir], sk_dir_name[x->dir]);
            else
                env_skill_put(b,
                              "step %d: Move %s instead of %s; %s does not bring the box closer to "
                              "its target.\n",
                              lines[i] + 1, bst, sk_dir_name[x->dir], sk_dir_name[x->dir]);
        }
    }
    free(tr);
    return 0;
}

const env_vtable env_sokoban_vtable = {
    .name = "sokoban",
    .instructions =
        "You are an expert agent operating in the Sokoban environment.\n"
        "\n"
        "# Symbols and Their Meaning\n"
        "- Walls (`#`): block movement; nothing moves through or into them.\n"
        "- Floor (`_`): open cells where you and the boxes can move.\n"
        "- Targets (`O`): the cells the boxes must reach.\n"
        "- Boxes (`X`): what you push onto the targets.\n"
        "- Player (`P`): you.\n"
        "- Box on Target (`\xe2\x88\x9a`): a box already placed on a target.\n"
        "- Player on Target (`S`): you, standing on a target.\n"
        "\n"
        "# Rules\n"
        "Moving into a box pushes it one cell in the same direction; boxes can be pushed but "
        "never pulled, and a box cannot be pushed into a wall or into another box.\n"
        "A box pushed into a corner or against a wall without a target along it can never "
        "reach a target again, so plan the pushes ahead.\n"
        "Once every box is on a target, you win.",
    .create = sk_create,
    .destroy = sk_destroy,
    .reset = sk_reset,
    .step = sk_step,
    .expert = sk_expert,
    .expert_reason = sk_expert_reason,
    .trace_size = sizeof(sk_trace_rec),
    .trace_record = sk_trace_record,
    .oracle = sk_oracle,
    .max_steps_default = 15,
    .prompt_style = &env_prompt_style_sokoban,
    .action_valid = sk_action_valid,
};
