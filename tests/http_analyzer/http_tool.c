/* http_tool.c — drives the http analyzer client (roles/http_skill.h) for
 * test_http_client.py.
 *
 * Usage: http_tool N [key=value ...]
 *   Builds the default job with the overrides (analyzer.http_endpoint=..., ...), asks
 *   the endpoint for the skills of N small sokoban trajectories (trajectory i has task
 *   "Task i"), all at once, and prints one JSON document: the URL, the user message of
 *   trajectory 0 exactly as sent, and per request its status, attempts, HTTP status,
 *   content, error sentence and the parsed skill (episode paragraph and step lines).
 *   Exit 0 when it ran (requests may have failed), 2 when the job or the client could
 *   not be set up (the error on stderr). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/http_skill.h"
#include "roles/skill.h"
#include "common/job.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: http_tool N [key=value ...]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 1 || n > 64) {
        fprintf(stderr, "http_tool: N must be in [1, 64], got '%s'\n", argv[1]);
        return 2;
    }
    static job_config job;
    char err[SEED_ERRLEN];
    if (job_build(&job, NULL, argc - 2, argv + 2, err, sizeof err)) {
        fprintf(stderr, "http_tool: %s\n", err);
        return 2;
    }
    http_skill *h;
    if (http_skill_new(&h, &job, err, sizeof err)) {
        fprintf(stderr, "http_tool: %s\n", err);
        return 2;
    }
    static const skill_traj_step steps[2] = {
        {"#####\n#P_X#\n#___#\n#####", "right", -0.1f},
        {"#####\n#_PX#\n#___#\n#####", "", -0.2f}, /* an invalid reply */
    };
    static char tasks[64][32];
    skill_traj t[64];
    http_skill_result res[64];
    memset(res, 0, sizeof res);
    for (int i = 0; i < n; i++) {
        snprintf(tasks[i], sizeof tasks[i], "Task %d", i);
        t[i] = (skill_traj){"sokoban", tasks[i], steps, 2, -0.3f, 0};
    }
    http_skill_ask(h, n, t, 400, res);

    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "url", http_skill_url(h));
    seed_sbuf user = {0};
    if (skill_request(&t[0], 400, &user, err, sizeof err) == 0)
        cJSON_AddStringToObject(j, "user", user.p);
    seed_sbuf_free(&user);
    cJSON_AddStringToObject(j, "system", ANALYZER_HTTP_SYSTEM);
    cJSON *arr = cJSON_AddArrayToObject(j, "results");
    for (int i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "status", res[i].status);
        cJSON_AddNumberToObject(x, "attempts", res[i].attempts);
        cJSON_AddNumberToObject(x, "http_status", (double)res[i].http_status);
        cJSON_AddStringToObject(x, "content", res[i].content.p ? res[i].content.p : "");
        cJSON_AddStringToObject(x, "err", res[i].err);
        skill_parsed sk;
        skill_parse(res[i].content.p ? res[i].content.p : "", res[i].content.n,
                    job.analyzer.max_step_skills, &sk);
        cJSON_AddStringToObject(x, "episode", sk.episode);
        cJSON *st = cJSON_AddArrayToObject(x, "steps");
        char text[4096];
        skill_format(&sk, text, sizeof text);
        cJSON_AddStringToObject(x, "text", text);
        for (int k = 0; k < sk.n_steps; k++) {
            char line[600];
            snprintf(line, sizeof line, "step %d: %s", sk.step_no[k], sk.step[k]);
            cJSON_AddItemToArray(st, cJSON_CreateString(line));
        }
        cJSON_AddItemToArray(arr, x);
        seed_sbuf_free(&res[i].content);
    }
    char *s = cJSON_Print(j);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
    http_skill_free(h);
    return 0;
}
