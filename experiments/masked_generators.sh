#!/usr/bin/env bash
# Masked models as generators, at byte level: ar, vm [0.15, 0.3] (one-stream, the paper's masked arm) and masked
# diffusion (two-stream mdlm) trained with the committed recipe (config/shakespeare_bytes.py: 4 x 128, BOS + 127
# bytes, batch 32, 1200 steps, seed 1337), then scored on 4,000 held-out bytes of the plays two ways:
#   prefix  next-byte perplexity from a prefix only (Eq. 2): what the paper reports for every model
#   elbo    a likelihood for every model: ar's exact left-to-right NLL, and for masked models the any-order bound
#           (the average over unmasking orders of the sum of -log q), 16 forward passes per window, with its
#           standard error
# and sampled: ar left to right; the masked models by unmasking one byte a step in a random order (an exact sample
# of the any-order model) and four a step most-confident first (MaskGIT).
# One seed: this shows what each reading says, not which objective wins (experiments/README.md says why).
# $ bash experiments/masked_generators.sh        (about 1 h on 2 CPU cores; finished runs are not retrained)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env, into_record
PYTHON=${PYTHON:-python}
OUT=${OUT:-out/masked-generators}   # checkpoints (not committed)
RES=${RES:-experiments/masked-generators}  # the record: logs, summaries, samples
check_env PYTHON OUT RES
ARMS=(ar vm mdlm_2s)
$PYTHON data/shakespeare/prepare.py --tokenizer=bytes > /dev/null

train() {  # one run per core; an existing best checkpoint means the run is done
    [ -f "$OUT/$1/ckpt_best.pt" ] && [ -f "$OUT/$1/log.jsonl" ] && [ "$(tail -n 1 "$OUT/$1/log.jsonl" | grep -c '"iter": 1200')" = 1 ] && return 0
    # --rope=False: the learned position table, as the record was made (before the byte recipe took rotary positions)
    OMP_NUM_THREADS=1 $PYTHON train.py "config/$1_shakespeare_bytes.py" --eval_interval=100 --out_dir="$OUT/$1" \
        --rope=False --progress=False --overwrite=True > "$OUT/$1.train.txt"
}
mkdir -p "$OUT" "$RES"
train ar & first=$!; train vm; wait $first
train mdlm_2s

ckpts=(); names=()
for arm in "${ARMS[@]}"; do ckpts+=("--ckpt=$OUT/$arm/ckpt_best.pt"); names+=("--names=$arm"); done
for reading in prefix elbo; do
    into_record "$RES/$reading.txt" $PYTHON eval_ppl.py config/eval_ppl_shakespeare_bytes.py "${ckpts[@]}" \
        "${names[@]}" --max_tokens=4000 --reading=$reading --out_dir="$OUT/$reading" --overwrite=True --progress=False
    cat "$RES/$reading.txt"
    cp "$OUT/$reading/summary.json" "$RES/$reading.json"
done

samples() {
    echo "# ar, left to right"
    OMP_NUM_THREADS=1 $PYTHON sample.py --ckpt="$OUT/ar/ckpt_best.pt" --prompt='ROMEO:' --max_new_tokens=120 \
        --stream=False 2>&1 || return
    for arm in vm mdlm_2s; do
        echo "# $arm, random order, one byte a step (an exact sample of the any-order model)"
        OMP_NUM_THREADS=1 $PYTHON sample.py --ckpt="$OUT/$arm/ckpt_best.pt" --prompt='ROMEO:' --max_new_tokens=120 \
            --order=random --tokens_per_step=1 --temperature=1.0 --stream=False 2>&1 || return
        echo "# $arm, most confident first, four bytes a step (MaskGIT), the canvas every 6 steps"
        OMP_NUM_THREADS=1 $PYTHON sample.py --ckpt="$OUT/$arm/ckpt_best.pt" --prompt='ROMEO:' --max_new_tokens=120 \
            --order=confident --tokens_per_step=4 --show_steps=6 --stream=False 2>&1 || return
    done
}
into_record "$RES/samples.txt" samples
for arm in "${ARMS[@]}"; do cp "$OUT/$arm/log.jsonl" "$RES/log_$arm.jsonl"; cp "$OUT/$arm/loss.csv" "$RES/loss_$arm.csv"; done
echo "record in $RES"
