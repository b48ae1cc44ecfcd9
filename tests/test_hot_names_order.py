"""Project hot names (``analysis/project.hot_names_of``) do not depend on the order
in which the prefilter's gate visits the possible modules (a set: its order follows
``PYTHONHASHSEED``). A module the gate adds late (a registry fed by hot code of
another module) makes the modules that import it hot too, whether they were computed
before or after it was added."""

import json
import os
import subprocess
import sys

from fakegrad_lint.analysis import project

from test_callgraph import make

FILES = {
    # hot code registers itself in b's registry: b is fed (`register`, `REG`)
    "a.py": "from torch._subclasses.fake_tensor import FakeTensorMode\n"
                "from b import register\n\n"
                "@register\n"
                "def fake_run(f):\n"
                "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
                "        return f()\n",
    # names no fake mode: possible only once the gate sees it fed
    "b.py": "REG = {}\n\n"
                "def register(fn):\n"
                "    REG[fn.__name__] = fn\n"
                "    return fn\n\n"
                "def lookup(name):\n"
                "    return REG[name]\n",
    # names a fake mode (a seed), imports `lookup` of b
    "c.py": "from torch._subclasses.fake_tensor import FakeTensorMode\n"
                "from b import lookup\n\n"
                "def use(name, f):\n"
                "    return lookup(name)(f)\n",
    "train.py": "from c import use\n",
}
# a safe look-alike: c imports a cold name of b
COLD = dict(FILES, **{"c.py": "from torch._subclasses.fake_tensor import FakeTensorMode\n"
                                  "from b import other\n\n"
                                  "def use(name, f):\n"
                                  "    return other(name)\n",
                      "b.py": FILES["b.py"] + "\ndef other(name):\n    return name\n"})


def gate_then_hot(root):
    train = os.path.join(root, "train.py")
    with open(train) as fh:
        project.reaches_region(train, fh.read())
    return project.hot_names_of(os.path.join(root, "c.py"), 0)


def test_a_module_fed_late_makes_its_importers_hot(tmp_path):
    make(tmp_path, FILES)
    hot = gate_then_hot(str(tmp_path))
    assert {"lookup", "use"} <= hot


def test_a_cold_name_of_a_fed_module_stays_cold(tmp_path):
    make(tmp_path, COLD)
    hot = gate_then_hot(str(tmp_path))
    assert not {"other", "use"} & hot


SCRIPT = (
    "import json, os, sys\n"
    "from fakegrad_lint.analysis import project\n"
    "root = sys.argv[1]\n"
    "train = os.path.join(root, 'train.py')\n"
    "project.reaches_region(train, open(train).read())\n"
    "print(json.dumps(sorted((os.path.relpath(k, root), sorted(v)) for k, v in project._hot.items())))\n"
)


def test_hot_names_are_the_same_under_two_hash_seeds(tmp_path):
    make(tmp_path, FILES)
    outs = set()
    for seed in ("1", "2", "3", "4"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        outs.add(proc.stdout)
    assert len(outs) == 1
    assert {"lookup", "use"} <= set(dict(json.loads(outs.pop()))["c.py"])
