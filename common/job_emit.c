/* job_emit.c — a job written back out: YAML (with each key's doc as a comment when asked;
 * what `seedctl config` prints and job_load_string reads back) and JSON (the learner's
 * config.json and status). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/job.h"
#include "common/job_internal.h"

/* A YAML double-quoted scalar. */
static void yaml_quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void yaml_line(FILE *f, const char *lead, const char *leaf, const job_key_def *k,
                      const void *base, int comments) {
    char v[JOB_PATH_LEN + 64];
    job_field_text(k, base, v, sizeof v);
    char *line = NULL;
    size_t len = 0;
    FILE *lf = open_memstream(&line, &len);
    if (!lf) return;
    fprintf(lf, "%s%s: ", lead, leaf);
    if (job_key_is_text(k))
        yaml_quoted(lf, v);
    else
        fputs(v, lf);
    fclose(lf);
    if (comments && k->doc)
        fprintf(f, "%-44s # %s\n", line, k->doc);
    else
        fprintf(f, "%s\n", line);
    free(line);
}

static void yaml_envs(FILE *f, const job_config *job, int comments) {
    if (comments)
        fprintf(f, "%-44s # %s\n", "envs:", "one entry per env; options go to the env as text");
    else
        fprintf(f, "envs:\n");
    if (job->n_envs == 0) fprintf(f, "  []\n");
    for (int e = 0; e < job->n_envs; e++) {
        const job_env *ev = &job->envs[e];
        for (int j = 0; j < job_env_key_table_n; j++)
            yaml_line(f, j == 0 ? "  - " : "    ", job_env_key_table[j].name, &job_env_key_table[j],
                      ev, comments && e == 0);
        fprintf(f, "    options:%s\n", ev->n_options ? "" : " {}");
        for (int o = 0; o < ev->n_options; o++) {
            fprintf(f, "      %s: ", ev->options[o].key);
            yaml_quoted(f, ev->options[o].value);
            fputc('\n', f);
        }
    }
}

char *job_to_yaml(const job_config *job, int flags) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    int comments = flags & JOB_YAML_COMMENTS;
    if (comments)
        fprintf(f, "# A seed job. Every key can be overridden on the command line as\n"
                   "# section.key=value (envs: envs.N.key=value); `seedctl config --keys` lists\n"
                   "# them with what each accepts, `seedctl config JOB.yaml` prints the\n"
                   "# effective config.\n");
    char section[64] = "";
    for (int i = 0; i < job_key_table_n; i++) {
        const job_key_def *k = &job_key_table[i];
        const char *dot = strchr(k->name, '.');
        size_t sl = (size_t)(dot - k->name);
        if (strlen(section) != sl || strncmp(section, k->name, sl)) {
            snprintf(section, sizeof section, "%.*s", (int)sl, k->name);
            if (!strcmp(section, "algorithm")) yaml_envs(f, job, comments); /* after model */
            fprintf(f, "%s:\n", section);
        }
        yaml_line(f, "  ", dot + 1, k, job, comments);
    }
    fclose(f);
    return out;
}

static void cjson_add(cJSON *obj, const char *leaf, const job_key_def *k, const void *base) {
    const char *p = (const char *)base + k->off;
    char v[JOB_PATH_LEN + 64];
    switch (k->type) {
    case JOB_K_INT:
        cJSON_AddNumberToObject(obj, leaf, *(const int *)p);
        break;
    case JOB_K_U64: {
        uint64_t u = *(const uint64_t *)p;
        if (u <= (1ull << 53)) {
            cJSON_AddNumberToObject(obj, leaf, (double)u);
        } else {
            job_field_text(k, base, v, sizeof v);
            cJSON_AddStringToObject(obj, leaf, v);
        }
        break;
    }
    case JOB_K_DBL:
        cJSON_AddNumberToObject(obj, leaf, *(const double *)p);
        break;
    case JOB_K_DBL2: {
        cJSON *a = cJSON_AddArrayToObject(obj, leaf);
        cJSON_AddItemToArray(a, cJSON_CreateNumber(((const double *)p)[0]));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(((const double *)p)[1]));
        break;
    }
    case JOB_K_BOOL:
        cJSON_AddBoolToObject(obj, leaf, *(const int *)p);
        break;
    case JOB_K_CURVE:
        /* status is readable by anyone who reaches the socket: never show a secret */
        if (!strcmp(leaf, "curve_secret") && *p)
            cJSON_AddStringToObject(obj, leaf, "(set)");
        else
            cJSON_AddStringToObject(obj, leaf, p);
        break;
    default:
        job_field_text(k, base, v, sizeof v);
        cJSON_AddStringToObject(obj, leaf, v);
    }
}

cJSON *job_to_cjson(const job_config *job) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    for (int i = 0; i < job_key_table_n; i++) {
        const job_key_def *k = &job_key_table[i];
        const char *dot = strchr(k->name, '.');
        char sec[64];
        snprintf(sec, sizeof sec, "%.*s", (int)(dot - k->name), k->name);
        cJSON *s = cJSON_GetObjectItemCaseSensitive(root, sec);
        if (!s) {
            if (!strcmp(sec, "algorithm")) {
                cJSON *arr = cJSON_AddArrayToObject(root, "envs");
                for (int e = 0; e < job->n_envs; e++) {
                    cJSON *eo = cJSON_CreateObject();
                    for (int j = 0; j < job_env_key_table_n; j++)
                        cjson_add(eo, job_env_key_table[j].name, &job_env_key_table[j],
                                  &job->envs[e]);
                    cJSON *opts = cJSON_AddObjectToObject(eo, "options");
                    for (int o = 0; o < job->envs[e].n_options; o++)
                        cJSON_AddStringToObject(opts, job->envs[e].options[o].key,
                                                job->envs[e].options[o].value);
                    cJSON_AddItemToArray(arr, eo);
                }
            }
            s = cJSON_AddObjectToObject(root, sec);
        }
        cjson_add(s, dot + 1, k, job);
    }
    return root;
}

char *job_to_json(const job_config *job, int pretty) {
    cJSON *j = job_to_cjson(job);
    if (!j) return NULL;
    char *s = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}
