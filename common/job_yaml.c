/* job_yaml.c — loading a job from YAML (job_load_string, job_load_file): the loader walks
 * the document and hands every scalar to job_set under its dotted key, so a file and a
 * command-line override are checked by the same code; errors get FILE:LINE. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/job.h"
#include "common/job_internal.h"
#include "common/util.h"

typedef struct yaml_ctx {
    yaml_document_t *doc;
    job_config *job;
    const char *name; /* file name for messages */
    char *err;
    size_t errlen;
} yaml_ctx;

static const char *node_kind(yaml_node_t *n) {
    return n->type == YAML_MAPPING_NODE    ? "a mapping"
           : n->type == YAML_SEQUENCE_NODE ? "a list"
                                           : "a scalar";
}

/* Prefix "FILE:LINE: " to the sentence job_set left in err. */
static int at_line(yaml_ctx *c, yaml_node_t *n, int rc) {
    if (rc && c->err && c->errlen) {
        char tmp[SEED_ERRLEN];
        snprintf(tmp, sizeof tmp, "%s", c->err);
        snprintf(c->err, c->errlen, "%s:%zu: %s", c->name, n->start_mark.line + 1, tmp);
    }
    return rc;
}

static const char *scalar_text(yaml_node_t *n) {
    const char *v = (const char *)n->data.scalar.value;
    /* plain null spellings mean "empty" (a string key set to nothing) */
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL")))
        return "";
    return v;
}

/* Is `prefix` a section that holds keys ("algorithm", "envs.0", "envs.0.options")? */
static int is_section(const char *prefix) {
    size_t l = strlen(prefix);
    for (int i = 0; i < job_key_table_n; i++)
        if (!strncmp(job_key_table[i].name, prefix, l) && job_key_table[i].name[l] == '.') return 1;
    if (!strncmp(prefix, "envs.", 5)) {
        const char *p = prefix + 5;
        if (!isdigit((unsigned char)*p)) return 0;
        while (isdigit((unsigned char)*p)) p++;
        return *p == 0 || !strcmp(p, ".options");
    }
    return 0;
}

static int load_value(yaml_ctx *c, const char *full, yaml_node_t *v);

static int load_mapping(yaml_ctx *c, yaml_node_t *map, const char *prefix) {
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(c->doc, pr->value);
        if (k->type != YAML_SCALAR_NODE)
            return at_line(c, k,
                           seed_errf(c->err, c->errlen, "%s%sexpected a key name, got %s", prefix,
                                     *prefix ? ": " : "", node_kind(k)));
        const char *kt = (const char *)k->data.scalar.value;
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < pr; q++) {
            yaml_node_t *qk = yaml_document_get_node(c->doc, q->key);
            if (qk->type == YAML_SCALAR_NODE && !strcmp((const char *)qk->data.scalar.value, kt))
                return at_line(c, k,
                               seed_errf(c->err, c->errlen, "%s%s%s: set twice (first on line %zu)",
                                         prefix, *prefix ? "." : "", kt, qk->start_mark.line + 1));
        }
        char full[512];
        if (snprintf(full, sizeof full, "%s%s%s", prefix, *prefix ? "." : "", kt) >=
            (int)sizeof full)
            return at_line(c, k, seed_errf(c->err, c->errlen, "%.64s...: key too long", full));
        int rc = load_value(c, full, v);
        if (rc) return rc;
    }
    return 0;
}

static int load_value(yaml_ctx *c, const char *full, yaml_node_t *v) {
    const job_key_def *k = job_key_find(full);
    if (v->type == YAML_SCALAR_NODE) {
        if (!k && is_section(full) && !*scalar_text(v)) return 0; /* "algorithm:" alone */
        /* a list in a file ("envs: 5" is not one; "envs=a,b" is the command line's form) */
        char sbuf[96];
        if (!strcmp(full, "envs") && *scalar_text(v))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "envs: expected a list of env entries (- name: sokoban "
                                     "...), got '%s'",
                                     job_shown(scalar_text(v), sbuf, sizeof sbuf)));
        if (!k && is_section(full))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "%s: expected a mapping of %s.* keys, got '%s'", full, full,
                                     scalar_text(v)));
        return at_line(c, v, job_set(c->job, full, scalar_text(v), c->err, c->errlen)) ? -1 : 0;
    }
    if (v->type == YAML_MAPPING_NODE) {
        if (!strcmp(full, "envs"))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "envs: expected a list of env entries (- name: "
                                     "sokoban ...), got a mapping"));
        if (k) {
            char exp[256];
            job_expected_text(k, exp, sizeof exp);
            return at_line(
                c, v, seed_errf(c->err, c->errlen, "%s: expected %s, got a mapping", full, exp));
        }
        if (!strncmp(full, "envs.", 5) && strstr(full, ".options."))
            return at_line(c, v,
                           seed_errf(c->err, c->errlen,
                                     "%s: expected a text value (options reach the env as "
                                     "text), got a mapping",
                                     full));
        if (!is_section(full)) {
            if (!strchr(full, '.')) {
                char sug[128];
                const char *s = job_suggest(full, 1, sug, sizeof sug);
                return at_line(c, v,
                               seed_errf(c->err, c->errlen, "%s: unknown section%s%s%s", full,
                                         s ? " (did you mean " : "", s ? s : "", s ? "?)" : ""));
            }
            return at_line(c, v, job_unknown_key(full, c->err, c->errlen));
        }
        return load_mapping(c, v, full);
    }
    /* a list */
    int n = (int)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (!strncmp(full, "envs.", 5) && strstr(full, ".options."))
        return at_line(c, v,
                       seed_errf(c->err, c->errlen,
                                 "%s: expected a text value (options reach the env as text), "
                                 "got a list",
                                 full));
    if (!strcmp(full, "envs")) {
        c->job->n_envs = 0; /* a list in the file replaces the list */
        for (int i = 0; i < n; i++) {
            yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
            char pre[32];
            snprintf(pre, sizeof pre, "envs.%d", i);
            int rc;
            if (it->type == YAML_SCALAR_NODE) { /* "- sokoban": a name alone */
                char key[48];
                snprintf(key, sizeof key, "%s.name", pre);
                rc = at_line(c, it, job_set(c->job, key, scalar_text(it), c->err, c->errlen));
            } else if (it->type == YAML_MAPPING_NODE) {
                rc = load_mapping(c, it, pre);
            } else {
                rc = at_line(c, it,
                             seed_errf(c->err, c->errlen,
                                       "%s: expected an env entry (a mapping), got a list", pre));
            }
            if (rc) return rc;
            if (c->job->n_envs != i + 1 || !c->job->envs[i].name[0])
                return at_line(
                    c, it, seed_errf(c->err, c->errlen, "%s.name: an env entry needs a name", pre));
        }
        return 0;
    }
    if (k && k->type == JOB_K_DBL2) {
        char joined[256] = "";
        for (int i = 0; i < n; i++) {
            yaml_node_t *it = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
            if (it->type != YAML_SCALAR_NODE)
                return at_line(c, it,
                               seed_errf(c->err, c->errlen, "%s: expected numbers, got %s", full,
                                         node_kind(it)));
            size_t l = strlen(joined);
            snprintf(joined + l, sizeof joined - l, "%s%s", i ? "," : "", scalar_text(it));
        }
        return at_line(c, v, job_set(c->job, full, joined, c->err, c->errlen)) ? -1 : 0;
    }
    if (k) {
        char exp[256];
        job_expected_text(k, exp, sizeof exp);
        return at_line(c, v,
                       seed_errf(c->err, c->errlen, "%s: expected %s, got a list", full, exp));
    }
    if (is_section(full))
        return at_line(c, v,
                       seed_errf(c->err, c->errlen,
                                 "%s: expected a mapping of %s.* keys, got a list", full, full));
    return at_line(c, v, job_unknown_key(full, c->err, c->errlen));
}

int job_load_string(job_config *job, const char *text, size_t len, const char *name, char *err,
                    size_t errlen) {
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return seed_errf(err, errlen, "%s: cannot initialize the YAML parser", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = seed_errf(err, errlen, "%s:%zu: YAML syntax error: %s%s%s (column %zu)", name,
                           parser.problem_mark.line + 1, parser.problem ? parser.problem : "?",
                           parser.context ? ", " : "", parser.context ? parser.context : "",
                           parser.problem_mark.column + 1);
        yaml_parser_delete(&parser);
        return rc;
    }
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {                 /* an empty file changes nothing */
        job_config work = *job; /* all or nothing: a failing file leaves *job as it was */
        yaml_ctx c = {&doc, &work, name, err, errlen};
        if (root->type != YAML_MAPPING_NODE)
            rc = at_line(&c, root,
                         seed_errf(err, errlen,
                                   "expected a mapping of sections (job:, model:, "
                                   "...) at the top, got %s",
                                   node_kind(root)));
        else
            rc = load_mapping(&c, root, "");
        if (!rc) {
            yaml_document_t more;
            if (!yaml_parser_load(&parser, &more)) {
                rc = seed_errf(err, errlen, "%s:%zu: YAML syntax error: %s (column %zu)", name,
                               parser.problem_mark.line + 1, parser.problem ? parser.problem : "?",
                               parser.problem_mark.column + 1);
            } else {
                if (yaml_document_get_root_node(&more))
                    rc = seed_errf(err, errlen,
                                   "%s:%zu: expected one YAML document, found a second one", name,
                                   more.start_mark.line + 1);
                yaml_document_delete(&more);
            }
        }
        if (!rc) *job = work;
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int job_load_file(job_config *job, const char *path, char *err, size_t errlen) {
    char *text;
    size_t len;
    if (seed_read_file(path, &text, &len, err, errlen)) return -1;
    int rc = job_load_string(job, text, len, path, err, errlen);
    free(text);
    return rc;
}
