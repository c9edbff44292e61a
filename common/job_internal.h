/* job_internal.h — what the files of the job module share (not for other modules).
 *
 * The job is one key table (job.c: every key's name, type, field, bounds and doc) that
 * the other files walk: job_yaml.c loads a YAML file into it, job_resolve.c fills what a
 * job leaves to defaults and checks the keys against each other, job_emit.c writes a job
 * back out as YAML or JSON. Each key's field lives at `off` in job_config (job_env for
 * the env table), `size` bytes. */
#ifndef SEED_COMMON_JOB_INTERNAL_H
#define SEED_COMMON_JOB_INTERNAL_H

#include <stddef.h>

#include "common/job.h"

typedef enum {
    JOB_K_STR,      /* any text that fits */
    JOB_K_NAME,     /* letters, digits, '.', '_', '-'; not empty */
    JOB_K_HOST,     /* host name, IPv4/IPv6 address or '*' */
    JOB_K_WORD,     /* text that must be one of `choices` (stored as text) */
    JOB_K_INT,      /* int in [lo, hi] */
    JOB_K_U64,      /* uint64_t */
    JOB_K_DBL,      /* double, bounds per flags */
    JOB_K_DBL2,     /* double[2], each in bounds */
    JOB_K_BOOL,     /* int 0/1 */
    JOB_K_ENUM,     /* int: index into `choices` */
    JOB_K_ENDPOINT, /* "" or a ZeroMQ endpoint */
    JOB_K_CURVE,    /* "" or a Z85 key of 40 characters */
} job_key_type;

enum { JOB_LO_EXCL = 1, JOB_HI_EXCL = 2 };

typedef struct job_key_def {
    const char *name;
    job_key_type type;
    size_t off, size;
    double lo, hi;
    unsigned flags;
    const char *choices; /* "a|b|c" for JOB_K_ENUM and JOB_K_WORD */
    const char *doc;
} job_key_def;

/* Every key but the env list, in the order job_to_yaml writes them; the fields of one
 * env entry (relative to job_env; full keys are envs.N.<name>). */
extern const job_key_def job_key_table[];
extern const int job_key_table_n;
extern const job_key_def job_env_key_table[];
extern const int job_env_key_table_n;

/* The key named `name` ("algorithm.mode"), or NULL. */
const job_key_def *job_key_find(const char *name);
/* Parse value into k's field of base (a job_config, or a job_env for the env table); an
 * error names key, the value and what k accepts. */
int job_field_set(const job_key_def *k, void *base, const char *key, const char *value, char *err,
                  size_t errlen);
/* k's field of base as plain text (strings unquoted, enums by name). */
void job_field_text(const job_key_def *k, const void *base, char *buf, size_t n);
int job_field_equal(const job_key_def *k, const void *a, const void *b);
int job_key_is_text(const job_key_def *k); /* a string-valued key */
/* What k accepts, for error sentences and `seedctl config --keys`. */
void job_expected_text(const job_key_def *k, char *buf, size_t n);
/* The idx-th name of "a|b|c" into buf. */
const char *job_choice_name(const char *choices, int idx, char *buf, size_t n);
/* The error for an unknown key (with a "did you mean" when one is close), and the
 * closest key or section (section: 1) to name, or NULL when none is close. */
int job_unknown_key(const char *key, char *err, size_t errlen);
const char *job_suggest(const char *name, int section, char *buf, size_t n);
/* src into dst[n], cut to fit, the tail zeroed (equal strings are equal bytes). */
void job_copy_str(char *dst, size_t n, const char *src);
/* A value quoted for an error sentence: at most 80 bytes. */
const char *job_shown(const char *v, char *buf, size_t n);

#endif
