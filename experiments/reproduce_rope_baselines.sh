#!/usr/bin/env bash
# Where the input stands on the offline suite, added to a byte-level text record after its registered runs
# (descriptive, never a verdict): by the record's own protocols (linear probe: config/linprobe_glue_offline.py;
# fine-tune: config/glue_offline.py --epochs=2 --learning_rate=1e-3 --seeds=0, the same in both records)
#   bag of words   the same probe on word counts (eval_glue.py --ckpt=bag_of_words): no model, no seed, one run
#   random         ar at initialisation, each registered seed: the weights a run of that seed starts from (a 1-step
#                  run gives the checkpoint; eval_glue.py --ckpt=random:... reads its architecture and seed only),
#                  probed and fine-tuned
# Its files go to runs/text/baseline-*/; then summarize.py redraws the tables, the baselines as rows of Table 2's.
# ROPE picks the record, and with it the defaults of OUT, RES, SEEDS, STEPS and the summary's arguments:
# $ bash experiments/reproduce_rope_baselines.sh             rotary positions: experiments/repro-bytes-rope/, seeds
#                                                            1340-1344 (reproduce_rope.sh's registration)
# $ ROPE=False bash experiments/reproduce_rope_baselines.sh  the learned position table: experiments/repro-bytes/,
#                                                            seeds 1337-1341 (TOKENS=bytes reproduce.sh's record)
# (resumable; two jobs at a time, JOBS=1 for one)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env, run_failed
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1
ROPE=${ROPE:-True}
check_env ROPE
if [ "$ROPE" = True ]; then
    OUT=${OUT:-out/repro-bytes-rope}
    RES=${RES:-experiments/repro-bytes-rope}
    SEEDS=${SEEDS:-"1340 1341 1342 1343 1344"}
    STEPS=${STEPS:-1200}  # the record's, for the summary
    SUMMARY=("" "" "" bytes experiments/reproduce_rope.sh)  # no GPT-2 column; its own registration
else
    OUT=${OUT:-out/repro-bytes}
    RES=${RES:-experiments/repro-bytes}
    SEEDS=${SEEDS:-"1337 1338 1339 1340 1341"}
    STEPS=${STEPS:-3000}
    # as reproduce.sh's summary draws this record: the GPT-2 BPE record's differences beside, B1-B4 of reproduce.sh
    SUMMARY=(experiments/repro/runs "1337 1338 1339" 1500 bytes)
    [ -d experiments/repro/runs ] || SUMMARY=("" "" "" bytes)
fi
KEEP=$RES/runs
JOBS=${JOBS:-2}
check_env PYTHON OUT RES SEEDS STEPS JOBS
PROBE="config/linprobe_glue_offline.py"
FINETUNE="config/glue_offline.py --epochs=2 --learning_rate=1e-3 --seeds=0"
$PYTHON data/shakespeare/prepare.py --tokenizer=bytes > /dev/null
$PYTHON data/glue/prepare_offline.py > /dev/null
export PYTHON ROPE OUT KEEP PROBE FINETUNE

baseline() {  # baseline NAME [SEED]
    local name=$1 seed=${2:-} folder ckpt mode command
    folder=text/baseline-$name${seed:+-$seed}
    ckpt=--ckpt=bag_of_words
    if [ "$name" = random ]; then
        ckpt=--ckpt=random:$OUT/text/random-$seed/ckpt_last.pt  # summarize.py reads arm and seed from the folder
        [ -f "$OUT/text/random-$seed/ckpt_last.pt" ] || {
            mkdir -p "$OUT/text"
            $PYTHON train.py config/ar_shakespeare_bytes.py --rope="$ROPE" --max_iters=1 --seed="$seed" \
                --progress=False --overwrite=True --out_dir="$OUT/text/random-$seed" \
                > "$OUT/text/random-$seed.txt" 2>&1 ||
                { run_failed "random $seed (1 step)" "$OUT/text/random-$seed.txt"; return 1; }
        }
    fi
    for mode in linprobe finetune; do
        [ "$name" = random ] || [ "$mode" = linprobe ] || continue  # bag of words: no model to fine-tune
        [ -f "$KEEP/$folder/glue_$mode.json" ] && continue
        case $mode in linprobe) command=$PROBE ;; finetune) command=$FINETUNE ;; esac
        mkdir -p "$OUT/$folder" "$KEEP/$folder"
        # shellcheck disable=SC2086
        $PYTHON eval_glue.py $command "$ckpt" --out_dir="$OUT/$folder" --overwrite=True --progress=False \
            > "$OUT/$folder/$mode.txt" 2>&1 || { run_failed "$folder $mode" "$OUT/$folder/$mode.txt"; return 1; }
        cp "$OUT/$folder/glue_$mode".{md,csv,json} "$KEEP/$folder/"
    done
    echo "done: $folder"
}
export -f baseline
jobs=("baseline bag_of_words")
for seed in $SEEDS; do jobs+=("baseline random $seed"); done
status=0
printf '%s\n' "${jobs[@]}" | xargs -P "$JOBS" -L 1 bash -c '"$0" "$1" "$2"' || status=$?
$PYTHON -m experiments.summarize "$KEEP" "$RES" "$SEEDS" "$STEPS" "${SUMMARY[@]}" > /dev/null
echo "tables in $RES/tables.md"
exit $status
