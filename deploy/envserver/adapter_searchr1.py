"""adapter_searchr1.py — Search-R1 question answering against a Search-R1 retriever server.

The retriever is Search-R1's search_r1/search/retrieval_server.py (or anything speaking its
API): POST <retriever> with {"queries": [q], "topk": k, "return_scores": true}, answered
{"result": [[{"document": {"id": ..., "contents": "\"Title\"\ntext"}, "score": s}, ...]]}
(one list per query; without scores each item is the document itself; a document with
"title" and "text" but no "contents" is read as "title\ntext").

An episode is one question of a data set (JSONL or parquet rows with "question" and
"golden_answers", as Search-R1's nq/hotpotqa files; "reward_model.ground_truth.target"
is read when "golden_answers" is absent). The observation after reset is the question
(a "?" appended when it has none, as Search-R1's data_process scripts do); the task is the
same text. An action is projected as verl-agent's search_projection: "<search> q
</search>" asks the retriever and answers Search-R1's
"<information>Doc 1(Title: ...) text\nDoc 2(...) ...</information>", cut to
obs_max_chars characters (the closing tag kept); "<answer> a </answer>" ends the episode
with reward 1 and won when a matches a golden answer after Search-R1's normalize_answer
(em_check), else reward 0; anything else (no block, both tags, a tag twice, "") is an
invalid step answering Search-R1's invalid-action text, info "invalid action".

params: data (required: the data set path on the server host), data_dev / data_test
(the data sets of the seen / unseen splits; default: data), retriever (the URL, default
http://127.0.0.1:8000/retrieve), topk (3), obs_max_chars (2000), timeout_s (30: one
retriever call). Question i of a split: row level_seed(seed, split) mod rows (train:
seed mod rows).
"""
import json
import os
import re
import string
import urllib.error
import urllib.request

from adapter_base import Factory, Param, Session, Unavailable, level_seed, reply

INVALID_TEXT = ("My previous action is invalid. If I want to search, I should put the query "
                "between <search> and </search>. If I want to give the final answer, I should "
                "put the answer between <answer> and </answer>. Let me try again.")


# ---- Search-R1's answer check (verl/utils/reward_score/qa_em.py) ---------------------------

def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def em_check(prediction, golden_answers):
    if isinstance(golden_answers, str):
        golden_answers = [golden_answers]
    p = normalize_answer(prediction)
    return int(any(normalize_answer(g) == p for g in golden_answers))


# ---- verl-agent's search_projection on one action text -------------------------------------

_SEARCH_BLOCK = re.compile(r"<search>(.*?)</search>", re.IGNORECASE | re.DOTALL)
_ANSWER_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_SEARCH_TAG = re.compile(r"<search>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<answer>", re.IGNORECASE)


def project(action):
    """("search" | "answer" | None, content)."""
    trimmed = action
    if "</search>" in action:
        trimmed = action.split("</search>", 1)[0] + "</search>"
    elif "</answer>" in action:
        trimmed = action.split("</answer>", 1)[0] + "</answer>"
    m = _SEARCH_BLOCK.search(trimmed)
    kind = "search" if m else None
    if not m:
        m = _ANSWER_BLOCK.search(trimmed)
        kind = "answer" if m else None
    ns, na = len(_SEARCH_TAG.findall(action)), len(_ANSWER_TAG.findall(action))
    if kind is None or (ns and na) or ns > 1 or na > 1:
        return None, ""
    return kind, m.group(1).strip()


# ---- data sets -----------------------------------------------------------------------------

def _answers(row):
    g = row.get("golden_answers")
    if g is None:
        g = ((row.get("reward_model") or {}).get("ground_truth") or {}).get("target")
    if isinstance(g, str):
        g = [g]
    try:
        return [str(a) for a in g] if g is not None else []
    except TypeError:
        return []


def load_questions(path):
    """[(question, [golden answers])] from a .jsonl/.json lines or .parquet file."""
    if not os.path.isfile(path):
        raise Unavailable("search-r1: no data set at %s (give data=PATH to a JSONL or parquet "
                          "file with question and golden_answers, e.g. Search-R1's "
                          "nq_search test.parquet)" % path)
    rows = []
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise Unavailable("search-r1: reading %s needs pyarrow, not installed in this "
                              "server's Python: pip install pyarrow (or give a JSONL file)"
                              % path) from None
        for i, row in enumerate(pq.read_table(path).to_pylist()):
            rows.append((i + 1, row))
    else:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                if line.strip():
                    try:
                        rows.append((i + 1, json.loads(line)))
                    except ValueError as e:
                        raise ValueError("search-r1: %s line %d is not JSON: %s"
                                         % (path, i + 1, e)) from None
    out = []
    for where, row in rows:
        q = str(row.get("question") or "").strip() if isinstance(row, dict) else ""
        a = _answers(row) if isinstance(row, dict) else []
        if not q or not a:
            raise ValueError("search-r1: %s row %d lacks a question or golden_answers"
                             % (path, where))
        out.append((q if q.endswith("?") else q + "?", a))
    if not out:
        raise ValueError("search-r1: %s holds no questions" % path)
    return out


# ---- the retriever -------------------------------------------------------------------------

def retrieve(url, query, topk, timeout_s):
    """The retriever's documents for one query, best first, as "title\ntext" strings."""
    body = json.dumps({"queries": [query], "topk": topk, "return_scores": True}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            data = r.read()
    except urllib.error.HTTPError as e:
        raise RuntimeError("search-r1: retriever %s answered HTTP %d: %s"
                           % (url, e.code, e.read()[:200].decode("utf-8", "replace"))) from None
    except (urllib.error.URLError, OSError) as e:
        raise RuntimeError("search-r1: retriever %s unreachable (%s): start Search-R1's "
                           "retrieval_server.py there or give retriever=URL"
                           % (url, getattr(e, "reason", e))) from None
    try:
        result = json.loads(data)["result"]
        docs = result[0]
        if len(result) != 1 or not isinstance(docs, list):
            raise ValueError("expected one list of documents")
        out = []
        for item in docs:
            doc = item["document"] if "document" in item else item
            contents = doc.get("contents")
            if contents is None:
                contents = "%s\n%s" % (doc["title"], doc["text"])
            out.append(str(contents))
        return out
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise RuntimeError("search-r1: retriever %s sent a reply that is not Search-R1's "
                           "{\"result\": [[{\"document\": {\"contents\": ...}}]]} (%s: %s): %r"
                           % (url, type(e).__name__, e, data[:200])) from None


def passages_text(contents, cap):
    """Search-R1's _passages2string inside <information>, at most cap characters."""
    body = "".join("Doc %d(Title: %s) %s\n" % (i + 1, c.split("\n")[0],
                                                "\n".join(c.split("\n")[1:]))
                   for i, c in enumerate(contents)).strip()
    room = max(cap - len("<information></information>"), 0)
    return "<information>" + body[:room] + "</information>"


class SearchR1Factory(Factory):
    name = "search-r1"
    PARAMS = {
        "data": Param(None, doc="the data set path on the server host, JSONL or parquet"),
        "data_dev": Param(""),
        "data_test": Param(""),
        "retriever": Param("http://127.0.0.1:8000/retrieve"),
        "topk": Param(3, "int", lo=1),
        "obs_max_chars": Param(2000, "int", lo=64),
        "timeout_s": Param(30.0, "float"),
    }

    def questions(self, p, fold):
        path = {"dev": p["data_dev"], "test": p["data_test"]}.get(fold) or p["data"]
        return self.shared(("data", os.path.abspath(path)), lambda: load_questions(path))


class SearchR1Session(Session):
    def start(self, seed, fold, split, task, p, max_steps):
        qs = self.f.questions(p, fold)
        self.question, self.golden = qs[level_seed(seed, split, self.f.name) % len(qs)]
        self.p = p
        return reply(self.question, task=self.question)

    def act(self, action):
        kind, content = project(action)
        if kind == "search":
            docs = retrieve(self.p["retriever"], content, self.p["topk"], self.p["timeout_s"])
            return reply(passages_text(docs, self.p["obs_max_chars"]))
        if kind == "answer":
            won = em_check(content, self.golden)
            return reply("", reward=won, done=True, won=won)
        return reply(INVALID_TEXT, info="invalid action")


SearchR1Factory.session_class = SearchR1Session
