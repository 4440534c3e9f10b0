#!/usr/bin/env bash
# Rotary positions (RoPE) against the learned position table, at byte level: do masked models leave the unigram
# plateau from the first steps with RoPE, and does it cost ar and dar anything? A masked target's input carries no
# byte, so to beat the unigram it must attend to its neighbours by position; with a learned table initialised at std
# 0.02 attention starts uniform and locality must be learned first, a saddle some seeds leave late or never. ar gets
# the bigram through the residual stream (its own byte is its input).
#
# Arms (the byte recipe's configs, config/shakespeare_bytes.py): ar, dar t = 2, mlm 0.15, vm [0.15, 0.3] (one-stream,
# BERT's [MASK] inputs), two-stream vm, two-stream mdlm; each with the learned table (POS=learned) and with
# --rope=True (POS=rope); seeds 1337 1338 1339. The recipe as it is (batch 32 x 128 bytes, its learning rate and
# 1,200-step cosine) stopped at STEPS = 600; held-out loss every 50 steps on the same windows, read as a likelihood in
# nats per byte (train.py's eval_objective): ar its own exact NLL, dar left to right (eval_objective=ar), every masked
# arm its any-order bound (eval_objective=mdlm, the masked arm's own stream layout).
#
# Pre-registered (committed before any run of this pilot; rope_pilot.py applies this rule to the logs).
# Per run: exit = the first evaluation step at which the held-out loss is at least 0.1 below the unigram floor (the
# training split's unigram NLL per byte on held-out windows of 128 bytes); a run that never gets there has exit =
# infinity ("still on the plateau at 600"). end = the held-out loss at step 600.
#   EXIT_MARGIN = 0.1
#   AR_TOLERANCE = 0.02
# The byte recipe switches to rope if both hold:
#   R1 ar and dar lose nothing: for each, the mean over seeds of end (rope) - end (learned) <= AR_TOLERANCE.
#   R2 every masked arm leaves the plateau earlier with rope on every seed: exit (rope) < exit (learned) for each of
#      mlm, vm, vm two-stream, mdlm two-stream and each seed (a tie, including both at the first evaluation, is not
#      earlier; a rope run that never leaves fails).
# Otherwise the byte recipe keeps the learned table, --rope=True stays an option, and the report says which condition
# failed and for which arm. Reported beside the rule, not part of it: the paired difference end (rope) - end
# (learned) per arm with a two-sided paired t-test and sign test over the seeds, and the exit steps.
# Budget: 36 runs of 600 steps, two at a time (one per core): about 75 minutes on the 2-core CPU.
#
# $ bash experiments/rope_pilot.sh   (resumable: a run whose log in the record is complete is skipped)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env; train_once (its config is replaced by the pilot's arms below)
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1
OUT=${OUT:-out/rope-pilot}           # checkpoints (not committed)
RES=${RES:-experiments/rope-pilot}   # the record: settings, logs, table, plot
SEEDS=${SEEDS:-"1337 1338 1339"}
STEPS=${STEPS:-600}  # the registered budget; a smaller one only to smoke-test the script
check_env PYTHON OUT RES SEEDS STEPS
RECIPE="--max_iters=$STEPS --eval_interval=50 --progress=False"
$PYTHON data/shakespeare/prepare.py --tokenizer=bytes > /dev/null
mkdir -p "$OUT" "$RES"

# the settings the summary reads, and the unigram / bigram floors on held-out windows of the recipe's length
$PYTHON - "$RES/settings.json" "$STEPS" "$RECIPE" <<'EOF'
import json, sys
import numpy as np
from data.text import load_tokens
from evals.ppl import NgramBaselines
from output import atomic_write
path, steps, recipe = sys.argv[1], int(sys.argv[2]), sys.argv[3]
train, held_out = load_tokens('data/shakespeare_bytes', 'train'), load_tokens('data/shakespeare_bytes', 'val')
windows = np.asarray(held_out[:127 * 2000]).reshape(-1, 127)
windows = np.concatenate([np.full((len(windows), 1), 256), windows], axis=1)  # BOS, as train.py's windows
floors = {name: round(float(nll.mean()), 4) for name, nll in NgramBaselines(np.asarray(train), 320).nll(windows).items()}
atomic_write(path, json.dumps(dict(steps=steps, recipe=' '.join(recipe.split()), floors=floors), indent=1) + '\n')
EOF

config() {  # the arm's config and how its held-out curve is read
    case $1 in
        ar) echo "config/ar_shakespeare_bytes.py" ;;
        dar) echo "config/dar_shakespeare_bytes.py --eval_objective=ar" ;;
        mlm) echo "config/mlm15_shakespeare_bytes.py --eval_objective=mdlm" ;;
        vm) echo "config/vm_shakespeare_bytes.py --eval_objective=mdlm" ;;
        vm2s) echo "config/vm_2s_shakespeare_bytes.py --eval_objective=mdlm" ;;
        mdlm2s) echo "config/mdlm_2s_shakespeare_bytes.py" ;;
    esac
}
run() {  # run ARM POS SEED: skipped when its log in the record is complete
    # shellcheck disable=SC2046
    train_once "$1/$2/$3" $(config "$1") $RECIPE --rope=$([ "$2" = rope ] && echo True || echo False) --seed="$3"
}
export -f run config
export PYTHON OUT RES STEPS RECIPE
jobs=()
for seed in $SEEDS; do  # learned and rope of one arm side by side; the costlier two-stream arms first
    for arm in dar vm2s mdlm2s ar mlm vm; do
        jobs+=("$arm learned $seed" "$arm rope $seed")
    done
done
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'run "$0" "$1" "$2"'

$PYTHON -m experiments.rope_pilot "$RES"
