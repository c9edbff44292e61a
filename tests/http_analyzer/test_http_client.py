"""The http analyzer client (roles/http_skill.c) against a fake OpenAI server on
loopback: a well-formed answer, the request it sent (model, bearer key, messages,
max_tokens, temperature), and every failure kind with its retries and its sentence.

usage: test_http_client.py HTTP_TOOL
"""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_openai  # noqa: E402

TOOL = sys.argv[1]
KEY_VAR = "SEED_TEST_HTTP_KEY"
FAILS = []


def run(srv, mode, n=1, key=fake_openai.KEY, base=None, **keys):
    over = {"analyzer.skill_source": "http",
            "analyzer.http_endpoint": base or srv.base(mode),
            "analyzer.http_model": "fake-model-7b",
            "analyzer.http_api_key_env": KEY_VAR,
            "analyzer.http_timeout_ms": 20000,
            "analyzer.http_retries": 2,
            "analyzer.http_backoff_ms": 10,
            "analyzer.max_skill_tokens": 77}
    over.update({"analyzer." + k: v for k, v in keys.items()})
    env = dict(os.environ)
    env.pop(KEY_VAR, None)
    if key is not None:
        env[KEY_VAR] = key
    p = subprocess.run([TOOL, str(n)] + ["%s=%s" % kv for kv in over.items()],
                       capture_output=True, text=True, timeout=120, env=env)
    if p.returncode != 0:
        return p.returncode, p.stderr
    return 0, json.loads(p.stdout)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def failed_with(out, attempts, *words):
    """Every result failed after `attempts` attempts with a sentence naming the URL and
    holding each of words."""
    rs = out["results"]
    return all(r["status"] == -1 and r["attempts"] == attempts and r["content"] == "" and
               r["err"].startswith("http analyzer " + out["url"] + ": ") and
               all(w in r["err"] for w in words) for r in rs), [r["err"] for r in rs]


def main():
    srv = fake_openai.FakeOpenAI()
    try:
        # A well-formed answer, and exactly what was sent.
        rc, out = run(srv, "good")
        r = out["results"][0]
        check(rc == 0 and r["status"] == 0 and r["attempts"] == 1 and r["http_status"] == 200,
              "good: answered on the first attempt (%s)" % r)
        check(r["content"] == fake_openai.SKILL, "good: content is choices[0].message.content")
        check(r["episode"].startswith("Push the box onto the target") and
              r["steps"] == ["step 1: Move toward the side of the box opposite the target.",
                             "step 2: Push the box onto the target."],
              "good: the answer parses into the episode skill and two step skills")
        req = srv.of("good")
        check(len(req) == 1 and req[0]["path"] == "/good/v1/chat/completions",
              "good: one POST to {base}/chat/completions")
        b = req[0]["body"]
        check(out["url"] == srv.base("good") + "/chat/completions", "good: url " + out["url"])
        check(req[0]["auth"] == "Bearer " + fake_openai.KEY,
              "good: the key from the named env variable as a bearer token")
        check(b["model"] == "fake-model-7b" and b["max_tokens"] == 77 and
              b["temperature"] == 0, "good: model, max_tokens, temperature 0 (%s)" %
              {k: b.get(k) for k in ("model", "max_tokens", "temperature")})
        check(b["messages"] == [{"role": "system", "content": out["system"]},
                                {"role": "user", "content": out["user"]}],
              "good: messages = system + the plain analysis request")
        u = out["user"]
        check(u.startswith("You are reviewing a finished episode of an agent in the sokoban") and
              "Task: Task 0\n" in u and "Step 1 action: right (reward -0.10)" in u and
              "Step 2 action: (invalid reply)" in u and "Outcome: failure" in u and
              "<skill> </skill>" in u and "<|im_start|>" not in u,
              "good: the user message is the rendered trajectory without a chat template")

        # No key in the environment: no Authorization header at all.
        rc, out = run(srv, "good", key=None, http_model="no-key")
        req = [x for x in srv.of("good") if x["body"]["model"] == "no-key"]
        check(rc == 0 and out["results"][0]["status"] == 0 and len(req) == 1 and
              req[0]["auth"] is None, "no key: the request goes without Authorization")

        # An empty model name leaves the choice to the server: no "model" field.
        rc, out = run(srv, "good", http_model="")
        check(rc == 0 and "model" not in srv.of("good")[-1]["body"],
              "empty http_model: no model field")

        # A client error is not retried.
        rc, out = run(srv, "unauth", key="wrong")
        ok, errs = failed_with(out, 1, "answered HTTP 401", "bad key")
        check(ok and len(srv.of("unauth")) == 1, "401: one attempt, clear error %s" % errs)
        rc, out = run(srv, "unauth")
        check(out["results"][0]["status"] == 0, "401 mode with the right key answers")
        rc, out = run(srv, "good", base="http://127.0.0.1:%d/good" % srv.port)
        ok, errs = failed_with(out, 1, "answered HTTP 404", "no route")
        check(ok, "404 (base URL without /v1): one attempt %s" % errs)

        # Slow: each attempt times out, retried, then the error.
        rc, out = run(srv, "slow", http_timeout_ms=300, http_retries=1)
        ok, errs = failed_with(out, 2, "no answer within 300 ms", "after 2 attempts")
        check(ok and len(srv.of("slow")) == 2, "slow: timed out twice %s" % errs)

        # Garbage answers: retried, then a sentence saying what was wrong.
        for mode, words in (("malformed", ["a body that is not JSON", "this is not json"]),
                            ("nochoices", ["choices[0].message.content", "choices is empty"]),
                            ("empty", ["an empty message content", "finish_reason stop"]),
                            ("huge", ["answered more than"])):
            rc, out = run(srv, mode)
            ok, errs = failed_with(out, 3, *words)
            check(ok and len(srv.of(mode)) == 3, "%s: 3 attempts %s" % (mode, errs))

        # 500 then success: the retry answers; four requests in flight together.
        rc, out = run(srv, "flaky500", n=4)
        rs = out["results"]
        check(all(r["status"] == 0 and r["attempts"] == 2 and
                  r["content"] == fake_openai.SKILL for r in rs) and len(srv.of("flaky500")) == 8,
              "flaky500: each of 4 requests answered on its retry (%s)" %
              [(r["attempts"], r["err"]) for r in rs])
        tasks = sorted(x["body"]["messages"][1]["content"].split("Task: ")[1].split("\n")[0]
                       for x in srv.of("flaky500"))
        check(tasks == sorted(["Task %d" % i for i in range(4)] * 2),
              "flaky500: each trajectory asked twice, none mixed up")

        # Always 500: retries exhausted.
        rc, out = run(srv, "always500", n=2)
        ok, errs = failed_with(out, 3, "answered HTTP 500", "the model is overloaded",
                               "after 3 attempts")
        check(ok and len(srv.of("always500")) == 6, "always500: 3 attempts each %s" % errs)
        rc, out = run(srv, "always500", http_retries=0)
        ok, errs = failed_with(out, 1, "after 1 attempt")
        check(ok, "http_retries 0: one attempt %s" % errs)

        # Nothing listening.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        rc, out = run(srv, "", base="http://127.0.0.1:%d/v1" % port)
        ok, errs = failed_with(out, 3, "could not connect")
        check(ok, "connection refused: retried, clear error %s" % errs)

        # A base URL that is not http(s) is refused when the job is checked.
        rc, err = run(srv, "", base="ftp://127.0.0.1/v1")
        check(rc == 2 and "analyzer.http_endpoint" in err and "ftp://127.0.0.1/v1" in err,
              "ftp:// endpoint refused: %s" % err.strip())
    finally:
        srv.stop()
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        sys.exit(1)
    print("http client: all checks passed")


main()
