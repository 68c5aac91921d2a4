#!/usr/bin/env bash
# A virtual environment with another Triton beside the project's, to compile the kernels under the GPU image's
# version without a GPU (benches/triton_resources.py; scripts/gpu_check.sh --rehearse runs it in CI):
#
#   bash scripts/triton_venv.sh [VERSION [DIR]]      # default 3.6.0 (the GPU image's), DIR /tmp/venv-triton<VERSION>
#   /tmp/venv-triton3.6.0/bin/python benches/triton_resources.py --arch 90 --check
#
# The venv holds Triton alone (pip --no-deps: nothing else is downloaded, no torch); a .pth file appends the project
# .venv's site-packages after its own, so `import triton` finds VERSION first while torch, numpy and the editable
# spherekit come from the project's environment. Compiling needs no interpreter, so numpy's version does not matter
# (triton 3.6.0's interpreter fails with numpy >= 2.4: never run interpreter tests in this venv). Idempotent: a venv
# that already has VERSION is reused. Prints the venv's python last. The base interpreter: $PYTHON, else .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-3.6.0}"
dir="${2:-/tmp/venv-triton$version}"
base="${PYTHON:-.venv/bin/python}"
site="$("$base" -c 'import site; print(site.getsitepackages()[0])')"
has() { "$dir/bin/python" -c "import sys, triton, torch; sys.exit(triton.__version__ != '$version')" 2>/dev/null; }  # torch: the project's, through the .pth
if [ ! -x "$dir/bin/python" ] || ! has; then
    "$base" -m venv "$dir"
    own="$("$dir/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
    # pip runs before the .pth exists: it sees this venv alone, never the project's pinned triton
    "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps "triton==$version"
    echo "import site; site.addsitedir('$site')" > "$own/zz_spherekit_project_venv.pth"
fi
has || { echo "triton_venv.sh: $dir does not import triton $version" >&2; exit 1; }
echo "$dir/bin/python"
