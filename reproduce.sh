#!/usr/bin/env bash
# Reproduce the paper's comparisons at CPU scale, with seeds, on the offline corpora (issue: "Reproduce the
# paper's claims"). Every number and plot of the README's reproduction tables comes from this script.
# Covered so far: Table 7 / Fig. 3 (mlm 0.15 vs mlm 0.3 vs vm [0.15, 0.3], perplexity in and out of domain) and
# the Thm 4.2 toy spectra. Usage: bash reproduce.sh [table7|toy|all]   (outputs under out/repro/)
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python}
SEEDS=${SEEDS:-"1337 1338 1339"}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# one recipe for every arm (no arm is tuned alone): 2 layers x 64, sequences of 64, 1500 steps
TINY="--n_layer=2 --n_head=2 --n_embd=64 --block_size=64 --batch_size=8 --max_iters=1500 --lr_decay_iters=1500
      --warmup_iters=100 --learning_rate=3e-3 --eval_interval=500 --eval_iters=4 --progress=False"

table7() {
  $PYTHON data/shakespeare/prepare.py >/dev/null
  $PYTHON data/wikipedia/prepare.py >/dev/null
  for seed in $SEEDS; do
    for arm in mlm15 mlm30 vm; do  # two arms at a time on the two cores
      $PYTHON train.py config/${arm}_shakespeare.py $TINY --seed=$seed --out_dir=out/repro/table7/$arm-$seed &
      [ "$arm" = mlm30 ] && wait
    done
    wait
    for data in shakespeare wikipedia; do
      $PYTHON eval_ppl.py config/eval_ppl_$data.py --max_tokens=6000 --progress=False \
        --out_dir=out/repro/table7/ppl-$data-$seed \
        --ckpt=out/repro/table7/mlm15-$seed/ckpt_best.pt --ckpt=out/repro/table7/mlm30-$seed/ckpt_best.pt \
        --ckpt=out/repro/table7/vm-$seed/ckpt_best.pt >/dev/null
    done
  done
  $PYTHON - "$SEEDS" <<'PY'
import json, sys
import numpy as np
from data.plot import line_plot
seeds = sys.argv[1].split()
rows = []
for data in ('shakespeare', 'wikipedia'):
    runs = [json.load(open(f'out/repro/table7/ppl-{data}-{s}/summary.json'))['checkpoints'] for s in seeds]
    names = [c['name'].split('/')[-1].rsplit('-', 1)[0] for c in runs[0]]
    curves = {}
    for i, name in enumerate(names):
        ppl = np.array([run[i]['ppl'] for run in runs])
        short = np.array([np.exp(sum(b['nll_sum'] for b in run[i]['buckets'][:4]) /
                                 sum(b['targets'] for b in run[i]['buckets'][:4])) for run in runs])
        rows.append(f"| {data} | {name} | {ppl.mean():.1f} ± {ppl.std(ddof=1):.1f} | {short.mean():.1f} ± {short.std(ddof=1):.1f} |")
        ks = [b['k_first'] + 1 for b in runs[0][i]['buckets']]
        curves[name] = (ks, [float(np.mean([run[i]['buckets'][j]['ppl'] for run in runs])) for j in range(len(ks))])
    line_plot(f'out/repro/table7/ppl_by_k_{data}.png', curves, title=f'Fig. 3: ppl by conditioning length, {data} '
              f'(mean of {len(seeds)} seeds)', xlabel='k+1 (bucket start)', ylabel='ppl', logx=True, logy=True)
table = ["| data | model | ppl (mean ± std) | ppl at k < 8 |", "|---|---|---|---|"] + rows
open('out/repro/table7/table7.md', 'w').write('\n'.join(table) + '\n')
print('\n'.join(table))
PY
}

toy() {
  $PYTHON theory.py toy --r 2 --s 6 --T 2 --out_dir out/repro/toy
  $PYTHON theory.py tails --r 2 --s 6 --T 2 --out_dir out/repro/toy
}

case "${1:-all}" in
  table7) table7 ;;
  toy) toy ;;
  all) toy; table7 ;;
  *) echo "usage: bash reproduce.sh [table7|toy|all]" >&2; exit 2 ;;
esac
