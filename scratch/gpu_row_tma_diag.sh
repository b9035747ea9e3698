# The lse/delta-by-TMA patch (notes/gluon_row_tma.patch, in git history at 316e2ef) on the GPU: each backward shape of the
# Gluon GPU test, causal and not, in its own process (a hang or a fault poisons only that one),
# with CUDA_LAUNCH_BLOCKING for the failing launch's traceback.
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1 CUDA_LAUNCH_BLOCKING=1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -rf /tmp/diag && cp -r . /tmp/diag && cd /tmp/diag && git apply notes/gluon_row_tma.patch || exit 1
which compute-sanitizer
T=tests/dsl/test_gluon_backend.py::test_lowered_attention_backward_matches_float64
for dims in dims0 dims1 dims2 dims3 dims4; do for causal in False True; do
  id="$dims-32-False-gluon-False-$causal"
  ( PYTHONPATH=/tmp/diag timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:benchmark -p no:xdist -m gpu "$T[$id]" > $OUT/$id.txt 2>&1; echo "rc=$?" >> $OUT/$id.txt ) &
done; done
wait
for f in $OUT/*.txt; do echo "== $f"; grep -v -i warn $f | tail -4; done
S=$(which compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$S" ]; then
  PYTHONPATH=/tmp/diag timeout 300 $S --tool memcheck --print-limit 5 python3 -m pytest -q -p no:cacheprovider -p no:benchmark -p no:xdist -m gpu -x "$T[dims4-32-False-gluon-False-True]" > $OUT/sanitizer.txt 2>&1
  grep -v -i warn $OUT/sanitizer.txt | head -60
fi
