"""adapter_webshop.py — princeton-nlp's WebShop (package web_agent_site, its text env
WebAgentTextEnv) as verl-agent plays it.

One WebShop SimServer (products, goals, search engine) is loaded per (file, products,
human_goals) and shared by every session; each session is a WebAgentTextEnv over it in
"text" observation mode, with its own session prefix so two sessions on the same goal
keep apart. Goal i of a split is WebShop's goal list (shuffled by WebShop with its fixed
seed 233) at: unseen/test goals [0, 500), seen/dev [500, 1500), train [1500, goals) —
WebShop's own split of its human instructions — index seed mod the range's size.

Observation: WebShop's page text after the instruction, each " [SEP] " part quoted
('Search', 'Back to Search' [SEP] 'Page 1 (Total results: 50)' ...), as verl-agent
formats it; task: the instruction; admissible: "search[<your query>]" when the page has
a search bar, then "click[x]" for each of WebShop's clickables. An action goes to
WebShop as it is: search[...] and click[...] of a clickable act, anything else changes
nothing (WebShop's rule) and the reply's info says "invalid action". Reward on Buy Now:
WebShop's score in [0, 1] (reward=score, default) or 10 on a perfect score and else 0
(reward=win10); won = the score is 1; done on Buy Now.

params: products (default 1000: the small data set of WebShop's setup.sh -d small; the
full one has 1181436), human_goals (1: the crowd-sourced instructions; 0: synthetic),
file (the products JSON; default WebShop's DEFAULT_FILE_PATH), reward (score | win10).
"""
import contextlib
import itertools
import re
import sys

from adapter_base import Factory, Param, Session, Unavailable, reply

INSTALL = ("WebShop is not on PyPI: git clone https://github.com/princeton-nlp/WebShop, run "
           "its setup.sh -d small (installs its requirements, the spaCy model and the "
           "product data, and builds the search index; it needs a JDK for pyserini), then "
           "pip install -e . in the Python this server runs")
ACTION = re.compile(r"(.+)\[(.+)\]")  # web_agent_site.engine.engine.parse_action
SPLITS = {"test": (0, 500), "dev": (500, 1500), "train": (1500, None)}


def format_obs(obs, instruction):
    """verl-agent's format_obs: the parts after the instruction, quoted."""
    parts = obs.split(" [SEP] ")
    if instruction in parts:
        return " [SEP] ".join("'%s'" % s for s in parts[parts.index(instruction) + 1:])
    return obs


def instruction_of(obs, env):
    parts = obs.split(" [SEP] ")
    if len(parts) > 2 and parts[1] == "Instruction:":
        return parts[2]
    return getattr(env, "instruction_text", "")


def admissible(avail):
    out = ["search[<your query>]"] if avail["has_search_bar"] else []
    return out + ["click[%s]" % c for c in avail["clickables"]]


class WebshopFactory(Factory):
    name = "webshop"
    PARAMS = {"products": Param(1000, "int", lo=1), "human_goals": Param("1", ("0", "1")),
              "file": Param(""), "reward": Param("score", ("score", "win10"))}
    NEEDS = (("web_agent_site.envs", "WebShop (package web_agent_site)", INSTALL),)

    def __init__(self):
        super().__init__()
        self.ids = itertools.count()

    def env(self, p):
        """A WebAgentTextEnv of its own, on the shared server of p's data set."""
        (envs,) = self.require()

        def load():
            args = {"observation_mode": "text", "num_products": p["products"],
                    "human_goals": p["human_goals"] == "1"}
            if p["file"]:
                args["file_path"] = p["file"]
            try:
                with contextlib.redirect_stdout(sys.stderr):  # WebShop prints its loading
                    return envs.WebAgentTextEnv(**args).server
            except FileNotFoundError as e:
                raise Unavailable("webshop: WebShop's data is missing (%s): run WebShop's "
                                  "setup.sh -d small (or -d all), or give file=PATH" % e) from None
        server = self.shared((p["file"], p["products"], p["human_goals"]), load)
        with contextlib.redirect_stdout(sys.stderr):
            return envs.WebAgentTextEnv(observation_mode="text", server=server,
                                        session_prefix="seed%d_" % next(self.ids))


class WebshopSession(Session):
    env = None

    def start(self, seed, fold, split, task, p, max_steps):
        if self.env is None or self.key != (p["file"], p["products"], p["human_goals"]):
            self.env = self.f.env(p)
            self.key = (p["file"], p["products"], p["human_goals"])
        lo, hi = SPLITS[fold]
        n_goals = len(self.env.server.goals)
        hi = n_goals if hi is None else min(hi, n_goals)
        if hi <= lo:
            raise ValueError("webshop: the %s split holds goals [%d, %s) but the data set has "
                             "%d goals" % (split, lo, SPLITS[fold][1] or "end", n_goals))
        self.reward_mode = p["reward"]
        obs, _ = self.env.reset(session=lo + seed % (hi - lo))
        self.instruction = instruction_of(obs, self.env)
        return reply(format_obs(obs, self.instruction), self.actions(), task=self.instruction)

    def actions(self):
        self.avail = self.env.get_available_actions()
        return admissible(self.avail)

    def valid(self, action):
        """Does WebShop act on it? Its parse_action, then search[non-empty] or click[a
        clickable of this page] (its no-op click[search] among them, as it lists it)."""
        m = ACTION.match(action)
        if m is None:
            return False
        name, arg = m.group(1), m.group(2).lower()
        return name == "search" or (name == "click" and arg in self.avail["clickables"])

    def act(self, action):
        valid = self.valid(action)
        obs, score, done, _ = self.env.step(action)
        won = bool(done) and score == 1.0
        reward = (10.0 if won else 0.0) if self.reward_mode == "win10" else float(score)
        info = "score=%.4f" % score if done else ("" if valid else "invalid action")
        return reply(format_obs(obs, self.instruction), self.actions(), reward=reward,
                     done=done, won=won, info=info)


WebshopFactory.session_class = WebshopSession
