"""adapters.py — gym-style text environments behind one small interface, for
seed_envserver.py. One session object per session (episode stream); a factory holds what
sessions share (TextWorldExpress's JVM, a loaded data set, WebShop's search engine).

Interface (every method returns a dict the server copies into an EnvReply):
  reset(seed, split, task, params, max_steps) -> observation, admissible, task, info
  step(action)  -> observation, admissible, reward, done, won, info
  close()
`action` is "" for an invalid step (the policy produced no action): a no-op step. The
shared shape of the adapters built on it (params schema, splits, missing packages as
error replies) is adapter_base.py.

Adapters:
  gym-sokoban  gym_sokoban's room generator and dynamics, rendered as verl-agent's text grid
               (# wall, _ floor, O target, X box, P player, √ box on target, S player on
               target); actions up/down/left/right. params: dim_room=6x6, num_boxes=1,
               num_gen_steps=<gym default>.
  twx          TextWorldExpress (textworld_express); task = game name (cookingworld, twc,
               coin, ...), params = its gameParams string; admissible = getValidActions.
  search-r1    Search-R1 QA over a Search-R1 retriever server (adapter_searchr1.py).
  alfworld     ALFWorld's TextWorld games, package alfworld (adapter_alfworld.py).
  webshop      princeton-nlp's WebShop text env, package web_agent_site (adapter_webshop.py).
  echo         a trivial env for transport benchmarks: observation echoes the action.
"""
import contextlib
import random
import sys

from adapter_alfworld import AlfworldFactory
# The shared helpers live in adapter_base; the server and the tests use them from here.
from adapter_base import SPLIT_FOLD, level_seed, merge_params, parse_params  # noqa: F401
from adapter_searchr1 import SearchR1Factory
from adapter_webshop import WebshopFactory


# ---- gym-sokoban -------------------------------------------------------------------------

SOKOBAN_GRID = {0: " # \t", 1: " _ \t", 2: " O \t", 3: " √ \t", 4: " X \t", 5: " P \t",
                6: " S \t"}
SOKOBAN_ACTIONS = {"up": 1, "down": 2, "left": 3, "right": 4}  # gym_sokoban push actions


def sokoban_text(room_state, room_fixed):
    """verl-agent's text rendering (its 'tiny_rgb_array' mode): a player standing on a
    target is shown as S."""
    rows = []
    for r, row in enumerate(room_state.tolist()):
        cells = []
        for c, v in enumerate(row):
            v = int(v)
            if v == 5 and int(room_fixed[r][c]) == 2:
                v = 6
            cells.append(SOKOBAN_GRID.get(v, " ? \t"))
        rows.append("".join(cells))
    return "\n".join(rows)


class SokobanFactory:
    name = "gym-sokoban"

    def __init__(self):
        import numpy as np  # noqa: F401 (fail early when missing)
        from gym_sokoban.envs.sokoban_env import SokobanEnv

        class TextSokoban(SokobanEnv):
            # gym_sokoban renders an RGB frame on every step and reset; text needs none.
            def get_image(self, mode, scale=1):
                return None

        self.cls = TextSokoban

    def session(self):
        return SokobanAdapter(self.cls)

    def close(self):
        pass


class SokobanAdapter:
    def __init__(self, cls):
        self.cls = cls
        self.env = None
        self.key = None

    def reset(self, seed, split, task, params, max_steps):
        import numpy as np
        p = parse_params(params)
        dim = p.pop("dim_room", "6x6").lower().replace(",", "x").split("x")
        dim_room = (int(dim[0]), int(dim[-1]))
        num_boxes = int(p.pop("num_boxes", "1"))
        gen = p.pop("num_gen_steps", None)
        if p:
            raise ValueError("gym-sokoban: unknown params %s (known: dim_room, num_boxes, "
                             "num_gen_steps)" % ", ".join(sorted(p)))
        steps = max_steps or 15
        key = (dim_room, num_boxes, gen)
        if self.env is None or self.key != key:
            self.env = self.cls(dim_room=dim_room, max_steps=steps, num_boxes=num_boxes,
                                num_gen_steps=int(gen) if gen else None, reset=False)
            self.key = key
        self.env.set_maxsteps(steps)
        # The generator draws from Python's and numpy's global RNGs: seed both (as
        # verl-agent does), so (seed, split, params) is the same level on every machine.
        s = level_seed(seed, split, "gym-sokoban")
        random.seed(s)
        np.random.seed(s)
        # gym_sokoban prints its generator retries on stdout; keep stdout for the protocol.
        with contextlib.redirect_stdout(sys.stderr):
            self.env.reset()
        return {"observation": sokoban_text(self.env.room_state, self.env.room_fixed),
                "admissible": list(SOKOBAN_ACTIONS), "task": "", "info": ""}

    def step(self, action):
        a = SOKOBAN_ACTIONS.get((action or "").strip().lower(), 0)  # 0: no-op
        _, reward, done, info = self.env.step(a)
        won = bool(self.env._check_if_all_boxes_on_target())
        return {"observation": sokoban_text(self.env.room_state, self.env.room_fixed),
                "admissible": list(SOKOBAN_ACTIONS), "reward": float(reward),
                "done": bool(done), "won": won,
                "info": "" if a else "invalid action %r: no-op" % (action or "")}

    def close(self):
        self.env = None


# ---- TextWorldExpress ------------------------------------------------------------------

class TwxFactory:
    """One JVM for all sessions: each session gets its own game object on the shared
    gateway (TextWorldExpressEnv would otherwise start a JVM per instance)."""
    name = "twx"

    def __init__(self):
        from textworld_express import TextWorldExpressEnv
        self.base = TextWorldExpressEnv(envStepLimit=1 << 30)
        self.cls = TextWorldExpressEnv

    def session(self):
        return TwxAdapter(self)

    def new_game(self, step_limit):
        env = self.cls.__new__(self.cls)
        env.__dict__.update({k: v for k, v in self.base.__dict__.items()
                             if k not in ("server", "runHistory", "_obj_tree_tempfile")})
        env.server = self.base._gateway.jvm.textworldexpress.runtime.PythonInterface()
        env.runHistory = []
        env.lastStepScore = 0
        env.envStepLimit = step_limit
        env.gameName = None
        env.gameParams = ""
        env.close = lambda: None  # the gateway belongs to the factory
        return env

    def close(self):
        self.base.close()
        self.base.close = lambda: None  # __del__ would close the gateway a second time


class TwxAdapter:
    def __init__(self, factory):
        self.f = factory
        self.env = None
        self.loaded = None

    def reset(self, seed, split, task, params, max_steps):
        game = task or "cookingworld"
        if self.env is None:
            self.env = self.f.new_game(max_steps or 50)
        self.env.envStepLimit = max_steps or 50
        fold = SPLIT_FOLD.get(split or "train")
        if fold is None:
            raise ValueError("twx: unknown split %r (train, seen/dev, unseen/test)" % split)
        if self.loaded != (game, params or ""):
            self.env.load(game, params or "")
            self.loaded = (game, params or "")
        obs, info = self.env.reset(seed=int(seed) % (1 << 31), gameFold=fold)
        return {"observation": obs, "admissible": list(info["validActions"]),
                "task": info.get("taskDescription", ""), "info": ""}

    def step(self, action):
        obs, reward, done, info = self.env.step(action or "look around")
        return {"observation": obs, "admissible": list(info["validActions"]),
                "reward": float(reward), "done": bool(done), "won": bool(info["tasksuccess"]),
                "info": "score %.3f" % info["score"]}

    def close(self):
        self.env = None


# ---- echo --------------------------------------------------------------------------------

class EchoFactory:
    name = "echo"

    def session(self):
        return EchoAdapter()

    def close(self):
        pass


class EchoAdapter:
    ADMISSIBLE = ["a", "b"]

    def reset(self, seed, split, task, params, max_steps):
        return {"observation": "echo ready (seed %d)" % seed, "admissible": self.ADMISSIBLE,
                "task": task or "echo", "info": ""}

    def step(self, action):
        return {"observation": "echo: " + (action or ""), "admissible": self.ADMISSIBLE,
                "reward": 1.0 if action == "a" else 0.0, "done": False, "won": False,
                "info": ""}

    def close(self):
        pass


FACTORIES = {"gym-sokoban": SokobanFactory, "twx": TwxFactory, "echo": EchoFactory,
             "search-r1": SearchR1Factory, "alfworld": AlfworldFactory, "webshop": WebshopFactory}
