#!/usr/bin/env bash
# GPU check for the runtime checker (one command, under 3 minutes on one GPU):
#   bash bench/cuda_check.sh
# 1. the CUDA variants of the runtime tests (watcher hazards/crash with CUDA as
#    the default device; `confirm --device cuda` on two fixtures);
# 2. `fakegrad-lint confirm --device cuda` on two fixtures by hand: every
#    static finding must come back `confirmed` (exit status 1, nothing missed).
# Exit 0 when all of it passed, 1 on a failure, 3 when this machine has no CUDA.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}"

python -c "import sys, torch; print('torch', torch.__version__, 'cuda available:', torch.cuda.is_available()); sys.exit(0 if torch.cuda.is_available() else 3)"
st=$?
if [ $st -ne 0 ]; then echo "cuda_check: no usable CUDA/torch here (status $st)"; exit 3; fi

rc=0
echo "== CUDA-marked runtime tests"
timeout 150 python -m pytest -q -p no:cacheprovider -rs \
    tests/test_runtime_watcher.py tests/test_runtime_confirm.py -k "cuda" || rc=1

for f in fixtures/hazard_linear_module.py fixtures/hazard_strict_factory.py; do
    echo "== confirm --device cuda $f"
    out=$(timeout 90 python -m fakegrad_lint.cli.confirm --device cuda --output-format json "$f")
    st=$?
    echo "$out"
    if [ $st -ne 1 ]; then echo "cuda_check: expected exit 1 for $f, got $st"; rc=1; continue; fi
    echo "$out" | python -c "
import json, sys
objs = json.load(sys.stdin)
bad = [o for o in objs if o['status'] != 'confirmed']
sys.exit(1 if (bad or not objs) else 0)" || { echo "cuda_check: not all findings confirmed for $f"; rc=1; }
done
echo "cuda_check: $([ $rc -eq 0 ] && echo PASSED || echo FAILED)"
exit $rc
