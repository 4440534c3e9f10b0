#!/usr/bin/env bash
# Pilot, exploratory (not registered, never a verdict): which tasks of the probing suite (data/glue/prepare_probing.py,
# SentEval-style windows of the held-out plays and of Wikipedia) can a byte-level model of the project's recipe solve
# well enough for a registered comparison of the objectives' representations (Thm 4.1-4.2, Tables 1-2)? ar is
# pretrained by the byte recipe with rotary positions (config/ar_shakespeare_bytes.py, 4 x 128, STEPS steps, its own
# cosine) on seeds 2100-2102 (the registered runs will use 2110-2114); each run and its own initialisation
# (--ckpt=random:<ckpt>, the weights its run started from) is fine-tuned on every task (config/glue_probing.py: 2
# epochs, lr 1e-3, the run's seed) and linearly probed (config/linprobe_glue_probing.py; the record's probes were not
# run); beside them, once, the same probe on byte 1- to 3-gram counts (--ckpt=bag_of_bytes). The rule that says which
# tasks enter is in experiments/probing-pilot/README.md, committed after seed 2100's pretraining had run and before
# any fine-tune or probe (its README says when); probing_pilot.py applies it.
# CPU cost of every run (user + system seconds, /usr/bin/time) is kept beside it: the registered runs' budget.
# $ bash experiments/probing_pilot.sh   (resumable: a recorded run is never redone; then probing_pilot.py's table)
# $ SMOKE=1 RES=/tmp/pp OUT=/tmp/pp-out bash experiments/probing_pilot.sh   (20 steps, 40/20 windows: the script only)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env, run_failed, into_record
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1
OUT=${OUT:-out/probing-pilot}
RES=${RES:-experiments/probing-pilot}
SEEDS=${SEEDS:-"2100 2101 2102"}
STEPS=${STEPS:-1200}
JOBS=${JOBS:-1}  # 2 only while nobody else computes on the two cores
SMOKE=${SMOKE:-0}
LRS="1e-3 3e-4 1e-4"  # the fine-tune's learning rates tried, 2 epochs each: README.md's protocol rule
check_env PYTHON OUT RES SEEDS STEPS JOBS SMOKE
if [ "$RES" = experiments/probing-pilot ] && [ "$SMOKE" != 0 ]; then
    echo "probing_pilot.sh: SMOKE=1 writes a smoke run: give it its own RES= and OUT=" >&2
    exit 2
fi
mkdir -p "$OUT" "$RES"
SUITE=data/glue/probing
FINETUNE=config/glue_probing.py
PROBE=config/linprobe_glue_probing.py
TRAIN="" SIZES=""
if [ "$SMOKE" != 0 ]; then  # the same steps on a 40 / 20 window suite, 20 pretraining steps
    SUITE=$OUT/suite STEPS=20 TRAIN="--eval_interval=10 --eval_iters=2" SIZES="--train_size=40 --dev_size=20"
    FINETUNE+=" --epochs=1"
    PROBE+=" --probe_iters=20"
fi
# the pilot's tasks: the suite's seven window tasks (its line tasks came after the pilot)
TASKS="bigram_shift somo play speaker_change verse_prose wiki_bigram_shift wiki_somo"
# the suite (deterministic: seed 1337, 4,000 / 2,000 windows a task), its sizes and majority baselines kept, for
# the pilot's tasks, as the pilot printed them
suite() {
    # shellcheck disable=SC2086
    $PYTHON data/glue/prepare_probing.py $SIZES --out_dir="$SUITE" | grep -v '^wrote' |
        awk -v tasks="$TASKS" 'BEGIN { n = split(tasks, names); for (i = 1; i <= n; i++) pilot[names[i]] = 1 }
             $1 in pilot { name = $1; sub(/^[a-z_]+ +/, ""); printf "%-18s %s\n", name, $0 }'
}
if [ ! -f "$SUITE/somo/dev.tsv" ] || [ ! -f "$RES/suite.txt" ]; then
    into_record "$RES/suite.txt" suite  # a prepare that fails (no corpora) leaves the recorded suite.txt as it was
    cat "$RES/suite.txt"
fi
export PYTHON OUT RES SEEDS STEPS SUITE FINETUNE PROBE TASKS TRAIN

timed() {  # timed KEEP NAME CMD...: run CMD, its CPU seconds kept as KEEP/NAME.time
    /usr/bin/time -f "cpu_s %U %S wall_s %e" -o "$1/$2.time.tmp" "${@:3}" && mv "$1/$2.time.tmp" "$1/$2.time"
}
evaluate() {  # evaluate ARM SEED CKPT CONFIG NAME [TASK]: one eval_glue.py run, its JSON kept as NAME.json
    local keep=$RES/runs/$1/$2 dir=$OUT/$1/$2/$5
    [ -f "$keep/$5.json" ] && return 0
    mkdir -p "$keep" "$dir"
    local tasks=()
    [ -n "${6:-}" ] && tasks=(--tasks="$6")
    # shellcheck disable=SC2086
    timed "$keep" "$5" $PYTHON eval_glue.py $4 --ckpt="$3" --seeds="$2" --glue_dir="$SUITE" "${tasks[@]}" \
        --out_dir="$dir" --overwrite=True --progress=False > "$dir.txt" 2>&1 ||
        { run_failed "$1 $2 $5" "$dir.txt"; return 1; }
    cp "$dir"/glue_*.json "$keep/$5.json"
}
pretrain() {  # pretrain SEED: ar by the byte recipe, unless its log is recorded
    local dir=$OUT/ar-$STEPS/$1 keep=$RES/runs/ar-$STEPS/$1
    [ -f "$keep/log.jsonl" ] && return 0
    mkdir -p "$keep" "$(dirname "$dir")"
    # shellcheck disable=SC2086
    timed "$keep" pretrain $PYTHON train.py config/ar_shakespeare_bytes.py --max_iters="$STEPS" \
        --lr_decay_iters="$STEPS" --progress=False --seed="$1" --overwrite=True --out_dir="$dir" $TRAIN \
        > "$dir.txt" 2>&1 ||
        { run_failed "ar $1 pretraining" "$dir.txt"; return 1; }
    cp "$dir/log.jsonl" "$keep/log.jsonl"
    echo "done: pretraining $1"
}
finetune() {  # finetune TASK SEED: the run and its initialisation side by side, so a stop leaves complete pairs
    local ckpt=$OUT/ar-$STEPS/$2/ckpt_best.pt
    evaluate "ar-$STEPS" "$2" "$ckpt" "$FINETUNE" "finetune-$1" "$1" &&
        evaluate random-0 "$2" "random:$ckpt" "$FINETUNE" "finetune-$1" "$1" && echo "done: $1 $2"
}
probe() {  # probe SEED: the linear probe of the run and of its initialisation, every task
    local ckpt=$OUT/ar-$STEPS/$1/ckpt_best.pt
    evaluate "ar-$STEPS" "$1" "$ckpt" "$PROBE" linprobe && evaluate random-0 "$1" "random:$ckpt" "$PROBE" linprobe
}
protocol() {  # protocol LR: the first seed's run and its initialisation fine-tuned on bigram shift at LR, in protocol/
    local seed=${SEEDS%% *} ckpt
    ckpt=$OUT/ar-$STEPS/$seed/ckpt_best.pt
    RES=$RES/protocol evaluate "ar-$STEPS" "$seed" "$ckpt" "$FINETUNE --learning_rate=$1" "finetune-bigram_shift-lr$1" \
        bigram_shift && RES=$RES/protocol evaluate random-0 "$seed" "random:$ckpt" "$FINETUNE --learning_rate=$1" \
        "finetune-bigram_shift-lr$1" bigram_shift
}
export -f timed evaluate pretrain finetune probe protocol run_failed
# every seed's pretraining first, the protocol's learning rate, then task by task over the seeds (a stop leaves whole
# tasks decided), the probes last
status=0
printf '%s\n' $SEEDS | xargs -P "$JOBS" -L 1 bash -c 'pretrain "$0"' || status=$?
printf '%s\n' $LRS | xargs -P "$JOBS" -L 1 bash -c 'protocol "$0"' || exit 1
LR=$($PYTHON -c "from experiments.probing_pilot import pick; print(pick('$RES'))")
echo "fine-tuning at learning_rate=$LR"
for arm in "ar-$STEPS" random-0; do  # the protocol's runs at the picked rate are the first seed's bigram shift runs
    from=$RES/protocol/runs/$arm/${SEEDS%% *}/finetune-bigram_shift-lr$LR to=$RES/runs/$arm/${SEEDS%% *}
    if [ -f "$from.json" ] && [ ! -f "$to/finetune-bigram_shift.json" ]; then
        mkdir -p "$to" && cp "$from.time" "$to/finetune-bigram_shift.time" &&
            cp "$from.json" "$to/finetune-bigram_shift.json"
    fi
done
FINETUNE+=" --learning_rate=$LR"
export FINETUNE
for task in $TASKS; do for seed in $SEEDS; do echo "$task $seed"; done; done |
    xargs -P "$JOBS" -L 1 bash -c 'finetune "$0" "$1"' || status=$?
printf '%s\n' $SEEDS | xargs -P "$JOBS" -L 1 bash -c 'probe "$0"' || status=$?
evaluate bag_of_bytes 0 bag_of_bytes "$PROBE" linprobe || status=1  # no seed: a convex fit from zero
$PYTHON -m experiments.probing_pilot "$RES"
exit $status
