#!/usr/bin/env bash
# Reproduce the paper's comparisons at CPU scale, with seeds, on the offline corpora. Every number and plot of
# experiments/README.md comes from this script: runs go to $OUT (default out/repro/), tables and plots to $RES (default
# experiments/repro/), and each finished job's record (its logs and evaluations, no checkpoint) to $KEEP (default
# $RES/runs), which is committed: the tables are drawn from the record, and a fresh clone skips every recorded
# evaluation and trains a run again only when an evaluation still to do reads its checkpoint.
#   toy      Thm 4.2 toy spectra (exact, seconds)
#   table7   Table 7 / Fig. 3: mlm 0.15 vs mlm 0.3 vs vm [0.15, 0.3], perplexity in and out of domain
#            (bash experiments/reproduce.sh table7 4000: the same with 4000 steps)
#   table2   Table 2: ar vs dar t = 2 on the offline sentence suite, linear probe and fine-tune
#   fig2     Fig. 2: connectivity of an ar and an mlm 0.15 model (the table2 / table7 checkpoints): raw inner
#            products (App. B.2), cosine, and cosine of centred features (the mean feature subtracted)
#   vision   Tables 3, 8, 9 on Fashion-MNIST: ar vs dar t = 2..4 (probe, fine-tune); mae 0.75 / 0.5 / vm (recon)
#   summary  the tables (mean ± std over seeds, paired differences with a t-test and a sign test) and plots, from
#            whatever the record holds
# Usage: bash experiments/reproduce.sh [toy|table7 [steps]|table2|fig2|vision|summary|all] (all, at byte level:
# table7, table2, fig2, summary). A run with a checkpoint is resumed (a finished one returns at once) and a recorded
# evaluation is kept, so an interrupted reproduce.sh picks up where it stopped (an evaluation not in the record runs
# again with --overwrite=True, over whatever an interrupted one left in $OUT). Two jobs at a time (the machine has 2
# cores), each as soon as the runs it reads have ended (bash >= 5.1).
#
# TOKENS=bytes bash experiments/reproduce.sh table7|table2|fig2|summary: the text comparisons again at byte level,
# where the models learn context (config/*_shakespeare_bytes.py; runs in out/repro-bytes, tables in
# experiments/repro-bytes; 5 seeds; Table 7 also in two-stream form). Hypotheses, written down before any byte-level
# run (commit 9409b0e; summarize.py judges each by this text, word for word):
#   B1 (Table 7): vm [0.15, 0.3] has a lower prefix perplexity than mlm 0.15 and than mlm 0.3, on the held-out plays
#      and on Wikipedia, one-stream and two-stream, on every seed in domain.
#   B2 (Fig. 3): every masked model's perplexity is highest at the shortest prefixes, and vm's gain is largest there.
#   B3 (Table 2): dar t = 2 is above ar on the offline suite's average, linear probe and fine-tune.
#   B4 (Fig. 2): mlm 0.15's cosine connectivity is above ar's at the last kept rank, on every seed.
# Budget (experiments/bytes-curves/loss_{ar,vm}.csv, seed 1337, 1500 steps): ar's validation loss goes 1.772 -> 1.680
# from step 1000 to 1500 and is still falling at 1500 (1.692 -> 1.680 over the last 100); vm's masked validation loss
# goes 2.939 -> 2.749 over the same steps, twice ar's fall. So every arm gets BYTE_STEPS=3000, the same for all: 23
# (ar) to 42 (dar) minutes a run on one core, two side by side (measured, seed 1337), about 10 hours in all.
set -euo pipefail
[ "${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}" -ge 51 ] || { echo "reproduce.sh needs bash >= 5.1 (wait -p)" >&2; exit 2; }
cd "$(dirname "$0")/.."  # the repository root: train.py, config/, data/
source experiments/runs.sh  # check_env
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
TOKENS=${TOKENS:-gpt2}
if [ "$TOKENS" = bytes ]; then
  SEEDS=${SEEDS:-"1337 1338 1339 1340 1341"}
  OUT=${OUT:-out/repro-bytes}; RES=${RES:-experiments/repro-bytes}
  BYTE_STEPS=${BYTE_STEPS:-3000}
  # the configs' own recipe (config/shakespeare_bytes.py) at the budget above
  # a checkpoint every 500 steps, so a session that ends mid-run loses at most 500 steps of it. Eager: compiled
  # (inductor's CPU backend) steps were no faster at one thread (0.44-0.50 s against 0.45-0.48, measured 2026-11-23)
  # --rope=False: this record was made with the learned position table, before the byte recipe took rotary
  # positions (rope-pilot/), and a resumed or repeated run must train what the record holds
  RECIPE="--max_iters=$BYTE_STEPS --lr_decay_iters=$BYTE_STEPS --rope=False --progress=False"
  CKPT_EVERY=500; CORPUS=_bytes; TABLE7_ARMS="mlm15 mlm30 vm mlm15_2s mlm30_2s vm_2s"; DEFAULT_STEPS=$BYTE_STEPS
  # the GPT-2 BPE reproduction's record, where it exists, as a second column of the paired differences
  GPT2_OUT=${GPT2_OUT:-experiments/repro/runs}; GPT2_SEEDS=${GPT2_SEEDS:-"1337 1338 1339"}; GPT2_STEPS=1500
  [ -d "$GPT2_OUT" ] || GPT2_OUT=""
elif [ "$TOKENS" = gpt2 ]; then
  SEEDS=${SEEDS:-"1337 1338 1339"}
  OUT=${OUT:-out/repro}          # runs
  RES=${RES:-experiments/repro}  # tables and plots
  # one text recipe for every arm (no arm is tuned alone): 2 layers x 64, sequences of 64, 1500 steps of 8
  RECIPE="--n_layer=2 --n_head=2 --n_embd=64 --block_size=64 --batch_size=8 --max_iters=1500 --lr_decay_iters=1500 \
          --warmup_iters=100 --learning_rate=3e-3 --eval_interval=500 --eval_iters=4 --progress=False"
  CKPT_EVERY=""; GPT2_OUT=""; GPT2_SEEDS=""; GPT2_STEPS=""; CORPUS=""; TABLE7_ARMS="mlm15 mlm30 vm"; DEFAULT_STEPS=1500
else
  echo "reproduce.sh: TOKENS must be gpt2 or bytes, got $TOKENS" >&2; exit 2
fi
TOKENIZER_FLAG=""; [ "$TOKENS" = bytes ] && TOKENIZER_FLAG=--tokenizer=bytes
KEEP=${KEEP:-$RES/runs}
check_env PYTHON OMP_NUM_THREADS OUT RES KEEP SEEDS
[ "$TOKENS" = gpt2 ] || check_env BYTE_STEPS GPT2_SEEDS

train() {  # train <out_dir> <config and overrides...>: resumed from its last checkpoint when there is one (a finished
  # run resumed returns at once; a run stopped by a signal wrote its plot too, so only train.py knows which it is)
  local dir=$1; shift
  local start=--init_from=scratch
  [ -f $dir/ckpt_last.pt ] && start=--init_from=resume
  $PYTHON train.py "$@" $start --overwrite=True --out_dir=$dir >/dev/null  # overwrite: a run stopped before its first
  # checkpoint starts again
}

toy() {
  $PYTHON theory.py toy --r=2 --s=6 --T=2 --out_dir=$OUT/toy
  $PYTHON theory.py tails --r=2 --s=6 --T=2 --out_dir=$OUT/toy
  keep $OUT/toy
}

# ---- the record: what a machine that ends (and its $OUT with it) must not take along
keep() {  # keep <job name>: a finished job's files to $KEEP, all but checkpoints (MBs each) and training's loss.png
  local dir=$1; [ -d $dir ] || dir=$(dirname $dir)  # vision's eval-<seed>/linprobe: two jobs, one directory
  [ -d $dir ] || return 0
  mkdir -p $KEEP/${dir#$OUT/}
  find $dir -maxdepth 1 -type f ! -name '*.pt' ! -name '*.tmp' ! -name loss.png -exec cp {} $KEEP/${dir#$OUT/}/ \;
}
kept() { [ -f $KEEP/${1#$OUT/} ]; }  # kept <file under $OUT>: in the record

# ---- a job queue: sections queue their runs and evaluations; run_queue runs them two at a time (one per core), each
# as soon as a core is free and the jobs it reads have ended, in queue order among those ready. So no core waits on a
# comparison it has no part in (Table 2's fine-tune of ar starts while dar, twice as slow, still trains).
JOB_NAMES=(); JOB_NEEDS=(); JOB_CMDS=()
queue() {  # queue <name> "<names of the jobs it reads>" <command>: names are out_dirs; a name not queued is taken as
  # done (`reproduce.sh fig2` alone reads checkpoints an earlier call trained)
  JOB_NAMES+=("$1"); JOB_NEEDS+=("$2"); JOB_CMDS+=("$3")
}
run_queue() {  # fail if any job fails; a job whose input failed is not started
  local -A state=() name_of_pid=()
  local i need ready pid running=0 failed=()
  for i in "${!JOB_NAMES[@]}"; do state[${JOB_NAMES[$i]}]=queued; done
  for i in "${!JOB_NAMES[@]}"; do  # a recorded training run that nothing queued reads: not trained again
    kept ${JOB_NAMES[$i]}/log.jsonl && [[ " ${JOB_NEEDS[*]} " != *" ${JOB_NAMES[$i]} "* ]] &&
      state[${JOB_NAMES[$i]}]=done
  done
  while :; do
    for i in "${!JOB_NAMES[@]}"; do
      [ $running -lt 2 ] || break
      [ ${state[${JOB_NAMES[$i]}]} = queued ] || continue
      ready=1
      for need in ${JOB_NEEDS[$i]}; do
        case ${state[$need]:-done} in
          done) ;;
          failed|skipped) ready=0; state[${JOB_NAMES[$i]}]=skipped; failed+=("${JOB_NAMES[$i]} (needs $need)"); break ;;
          *) ready=0 ;;
        esac
      done
      [ $ready = 1 ] || continue
      eval "${JOB_CMDS[$i]}" & name_of_pid[$!]=${JOB_NAMES[$i]}; state[${JOB_NAMES[$i]}]=running
      running=$((running + 1))
    done
    [ $running -gt 0 ] || break
    if wait -n -p pid; then state[${name_of_pid[$pid]}]=done; keep ${name_of_pid[$pid]}
    else state[${name_of_pid[$pid]}]=failed; failed+=("${name_of_pid[$pid]}"); fi
    running=$((running - 1))
  done
  JOB_NAMES=(); JOB_NEEDS=(); JOB_CMDS=()
  [ ${#failed[@]} = 0 ] || { echo "reproduce.sh: failed: ${failed[*]}; rerun a failed one alone to see its error" >&2
                             return 1; }
}

PREPARED=" "
prepare() {  # prepare <script> [flags]: once per call of reproduce.sh (`all` queues a section per seed)
  [[ $PREPARED == *" $* |"* ]] || { $PYTHON "$@" >/dev/null; PREPARED+="$* | "; }
}

table7() {  # table7 [steps]: the default budget's runs go to $OUT/table7, any other budget to $OUT/table7-<steps>
  local steps=${1:-$DEFAULT_STEPS} dir=$OUT/table7 seed arm data future name
  [ "$steps" = $DEFAULT_STEPS ] || dir=$OUT/table7-$steps
  prepare data/shakespeare/prepare.py $TOKENIZER_FLAG
  prepare data/wikipedia/prepare.py $TOKENIZER_FLAG
  for seed in $SEEDS; do
    for arm in $TABLE7_ARMS; do
      queue $dir/$arm-$seed "" "train $dir/$arm-$seed config/${arm}_shakespeare$CORPUS.py $RECIPE --max_iters=$steps \
            --lr_decay_iters=$steps --eval_interval=${CKPT_EVERY:-$((steps / 3))} --seed=$seed"
    done
    # both readings of a one-stream BERT prefix: the positions after the target left out (ppl-*) or [MASK] (ppl-mask-*)
    for data in shakespeare wikipedia; do
      for future in invisible mask; do
        name=ppl-$data-$seed
        [ $future = mask ] && name=ppl-mask-$data-$seed
        kept $dir/$name/summary.json ||
          queue $dir/$name "$(printf -- "$dir/%s-$seed " $TABLE7_ARMS)" \
                "$PYTHON eval_ppl.py config/eval_ppl_$data$CORPUS.py --max_tokens=6000 --progress=False \
                 --bert_future=$future --out_dir=$dir/$name --overwrite=True \
                 $(printf -- "--ckpt=$dir/%s-$seed/ckpt_best.pt " $TABLE7_ARMS) >/dev/null"
      done
    done
    # Thm 4.3's misalignment measured: each masked model's loss at fixed mask ratios, in and past its training range
    kept $dir/maskloss-$seed/maskloss.csv ||
      queue $dir/maskloss-$seed "$(printf -- "$dir/%s-$seed " $TABLE7_ARMS)" "$PYTHON theory.py maskloss \
            $(printf -- "--ckpt=$dir/%s-$seed/ckpt_best.pt " $TABLE7_ARMS) --dataset=shakespeare$CORPUS \
            --progress=False --out_dir=$dir/maskloss-$seed >/dev/null"
  done
}

table2() {  # pretrain ar and dar, then probe and fine-tune each seed's pair
  prepare data/shakespeare/prepare.py $TOKENIZER_FLAG
  prepare data/glue/prepare_offline.py
  local seed arm text=$OUT/text
  for seed in $SEEDS; do
    for arm in ar dar; do
      queue $text/$arm-$seed "" "train $text/$arm-$seed config/${arm}_shakespeare$CORPUS.py $RECIPE \
            ${CKPT_EVERY:+--eval_interval=$CKPT_EVERY} --seed=$seed"
    done
    # fine-tuning: the committed recipe except 2 epochs (CPU time) and lr 1e-3 (Cramming's 4e-5 is set for a 110M
    # model; not tried on this one), one fine-tuning seed per pretraining seed; both arms alike
    kept $text/linprobe-$seed/glue_linprobe.json ||
      queue $text/linprobe-$seed "$text/ar-$seed $text/dar-$seed" "$PYTHON eval_glue.py config/linprobe_glue_offline.py \
            --ckpt=$text/ar-$seed/ckpt_best.pt --ckpt=$text/dar-$seed/ckpt_best.pt --progress=False \
            --out_dir=$text/linprobe-$seed --overwrite=True >/dev/null"
    for arm in ar dar; do
      kept $text/finetune-$arm-$seed/glue_finetune.json ||
        queue $text/finetune-$arm-$seed $text/$arm-$seed "$PYTHON eval_glue.py config/glue_offline.py \
              --ckpt=$text/$arm-$seed/ckpt_best.pt --epochs=2 --learning_rate=1e-3 --seeds=0 --progress=False \
              --out_dir=$text/finetune-$arm-$seed --overwrite=True >/dev/null"
    done
  done
}

fig2() {  # 8000 held-out windows, top 1e5 pairs (App. B.2); the table2 ar and table7 mlm 0.15 checkpoints
  local seed variant script dir ckpts
  for seed in $SEEDS; do
    ckpts="--ckpt=$OUT/text/ar-$seed/ckpt_best.pt --ckpt=$OUT/table7/mlm15-$seed/ckpt_best.pt"
    # raw: App. B.2's inner products; cosine: the same with the feature norm taken out; centred: cosine after the mean
    # feature is subtracted, so features that all point one way do not count as connected
    for variant in raw cosine centred; do
      case $variant in
        raw) script="theory.py connectivity"; dir=fig2 ;;
        cosine) script="theory.py connectivity --cosine=True"; dir=fig2-cosine ;;
        centred) script="theory.py connectivity --cosine=True --centred=True"; dir=fig2-centred ;;
      esac
      kept $OUT/$dir/$seed/connectivity.csv ||
        queue $OUT/$dir/$seed "$OUT/text/ar-$seed $OUT/table7/mlm15-$seed" "$PYTHON $script $ckpts \
              --dataset=shakespeare$CORPUS --progress=False --out_dir=$OUT/$dir/$seed >/dev/null"
    done
  done
}

# Fashion-MNIST: config/<arm>_fmnist.py as committed (4 x 128 ViT, 7 x 7 patches, 1000 steps)
VISION_ARMS="ar dar2 dar3 dar4 mae75 mae50 vm"
vision_config() {  # arm -> config file and overrides (dar t = 2..4 share config/dar_fmnist.py)
  case $1 in dar*) echo "config/dar_fmnist.py --t=${1#dar}" ;; *) echo "config/$1_fmnist.py" ;; esac
}
vision() {
  prepare data/fmnist/prepare.py
  local seed arm pair vision=$OUT/vision
  for seed in $SEEDS; do
    for arm in $VISION_ARMS; do
      queue $vision/$arm-$seed "" "train $vision/$arm-$seed $(vision_config $arm) --seed=$seed --progress=False"
    done
    local ckpt="--ckpt=$vision/%s-$seed/ckpt_best.pt" common="--progress=False --seed=$seed --overwrite=True"
    kept $vision/eval-$seed/linprobe.csv ||
      queue $vision/eval-$seed/linprobe "$(printf -- "$vision/%s-$seed " ar dar2 dar3 dar4)" "$PYTHON eval_vision.py \
            config/linprobe_fmnist.py $(printf -- "$ckpt " ar dar2 dar3 dar4) $common --out_dir=$vision/eval-$seed \
            >/dev/null"
    kept $vision/eval-$seed/recon.csv ||
      queue $vision/eval-$seed/recon "$(printf -- "$vision/%s-$seed " mae75 mae50 vm)" "$PYTHON eval_vision.py \
            config/recon_fmnist.py $(printf -- "$ckpt " mae75 mae50 vm) $common --out_dir=$vision/eval-$seed >/dev/null"
    # fine-tuning on a 15000-image subset (CPU time), the same subset and recipe for every arm
    for pair in "ar dar2" "dar3 dar4"; do
      kept $vision/ft-${pair/ /-}-$seed/finetune.csv ||
        queue $vision/ft-${pair/ /-}-$seed "$(printf -- "$vision/%s-$seed " $pair)" "$PYTHON eval_vision.py \
              config/finetune_fmnist.py $(printf -- "$ckpt " $pair) $common --train_subset=15000 \
              --out_dir=$vision/ft-${pair/ /-}-$seed >/dev/null"
    done
  done
}

summary() {  # every table: mean ± sample std over pretraining seeds; dar - ar etc. as paired differences
  [ -d $KEEP ] || { echo "reproduce.sh: no record in $KEEP: run a section first, or point KEEP at one" >&2; return 2; }
  $PYTHON -m experiments.summarize $KEEP $RES "$SEEDS" $DEFAULT_STEPS "$GPT2_OUT" "$GPT2_SEEDS" "$GPT2_STEPS" $TOKENS
}

case "${1:-all}" in
  toy|summary) $1 ;;
  table2|fig2|vision) $1; run_queue ;;
  table7) [[ ${2:-$DEFAULT_STEPS} =~ ^[1-9][0-9]*$ ]] ||
            { echo "reproduce.sh: error: table7 $2: the steps must be a whole number from 1 up" >&2; exit 2; }
          table7 "${2:-$DEFAULT_STEPS}"; run_queue ;;
  # at byte level, the text comparisons only, seed by seed: a seed's jobs go ahead of the next seed's (a later seed's
  # job starts only when no job of an earlier one is ready to), so a stop leaves the earlier seeds whole
  all) if [ "$TOKENS" = bytes ]; then
         for seed in $SEEDS; do SEEDS=$seed table2; SEEDS=$seed fig2; SEEDS=$seed table7; done
       else toy; table7; table7 4000; table2; fig2; vision; fi
       run_queue; summary ;;
  *) echo "usage: bash reproduce.sh [toy|table7 [steps]|table2|fig2|vision|summary|all]" >&2; exit 2 ;;
esac
