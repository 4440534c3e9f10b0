#!/usr/bin/env bash
# The paper's text claims at byte level, registered again with rotary positions (RoPE, --rope=True, passed
# explicitly). The first byte-level registration (reproduce.sh TOKENS=bytes, commit 9409b0e, record repro-bytes/,
# learned position table) was decided in part by whether and when each masked run left the unigram plateau, which
# with a learned table depends on the seed (repro-bytes/tables.md: 2 of 30 Table 7 runs never left it); the rope
# pilot (rope_pilot.sh, rope-pilot/) has every masked arm leave it within 100-200 steps with RoPE. The runs are
# reproduce.sh's byte-level ones, with the same configs (config/*_shakespeare_bytes.py: 4 x 128, BOS + 127 bytes,
# batch 32, learning rate 2e-3 -> 2e-4, warmup 100, a cosine over the whole budget) and the same evaluations, but for
# the positions, the budget, the seeds, one added arm and one added evaluation:
#   table7   mlm 0.15, mlm 0.3, vm [0.15, 0.3], one- and two-stream; eval_ppl.py's prefix perplexity on 6,000
#            held-out targets of the plays and of Wikipedia, positions after the target left out and [MASK]
#            (one-stream); theory.py maskloss (Thm 4.3)
#   text     ar and dar t = 2; the offline suite's linear probe, and fine-tuning (2 epochs, lr 1e-3, seed 0)
#   fig2     theory.py connectivity of ar and mlm 0.15: raw, cosine, and cosine of centred features
#   bound    two-stream masked diffusion (mdlm, MDLM: Sahoo et al. 2024), and eval_ppl.py --reading=elbo on
#            32,000 held-out bytes of the plays (16 passes a window, stratified over the masked count m, the same
#            masks for both) for it and two-stream vm, each at its best checkpoint by its own validation loss
#
# Pre-registered (committed before any run of this experiment; summarize.py judges each hypothesis by this text, as
# it judges reproduce.sh's). B1-B4 are reproduce.sh's, word for word; B5 is added:
#   B1 (Table 7): vm [0.15, 0.3] has a lower prefix perplexity than mlm 0.15 and than mlm 0.3, on the held-out plays
#      and on Wikipedia, one-stream and two-stream, on every seed in domain.
#   MDE B1: paired sd 4.9-30.6 (ppl; the learned record, 8 comparisons), MDE 8.3-51.5
#   B2 (Fig. 3): every masked model's perplexity is highest at the shortest prefixes, and vm's gain is largest there.
#   MDE B2: paired sd 0.072-1.519 (log ppl; the learned record, 20 comparisons), MDE 0.122-2.555
#   B3 (Table 2): dar t = 2 is above ar on the offline suite's average, linear probe and fine-tune.
#   MDE B3: paired sd 3.1-4.7 (points; the learned record, 2 comparisons), MDE 5.2-7.8
#   B4 (Fig. 2): mlm 0.15's cosine connectivity is above ar's at the last kept rank, on every seed.
#   MDE B4: paired sd 0.021 (mlm15 / ar - 1; the learned record, 1 comparison), MDE 0.036
#   B5 (beyond the paper; MDLM, Sahoo et al. 2024): two-stream mdlm's any-order bound on the held-out plays is below
#      two-stream vm [0.15, 0.3]'s.
#   MDE B5: paired sd 0.038 (nats/byte; the rope pilot, 3 seeds), MDE 0.065
# The rule is summarize.py's, unchanged: each hypothesis is the "and" of its comparisons, each a difference paired by
# seed (seeds 1340 1341 1342 1343 1344, all five); a comparison's rule is the text's own ("on every seed" where it
# says so, otherwise the mean over the seeds going the stated way); it is an effect when its rule holds and the
# two-sided paired t-test gives p < 0.05, and a hypothesis is an effect when each of its comparisons is (an
# intersection-union test). B2 covers the six Table 7 arms, as in reproduce.sh (the mdlm run is B5's, not Table 7's).
# B5 asks whether training on every mask ratio (m ~ U{1..L}) makes a better generator, in likelihood, than the
# paper's vm range: its comparison is mdlm's bound - vm's bound, per seed, in nats per byte, by the mean.
# Minimum detectable effects: the smallest true mean difference that the rule's t-test (two-sided p < 0.05 in the
# stated direction: one-sided 0.025) detects with 80% power over the 5 seeds (noncentral t, experiments/stats.py
# minimum_detectable_effect: 1.682 x the paired sd). B1-B4 take each comparison's paired sd from the learned record
# (repro-bytes/, seeds 1337-1341: the same comparisons with the learned table, whose spread includes the plateau's;
# summarize.py prints each comparison's beside its verdict); B5 from the rope pilot's 3 seeds (vm two-stream -
# mdlm two-stream at step 600, rope). A rule "on every seed" needs more than the t-test: these are its t-test's.
#
# Seen before this registration: the rope pilot's curves (rope-pilot/, seeds 1337-1339, 600 steps of this recipe),
# among them B5's comparison in the training-time bound: at step 600 two-stream mdlm's bound is below two-stream vm's
# on all 3 seeds (2.445 against 2.571, mean; vm - mdlm +0.126 ± 0.038). The registered seeds, 1340-1344, are none of the
# pilot's, so no registered run repeats a pilot run (at 1200 steps seeds 1337-1339 would repeat six of its arms for
# their first 600 steps).
#
# Budget, schedule and cost.
# The rule, from the rope pilot's curves (rope-pilot/runs/*/rope/, 3 seeds, this recipe's 1200-step cosine stopped at
# step 600, held-out loss every 50 steps): STEPS = the first pilot evaluation at which every arm's mean rope curve
# falls by less than FLAT = 0.01 nats per byte over the preceding 100 steps (past it more steps buy little), rounded
# up to 100; if no evaluation up to 600 qualifies, or that budget costs more than CAP = 6 hours on the 2 cores, the
# largest multiple of 100 steps whose estimated cost (below) fits CAP. The cosine always spans the whole budget.
# Outcome: no evaluation qualifies. At step 600 the mean rope curves still fall 0.049 (ar, mdlm two-stream), 0.051
# (vm two-stream), 0.052 (mlm 0.15), 0.055 (dar) and 0.058 (vm) nats per byte over the preceding 100 steps, and ar,
# dar, vm two-stream and mdlm two-stream fall by more than 0.04 at every evaluation (mlm 0.15's mean curve, noisy,
# rose at 500 and 550). So the cap decides: STEPS = 1200, the recipe's own budget (1300 is estimated at 6.1 hours).
# The pilot's curves are thus the first half of the registered schedule, on other seeds.
# Cost, estimated before any run from the timings on record. Training: the learned record's runs (repro-bytes/runs,
# 3000 steps, two at a time, checkpoint every 500 steps; the median over its 5 seeds) took ar 20.3, dar 37.5,
# mlm 0.15 20.5, mlm 0.3 20.5, vm 22.2, two-stream mlm 0.15 24.5, mlm 0.3 18.1, vm 21.2 minutes; two-stream mdlm has
# no such run and is costed as dar (in data-constrained/ the two took 8.0 minutes each at 16 x 64 bytes): 222 core-
# minutes a seed, 88.9 at 1200 steps; the rope pilot's rope runs took 1.05 times its learned runs of the same arms
# (run side by side), so 93.4; twelve evaluations a run instead of six add about 3 seconds each, 5.4 a seed. The
# evaluations of a seed (their own timings in repro-bytes/runs): 4 x eval_ppl.py on 6 checkpoints (20 s each),
# 2 fine-tunes (3.3 minutes each), the linear probe (1), maskloss (2, estimated), 3 connectivity readings (1 each,
# estimated), the bound (1, from data-constrained/elbo_small.txt's rates) and a python start and data load per job
# (3 in all): 25 core-minutes. A seed: 124 core-minutes; five: 620, 5.7 hours on 2 cores at 90% use (the fixed order
# leaves a core idle at times; data-constrained.sh's two-at-a-time ran at 94%). The rope pilot's runs took 1.2-2
# times these rates while the machine was shared with other work: on a busy machine the experiment takes longer, and
# stops and resumes as often as needed.
#
# $ bash experiments/reproduce_rope.sh   (resumable: a run whose log in the record is complete is not trained again
# unless an evaluation still to do reads its checkpoint, an interrupted run resumes from its last checkpoint, saved
# every 100 steps, and an evaluation in the record is kept; two jobs at a time, one per core, each seed's runs
# before its evaluations; then the summary, experiments/repro-bytes-rope/tables.md)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env, run_failed
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1
OUT=${OUT:-out/repro-bytes-rope}          # checkpoints (not committed)
RES=${RES:-experiments/repro-bytes-rope}  # tables and plots
KEEP=$RES/runs                            # the record: each finished job's files but checkpoints
REGISTERED_SEEDS="1340 1341 1342 1343 1344"
SEEDS=${SEEDS:-$REGISTERED_SEEDS}
JOBS=${JOBS:-2}        # jobs at a time (two: one per core); more on a GPU
DEVICE_FLAGS=${DEVICE_FLAGS:-}  # e.g. "--device=cuda --dtype=float32 --attn_backend=sdpa": where the models compute
TRAIN_FLAGS=${TRAIN_FLAGS:-}    # e.g. "--compile=False": train.py only
STEPS=${STEPS:-1200}  # the registered budget; a smaller one only to smoke-test the script (with its own RES)
check_env PYTHON OUT RES SEEDS JOBS STEPS DEVICE_FLAGS TRAIN_FLAGS
if [ "$RES" = experiments/repro-bytes-rope ] && { [ "$STEPS" != 1200 ] || [ "$SEEDS" != "$REGISTERED_SEEDS" ]; }; then
    echo "reproduce_rope.sh: STEPS or SEEDS changed from the registered ones: give this smoke run its own RES= and" \
         "OUT= (experiments/repro-bytes-rope holds the registered experiment only)" >&2
    exit 2
fi
RECIPE="--max_iters=$STEPS --lr_decay_iters=$STEPS --rope=True --eval_interval=100 --progress=False"
TABLE7_ARMS="mlm15 mlm30 vm mlm15_2s mlm30_2s vm_2s"
# the costlier runs first within a seed, so the two cores end together
RUNS="text/dar bound/mdlm_2s table7/mlm15_2s table7/vm_2s table7/mlm30_2s table7/vm table7/mlm15 table7/mlm30 text/ar"
$PYTHON data/shakespeare/prepare.py --tokenizer=bytes > /dev/null
$PYTHON data/wikipedia/prepare.py --tokenizer=bytes > /dev/null
$PYTHON data/glue/prepare_offline.py > /dev/null
mkdir -p "$OUT" "$KEEP"

# every evaluation of a seed: "<its folder> <the file it leaves> <the runs it reads>", then its command below
evaluations() {
    local seed=$1 data
    for data in shakespeare wikipedia; do
        echo "table7/ppl-$data-$seed summary.json $TABLE7_ARMS"
        echo "table7/ppl-mask-$data-$seed summary.json $TABLE7_ARMS"
    done
    echo "table7/maskloss-$seed maskloss.csv $TABLE7_ARMS"
    echo "text/linprobe-$seed glue_linprobe.json ar dar"
    echo "text/finetune-ar-$seed glue_finetune.json ar"
    echo "text/finetune-dar-$seed glue_finetune.json dar"
    echo "fig2/$seed connectivity.csv ar mlm15"
    echo "fig2-cosine/$seed connectivity.csv ar mlm15"
    echo "fig2-centred/$seed connectivity.csv ar mlm15"
    echo "bound/elbo-$seed summary.json vm_2s mdlm_2s"
}
folder_of() {  # an arm's run folder, under $OUT and $KEEP
    case $1 in ar|dar) echo "text/$1-$2" ;; mdlm_2s) echo "bound/$1-$2" ;; *) echo "table7/$1-$2" ;; esac
}
ckpts() {  # ckpts SEED ARM...: their best checkpoints as --ckpt= arguments, on one line
    local seed=$1 arm line=""; shift
    for arm in "$@"; do line+=" --ckpt=$OUT/$(folder_of "$arm" "$seed")/ckpt_best.pt"; done
    echo "$line"
}
finished() { [ -f "$1" ] && [ "$(tail -n 1 "$1" | grep -c "\"iter\": $STEPS,")" = 1 ]; }
keep() {  # a finished job's files to the record, all but checkpoints (MBs each) and training's loss.png
    mkdir -p "$KEEP/$1"
    find "$OUT/$1" -maxdepth 1 -type f ! -name '*.pt' ! -name '*.tmp' ! -name loss.png -exec cp {} "$KEEP/$1/" \;
}
train() {  # train ARM SEED: unless the record has it and no evaluation still to do reads its checkpoint
    local arm=$1 seed=$2 folder start=--init_from=scratch wanted=0 line
    folder=$(folder_of "$arm" "$seed")
    mkdir -p "$(dirname "$OUT/$folder")" && rm -f "$OUT/$folder.done" "$OUT/$folder.failed"
    while read -r line; do  # an evaluation not in the record that reads this run
        set -- $line
        [ -f "$KEEP/$1/$2" ] || [[ " ${*:3} " != *" $arm "* ]] || wanted=1
    done < <(evaluations "$seed")
    if ! finished "$KEEP/$folder/log.jsonl" || { [ $wanted = 1 ] && [ ! -f "$OUT/$folder/ckpt_best.pt" ]; }; then
        if ! { finished "$OUT/$folder/log.jsonl" && [ -f "$OUT/$folder/ckpt_best.pt" ]; }; then
            [ -f "$OUT/$folder/ckpt_last.pt" ] && start=--init_from=resume
            mkdir -p "$OUT/$folder"
            $PYTHON train.py "config/${arm}_shakespeare_bytes.py" $RECIPE $DEVICE_FLAGS $TRAIN_FLAGS --seed="$seed" \
                $start --overwrite=True --out_dir="$OUT/$folder" > "$OUT/$folder.txt" 2>&1 ||
                { touch "$OUT/$folder.failed"; run_failed "$folder" "$OUT/$folder.txt"; return 1; }
        fi
        # a run trained again for an evaluation (a clone without checkpoints) keeps the recorded log beside its own
        if finished "$KEEP/$folder/log.jsonl"; then mkdir -p "$KEEP/$folder"
            cp "$OUT/$folder/log.jsonl" "$KEEP/$folder/log_retrained.jsonl"
        else keep "$folder"; fi
        echo "done: $folder"
    fi
    touch "$OUT/$folder.done"
}
evaluate() {  # evaluate SEED FOLDER: once every run it reads has ended (they are queued before it), unless recorded
    local seed=$1 folder=$2 file arm arms command
    read -r _ file arms < <(evaluations "$seed" | grep "^$folder ")
    [ -f "$KEEP/$folder/$file" ] && return 0
    for arm in $arms; do
        until [ -f "$OUT/$(folder_of "$arm" "$seed").done" ]; do
            [ -f "$OUT/$(folder_of "$arm" "$seed").failed" ] && { echo "skipped: $folder (needs $arm)" >&2; return 1; }
            sleep 5
        done
    done
    local common="--progress=False --out_dir=$OUT/$folder"
    case $folder in
        table7/ppl-*)
            local data=${folder#table7/ppl-} future=invisible
            [[ $data == mask-* ]] && { future=mask; data=${data#mask-}; }
            command="eval_ppl.py config/eval_ppl_${data%-*}_bytes.py --max_tokens=6000 --bert_future=$future $common \
                     $DEVICE_FLAGS --overwrite=True $(ckpts "$seed" $arms)" ;;
        table7/maskloss-*)
            command="theory.py maskloss $(ckpts "$seed" $arms) \
                     --dataset=shakespeare_bytes $common" ;;
        text/linprobe-*)
            command="eval_glue.py config/linprobe_glue_offline.py $(ckpts "$seed" ar dar) $common \
                     $DEVICE_FLAGS --overwrite=True" ;;
        text/finetune-*)
            command="eval_glue.py config/glue_offline.py $(ckpts "$seed" $arms) --epochs=2 --learning_rate=1e-3 \
                     --seeds=0 $common $DEVICE_FLAGS --overwrite=True" ;;
        fig2/*|fig2-cosine/*|fig2-centred/*)
            local variant=""
            case $folder in
                fig2-cosine/*) variant="--cosine=True" ;;
                fig2-centred/*) variant="--cosine=True --centred=True" ;;
            esac
            command="theory.py connectivity $variant $(ckpts "$seed" ar mlm15) \
                     --dataset=shakespeare_bytes $common" ;;
        bound/elbo-*)
            command="eval_ppl.py config/eval_ppl_shakespeare_bytes.py --reading=elbo $(ckpts "$seed" vm_2s mdlm_2s) \
                     --names=vm_2s --names=mdlm_2s --max_tokens=32000 --baseline_dataset='' \
                     $common $DEVICE_FLAGS --overwrite=True" ;;
    esac
    mkdir -p "$(dirname "$OUT/$folder")"
    # shellcheck disable=SC2086
    eval "$PYTHON $command" > "$OUT/$folder.txt" 2>&1 || { run_failed "$folder" "$OUT/$folder.txt"; return 1; }
    keep "$folder"
    echo "done: $folder"
}
export -f train evaluate evaluations folder_of ckpts finished keep
export PYTHON OUT KEEP STEPS RECIPE TABLE7_ARMS DEVICE_FLAGS TRAIN_FLAGS
jobs=()
queue_runs() { local run; for run in $RUNS; do jobs+=("train ${run#*/} $1"); done; }
queue_evaluations() { local folder; for folder in $(evaluations "$1" | cut -d' ' -f1); do
    jobs+=("evaluate $1 $folder"); done; }
# a seed's evaluations queue after the next seed's runs, so they find their runs ended and no core waits on them;
# a stop leaves the earlier seeds whole
previous=""
for seed in $SEEDS; do
    queue_runs "$seed"
    [ -z "$previous" ] || queue_evaluations "$previous"
    previous=$seed
done
queue_evaluations "$previous"
status=0
printf '%s\n' "${jobs[@]}" | xargs -P "$JOBS" -L 1 bash -c '"$0" "$1" "$2"' || status=$?

$PYTHON -m experiments.summarize "$KEEP" "$RES" "$SEEDS" "$STEPS" "" "" "" bytes experiments/reproduce_rope.sh \
    > /dev/null
echo "record in $KEEP, tables in $RES/tables.md"
exit $status
