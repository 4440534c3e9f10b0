#!/usr/bin/env bash
# exploratory pilot fine-tunes on a GPU: 3 pilot seeds x (ar, its random init) x 7 tasks x epochs (2, 10), 16 at a time
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
R=out/gpu-pilot/res; mkdir -p $R
job() {  # job SEED MODEL TASK EPOCHS
    local ck=out/gpu-pilot/ckpt/$1/ckpt_best.pt name=$2-$1-$3-e$4
    [ "$2" = random ] && ck=random:$ck
    python3 eval_glue.py config/glue_probing.py --ckpt=$ck --seeds=$1 --tasks=$3 --epochs=$4 --learning_rate=1e-3 \
        --device=cuda --dtype=float32 --attn_backend=sdpa --out_dir=out/gpu-pilot/o/$name --overwrite=True \
        --progress=False > $R/$name.txt 2>&1 && cp out/gpu-pilot/o/$name/glue_finetune.json $R/$name.json
}
probe() {  # probe SEED MODEL
    local ck=out/gpu-pilot/ckpt/$1/ckpt_best.pt name=$2-$1-linprobe
    [ "$2" = random ] && ck=random:$ck
    python3 eval_glue.py config/linprobe_glue_probing.py --ckpt=$ck --device=cuda --dtype=float32 \
        --attn_backend=sdpa --out_dir=out/gpu-pilot/o/$name --overwrite=True --progress=False > $R/$name.txt 2>&1 &&
        cp out/gpu-pilot/o/$name/glue_linprobe.json $R/$name.json
}
export -f job probe; export R
{ for e in 10 2; do for t in bigram_shift somo play speaker_change verse_prose wiki_bigram_shift wiki_somo; do
    for s in 2100 2101 2102; do for m in ar random; do echo "job $s $m $t $e"; done; done; done; done
  for s in 2100 2101 2102; do for m in ar random; do echo "probe $s $m"; done; done
} | xargs -P 16 -L 1 bash -c '"$0" "$1" "$2" "${3:-}" "${4:-}"'
