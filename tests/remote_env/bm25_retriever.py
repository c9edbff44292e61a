"""bm25_retriever.py — a small retriever server speaking Search-R1's retrieval API, for the
search-r1 adapter's tests.

  python bm25_retriever.py CORPUS.jsonl [--port N]

CORPUS is Search-R1's corpus format (one {"id": ..., "contents": "\"Title\"\ntext"} per
line). POST /retrieve with {"queries": [...], "topk": k, "return_scores": bool} answers
{"result": [[{"document": {...}, "score": s}, ...], ...]} (without return_scores: the
documents themselves), as search_r1/search/retrieval_server.py does; the ranking is BM25
(Lucene's formula, k1 0.9, b 0.4, pyserini's defaults) over lower-cased letter/digit
runs, ties to the lower document number, documents scoring 0 left out. POST /bad answers
JSON that is not that shape (the adapter must say so). After binding, one line goes to
stdout: "bm25_retriever: listening on http://127.0.0.1:PORT"; it runs until killed or
until stdin reaches EOF (the parent is gone). Every query is logged on stderr.
"""
import argparse
import json
import math
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = re.compile(r"[a-z0-9]+")


class BM25:
    def __init__(self, docs, k1=0.9, b=0.4):
        self.docs, self.k1, self.b = docs, k1, b
        self.tf = [{} for _ in docs]
        df = {}
        for i, d in enumerate(docs):
            for t in TOKEN.findall(d["contents"].lower()):
                self.tf[i][t] = self.tf[i].get(t, 0) + 1
            for t in self.tf[i]:
                df[t] = df.get(t, 0) + 1
        self.len = [sum(tf.values()) for tf in self.tf]
        self.avgdl = sum(self.len) / max(len(docs), 1)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - k + 0.5) / (k + 0.5)) for t, k in df.items()}

    def search(self, query, k):
        scores = []
        for i, tf in enumerate(self.tf):
            s = 0.0
            for t in TOKEN.findall(query.lower()):
                f = tf.get(t, 0)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * self.len[i] / self.avgdl)
                    s += self.idf[t] * f / (f + norm)
            if s > 0:
                scores.append((-s, i))
        scores.sort()
        return [(self.docs[i], -s) for s, i in scores[:k]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    with open(a.corpus, encoding="utf-8") as f:
        engine = BM25([json.loads(line) for line in f if line.strip()])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if self.path == "/bad":
                out = {"oops": "not a retriever reply"}
            elif self.path == "/retrieve":
                k = body.get("topk") or 3
                res = []
                for q in body["queries"]:
                    print("bm25_retriever: query %r topk %d" % (q, k), file=sys.stderr)
                    hits = engine.search(q, k)
                    res.append([{"document": d, "score": s} for d, s in hits]
                               if body.get("return_scores") else [d for d, _ in hits])
                out = {"result": res}
            else:
                self.send_error(404)
                return
            data = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print("bm25_retriever: listening on http://127.0.0.1:%d" % srv.server_address[1], flush=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    sys.stdin.read()  # EOF: the parent closed our stdin or died
    srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
