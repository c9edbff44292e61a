"""adapter_alfworld.py — ALFWorld's text worlds (the `alfworld` package, TextWorld PDDL
games) as verl-agent plays them.

The games are ALFWorld's own: AlfredTWEnv(config, train_eval).game_files, collected with
its rules (solvable games of the chosen task types, no movable/sliced ones) from
<data>/json_2.1.1/{train, valid_seen, valid_unseen} for the train, seen and unseen splits
(ALFWorld's train, eval_in_distribution and eval_out_of_distribution). Game i of a split
is game_files[seed mod count]; it is played with textworld.start and ALFWorld's wrappers
(AlfredDemangler without shuffling, AlfredInfos), as AlfredTWEnv.init_env registers them
for evaluation.

Observation: TextWorld's feedback as ALFWorld writes it (the first one opens with
"-= Welcome to TextWorld, ALFRED! =-" and ends with "Your task is to: ..."); task: the
text after "Your task is to: "; admissible: the game's admissible commands without
"help" (verl-agent leaves it out of the prompt). Reward 10 on the step that wins, else 0
(verl-agent's ALFWorld reward); done when won or when TextWorld ends the game. The
invalid step ("" action) answers ALFWorld's "Nothing happens." and changes nothing.

params: data (default $ALFWORLD_DATA, else ~/.cache/alfworld: where `alfworld-download`
puts the games), task_types ("all", or task type numbers or names joined by "+": 1
pick_and_place_simple, 2 look_at_obj_in_light, 3 pick_clean_then_place_in_recep, 4
pick_heat_then_place_in_recep, 5 pick_cool_then_place_in_recep, 6 pick_two_obj_and_place).
"""
import contextlib
import os
import sys

from adapter_base import Factory, Param, Session, Unavailable, reply

INSTALL = ("pip install alfworld (Python >= 3.9; it builds TextWorld's PDDL planner, which "
           "needs a C++ compiler and cmake), then alfworld-download for the games")
TASK_TYPES = ["pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
              "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep",
              "pick_two_obj_and_place"]
FOLDS = {"train": ("train", "train"), "dev": ("eval_in_distribution", "valid_seen"),
         "test": ("eval_out_of_distribution", "valid_unseen")}
WELCOME = "-= Welcome to TextWorld, ALFRED! =-"
NOTHING = "Nothing happens."


def task_type_ids(text):
    """"all" or "1+pick_two_obj_and_place" -> sorted ALFWorld task type ids."""
    if text == "all":
        return list(range(1, 7))
    ids = set()
    for w in filter(None, (s.strip() for s in text.split("+"))):
        if w.isdigit() and 1 <= int(w) <= 6:
            ids.add(int(w))
        elif w in TASK_TYPES:
            ids.add(TASK_TYPES.index(w) + 1)
        else:
            raise ValueError("alfworld: param task_types: %r is not a task type (1-6 or %s)"
                             % (w, ", ".join(TASK_TYPES)))
    if not ids:
        raise ValueError("alfworld: param task_types is empty")
    return sorted(ids)


def alfworld_config(data, types):
    """The parts of ALFWorld's base_config.yaml that AlfredTWEnv reads to collect games."""
    j = os.path.join(data, "json_2.1.1")
    return {"env": {"goal_desc_human_anns_prob": 0, "task_types": types,
                    "domain_randomization": False, "expert_type": "handcoded"},
            "dataset": {"data_path": os.path.join(j, "train"),
                        "eval_id_data_path": os.path.join(j, "valid_seen"),
                        "eval_ood_data_path": os.path.join(j, "valid_unseen"),
                        "num_train_games": -1, "num_eval_games": -1},
            "logic": {"domain": os.path.join(data, "logic", "alfred.pddl"),
                      "grammar": os.path.join(data, "logic", "alfred.twl2")},
            "general": {"training_method": "dagger"},
            "dagger": {"training": {"max_nb_steps_per_episode": 50}}}


def task_of(feedback):
    i = feedback.rfind("Your task is to: ")
    return feedback[i + len("Your task is to: "):].strip() if i >= 0 else ""


class AlfworldFactory(Factory):
    name = "alfworld"
    PARAMS = {"data": Param(""), "task_types": Param("all")}
    NEEDS = (("textworld", "TextWorld (the alfworld package's engine)", INSTALL),
             ("alfworld.agents.environment.alfred_tw_env", "ALFWorld (package alfworld)",
              INSTALL))

    def games(self, p, fold):
        data = p["data"] or os.environ.get("ALFWORLD_DATA") or os.path.expanduser(
            "~/.cache/alfworld")
        types = task_type_ids(p["task_types"])
        train_eval, folder = FOLDS[fold]

        def collect():
            _, tw_env = self.require()
            # AlfredTWEnv prints its progress on stdout; stdout carries the start line.
            with contextlib.redirect_stdout(sys.stderr):
                files = tw_env.AlfredTWEnv(alfworld_config(data, types), train_eval).game_files
            if not files:
                raise Unavailable(
                    "alfworld: no solvable games of task types %s under %s: run "
                    "alfworld-download (it fills $ALFWORLD_DATA, default ~/.cache/alfworld) or "
                    "give data=DIR" % (types, os.path.join(data, "json_2.1.1", folder)))
            return sorted(files)
        return self.shared((os.path.abspath(data), tuple(types), fold), collect)


class AlfworldSession(Session):
    env = None

    def start(self, seed, fold, split, task, p, max_steps):
        files = self.f.games(p, fold)
        textworld, tw_env = self.f.require()
        self.close()
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        with contextlib.redirect_stdout(sys.stderr):
            self.env = textworld.start(files[seed % len(files)], infos, wrappers=[
                tw_env.AlfredDemangler(shuffle=False), tw_env.AlfredInfos])
            state = self.env.reset()
        self.admissible = self.commands(state)
        return reply(state["feedback"], self.admissible, task=task_of(state["feedback"]))

    @staticmethod
    def commands(state):
        return [c for c in state["admissible_commands"] if c != "help"]

    def act(self, action):
        if not action:
            return reply(NOTHING, self.admissible, info="invalid action: no-op")
        with contextlib.redirect_stdout(sys.stderr):
            state, _, done = self.env.step(action)
        won = bool(state["won"])
        self.admissible = self.commands(state)
        return reply(state["feedback"], self.admissible, reward=10.0 if won else 0.0,
                     done=done or won, won=won)

    def close(self):
        super().close()
        if self.env is not None:
            self.env.close()
            self.env = None


AlfworldFactory.session_class = AlfworldSession
