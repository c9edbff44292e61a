/* span_test — learner_action_span against the shipped agent's tokenizer: the response
 * tokens algorithm.opd_tokens=action gives q - s to are exactly those whose bytes overlap
 * the text between <action> and </action>.
 *
 *   span_test TOKENIZER_JSON */
#include <stdio.h>
#include <string.h>

#include "learner/samples.h"
#include "tests/check.h"

static tok *g_tk;

/* Encode text, find the span, and check the tokens in it decode to a string that holds
 * `inner` and that the tokens just outside it do not overlap the inner bytes. */
static void expect(const char *text, const char *inner) {
    tok_ids ids = {0};
    char err[512];
    CHECK(tok_encode(g_tk, NULL, text, strlen(text), 0, &ids, err, sizeof err) == 0, "%s", err);
    int lo = -1, hi = -1;
    learner_action_span(g_tk, ids.v, (int)ids.n, &lo, &hi);
    if (!inner) {
        CHECK(lo == hi, "'%s': expected no span, got [%d, %d)", text, lo, hi);
        tok_ids_free(&ids);
        return;
    }
    CHECK(lo >= 0 && lo < hi && hi <= (int)ids.n, "'%s': span [%d, %d) of %zu", text, lo, hi,
          ids.n);
    seed_sbuf in = {0}, before = {0};
    CHECK(tok_decode(g_tk, ids.v + lo, (size_t)(hi - lo), 0, &in, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(in.p, inner) != NULL, "'%s': span decodes to '%s', not holding '%s'", text, in.p,
          inner);
    /* no more than the inner text and the tag bytes sharing its edge tokens */
    CHECK(in.n <= strlen(inner) + strlen("<action></action>"),
          "'%s': span decodes to '%s', more than the action text", text, in.p);
    /* the tokens before the span end before the inner text starts */
    if (lo > 0)
        CHECK(tok_decode(g_tk, ids.v, (size_t)lo, 0, &before, err, sizeof err) == 0, "%s", err);
    const char *at = strstr(text, "<action>") + strlen("<action>");
    CHECK(before.n <= (size_t)(at - text), "'%s': %zu bytes before the span, inner starts at %td",
          text, before.n, at - text);
    seed_sbuf_free(&in);
    seed_sbuf_free(&before);
    tok_ids_free(&ids);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: span_test TOKENIZER_JSON\n");
        return 2;
    }
    char err[512];
    CHECK(tok_load(&g_tk, argv[1], err, sizeof err) == 0, "%s", err);
    expect("<think>the box is left of me</think><action>left</action>", "left");
    expect("<think>go</think>\n<action>push up</action><|im_end|>", "push up");
    expect("<action>take mug 1 from countertop 2</action>", "take mug 1 from countertop 2");
    /* the first action tag pair counts, as the envs' parsers read it */
    expect("<think>x</think><action>down</action><action>up</action>", "down");
    expect("<think>no action here</think>", NULL);
    expect("<think>x</think><action>left", NULL);      /* never closed */
    expect("<think>x</think><action></action>", NULL); /* empty */
    expect("", NULL);
    tok_free(g_tk);
    puts("span_test: ok");
    return 0;
}
