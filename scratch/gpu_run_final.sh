# Final GPU run of the session: the Gluon back end's GPU tests on the committed code, then (in a
# copy with notes/gluon_row_tma.patch applied) one of the backward cases that failed with the lse
# and delta columns by TMA, with its traceback, for the next session
export HK_TEST_DEVICE=cuda PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 170 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark --timeout 160 -rf tests/dsl/test_gluon_backend.py 2>&1 | tail -8 | tee $OUT/gluon_tests.txt
rm -rf /tmp/diag && cp -r . /tmp/diag && cd /tmp/diag && git apply notes/gluon_row_tma.patch && \
PYTHONPATH=/tmp/diag timeout 100 python3 -m pytest -q -m gpu -x -p no:cacheprovider -p no:benchmark --timeout 90 "tests/dsl/test_gluon_backend.py::test_lowered_attention_backward_matches_float64[dims4-32-False-gluon-False-True]" 2>&1 | grep -v -i warn | tail -40 > $OUT/row_tma_diag.txt; tail -25 $OUT/row_tma_diag.txt
