"""test_adapters.py — the search-r1, alfworld and webshop adapters of deploy/envserver.

  python test_adapters.py SERVER_PY DATA_DIR

1. search-r1, for real: a BM25 retriever speaking Search-R1's /retrieve API
   (bm25_retriever.py over DATA_DIR/corpus.jsonl) on loopback, seed_envserver.py
   --env search-r1 in front of it, driven over ZeroMQ. Full episodes (search, then
   answer: reward 1 and won, or 0), every observation compared with Search-R1's own
   formatting restated here from the retriever's raw reply; answers scored against
   Search-R1's normalize_answer/em_check restated here, on cases made to tell the rules
   apart (articles, punctuation, case, whitespace, Unicode); malformed actions give
   Search-R1's invalid-action text and the episode goes on; topk, obs_max_chars, the
   seen/unseen data files, the step limit; errors (unknown param, missing data set,
   retriever down, a reply not in Search-R1's shape, step after the answer, parquet
   without pyarrow) are error replies and the server keeps serving.
2. alfworld and webshop, in process, against fakes of the interfaces the real packages
   expose (textworld.start / AlfredTWEnv / ALFWorld's wrappers; WebAgentTextEnv and its
   SimServer): neither package can run here (see deploy/envserver/README.md). Checked:
   what the adapter makes of observations, admissible commands, rewards and splits, the
   shared server, invalid steps, and the error naming the package when it is missing.
Exits 0, or 1 with the failed checks.
"""
import importlib.util
import json
import os
import re
import string
import subprocess
import sys
import tempfile
import types

import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "deploy", "envserver"))
import seedwire  # noqa: E402

failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("test_adapters: FAILED: " + msg, file=sys.stderr)


# ---- Search-R1, restated from its sources (qa_em.py, generation.py) ----------------------

def sr1_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def sr1_em_check(prediction, golden_answers):
    if isinstance(golden_answers, str):
        golden_answers = [golden_answers]
    normalized_prediction = sr1_normalize_answer(prediction)
    score = 0
    for golden_answer in golden_answers:
        if sr1_normalize_answer(golden_answer) == normalized_prediction:
            score = 1
            break
    return score


def sr1_passages2string(retrieval_result):
    format_reference = ""
    for idx, doc_item in enumerate(retrieval_result):
        content = doc_item["document"]["contents"]
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"
    return format_reference


SR1_INVALID = ("My previous action is invalid. If I want to search, I should put the query "
               "between <search> and </search>. If I want to give the final answer, I should "
               "put the answer between <answer> and </answer>. Let me try again.")


def raw_retrieve(url, query, topk):
    import urllib.request
    req = urllib.request.Request(url, data=json.dumps(
        {"queries": [query], "topk": topk, "return_scores": True}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["result"][0]


def start(argv, prefix):
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith(prefix):
        p.kill()
        raise SystemExit("test_adapters: %s did not start: %r" % (argv[1], line))
    return p, line[len(prefix):].split()[0]


class Client:
    def __init__(self, pb2, ep, env="search-r1"):
        self.pb2, self.seq, self.env = pb2, 0, env
        self.ctx = zmq.Context()
        self.d = self.ctx.socket(zmq.DEALER)
        self.d.setsockopt(zmq.RCVTIMEO, 60000)
        self.d.setsockopt(zmq.LINGER, 0)
        self.d.connect(ep)

    def call(self, kind, session, **kw):
        self.seq += 1
        e = seedwire.envelope(self.pb2, "tester", env_request=self.pb2.EnvRequest(
            kind=kind, session=session, seq=self.seq, env=self.env, **kw))
        self.d.send(e.SerializeToString())
        r = self.pb2.Envelope()
        r.ParseFromString(self.d.recv())
        check(r.env_reply.seq == self.seq, "reply seq")
        return r.env_reply

    def reset(self, session, seed, split="train", params="", max_steps=0):
        return self.call(self.pb2.EnvRequest.RESET, session, seed=seed, split=split,
                         params=params, max_steps=max_steps)

    def step(self, session, action):
        return self.call(self.pb2.EnvRequest.STEP, session, action=action)

    def close(self):
        self.d.close()
        self.ctx.term()


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for q, a in rows:
            f.write(json.dumps({"question": q, "golden_answers": a}) + "\n")


# Answers and golden answers that the normalisation steps tell apart: each line is
# (prediction, golden answers); the expected reward is Search-R1's em_check.
EM_CASES = [
    ("Guido van Rossum", ["Guido van Rossum"]),
    ("guido VAN rossum", ["Guido van Rossum"]),
    ("  Guido\tvan\n Rossum. ", ["Guido van Rossum"]),
    ("Guido van-Rossum", ["Guido van Rossum"]),            # '-' is dropped, not a space
    ("Guido vanRossum", ["Guido van Rossum"]),
    ("the Eiffel Tower", ["Eiffel Tower"]),
    ("An Eiffel tower!", ["The Eiffel Tower"]),
    ("Theeiffel Tower", ["Eiffel Tower"]),                 # 'the' only as a word
    ("a.n apple", ["apple"]),                              # punctuation first: 'an apple'
    ("rock 'n' roll", ["rock and roll", "rock 'n' roll"]),
    ("Rock-n-Roll", ["rock 'n' roll"]),
    ("rock n roll", ["rock 'n' roll"]),
    ("Dodoma", ["Dar es Salaam"]),
    ("", ["Dodoma"]),
    ("the", [""]),
    ("Côte-d'Or", ["Cote-d'Or"]),                          # accents are not folded
    ("CÔTE D’OR", ["côte d'or"]),                         # U+2019 is not ASCII punctuation
    ("İstanbul", ["istanbul"]),                            # Python's lower(): i + U+0307
    ("ΟΔΥΣΣΕΥΣ", ["οδυσσευσ"]),
    ("1,000", ["1000"]),
    ("3.14", ["314"]),
    ("Mount\u00a0Kilimanjaro", ["Mount Kilimanjaro"]),     # NBSP is whitespace to split()
    ("Kilimanjaro", ["Mount Kilimanjaro", "Kilimanjaro"]),
    ("the the the", ["a an"]),
]


def test_searchr1(server, data):
    pb2 = seedwire.load_pb2()
    retr, url = start([sys.executable, os.path.join(HERE, "bm25_retriever.py"),
                       os.path.join(data, "corpus.jsonl")], "bm25_retriever: listening on ")
    retrieve = url + "/retrieve"
    qa = os.path.join(data, "qa.jsonl")
    rows = [json.loads(line) for line in open(qa, encoding="utf-8")]
    srv, ep = start([sys.executable, server, "--bind", "tcp://127.0.0.1:*", "--env",
                     "search-r1", "--env-params", "retriever=%s,data=%s" % (retrieve, qa),
                     "--watch-stdin"], "seed_envserver: listening on ")
    c = Client(pb2, ep)
    tmp = tempfile.mkdtemp(prefix="sr1-")
    try:
        # Full episodes: question, search, the answer.
        solved = 0
        for seed, row in enumerate(rows):
            q = row["question"] if row["question"].endswith("?") else row["question"] + "?"
            r = c.reset("e%d" % seed, seed)
            check(r.error == "" and r.observation == q and r.task == q and
                  list(r.admissible) == [], "reset %d: %r" % (seed, r))
            r = c.step("e%d" % seed, "<think>look it up</think> <search> %s </search>" % q)
            want = "<information>%s</information>" % sr1_passages2string(
                raw_retrieve(retrieve, q, 3)).strip()
            check(r.error == "" and r.observation == want and not r.done and r.reward == 0,
                  "search %d:\n%r\nwant\n%r" % (seed, r.observation, want))
            gold = row["golden_answers"][0]
            check(gold in r.observation or seed == 2, "the gold passage for %r" % q)
            r = c.step("e%d" % seed, "<answer> %s </answer>" % gold.upper())
            check(r.error == "" and r.done and r.won and r.reward == 1.0 and
                  r.observation == "", "answer %d: %r" % (seed, r))
            solved += r.won
        # Two hops: the engineer, then his birthplace.
        r = c.reset("hop", 2)
        r = c.step("hop", "<search>Eiffel Tower</search>")
        check("Gustave Eiffel" in r.observation, "hop 1: %r" % r.observation)
        r = c.step("hop", "<search>Gustave Eiffel born</search>")
        check("Dijon" in r.observation, "hop 2: %r" % r.observation)
        r = c.step("hop", "<answer>Paris</answer>")
        check(r.done and not r.won and r.reward == 0.0, "a wrong answer: %r" % r)
        r = c.step("hop", "<answer>Dijon</answer>")
        check("no episode running" in r.error, "step after the answer: %r" % r.error)
        print("search-r1: %d of %d episodes solved through the server" % (solved, len(rows)))

        # Exact match against Search-R1's em_check, one question per case.
        em = os.path.join(tmp, "em.jsonl")
        write_jsonl(em, [("question %d" % i, g) for i, (_, g) in enumerate(EM_CASES)])
        agree = 0
        for i, (pred, golds) in enumerate(EM_CASES):
            r = c.reset("em", i, params="data=" + em)
            r = c.step("em", "<answer>%s</answer>" % pred)
            want = sr1_em_check(pred, golds)
            check(r.error == "" and r.done and r.reward == float(want) and r.won == bool(want),
                  "answer %r to %r: reward %r, em_check %d" % (pred, golds, r.reward, want))
            agree += r.reward == float(want)
        check(0 < sum(sr1_em_check(p, g) for p, g in EM_CASES) < len(EM_CASES),
              "the cases hold both matches and misses")
        print("search-r1: %d of %d answers scored as Search-R1's em_check" % (agree, len(EM_CASES)))

        # Malformed actions: Search-R1's invalid text, no reward, the episode goes on.
        c.reset("bad", 0)
        for a in ["", "Guido van Rossum", "<search>python", "search[python]",
                  "<search>a</search><answer>b</answer>", "<answer>b</answer><search>a</search>",
                  "<search>a</search> <search>b</search>", "<answer>x</answer><answer>y</answer>",
                  "<answer>Guido van Rossum<answer>", "x" * 100000, "\x00\xff<search>"]:
            r = c.step("bad", a)
            check(r.error == "" and r.observation == SR1_INVALID and r.info == "invalid action"
                  and not r.done and r.reward == 0.0, "malformed %r: %r" % (a[:40], r))
        r = c.step("bad", "<SEARCH>python programming language</Search>")  # tags: any case
        check(r.observation.startswith("<information>Doc 1(Title: \"Python"), "case: %r" % r)
        r = c.step("bad", "<answer>Guido van Rossum</answer> and <search>more</search>")
        check(r.observation == SR1_INVALID, "both tags: %r" % r.observation)
        r = c.step("bad", "<answer>Guido van Rossum</answer> trailing words")
        check(r.done and r.won, "answer with trailing words: %r" % r)

        # topk and obs_max_chars.
        c.reset("k", 0, params="topk=2")
        r = c.step("k", "<search>city</search>")  # four passages hold "city"
        check("Doc 2(" in r.observation and "Doc 3(" not in r.observation, "topk=2: %r"
              % r.observation)
        c.reset("cut", 0, params="obs_max_chars=100")
        r = c.step("cut", "<search>python programming language</search>")
        check(len(r.observation) == 100 and r.observation.startswith("<information>Doc 1(") and
              r.observation.endswith("</information>"), "obs_max_chars=100: %r" % r.observation)

        # Splits: data_dev / data_test for seen / unseen; train seed s is row s.
        dev, test = os.path.join(tmp, "dev.jsonl"), os.path.join(tmp, "test.jsonl")
        write_jsonl(dev, [("dev question %d" % i, ["x"]) for i in range(5)])
        write_jsonl(test, [("test question %d" % i, ["x"]) for i in range(5)])
        p = "data_dev=%s,data_test=%s" % (dev, test)
        r1 = c.reset("s", 7, "seen", p)
        r2 = c.reset("s", 7, "unseen", p)
        r3 = c.reset("s", 7, "seen", p)
        r4 = c.reset("s", 7, "train", p)
        check(r1.observation.startswith("dev question") and
              r2.observation.startswith("test question") and r1.observation == r3.observation
              and r4.observation == rows[7 % len(rows)]["question"].rstrip("?") + "?",
              "splits: %r %r %r %r" % (r1.observation, r2.observation, r3.observation,
                                       r4.observation))
        r = c.reset("s", 1, "holdout")
        check("holdout" in r.error, "unknown split: %r" % r.error)

        # The step limit ends the episode at the server.
        c.reset("lim", 0, max_steps=2)
        check(not c.step("lim", "<search>a</search>").done, "step 1 of 2")
        check(c.step("lim", "<search>b</search>").done, "step 2 of 2 ends it")

        # Errors are replies; the server keeps serving.
        r = c.reset("x", 0, params="topK=3")
        check("unknown params topK" in r.error and "topk" in r.error, "unknown param: %r" % r.error)
        r = c.reset("x", 0, params="topk=0")
        check("topk" in r.error and ">= 1" in r.error, "topk=0: %r" % r.error)
        r = c.reset("x", 0, params="data=/nonexistent/nq.jsonl")
        check("/nonexistent/nq.jsonl" in r.error and "data=" in r.error, "no data: %r" % r.error)
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"question": "q", "golden_answers": ["a"]}\n{"question": "no answer"}\n')
        r = c.reset("x", 0, params="data=" + bad)
        check("row 2" in r.error and "golden_answers" in r.error, "bad row: %r" % r.error)
        c.reset("x", 0, params="retriever=http://127.0.0.1:9/retrieve")
        r = c.step("x", "<search>python</search>")
        check("unreachable" in r.error and "127.0.0.1:9" in r.error, "retriever down: %r"
              % r.error)
        c.reset("x", 0, params="retriever=%s/bad" % url)
        r = c.step("x", "<search>python</search>")
        check("not Search-R1's" in r.error, "a reply in another shape: %r" % r.error)
        pq = os.path.join(tmp, "qa.parquet")
        try:
            import pyarrow
            import pyarrow.parquet
            pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), pq)
            r = c.reset("pq", 3, params="data=" + pq)
            check(r.observation == rows[3]["question"] + "?", "parquet: %r" % r)
        except ImportError:
            with open(pq, "wb") as f:
                f.write(b"PAR1")
            r = c.reset("pq", 3, params="data=" + pq)
            check("pip install pyarrow" in r.error, "parquet without pyarrow: %r" % r.error)
        r = c.reset("e0", 0)
        check(r.error == "", "the server still serves: %r" % r.error)
    finally:
        c.close()
        for p in (srv, retr):
            p.stdin.close()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                check(False, "a child did not exit on stdin EOF")
    check(srv.returncode == 0, "server exit status %s" % srv.returncode)


# ---- fakes of the real packages' interfaces ------------------------------------------------

def install(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


class FakeTWEnv:
    """textworld.start's env over a one-room ALFWorld-like game: ALFWorld's texts, its
    admissible commands (with "help"), won when the mug is in the cabinet."""
    closed = 0

    def __init__(self, path, infos, wrappers):
        self.path, self.infos, self.wrappers, self.steps = path, infos, wrappers, []

    def state(self, feedback):
        adm = ["go to cabinet 1", "go to countertop 1", "help", "inventory", "look"]
        if self.where == "countertop 1" and not self.holding:
            adm.append("take mug 1 from countertop 1")
        if self.where == "cabinet 1" and self.holding:
            adm.append("move mug 1 to cabinet 1")
        return {"feedback": feedback, "admissible_commands": adm, "won": self.won,
                "extra.gamefile": self.path}

    def reset(self):
        self.where, self.holding, self.won = None, False, False
        return self.state("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a "
                          "room (%s). Looking quickly around you, you see a cabinet 1, and a "
                          "countertop 1.\n\nYour task is to: put some mug on cabinet 1."
                          % os.path.basename(os.path.dirname(self.path)))

    def step(self, cmd):
        self.steps.append(cmd)
        fb = "Nothing happens."
        if cmd.startswith("go to "):
            self.where = cmd[6:]
            fb = "You arrive at %s." % self.where
        elif cmd == "take mug 1 from countertop 1" and self.where == "countertop 1":
            self.holding, fb = True, "You pick up the mug 1 from the countertop 1."
        elif cmd == "move mug 1 to cabinet 1" and self.holding and self.where == "cabinet 1":
            self.won, fb = True, "You move the mug 1 to the cabinet 1."
        return self.state(fb), float(self.won), self.won

    def close(self):
        FakeTWEnv.closed += 1


def test_alfworld():
    import adapters
    from adapter_base import Unavailable
    if importlib.util.find_spec("alfworld") is None:
        try:
            adapters.FACTORIES["alfworld"]().session().reset(0, "train", "", "", 10)
            check(False, "alfworld ran without its package")
        except Unavailable as e:
            check("pip install alfworld" in str(e) and "alfworld-download" in str(e),
                  "missing package: %s" % e)
    started, collected = [], []

    def start(path, infos, wrappers=()):
        env = FakeTWEnv(path, infos, wrappers)
        started.append(env)
        return env

    class EnvInfos:
        def __init__(self, **kw):
            self.kw = kw

    class AlfredTWEnv:
        def __init__(self, config, train_eval="train"):
            print("Initializing AlfredTWEnv...")  # the real one prints on stdout
            key = {"train": "data_path", "eval_in_distribution": "eval_id_data_path",
                   "eval_out_of_distribution": "eval_ood_data_path"}[train_eval]
            root = config["dataset"][key]
            collected.append((train_eval, root, tuple(config["env"]["task_types"])))
            self.game_files = [os.path.join(root, "game%d" % i, "game.tw-pddl")
                               for i in (2, 0, 1)] if os.path.isdir(root) else []

    class AlfredDemangler:
        def __init__(self, shuffle=False):
            self.shuffle = shuffle

    class AlfredInfos:
        pass

    install("textworld", start=start, EnvInfos=EnvInfos)
    install("alfworld")
    install("alfworld.agents")
    install("alfworld.agents.environment")
    install("alfworld.agents.environment.alfred_tw_env", AlfredTWEnv=AlfredTWEnv,
            AlfredDemangler=AlfredDemangler, AlfredInfos=AlfredInfos)
    data = tempfile.mkdtemp(prefix="alfworld-")
    os.makedirs(os.path.join(data, "json_2.1.1", "train"))
    os.makedirs(os.path.join(data, "json_2.1.1", "valid_seen"))
    f = adapters.FACTORIES["alfworld"]()
    check(f.probe() == "", "probe with the package: %r" % f.probe())
    s = f.session()
    r = s.reset(4, "train", "", "data=" + data, 10)
    env = started[-1]
    check(env.path.endswith(os.path.join("train", "game1", "game.tw-pddl")),
          "seed 4 of 3 sorted games is game1: %s" % env.path)
    check(isinstance(env.wrappers[0], AlfredDemangler) and not env.wrappers[0].shuffle and
          env.wrappers[1] is AlfredInfos and env.infos.kw == {
              "won": True, "admissible_commands": True, "extras": ["gamefile"]},
          "textworld.start's infos and ALFWorld's wrappers")
    check(r["task"] == "put some mug on cabinet 1." and
          r["observation"].startswith("-= Welcome to TextWorld, ALFRED! =-") and
          "help" not in r["admissible"] and "look" in r["admissible"], "reset: %r" % r)
    r = s.step("")
    check(r["observation"] == "Nothing happens." and not env.steps and not r["done"] and
          r["info"].startswith("invalid"), "the invalid step: %r" % r)
    for a in ["go to countertop 1", "take mug 1 from countertop 1", "go to cabinet 1"]:
        r = s.step(a)
        check(not r["done"] and r["reward"] == 0.0 and "help" not in r["admissible"], a)
    check("move mug 1 to cabinet 1" in r["admissible"], "admissible at the cabinet: %r"
          % r["admissible"])
    r = s.step("move mug 1 to cabinet 1")
    check(r["done"] and r["won"] and r["reward"] == 10.0, "the win: %r" % r)
    try:
        s.step("look")
        check(False, "a step after the win was accepted")
    except RuntimeError as e:
        check("reset first" in str(e), "step after the end: %s" % e)
    s.reset(0, "seen", "", "data=%s,task_types=1+pick_two_obj_and_place" % data, 10)
    check(collected[-1] == ("eval_in_distribution", os.path.join(data, "json_2.1.1",
                                                                 "valid_seen"), (1, 6)),
          "seen split and task types: %r" % (collected[-1],))
    check(FakeTWEnv.closed == 1, "the previous game closed on reset")
    n = len(collected)
    s.reset(1, "train", "", "data=" + data, 10)
    check(len(collected) == n, "the game list is collected once per (data, types, split)")
    for params, needle in [("data=%s,task_types=7" % data, "'7' is not a task type"),
                           ("data=%s,task_types=+" % data, "task_types is empty"),
                           ("data=%s,games=3" % data, "unknown params games")]:
        try:
            s.reset(0, "train", "", params, 10)
            check(False, "accepted %s" % params)
        except ValueError as e:
            check(needle in str(e), "%s: %s" % (params, e))
    try:
        s.reset(0, "unseen", "", "data=" + data, 10)
        check(False, "an empty split was accepted")
    except Unavailable as e:
        check("valid_unseen" in str(e) and "alfworld-download" in str(e), "no games: %s" % e)
    n = FakeTWEnv.closed
    s.close()
    check(FakeTWEnv.closed == n + 1 and s.env is None, "close closes the game")
    print("alfworld: adapter checked against a fake of textworld/AlfredTWEnv")


class FakeSimServer:
    loads = 0

    def __init__(self, num_products, human_goals, file_path):
        FakeSimServer.loads += 1
        self.args = (num_products, human_goals, file_path)
        self.goals = [{"instruction_text": "i need item %d, and price lower than 50.00 dollars"
                       % i, "asin": "B%04d" % i} for i in range(1600)]


class FakeWebAgentTextEnv:
    """WebAgentTextEnv in "text" mode: a search page, a results page, an item page; Buy
    Now scores 1 for the goal's product and 0.5 for another."""

    def __init__(self, observation_mode="html", file_path="default.json", server=None,
                 **kw):
        if not os.path.exists(file_path) and server is None:
            raise FileNotFoundError(2, "No such file or directory", file_path)
        self.mode, self.kw = observation_mode, kw
        self.server = server or FakeSimServer(kw.get("num_products"), kw.get("human_goals"),
                                              file_path)
        self.session_prefix = kw.get("session_prefix")
        self.reset()

    def reset(self, session=None):
        self.goal = self.server.goals[session if isinstance(session, int) else 0]
        self.session = (self.session_prefix or "") + str(session)
        self.page, self.item = "search", None
        return self.obs(), None

    def obs(self):
        head = "WebShop [SEP] Instruction: [SEP] %s [SEP] " % self.goal["instruction_text"]
        if self.page == "search":
            return head + "Search"
        if self.page == "results":
            return head + "Back to Search [SEP] Page 1 (Total results: 2) [SEP] %s [SEP] Item " \
                "[SEP] $10.00 [SEP] B9999 [SEP] Other [SEP] $20.00" % self.goal["asin"]
        return head + "Back to Search [SEP] < Prev [SEP] Item [SEP] Price: $10.00 [SEP] Buy Now"

    def get_available_actions(self):
        clk = {"search": ["search"], "results": ["back to search", self.goal["asin"].lower(),
                                                 "b9999"],
               "item": ["back to search", "< prev", "buy now"]}[self.page]
        return {"has_search_bar": self.page == "search", "clickables": clk}

    def step(self, action):
        m = re.match(r"(.+)\[(.+)\]", action)
        name, arg = (m.group(1), m.group(2).lower()) if m else (action, None)
        clk = self.get_available_actions()["clickables"]
        if name == "search" and arg and self.page == "search":
            self.page = "results"
        elif name == "click" and arg in clk and arg != "search":
            if arg == "buy now":
                return self.obs(), 1.0 if self.item == self.goal["asin"].lower() else 0.5, \
                    True, None
            if arg == "back to search":
                self.page = "search"
            elif self.page == "results":
                self.page, self.item = "item", arg
        return self.obs(), 0.0, False, None


def test_webshop():
    import adapters
    from adapter_base import Unavailable
    if importlib.util.find_spec("web_agent_site") is None:
        try:
            adapters.FACTORIES["webshop"]().session().reset(0, "train", "", "", 15)
            check(False, "webshop ran without its package")
        except Unavailable as e:
            check("princeton-nlp/WebShop" in str(e) and "setup.sh" in str(e), "missing: %s" % e)
    install("web_agent_site")
    install("web_agent_site.envs", WebAgentTextEnv=FakeWebAgentTextEnv)
    f = adapters.FACTORIES["webshop"]()
    try:
        f.session().reset(0, "train", "", "", 15)  # default.json does not exist here
        check(False, "webshop ran without its data")
    except Unavailable as e:
        check("setup.sh -d small" in str(e) and "file=" in str(e), "no data: %s" % e)
    data = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    loads = FakeSimServer.loads
    s1, s2 = f.session(), f.session()
    r = s1.reset(3, "train", "", "file=" + data, 15)
    check(s1.env.goal is s1.env.server.goals[1503], "train seed 3 is goal 1503")
    check(r["observation"] == "'Search'" and r["task"] == s1.env.goal["instruction_text"] and
          r["admissible"] == ["search[<your query>]", "click[search]"], "reset: %r" % r)
    s2.reset(3, "train", "", "file=%s,reward=win10" % data, 15)
    check(FakeSimServer.loads == loads + 1 and s2.env.server is s1.env.server and
          s1.env.session_prefix != s2.env.session_prefix,
          "one server for both sessions (loaded %d times), distinct session prefixes" % (
              FakeSimServer.loads - loads))
    check(s1.env.server.args == (1000, True, data), "server args %r" % (s1.env.server.args,))
    for seed, split, goal in [(3, "seen", 503), (1000, "seen", 500), (7, "unseen", 7),
                              (500, "test", 0), (100, "train", 1500)]:
        s1.reset(seed, split, "", "file=" + data, 15)
        check(s1.env.goal is s1.env.server.goals[goal], "%s seed %d is goal %d" % (
            split, seed, goal))
    s1.reset(3, "train", "", "file=" + data, 15)
    r = s1.step("search[item 1503 under 50 dollars]")
    asin = s1.env.goal["asin"]
    check(r["observation"] == "'Back to Search' [SEP] 'Page 1 (Total results: 2)' [SEP] '%s' "
          "[SEP] 'Item' [SEP] '$10.00' [SEP] 'B9999' [SEP] 'Other' [SEP] '$20.00'" % asin and
          r["admissible"] == ["click[back to search]", "click[%s]" % asin.lower(),
                              "click[b9999]"] and r["info"] == "", "results: %r" % r)
    for bad in ["click[nothing]", "buy", "search[]", ""]:
        r = s1.step(bad)
        check(r["info"] == "invalid action" and not r["done"] and r["reward"] == 0.0 and
              r["observation"].startswith("'Back to Search' [SEP] 'Page 1"), "%r: %r" % (bad, r))
    r = s1.step("click[%s]" % asin)
    check(r["admissible"] == ["click[back to search]", "click[< prev]", "click[buy now]"],
          "item page: %r" % r)
    r = s1.step("click[Buy Now]")
    check(r["done"] and r["won"] and r["reward"] == 1.0 and r["info"] == "score=1.0000",
          "perfect buy: %r" % r)
    for params, reward in [("file=" + data, 0.5), ("file=%s,reward=win10" % data, 0.0)]:
        s1.reset(3, "train", "", params, 15)
        s1.step("search[x]")
        s1.step("click[b9999]")
        r = s1.step("click[buy now]")
        check(r["done"] and not r["won"] and r["reward"] == reward, "%s: %r" % (params, r))
    s2.step("search[x]")
    s2.step("click[%s]" % s2.env.goal["asin"])
    r = s2.step("click[buy now]")
    check(r["won"] and r["reward"] == 10.0, "win10 perfect buy: %r" % r)
    for params, needle in [("file=%s,reward=best" % data, "score or win10"),
                           ("file=%s,products=0" % data, "products"),
                           ("file=%s,human=1" % data, "unknown params human")]:
        try:
            s1.reset(0, "train", "", params, 15)
            check(False, "accepted %s" % params)
        except ValueError as e:
            check(needle in str(e), "%s: %s" % (params, e))
    few = f.session()
    few.reset(0, "train", "", "file=%s,products=5" % data, 15)
    few.env.server.goals = few.env.server.goals[:700]
    try:
        few.reset(0, "train", "", "file=%s,products=5" % data, 15)
        check(False, "a split without goals was accepted")
    except ValueError as e:
        check("[1500, end)" in str(e) and "700 goals" in str(e), "too few goals: %s" % e)
    os.unlink(data)
    print("webshop: adapter checked against a fake of WebAgentTextEnv")


def test_missing_package(server):
    """A server whose env package is missing starts, logs the install line once, and
    answers a reset with it as an error reply."""
    if importlib.util.find_spec("web_agent_site") is not None:
        return
    pb2 = seedwire.load_pb2()
    p = subprocess.Popen([sys.executable, server, "--bind", "tcp://127.0.0.1:*", "--env",
                          "webshop", "--watch-stdin"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    check(line.startswith("seed_envserver: listening on "), "start line %r" % line)
    if line:
        c = Client(pb2, line.split()[3], "webshop")
        for _ in range(2):
            r = c.reset("w", 1)
            check("princeton-nlp/WebShop" in r.error, "reset error %r" % r.error)
        c.close()
    _, err = p.communicate(input="", timeout=30)  # stdin EOF stops it
    check(p.returncode == 0 and err.count("cannot run yet") == 1 and "setup.sh" in err,
          "exit %s, log:\n%s" % (p.returncode, err[-2000:]))


def main():
    server, data = sys.argv[1], sys.argv[2]
    test_missing_package(server)
    test_searchr1(server, data)
    test_alfworld()
    test_webshop()
    if failures:
        print("test_adapters: %d checks failed" % failures, file=sys.stderr)
        return 1
    print("test_adapters: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
