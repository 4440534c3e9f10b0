#!/usr/bin/env bash
# Reproduce the paper's comparisons at CPU scale, with seeds, on the offline corpora. Every number and plot of the
# README's "Reproduction" section comes from this script: runs go to $OUT (default out/repro/), tables and plots
# to $RES (default results/repro/), and each finished job's record (its logs and evaluations, no checkpoint) to
# $KEEP (default $RES/runs), which is committed: the tables are drawn from the record, and a fresh clone skips every
# recorded evaluation and trains a run again only when an evaluation still to do reads its checkpoint.
#   toy      Thm 4.2 toy spectra (exact, seconds)
#   table7   Table 7 / Fig. 3: mlm 0.15 vs mlm 0.3 vs vm [0.15, 0.3], perplexity in and out of domain
#            (bash reproduce.sh table7 4000: the same with 4000 steps, the README's longer budget)
#   table2   Table 2: ar vs dar t = 2 on the offline sentence suite, linear probe and fine-tune
#   fig2     Fig. 2: connectivity of an ar and an mlm 0.15 model (the table2 / table7 checkpoints)
#   vision   Tables 3, 8, 9 on Fashion-MNIST: ar vs dar t = 2..4 (probe, fine-tune); mae 0.75 / 0.5 / vm (recon)
#   summary  the tables (mean ± std over seeds, paired differences) and plots, from whatever has been run
# Usage: bash reproduce.sh [toy|table7 [steps]|table2|fig2|vision|summary|all] (all, at byte level: table7, table2,
# fig2, summary). A run with a checkpoint is resumed (a finished one returns at once) and a written evaluation is
# kept, so an interrupted reproduce.sh picks up where it stopped. Two jobs at a time (the machine has 2 cores), each as
# soon as the runs it reads have ended (bash >= 5.1).
#
# TOKENS=bytes bash reproduce.sh table7|table2|fig2|summary: the text comparisons again at byte level (issue 15), where
# the models learn context (config/*_shakespeare_bytes.py; runs in out/repro-bytes, tables in results/repro-bytes;
# 5 seeds; Table 7 also in two-stream form). Hypotheses, written down before any byte-level run:
#   B1 (Table 7): vm [0.15, 0.3] has a lower prefix perplexity than mlm 0.15 and than mlm 0.3, on the held-out plays
#      and on Wikipedia, one-stream and two-stream, on every seed in domain.
#   B2 (Fig. 3): every masked model's perplexity is highest at the shortest prefixes, and vm's gain is largest there.
#   B3 (Table 2): dar t = 2 is above ar on the offline suite's average, linear probe and fine-tune.
#   B4 (Fig. 2): mlm 0.15's cosine connectivity is above ar's at the last kept rank, on every seed.
# Budget (results/bytes-curves/, seed 1337, 1500 steps): ar's validation loss flattens by ~1200 steps (1.77 -> 1.70
# from 1000 to 1500); vm's masked loss is still falling at 1500 (2.94 -> 2.76), so every arm gets BYTE_STEPS=3000,
# the same for all: 23 (ar) to 42 (dar) minutes a run on one core, two side by side (measured, seed 1337), about
# 10 hours in all.
set -euo pipefail
[ "${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}" -ge 51 ] || { echo "reproduce.sh needs bash >= 5.1 (wait -p)" >&2; exit 2; }
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
TOKENS=${TOKENS:-gpt2}
if [ "$TOKENS" = bytes ]; then
  SEEDS=${SEEDS:-"1337 1338 1339 1340 1341"}
  OUT=${OUT:-out/repro-bytes}; RES=${RES:-results/repro-bytes}
  BYTE_STEPS=${BYTE_STEPS:-3000}
  # the configs' own recipe (config/shakespeare_bytes.py) at the budget above
  # a checkpoint every 500 steps, so a session that ends mid-run loses at most 500 steps of it. Eager: compiled
  # (inductor's CPU backend) steps were no faster at one thread (0.44-0.50 s against 0.45-0.48, 2026-11-23)
  RECIPE="--max_iters=$BYTE_STEPS --lr_decay_iters=$BYTE_STEPS --progress=False"
  CKPT_EVERY=500; CORPUS=_bytes; TABLE7_ARMS="mlm15 mlm30 vm mlm15_2s mlm30_2s vm_2s"; DEFAULT_STEPS=$BYTE_STEPS
  # the GPT-2 BPE reproduction's record, where it exists, as a second column of the paired differences
  GPT2_OUT=${GPT2_OUT:-results/repro/runs}; GPT2_SEEDS=${GPT2_SEEDS:-"1337 1338 1339"}; GPT2_STEPS=1500
  [ -d "$GPT2_OUT" ] || GPT2_OUT=""
elif [ "$TOKENS" = gpt2 ]; then
  SEEDS=${SEEDS:-"1337 1338 1339"}
  OUT=${OUT:-out/repro}          # runs
  RES=${RES:-results/repro}      # tables and plots
  # one text recipe for every arm (no arm is tuned alone): 2 layers x 64, sequences of 64, 1500 steps of 8
  RECIPE="--n_layer=2 --n_head=2 --n_embd=64 --block_size=64 --batch_size=8 --max_iters=1500 --lr_decay_iters=1500 \
          --warmup_iters=100 --learning_rate=3e-3 --eval_interval=500 --eval_iters=4 --progress=False"
  CKPT_EVERY=""; GPT2_OUT=""; GPT2_SEEDS=""; GPT2_STEPS=""; CORPUS=""; TABLE7_ARMS="mlm15 mlm30 vm"; DEFAULT_STEPS=1500
else
  echo "reproduce.sh: TOKENS must be gpt2 or bytes, got $TOKENS" >&2; exit 2
fi
TOKENIZER_FLAG=""; [ "$TOKENS" = bytes ] && TOKENIZER_FLAG=--tokenizer=bytes
KEEP=${KEEP:-$RES/runs}

train() {  # train <out_dir> <config and overrides...>: resumed from its last checkpoint when there is one (a finished
  # run resumed returns at once; a run stopped by a signal wrote its plot too, so only train.py knows which it is)
  local dir=$1; shift
  local start=--init_from=scratch
  [ -f $dir/ckpt_last.pt ] && start=--init_from=resume
  $PYTHON train.py "$@" $start --out_dir=$dir >/dev/null
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
    # both readings of a BERT prefix (issue 13): the positions after the target left out (ppl-*) or [MASK] (ppl-mask-*)
    for data in shakespeare wikipedia; do
      for future in invisible mask; do
        name=ppl-$data-$seed
        [ $future = mask ] && name=ppl-mask-$data-$seed
        kept $dir/$name/summary.json ||
          queue $dir/$name "$(printf -- "$dir/%s-$seed " $TABLE7_ARMS)" \
                "$PYTHON eval_ppl.py config/eval_ppl_$data$CORPUS.py --max_tokens=6000 --progress=False \
                 --bert_future=$future --out_dir=$dir/$name $(printf -- "--ckpt=$dir/%s-$seed/ckpt_best.pt " \
                 $TABLE7_ARMS) >/dev/null"
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
            --out_dir=$text/linprobe-$seed >/dev/null"
    for arm in ar dar; do
      kept $text/finetune-$arm-$seed/glue_finetune.json ||
        queue $text/finetune-$arm-$seed $text/$arm-$seed "$PYTHON eval_glue.py config/glue_offline.py \
              --ckpt=$text/$arm-$seed/ckpt_best.pt --epochs=2 --learning_rate=1e-3 --seeds=0 --progress=False \
              --out_dir=$text/finetune-$arm-$seed >/dev/null"
    done
  done
}

fig2() {  # 8000 held-out windows, top 1e5 pairs (App. B.2); the table2 ar and table7 mlm 0.15 checkpoints
  local seed variant flag dir
  for seed in $SEEDS; do
    # raw: App. B.2's inner products; cosine: the same with the feature norm taken out
    for variant in raw cosine; do
      flag="" dir=fig2
      if [ $variant = cosine ]; then flag=--cosine=True; dir=fig2-cosine; fi
      kept $OUT/$dir/$seed/connectivity.csv ||
        queue $OUT/$dir/$seed "$OUT/text/ar-$seed $OUT/table7/mlm15-$seed" "$PYTHON theory.py connectivity \
              --ckpt=$OUT/text/ar-$seed/ckpt_best.pt --ckpt=$OUT/table7/mlm15-$seed/ckpt_best.pt \
              --dataset=shakespeare$CORPUS $flag --progress=False --out_dir=$OUT/$dir/$seed >/dev/null"
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
    local ckpt="--ckpt=$vision/%s-$seed/ckpt_best.pt" common="--progress=False --seed=$seed"
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
  $PYTHON - $KEEP $RES "$SEEDS" $DEFAULT_STEPS "$GPT2_OUT" "$GPT2_SEEDS" "$GPT2_STEPS" $TOKENS <<'PY'
import csv, glob, json, os, shutil, sys
import numpy as np
from evals.plot import line_plot, log_ranks
out, res, seeds, default_steps = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
gpt2_out, gpt2_seeds, gpt2_steps = sys.argv[5], sys.argv[6].split(), sys.argv[7]
byte_level = sys.argv[8] == 'bytes'  # the hypotheses B1-B4 at the top of this file are the byte-level runs'
os.makedirs(res, exist_ok=True)
md = [f"Seeds {', '.join(seeds)}; mean ± sample std over seeds. Verdict on a paired difference: 'yes' = the mean "
      "goes the paper's way and every seed agrees, 'weak' = the mean does but some seed does not, 'no' = the mean "
      "goes the other way.", ""]

def ms(values, fmt='.2f'):
    values = np.asarray(values, float)
    return f"{values.mean():{fmt}} ± {values.std(ddof=1) if len(values) > 1 else 0:{fmt}}"

def verdict(diffs, sign):  # sign = +1 when the paper says the difference should be positive
    diffs = sign * np.asarray(diffs, float)
    return 'no' if diffs.mean() <= 0 else 'yes' if (diffs > 0).all() else 'weak'

def diff_cell(base, other, sign, fmt='.2f'):  # other - base, paired by seed, with its verdict
    diffs = np.subtract(other, base)
    return f"{ms(diffs, fmt)} ({verdict(diffs, sign)})"

hypotheses = []  # (name, comparison, paired differences, sign, the verdict it needs, format), tested at the end

def hypothesis(name, comparison, diffs, sign, need='yes', fmt='.3f'):  # need 'weak': the mean alone ('yes': every seed too)
    # judged at the precision shown: a difference that prints as 0 is not the paper's way (nor float noise)
    hypotheses.append((name, comparison, np.round(np.asarray(diffs, float), int(fmt[1:-1])), sign, need, fmt))

def diff_row(label, base, other, sign, fmt='.2f'):
    diffs = np.subtract(other, base)
    return f"| {label} | {ms(diffs, fmt)} | {verdict(diffs, sign)} |"

gpt2_header = [f"GPT-2 BPE, {gpt2_steps} steps ({len(gpt2_seeds)} seeds)"] if gpt2_out else []

def over(seeds):  # a plot title's last words
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"mean of {len(seeds)} seeds"

def table(title, header, rows):
    md.extend([f"### {title}", "", '| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)] + rows + [""])

def seed_of(name):
    return name.rstrip('/').split('/')[-1].rsplit('-', 1)

# Thm 4.2 toy: the theorem's own currency, for the side-by-side table at the end
tails = {}
if os.path.exists(f'{out}/toy/toy_tails_r2_s6_T2.csv'):
    tails = {r['objective']: float(r['sum_sigma4_beyond_r']) for r in csv.DictReader(open(f'{out}/toy/toy_tails_r2_s6_T2.csv'))}
    shutil.copy(f'{out}/toy/toy_spectra_r2_s6_T2.png', res); shutil.copy(f'{out}/toy/toy_spectra_r2_s6_T2.csv', res)

# Budgets (issue 15: train each arm until its validation loss flattens): validation loss by step, mean over seeds
def budget_check(title, run_dirs, plot, steps, floor=None):  # run_dirs: {arm: [its run directory, one per seed]}
    # floor: the unigram model's loss in nats; a run that ends within 0.1 of it has not started to use context (at
    # byte level an arm can stay there for its whole budget on one seed and not on another)
    curves, rows = {}, []
    for arm, dirs in run_dirs.items():
        logs = [f'{d}/log.jsonl' for d in dirs]
        if not all(os.path.exists(p) for p in logs):
            continue
        by_iter = [{r['iter']: r['val_loss'] for r in map(json.loads, open(p))} for p in logs]
        if not all(max(run) == int(steps) for run in by_iter):  # every seed's run has finished its budget
            continue
        iters = sorted(set.intersection(*map(set, by_iter)))
        loss = np.array([[run[i] for i in iters] for run in by_iter])
        curves[arm] = (iters, loss.mean(axis=0))
        change = [ms(loss[:, -1] - loss[:, iters.index(iters[-1] - back)], '.3f') if iters[-1] - back in iters else '–'
                  for back in (1000, 500)]
        # the first evaluation below the plateau, per seed: how long each run spent before it used context
        left = ['never' if (loss[k] > floor - 0.1).all() else str(iters[int(np.argmax(loss[k] <= floor - 0.1))])
                for k in range(len(dirs))] if floor is not None else []
        plateau = '' if floor is None else f" {(loss[:, -1] > floor - 0.1).sum()} of {len(dirs)} | {' / '.join(left)} |"
        rows.append(f"| {arm} | {ms(loss[:, -1], '.3f')} | {change[0]} | {change[1]} |{plateau}")
    if rows:
        line_plot(plot, curves, title=f'{title} ({over(seeds)})', xlabel='step', ylabel='validation loss')
        table(title, ["model", "validation loss at the end", "change over the last 1000 steps", "over the last 500"]
              + ([f"seeds on the unigram plateau ({floor:.2f} nats) at the end",
                  f"step it left the plateau, seed {' / '.join(seeds)}"] if floor is not None else []), rows)

# Table 7 / Fig. 3, one table per training budget that has been run
def short_ppl(run):  # prefixes k < 8: the first 4 buckets
    return np.exp(sum(b['nll_sum'] for b in run['buckets'][:4]) / sum(b['targets'] for b in run['buckets'][:4]))

def table7_runs(run_dir, seeds, data, reading='ppl'):  # {model: [its summary.json row, one per seed]}, or None
    paths = [f'{run_dir}/{reading}-{data}-{s}/summary.json' for s in seeds]
    if not all(os.path.exists(p) for p in paths):
        return None
    runs = [json.load(open(p))['checkpoints'] for p in paths]
    return {seed_of(os.path.dirname(c['name']) or c['name'])[0]: [run[i] for run in runs] for i, c in enumerate(runs[0])}

gpt2_t7 = {d: table7_runs(f'{gpt2_out}/table7', gpt2_seeds, d) if gpt2_out else None for d in ('shakespeare', 'wikipedia')}
for run_dir in sorted(glob.glob(f'{out}/table7*'), key=lambda d: (len(d), d)):
    suffix = run_dir.split('table7')[-1]
    steps = suffix.lstrip('-') or default_steps
    runs7 = {d: table7_runs(run_dir, seeds, d) for d in ('shakespeare', 'wikipedia')}
    if None in runs7.values():
        continue
    # the [MASK]-after-target reading (eval_ppl --bert_future=mask) as extra columns, once every seed has it
    mask7 = {d: table7_runs(run_dir, seeds, d, 'ppl-mask') for d in ('shakespeare', 'wikipedia')}
    masked_reading = None not in mask7.values()
    rows, ppl7, short7 = [], {}, {}
    for data, by_model in runs7.items():
        curves = {}
        for name, runs in by_model.items():
            ppl7[data, name] = [run['ppl'] for run in runs]
            short7[data, name] = [short_ppl(run) for run in runs]
            row = f"| {data} | {name} | {ms(ppl7[data, name], '.1f')} | {ms(short7[data, name], '.1f')} |"
            if masked_reading:
                mask_runs = mask7[data][name]
                row += (f" {ms([run['ppl'] for run in mask_runs], '.1f')} |"
                        f" {ms([short_ppl(run) for run in mask_runs], '.1f')} |")
            rows.append(row)
            ks = [b['k_first'] + 1 for b in runs[0]['buckets']]
            curves[name] = (ks, [float(np.mean([run['buckets'][j]['ppl'] for run in runs])) for j in range(len(ks))])
        line_plot(f'{res}/fig3_ppl_by_k_{data}{suffix}.png', curves, title=f'Fig. 3: ppl by conditioning length, '
                  f'{data}, {steps} steps ({over(seeds)})', xlabel='k+1 (bucket start)', ylabel='ppl',
                  logx=True, logy=True)
    header = ["data", "model", "ppl", "ppl at k < 8"]
    if masked_reading:
        header += ["ppl, [MASK] after target", "at k < 8, [MASK] after target"]
    table(f"Table 7 / Fig. 3: perplexity of masked models, {steps} steps", header, rows)
    unigram = ppl7.get(('shakespeare', '(unigram)'))  # eval_ppl's floor row, in ppl; its loss is the plateau
    budget_check(f"Table 7, {steps} steps: validation loss by step (nats per masked target)",
                 {m: [f'{run_dir}/{m}-{s}' for s in seeds] for m in runs7['shakespeare'] if not m.startswith('(')},
                 f'{res}/table7_val_loss{suffix}.png', steps,
                 floor=None if unigram is None else np.log(np.mean(unigram)))
    pairs = [(m, 'vm') for m in ('mlm15', 'mlm30')] + [(m, 'vm_2s') for m in ('mlm15_2s', 'mlm30_2s')]
    for (d, m), v in ((dm, v) for dm in ppl7 for m, v in pairs if dm[1] == m) if suffix == '' else ():
        # B1: every seed in domain, the mean on Wikipedia; B2: a model's k < 8 perplexity above its overall one,
        # and vm's gain (a ratio of perplexities, so the larger scale at k < 8 does not count) larger at k < 8
        hypothesis('B1', f'{d}: {v} below {m}', np.subtract(ppl7[d, v], ppl7[d, m]), -1,
                   'yes' if d == 'shakespeare' else 'weak', '.1f')
        if d == 'shakespeare':
            hypothesis('B2', f'{d}: {v} gains more over {m} at k < 8 (log ppl ratio)',
                       np.log(np.multiply(short7[d, m], ppl7[d, v]) / np.multiply(short7[d, v], ppl7[d, m])), 1)
    for name in [m for d, m in ppl7 if d == 'shakespeare' and not m.startswith('(')] if suffix == '' else ():
        hypothesis('B2', f'shakespeare: {name} highest at k < 8 (log ppl)',
                   np.log(short7['shakespeare', name]) - np.log(ppl7['shakespeare', name]), 1)
    def gpt2_cell(d, m, v):  # the same one-stream difference in the GPT-2 BPE reproduction, '–' where it was not run
        runs = gpt2_t7[d]
        if runs is None or m not in runs or v not in runs:
            return '–'
        return diff_cell([r['ppl'] for r in runs[m]], [r['ppl'] for r in runs[v]], -1, '.1f')
    table(f"Table 7, {steps} steps: paired differences (paper: vm below both fixed ratios)",
          ["difference", "ppl", "paper's way?", "at k < 8"] + gpt2_header,
          [diff_row(f"{d}: {v} - {m}", ppl7[d, m], ppl7[d, v], -1, '.1f')
           + f" {diff_cell(short7[d, m], short7[d, v], -1, '.1f')} |"
           + (f" {gpt2_cell(d, m, v)} |" if gpt2_out else '')
           for d in ('shakespeare', 'wikipedia') for m, v in pairs if (d, m) in ppl7 and (d, v) in ppl7])
    # Thm 4.3 measured (theory.py maskloss): masked loss at fixed mask ratios, inside and outside the training ranges
    paths = [f'{run_dir}/maskloss-{s}/maskloss.csv' for s in seeds]
    if all(os.path.exists(p) for p in paths):
        loss = {}  # {(arm, ratio): [nats, one per seed]}
        for path in paths:
            for r in csv.DictReader(open(path)):
                loss.setdefault((seed_of(r['series'].split()[-1])[0], float(r['mask ratio rho'])), []).append(
                    float(r['nats per masked token']))
        arms = list(dict.fromkeys(a for a, _ in loss))
        ratios = sorted({rho for _, rho in loss})
        line_plot(f'{res}/maskloss{suffix}.png', {a: (ratios, [np.mean(loss[a, rho]) for rho in ratios]) for a in arms},
                  title=f'Thm 4.3 measured: masked loss by mask ratio, {steps} steps ({over(seeds)})',
                  xlabel='mask ratio', ylabel='nats per masked token')
        rows = [f"| {a} | " + ' | '.join(ms(loss[a, rho], '.3f') for rho in ratios) + ' |' for a in arms]
        rows += [f"| {v} - {m} | " + ' | '.join(diff_cell(loss[m, rho], loss[v, rho], -1, '.3f') for rho in ratios)
                 + ' |' for m, v in pairs if m in arms and v in arms]
        table(f"Thm 4.3 measured: masked loss by mask ratio, {steps} steps (nats per masked token, held-out plays; "
              "lower is better)", ["model"] + [f"ρ = {rho:g}" for rho in ratios], rows)

# Table 2: ar vs dar on the offline suite
tasks = [('polarity', 'acc'), ('hedge', 'mcc'), ('plagiarism', 'acc'), ('lee_sts', 'pearson')]
cols = [t for t, _ in tasks] + ['avg']

def table2_scores(out, seeds, mode):  # {(arm, task): [score, one per seed]}, or None before every seed has it
    # one file per seed (linprobe-<seed>, finetune-<arm>-<seed>), or per run of all seeds (the GPT-2 runs' linprobe,
    # finetune-<arm>): each row names its checkpoint, hence its arm and seed
    files = glob.glob(f'{out}/text/{mode}*/glue_{mode}.json')
    scores = {}
    for f in files:
        for row in json.load(open(f))['summary']:
            arm, seed = seed_of(os.path.dirname(row['ckpt']))
            for task, _ in tasks:
                scores.setdefault((arm, task), {})[seed] = next(iter(row['medians'][task].values()))
            scores.setdefault((arm, 'avg'), {})[seed] = row['averages']['offline avg']
    if not scores or not all(s in v for v in scores.values() for s in seeds):
        return None
    return {k: [v[s] for s in seeds] for k, v in scores.items()}

budget_check("Table 2: validation loss by step (nats per target)",
             {a: [f'{out}/text/{a}-{s}' for s in seeds] for a in ('ar', 'dar')}, f'{res}/table2_val_loss.png', default_steps)
for mode in ('linprobe', 'finetune'):
    vals = table2_scores(out, seeds, mode)
    if vals is None:
        continue
    rows = [f"| {arm} | " + ' | '.join(ms(vals[arm, t], '.1f') for t in cols) + ' |' for arm in ('ar', 'dar')]
    rows.append("| dar - ar | " + ' | '.join(diff_cell(vals['ar', t], vals['dar', t], 1, '.1f') for t in cols) + ' |')
    hypothesis('B3', f'dar above ar, {mode} average', np.subtract(vals['dar', 'avg'], vals['ar', 'avg']), 1, 'weak', '.1f')
    gpt2 = table2_scores(gpt2_out, gpt2_seeds, mode) if gpt2_out else None
    if gpt2:
        rows.append(f"| dar - ar, {gpt2_header[0]} | " +
                    ' | '.join(diff_cell(gpt2['ar', t], gpt2['dar', t], 1, '.1f') for t in cols) + ' |')
    table(f"Table 2: ar vs dar t = 2 on the offline suite, {mode}",
          ["model"] + [f"{t} ({m})" for t, m in tasks] + ["average"], rows)

# Fig. 2: connectivity (top pairwise inner products of pooled features), raw and cosine
def connectivity(out, seeds, suffix):  # {model: {seed: {pair rank: inner product}}}, or None before every seed has it
    conn = {}
    for seed in seeds:
        path = f'{out}/fig2{suffix}/{seed}/connectivity.csv'
        if os.path.exists(path):
            for r in csv.DictReader(open(path)):
                model = 'ar' if ' ar ' in r['series'] else 'mlm15'
                conn.setdefault(model, {}).setdefault(seed, {})[int(r['pair rank'])] = float(r['inner product'])
    return conn if conn and all(len(v) == len(seeds) for v in conn.values()) else None

def last_rank_ratio(conn, seeds):  # mlm 0.15 over ar at the last kept rank, per seed
    return np.array([conn['mlm15'][s][max(conn['mlm15'][s])] / conn['ar'][s][max(conn['ar'][s])] for s in seeds])

for scale, suffix in (('raw inner products (App. B.2)', ''), ('cosine similarities', '-cosine')):
    conn = connectivity(out, seeds, suffix)
    if conn is None:
        continue
    curves, rows = {}, []
    for model, by_seed in conn.items():  # theory.py writes log-spaced ranks (an older full curve: the same ranks)
        ranks = [r for r in log_ranks(max(by_seed[seeds[0]])) if all(r in by_seed[s] for s in seeds)]
        top = np.array([[by_seed[s][r] for r in ranks] for s in seeds])
        curves[model] = (ranks, top.mean(axis=0))
        rows.append(f"| {model} | {ms(top[:, 0], '.3g')} | {ms(top[:, ranks.index(min(100, ranks[-1]))], '.3g')} | "
                    f"{ms(top[:, -1], '.3g')} |")
    line_plot(f'{res}/fig2_connectivity{suffix}.png', curves, title=f'Fig. 2: top pairs of pooled features, {scale} '
              f'({over(seeds)})', xlabel='pair rank', ylabel='inner product', logx=True)
    ratio = last_rank_ratio(conn, seeds)
    rows.append(f"| mlm15 / ar at the last kept rank | | | {ms(ratio, '.3g')} ({verdict(ratio - 1, 1)}) |")
    if suffix == '-cosine':
        hypothesis('B4', 'mlm15 / ar - 1, cosine, at the last kept rank', ratio - 1, 1)
    gpt2 = connectivity(gpt2_out, gpt2_seeds, suffix) if gpt2_out else None
    if gpt2:
        ratio = last_rank_ratio(gpt2, gpt2_seeds)
        rows.append(f"| the same ratio, {gpt2_header[0]} | | | {ms(ratio, '.3g')} ({verdict(ratio - 1, 1)}) |")
    table(f"Fig. 2: connectivity, {scale}, ar vs mlm 0.15 (paper: mlm's curve above ar's)",
          ["model", "top-1 pair", "100th pair", f"{ranks[-1]}th pair"], rows)

# Tables 3, 9 (linear probe, fine-tune) and 8 (reconstruction) on Fashion-MNIST
def vision_scores(pattern, key):
    found = {}
    for path in glob.glob(pattern):
        for r in csv.DictReader(open(path)):
            arm, seed = seed_of(r['model'])
            found.setdefault(arm, {})[seed] = float(r[key])
    return found
probe = vision_scores(f'{out}/vision/eval-*/linprobe.csv', 'val_acc')
tune = vision_scores(f'{out}/vision/ft-*/finetune.csv', 'val_acc')
arms = ['ar', 'dar2', 'dar3', 'dar4']
p = f = None  # per-arm accuracies over seeds, once every seed has been evaluated
if all(len(probe.get(a, {})) == len(seeds) and len(tune.get(a, {})) == len(seeds) for a in arms):
    p = {a: [probe[a][s] for s in seeds] for a in arms}
    f = {a: [tune[a][s] for s in seeds] for a in arms}
    rows = [f"| {a} | {ms(p[a])} | {ms(f[a])} | " + ('(baseline) | (baseline)' if a == 'ar' else
            f"{diff_cell(p['ar'], p[a], 1)} | {diff_cell(f['ar'], f[a], 1)}") + ' |' for a in arms]
    table("Tables 3 and 9: ar vs dar t = 2..4 on Fashion-MNIST (top-1 %, paper: dar above ar)",
          ["model", "linear probe", "fine-tune", "probe: minus ar", "fine-tune: minus ar"], rows)
    ts = [1, 2, 3, 4]
    line_plot(f'{res}/table9_acc_by_t.png', {'linear probe': (ts, [np.mean(p[a]) for a in arms]),
                                              'fine-tune': (ts, [np.mean(f[a]) for a in arms])},
              title=f'Table 9: Fashion-MNIST top-1 by dar t (t = 1 is ar; {over(seeds)})',
              xlabel='t', ylabel='top-1 %')
l2 = vision_scores(f'{out}/vision/eval-*/recon.csv', 'l2')
lp = vision_scores(f'{out}/vision/eval-*/recon.csv', 'lpips')
base = vision_scores(f'{out}/vision/eval-*/recon.csv', 'baseline_l2')
marms = ['mae75', 'mae50', 'vm']
if all(len(l2.get(a, {})) == len(seeds) for a in marms):
    L = {a: [l2[a][s] for s in seeds] for a in marms}
    P = {a: [lp[a][s] for s in seeds] for a in marms}
    rows = [f"| {a} | {ms(L[a], '.4f')} | {ms(P[a], '.4f')} |" for a in marms]
    rows.append(f"| mean-fill baseline | {ms([base['vm'][s] for s in seeds], '.4f')} | |")
    rows += [f"| vm - {m} | {diff_cell(L[m], L['vm'], -1, '.4f')} | {diff_cell(P[m], P['vm'], -1, '.4f')} |"
             for m in marms[:2]]
    table("Table 8: reconstruction of 25% masked patches (lower is better; paper: vm lowest)",
          ["model", "pixel L2", "ST-LPIPS"], rows)
    for path in glob.glob(f'{out}/vision/eval-{seeds[0]}/recon_*.png'):
        shutil.copy(path, res)

# the theorem's currency next to the trained models
if tails:
    rows = [f"| {label} | {tails[key]:.3f} | " + (f"{ms(p[arm])} / {ms(f[arm])}" if p else '') + ' |'
            for label, key, arm in [('ar (dar t = 1)', 'ar', 'ar')] +
            [(f'dar t = {t}', f'dar t={t}', f'dar{t}') for t in (2, 3, 4)]]
    table("Toy spectra (Thm 4.2, r = 2, s = 6, T = 2) next to the trained models: smaller tail = better connected",
          ["objective", "Σ_{j>r} σ_j⁴ (exact)", "Fashion-MNIST probe / fine-tune"], rows)
# what does and does not reproduce, tested against the hypotheses as they were written before any run
if byte_level and hypotheses:
    met = {}
    rows = []
    for name, comparison, diffs, sign, need, fmt in sorted(hypotheses, key=lambda h: h[0]):
        said = verdict(diffs, sign)
        met.setdefault(name, []).append(said == 'yes' or said == need)
        rows.append(f"| {name} | {comparison} | {ms(diffs, fmt)} | {(sign * diffs > 0).sum()} of {len(diffs)} | "
                    f"{said} | {'every seed' if need == 'yes' else 'the mean'} | {'met' if met[name][-1] else 'not met'} |")
    table("Hypotheses B1-B4 (reproduce.sh, written before any run), comparison by comparison",
          ["hypothesis", "comparison", "paired difference", "seeds the paper's way", "verdict", "needs", "met?"], rows)
    table("Hypotheses B1-B4: does it reproduce?", ["hypothesis", "comparisons met", "holds?"],
          [f"| {name} | {sum(ok)} of {len(ok)} | {'yes' if all(ok) else 'no' if not any(ok) else 'in part'} |"
           for name, ok in met.items()])
open(f'{res}/tables.md', 'w').write('\n'.join(md))
print('\n'.join(md))
PY
}

case "${1:-all}" in
  toy|summary) $1 ;;
  table2|fig2|vision) $1; run_queue ;;
  table7) table7 "${2:-$DEFAULT_STEPS}"; run_queue ;;
  # at byte level, the text comparisons only, seed by seed: a seed's jobs go ahead of the next seed's (a later seed's
  # job starts only when no job of an earlier one is ready to), so a stop leaves the earlier seeds whole
  all) if [ "$TOKENS" = bytes ]; then
         for seed in $SEEDS; do SEEDS=$seed table2; SEEDS=$seed fig2; SEEDS=$seed table7; done
       else toy; table7; table7 4000; table2; fig2; vision; fi
       run_queue; summary ;;
  *) echo "usage: bash reproduce.sh [toy|table7 [steps]|table2|fig2|vision|summary|all]" >&2; exit 2 ;;
esac
