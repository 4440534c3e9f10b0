#!/usr/bin/env bash
# Look ahead or look around when data repeats, at byte level. ar, dar t = 2 and masked diffusion (two-stream mdlm:
# m ~ U{1..L}, each sequence's loss its own mean) train with one recipe and budget on the first SMALL_BYTES bytes of the
# Shakespeare byte split, seen about 100 times, and on the whole split (4.3 MB, less than one epoch); the paper's own
# masked arm, vm [0.15, 0.3] (one-stream), trains at the small size too. Every EVAL_INTERVAL steps each run scores the
# same held-out windows of the plays with a likelihood (train.py's eval_objective): ar its exact NLL, dar the same
# left to right (eval_objective=ar), masked diffusion its any-order bound (its own loss), vm the bound as well
# (eval_objective=mdlm). So every curve is a likelihood in nats per byte, comparable across arms.
#
# Pilot (seed 1337, the small size, batch 16 x 64 bytes, logs in experiments/data-constrained/pilot/): with the byte
# recipe's learning rate 2e-3, ar's held-out NLL was best at 2.365 at step 800 (epoch 24.6) and 2.854 by step 1600,
# while masked diffusion sat on the unigram plateau (3.298 at step 1200; the unigram floor is 3.331). No better at 500
# steps: 4e-3 (3.315), a sine-cosine initialised position table (3.324, a local patch, not kept), one-stream masked
# diffusion (3.318 at 1000 steps). A lower rate left the plateau: 5e-4 gave 3.293 at 500 steps, 3.234 at 1000, 3.221
# at 1100 (2.5e-4: 3.290 at 500). The rule, one for every arm: learning rate LR = 5e-4, min_lr LR / 10, warmup 100.
# Budget: about 100 epochs of the small size, STEPS = 3200 (16 x 63 bytes a step: 98.4 epochs); about 90 minutes
# for the 21 runs, two at a time (measured afterwards: 72 minutes, 2026-11-25).
#
# Pre-registered (committed before any registered run; data_constrained.py judges each hypothesis by this text).
# Per run, from its held-out NLL per byte at every evaluation:
#   best = the lowest; reached = the first evaluation within TOLERANCE of best; end = the value at the last step;
#   rise = end - best.
#   TOLERANCE = 0.01
#   RISE = 0.05
#   LEARNED_BELOW = 3.2
# Each hypothesis holds when the mean over seeds goes its way and a one-sided paired t-test over the seeds gives
# p < 0.05 (3 seeds: 1337 1338 1339).
#   H1 At the small size ar's held-out NLL ends well above its best: rise - RISE > 0.
#   H2 At the small size masked diffusion reaches its best later than ar: reached (mdlm) - reached (ar) > 0, in
#      epochs.
#   H3 Crossover: at the small size masked diffusion ends below ar: end (ar) - end (mdlm) > 0.
#   H4 With the full split there is no crossover within the budget: end (mdlm) - end (ar) > 0.
#   H5 At the small size dar's rise after its best is smaller than ar's: rise (ar) - rise (dar) > 0.
# H2 and H3 are judged only if masked diffusion left the unigram plateau: its best below LEARNED_BELOW nats/byte on
# every seed at the small size; otherwise they are reported as not judged.
#
# Note added after the runs (not part of the registration above, which is unchanged): the registered masked
# diffusion run of seed 1337 at the small size repeats the pilot log pilot/log_mdlm2s_lr5e-4.jsonl bit for bit at
# steps 100-1400 (same seed, data and schedule), so 44% of one registered run was seen before registration, and the
# pilot had already shown ar rising after its best (2e-3 above). data_constrained.py marks that seed in tables.md.
#
# $ bash experiments/data_constrained.sh   (resumable: a finished run is skipped, an interrupted one resumes from its
# last checkpoint; two runs at a time, one per core, seed by seed; then the summary and samples)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env, into_record; train_once, and config: each arm's config and how its held-out
# curve is read
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1
OUT=${OUT:-out/data-constrained}       # checkpoints (not committed)
RES=${RES:-experiments/data-constrained}  # the record: settings, logs, samples, tables and plots
SEEDS=${SEEDS:-"1337 1338 1339"}
SMALL_BYTES=32768
STEPS=${STEPS:-3200}  # the registered budget; a smaller one only to smoke-test the script
check_env PYTHON OUT RES SEEDS STEPS
LR=5e-4
EVAL_INTERVAL=100
RECIPE="--batch_size=16 --block_size=64 --max_iters=$STEPS --lr_decay_iters=$STEPS --warmup_iters=100 \
--learning_rate=$LR --min_lr=$($PYTHON -c "print($LR / 10)") --eval_interval=$EVAL_INTERVAL --eval_iters=20 --progress=False"
$PYTHON data/shakespeare/prepare.py --tokenizer=bytes > /dev/null
mkdir -p "$OUT" "$RES"

# the settings the summary reads, and the unigram / bigram floors of each training size on held-out bytes
$PYTHON -m experiments.data_constrained settings "$RES/settings.json" "$SMALL_BYTES" "$STEPS" "$EVAL_INTERVAL" "$RECIPE"

run() {  # run SIZE ARM SEED: skipped when its log in the record is complete
    local bytes=$SMALL_BYTES; [ "$1" = full ] && bytes=0
    # --rope=False: the learned position table the record was made with (the byte recipe has used rotary positions
    # since the rope pilot, rope-pilot/; pinned afterwards, outside RECIPE, so settings.json stays as recorded)
    # shellcheck disable=SC2046
    train_once "$1/$2/$3" $(config "$2") $RECIPE --rope=False --seed="$3" --train_tokens=$bytes
}
export -f run config
export PYTHON OUT RES STEPS SMALL_BYTES RECIPE
jobs=()
for seed in $SEEDS; do  # the costlier two-stream runs first within a seed, so the two cores end together
    for job in "small dar" "full dar" "small mdlm" "full mdlm" "small ar" "full ar" "small vm"; do
        jobs+=("$job $seed")
    done
done
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'run "$0" "$1" "$2"'

$PYTHON -m experiments.data_constrained "$RES" "$RES"
first=${SEEDS%% *}
best() { echo "$OUT/$1/$2/$first/ckpt_best.pt"; }
have_checkpoints() {
    for size in small full; do for arm in ar dar mdlm vm; do
        [ "$size/$arm" = full/vm ] || [ -f "$(best $size $arm)" ] || return 1
    done; done
}
if ! have_checkpoints; then
    # a clone has the record but not the checkpoints: the tables above are redrawn, the samples and the check kept
    echo "samples and the bound check need the first seed's checkpoints in $OUT: kept as recorded in $RES"
    exit 0
fi
samples() {  # samples at temperature 1 from the best checkpoint (by held-out likelihood) of each arm, the first seed,
    # 56 bytes after the prompt: ar and dar left to right, the masked arms by unmasking one byte a step in a random
    # order
    for size in small full; do for arm in ar dar mdlm vm; do
        [ "$size/$arm" = full/vm ] && continue
        echo "# $size, $arm"
        OMP_NUM_THREADS=1 $PYTHON sample.py --ckpt="$(best $size $arm)" --prompt='ROMEO:' --max_new_tokens=56 \
            --temperature=1.0 --num_samples=2 --stream=False 2>&1 || return
    done; done
}
into_record "$RES/samples.txt" samples
# the in-training curves check: each small-size arm's best checkpoint (the first seed) scored again by eval_ppl.py
# --reading=elbo on 8,000 held-out bytes, the bound stratified over m with 16 passes a window and its standard error
ckpts=(); names=()
for arm in ar dar mdlm vm; do ckpts+=("--ckpt=$(best small $arm)"); names+=("--names=$arm"); done
into_record "$RES/elbo_small.txt" $PYTHON eval_ppl.py config/eval_ppl_shakespeare_bytes.py "${ckpts[@]}" "${names[@]}" \
    --reading=elbo --max_tokens=8000 --baseline_dataset='' --out_dir="$OUT/elbo_small" --overwrite=True --progress=False
cp "$OUT/elbo_small/summary.json" "$RES/elbo_small.json"
echo "record in $RES"
