# The one-pass backward probe (scratch/onepass_gluon_probe.py), each case in its own process under a
# time limit (a deadlocked kernel ends only its case), results in $OUT/onepass_N.json.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
for i in ${CASES:-0 1 2 3 4}; do
  timeout -s KILL ${CASE_LIMIT:-150} python3 scratch/onepass_gluon_probe.py $OUT/onepass_$i.json $i 2>&1 | grep -v -i warn | tail -3
done
