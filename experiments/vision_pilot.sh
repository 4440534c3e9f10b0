#!/usr/bin/env bash
# Pilot, exploratory (not registered, never a verdict): is there a probe under which pretrained features beat the raw
# pixels at this scale? The vision record's probes (experiments/vision/) sit below the linear probe on the pixels
# themselves. Here ar (two-stream) and mae 0.75, pretrained exactly as the record's arms (config/*_fmnist.py, 1000
# steps), on seeds outside the registered 1337-1341, each probed by config/linprobe_fmnist.py (SGD, 90 epochs, the
# run's seed) under the variants the paper's protocols allow:
#   mean          the record's protocol: the last block, mean over the patch rows, the pretraining mask kept
#   concat        every patch row of the last block side by side (16 x 128 features) instead of their mean
#   mid           block 2 of 4, mean-pooled
#   mid-concat    block 2 of 4, every patch row side by side
#   nomask        ar only: encoded with no mask (bidirectional) instead of its causal pretraining mask
# beside the pixel probe of the same seeds, and ar at initialisation (ARMS's "random": a 1-step run of ar gives the
# checkpoint, --ckpt=random:... its weights before training; probed by mean and concat only), the control that says
# whether a variant's gain is pretraining's or the wider probe's. More pretraining steps, and the one-stream encoder
# (ar1s), as ARMS / STEPS allow: STEPS=3000 trains the same recipe three times as long (its own cosine), ARMS="ar1s"
# adds one-stream ar.
# $ bash experiments/vision_pilot.sh   (resumable; two jobs at a time; then experiments/vision_pilot.py's table)
set -euo pipefail
cd "$(dirname "$0")/.."
source experiments/runs.sh  # check_env, run_failed, image_config, image_first_step
PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=1
OUT=${OUT:-out/vision-pilot}
RES=${RES:-experiments/vision-pilot}
SEEDS=${SEEDS:-"2001 2002 2003"}
ARMS=${ARMS:-"ar mae75 random"}
STEPS=${STEPS:-1000}
JOBS=${JOBS:-2}
PILOT_PROTOCOLS="mean concat mid mid-concat nomask"
PROTOCOLS=${PROTOCOLS:-$PILOT_PROTOCOLS}
REGISTERED_ARMS="ar ar1s mae75 random"  # the arms job() knows
check_env PYTHON OUT RES SEEDS ARMS STEPS JOBS PROTOCOLS
export PYTHON OUT RES STEPS PROTOCOLS
[ -f data/fmnist/val.npz ] || $PYTHON data/fmnist/prepare.py > /dev/null  # needs apt-get install dataset-fashion-mnist

flags() {  # the probe variant's flags
    case $1 in mean) echo "" ;; concat) echo "--pooling=concat" ;; mid) echo "--layer=2" ;;
        mid-concat) echo "--layer=2 --pooling=concat" ;; nomask) echo "--keep_mask=False" ;; esac
}
job() {  # job ARM SEED: pretrain (unless recorded), then each probe the record lacks; ARM=pixels: the pixel probe
    local arm=$1 seed=$2 name=$1-$STEPS protocol ckpt
    [ "$arm" = pixels ] && name=pixels
    [ "$arm" = random ] && name=random-0  # no pretraining step
    local dir=$OUT/$name/$seed keep=$RES/runs/$name/$seed
    mkdir -p "$dir" "$keep"
    if [ "$arm" = pixels ]; then
        [ -f "$keep/linprobe.csv" ] || {
            $PYTHON eval_vision.py config/linprobe_fmnist.py --ckpt=pixels --dataset=fmnist --seed="$seed" \
                --out_dir="$dir" --overwrite=True --progress=False > "$dir/linprobe.txt" 2>&1 ||
                { run_failed "pixels $seed" "$dir/linprobe.txt"; return 1; }
            cp "$dir/linprobe.csv" "$keep/linprobe.csv"; }
        echo "done: pixels $seed"; return 0
    fi
    for protocol in $PROTOCOLS; do
        [ "$protocol" != nomask ] || [ "$arm" != mae75 ] || continue  # mae encodes unmasked already
        [ "$arm" != random ] || [ "$protocol" = mean ] || [ "$protocol" = concat ] || continue
        [ -f "$keep/linprobe-$protocol.csv" ] && continue
        ckpt=$dir/ckpt_best.pt
        if [ "$arm" = random ]; then
            ckpt=random:$dir/ckpt_last.pt
            [ -f "$dir/ckpt_last.pt" ] || image_first_step ar "$seed" "$dir" || return 1
        elif [ ! -f "$dir/ckpt_best.pt" ]; then
            # shellcheck disable=SC2046
            $PYTHON train.py $(image_config "$arm") --max_iters="$STEPS" --lr_decay_iters="$STEPS" --progress=False \
                --seed="$seed" --overwrite=True --out_dir="$dir" > "$dir.txt" 2>&1 ||
                { run_failed "$arm $seed training" "$dir.txt"; return 1; }
            cp "$dir/log.jsonl" "$keep/log.jsonl"
        fi
        # shellcheck disable=SC2046
        $PYTHON eval_vision.py config/linprobe_fmnist.py $(flags "$protocol") --seed="$seed" --names="$arm" \
            --ckpt="$ckpt" --out_dir="$dir/$protocol" --overwrite=True --progress=False \
            > "$dir/$protocol.txt" 2>&1 || { run_failed "$arm $seed $protocol" "$dir/$protocol.txt"; return 1; }
        cp "$dir/$protocol/linprobe.csv" "$keep/linprobe-$protocol.csv"
    done
    echo "done: $arm $seed"
}
export -f job flags
jobs=()
for seed in $SEEDS; do
    for arm in $ARMS pixels; do jobs+=("$arm $seed"); done
done
status=0
printf '%s\n' "${jobs[@]}" | xargs -P "$JOBS" -L 1 bash -c 'job "$0" "$1"' || status=$?
$PYTHON -m experiments.vision_pilot "$RES"
exit $status
