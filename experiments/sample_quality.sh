#!/usr/bin/env bash
# How good are the samples? Quality against forward passes, for every sampler, at byte level. Each sampler setting
# draws NUM_SAMPLES samples of 127 bytes from BOS (a whole canvas), and sample.py --judge scores them: their NLL per
# byte under a judge, beside the judge's NLL on held-out text in windows of the same length (what a sampler of the
# text itself scores: the reference line; a sharper sampler goes below it) and the unigram entropy of both (a sampler
# stuck on a few likely bytes scores well under any judge, so a low entropy is flagged; evals/sample_quality.py).
# The x axis: forward passes per sample.
# A measurement: nothing is registered, and sample_quality.py draws no verdict.
#
# Models: the byte recipe (config/shakespeare_bytes.py, 1200 steps) with rotary positions, passed here explicitly
# (--rope=True): with the learned table masked models may still sit on the unigram plateau at this budget
# (rope-pilot/), and the samples of a model on the plateau say nothing about its sampler. ar, two-stream masked
# diffusion (mdlm_2s) and two-stream vm [0.15, 0.3] (vm_2s, its held-out curve read as the any-order bound), seeds
# 1337 1338 1339; each model is sampled with its own seed.
# Judge: config/judge_shakespeare_bytes.py, ar of the same recipe and --rope=True trained twice as long (2400 steps):
# the same bytes, data and window as the models it judges, and a likelihood nearer the text's than any of theirs (ar's
# held-out loss still falls at 1200 steps, bytes-curves/); seed 1340, no judged model's, so it shares neither the
# initialisation nor the data order of the judged ar. tables.md puts its held-out loss beside every model's.
# Samplers (sample.py, temperature 1 unless named):
#   ar        left to right at temperature 1 and 0.8: one forward pass a byte, 127 a sample
#   mdlm, vm  k = 1 2 4 8 16 bytes a step, ceil(127 / k) forward passes a sample: random order (k = 1 draws exactly
#             from the any-order model), confident order (MaskGIT), and confident order in blocks of 32 filled left
#             to right (LLaDA's semi-autoregressive blocks)
# Budget (estimated, not measured): the 9 runs and the judge about 2.3 hours two at a time on the 2-core CPU, the
# 96 sampler settings about 15 minutes more.
#
# $ bash experiments/sample_quality.sh   (resumable: a finished run or scored setting in the record is not redone)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env, run_failed
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1
OUT=${OUT:-out/sample-quality}           # checkpoints (not committed)
RES=${RES:-experiments/sample-quality}   # the record: training logs, samples and their scores, tables, plots
SEEDS=${SEEDS:-"1337 1338 1339"}
JUDGE_SEED=1340
STEPS=${STEPS:-1200}                     # the recipe's; a smaller one only to smoke-test the script
KS=${KS:-"1 2 4 8 16"}
NUM_SAMPLES=${NUM_SAMPLES:-32}
check_env PYTHON OUT RES SEEDS STEPS KS NUM_SAMPLES
JUDGE_STEPS=$((2 * STEPS))
BLOCK=32
JUDGE_TOKENS=16000                       # held-out bytes the judge scores: 125 windows of 127
RECIPE="--rope=True --progress=False"
$PYTHON data/shakespeare/prepare.py --tokenizer=bytes > /dev/null
mkdir -p "$OUT" "$RES"

config() {  # the model's config and how its held-out curve is read
    case $1 in
        judge) echo "config/judge_shakespeare_bytes.py --max_iters=$JUDGE_STEPS --lr_decay_iters=$JUDGE_STEPS" ;;
        ar) echo "config/ar_shakespeare_bytes.py --max_iters=$STEPS --lr_decay_iters=$STEPS" ;;
        mdlm) echo "config/mdlm_2s_shakespeare_bytes.py --max_iters=$STEPS --lr_decay_iters=$STEPS" ;;
        vm) echo "config/vm_2s_shakespeare_bytes.py --max_iters=$STEPS --lr_decay_iters=$STEPS --eval_objective=mdlm" ;;
    esac
}
train() {  # train MODEL SEED: skipped when its log in the record is complete
    local model=$1 seed=$2 dir=$OUT/$1/$2 keep=$RES/train/$1/$2 steps=$STEPS start=--init_from=scratch
    [ "$model" = judge ] && dir=$OUT/judge keep=$RES/judge steps=$JUDGE_STEPS
    [ -f "$keep/log.jsonl" ] && [ "$(tail -n 1 "$keep/log.jsonl" | grep -c "\"iter\": $steps,")" = 1 ] && return 0
    [ -f "$dir/ckpt_last.pt" ] && start=--init_from=resume
    mkdir -p "$(dirname "$dir")"
    # shellcheck disable=SC2046
    $PYTHON train.py $(config "$model") $RECIPE --seed="$seed" $start --overwrite=True --out_dir="$dir" \
        > "$dir.txt" 2>&1 || { run_failed "$dir" "$dir.txt"; return 1; }
    mkdir -p "$keep" && cp "$dir/log.jsonl" "$keep/log.jsonl"
    echo "done: $model $seed"
}
settings() {  # settings MODEL: one line per sampler setting, its name and sample.py options
    if [ "$1" = ar ]; then
        echo "T1 --temperature=1.0"; echo "T0.8 --temperature=0.8"; return
    fi
    for k in $KS; do
        echo "random-k$k --order=random --tokens_per_step=$k --temperature=1.0"
        echo "confident-k$k --order=confident --tokens_per_step=$k --temperature=1.0"
        echo "blocks$BLOCK-k$k --order=confident --block_length=$BLOCK --tokens_per_step=$k --temperature=1.0"
    done
}
score() {  # score MODEL SEED NAME OPTIONS...: skipped when its scores are in the record
    local model=$1 seed=$2 keep=$RES/samples/$1/$3/$2; shift 3
    [ -f "$keep.json" ] && return 0
    mkdir -p "$(dirname "$keep")"
    $PYTHON sample.py --ckpt="$OUT/$model/$seed/ckpt_best.pt" --max_new_tokens=127 --num_samples="$NUM_SAMPLES" \
        --seed="$seed" --stream=False --judge="$OUT/judge/ckpt_best.pt" --judge_tokens=$JUDGE_TOKENS \
        --judge_out="$keep.json" "$@" > "$keep.txt" 2>&1 || { run_failed "$keep" "$keep.txt"; return 1; }
}
export -f train config score
export PYTHON OUT RES STEPS JUDGE_STEPS RECIPE NUM_SAMPLES JUDGE_TOKENS
jobs=("judge $JUDGE_SEED")
for seed in $SEEDS; do  # the costlier two-stream runs first within a seed, so the two cores end together
    for model in mdlm vm ar; do jobs+=("$model $seed"); done
done
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'train "$0" "$1"'

for seed in $SEEDS; do
    for model in ar mdlm vm; do
        settings "$model" | while read -r line; do echo "$model $seed $line"; done
    done
done | xargs -P 2 -L 1 bash -c 'score "$@"' _

$PYTHON -m experiments.sample_quality "$RES"
