/* check.h — the assertion macros of seed's C tests.
 *
 * CHECK(cond, fmt, ...) prints FILE:LINE, the condition and the message to stderr when cond
 * is false and counts the failure; the test goes on and its main ends with
 * `return check_failures != 0;`. A file that defines CHECK_EXIT_ON_FAIL before including
 * this stops at its first failure instead (exit 1): for tests whose later steps would only
 * crash on the state a failed step left. The message is optional: CHECK(x) prints the
 * condition alone. Tests are one translation unit each, so the counter is per file. */
#ifndef SEED_TESTS_CHECK_H
#define SEED_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures __attribute__((unused));

#ifdef CHECK_EXIT_ON_FAIL
#define CHECK_FAILED_() exit(1)
#else
#define CHECK_FAILED_() check_failures++
#endif

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK(%s) failed:", __FILE__, __LINE__, #cond);                \
            fprintf(stderr, " " __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                                 \
            CHECK_FAILED_();                                                                       \
        }                                                                                          \
    } while (0)

#endif
