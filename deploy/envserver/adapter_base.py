"""adapter_base.py — what every env server adapter shares: splits, params, the reply dicts,
and the rule that a missing package or data set is an error reply naming what to install,
never a dead server.

An adapter is a Factory (what the sessions of one env share: a loaded data set, a search
engine, a JVM) and a Session per episode stream. The server calls
  factory.session() -> session
  session.reset(seed, split, task, params, max_steps) -> {observation, admissible, task, info}
  session.step(action) -> {observation, admissible, reward, done, won, info}
  session.close(), factory.close()
and turns any exception into an error reply. `action` is "" for an invalid step (the
policy produced no action).

Factories built on Factory/Session here declare their params (PARAMS: name -> Param) and
their Python requirements (NEEDS); Session.reset validates the split and the params and
calls the subclass's start(); Session.step refuses a step before reset or after the
episode ended, and calls act(). Packages are imported on first use (need()), so a server
whose env lacks its package still starts, answers every request with the install line,
and logs that line once at start (Factory.probe).
"""
import hashlib
import importlib

SPLIT_FOLD = {"train": "train", "seen": "dev", "dev": "dev", "valid": "dev",
              "unseen": "test", "test": "test"}


def split_fold(split, who):
    """seed's split name -> the fold (train, dev, test); an unknown one is an error."""
    fold = SPLIT_FOLD.get(split or "train")
    if fold is None:
        raise ValueError("%s: unknown split %r (train, seen/dev, unseen/test)" % (who, split))
    return fold


def parse_params(text):
    """'a=1,b=x' -> {'a': '1', 'b': 'x'}; '' -> {}."""
    out = {}
    for item in filter(None, (s.strip() for s in (text or "").split(","))):
        if "=" not in item:
            raise ValueError("env params: %r is not key=value" % item)
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def merge_params(defaults, given):
    """The server's --env-params with a request's params over them (a key in both: the
    request's value), as one 'k=v,...' string in first-seen order."""
    if not defaults:
        return given or ""
    merged = parse_params(defaults)
    merged.update(parse_params(given))
    return ",".join("%s=%s" % kv for kv in merged.items())


def level_seed(seed, split, who="env"):
    """The 32-bit generator seed of (seed, split): train uses the seed itself (level s is
    the library's level s); the other splits hash into [2^16, 2^32), away from small train
    seeds and from each other."""
    fold = split_fold(split, who)
    if fold == "train":
        return seed % (1 << 32)
    h = int.from_bytes(hashlib.sha256(("%s:%d" % (fold, seed)).encode()).digest()[:8], "little")
    return (1 << 16) + h % ((1 << 32) - (1 << 16))


class Unavailable(RuntimeError):
    """The env's package or data is not on the server host; the message says how to get it."""


def need(module, what, how):
    """Import `module`, or raise Unavailable naming the package (`what`) and `how` to
    install it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise Unavailable("%s is not installed in this server's Python (import %s: %s); %s"
                          % (what, module, e, how)) from None


class Param:
    """One env param: its default (None: required) and its type: "str", "int" (with a
    lower bound lo), "float" (> 0) or a tuple of allowed words."""

    def __init__(self, default, kind="str", lo=None, doc=""):
        self.default, self.kind, self.lo, self.doc = default, kind, lo, doc

    def convert(self, env, key, text):
        bad = "%s: param %s=%r: expected %%s" % (env, key, text)
        if isinstance(self.kind, tuple):
            if text not in self.kind:
                raise ValueError(bad % " or ".join(self.kind))
            return text
        if self.kind == "int":
            try:
                v = int(text)
            except ValueError:
                v = None
            if v is None or (self.lo is not None and v < self.lo):
                raise ValueError(bad % ("an integer >= %d" % self.lo if self.lo is not None
                                        else "an integer"))
            return v
        if self.kind == "float":
            try:
                v = float(text)
            except ValueError:
                v = -1.0
            if not v > 0:
                raise ValueError(bad % "a number > 0")
            return v
        if text == "" and self.default is None:
            raise ValueError(bad % "a non-empty value")
        return text


def reply(observation, admissible=(), task=None, info="", reward=0.0, done=False, won=False):
    """The dict the server copies into an EnvReply (task only on reset)."""
    r = {"observation": observation, "admissible": list(admissible), "info": info,
         "reward": float(reward), "done": bool(done), "won": bool(won)}
    if task is not None:
        r["task"] = task
    return r


class Factory:
    """What the sessions of one env share. Subclasses set name, session_class, PARAMS
    and NEEDS ((module, package, how to install) tuples)."""
    name = None
    session_class = None
    PARAMS = {}
    NEEDS = ()

    def __init__(self):
        self.cache = {}

    def session(self):
        return self.session_class(self)

    def params(self, text):
        """Request params (already merged with the server's) -> {name: typed value}."""
        given = parse_params(text)
        unknown = sorted(set(given) - set(self.PARAMS))
        if unknown:
            raise ValueError("%s: unknown params %s (known: %s)" % (
                self.name, ", ".join(unknown), ", ".join(sorted(self.PARAMS))))
        out = {}
        for key, p in self.PARAMS.items():
            if key in given:
                out[key] = p.convert(self.name, key, given[key])
            elif p.default is None:
                raise ValueError("%s: param %s is required (%s)" % (self.name, key, p.doc))
            else:
                out[key] = p.default
        return out

    def require(self):
        """Import NEEDS, raising Unavailable for the first one missing."""
        return [need(m, what, how) for m, what, how in self.NEEDS]

    def probe(self):
        """"" when the packages import, else the Unavailable message (the start log)."""
        try:
            self.require()
        except Unavailable as e:
            return str(e)
        return ""

    def shared(self, key, make):
        """One value per key for all sessions (a data set, a search engine), built on first
        use by make()."""
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def close(self):
        self.cache.clear()


class Session:
    """One episode stream. Subclasses implement start(seed, fold, split, task, params,
    max_steps) and act(action), each returning reply(...)."""

    def __init__(self, factory):
        self.f = factory
        self.live = False

    def reset(self, seed, split, task, params, max_steps):
        fold = split_fold(split, self.f.name)
        p = self.f.params(params)
        self.live = False
        r = self.start(int(seed), fold, split or "train", task or "", p, int(max_steps or 0))
        self.live = not r["done"]
        return r

    def step(self, action):
        if not self.live:
            raise RuntimeError("%s: no episode running (step before reset, or after the "
                               "episode ended): reset first" % self.f.name)
        r = self.act(action or "")
        if r["done"]:
            self.live = False
        return r

    def close(self):
        self.live = False
