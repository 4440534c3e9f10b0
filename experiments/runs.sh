# One training run of a registered experiment, resumable, and the data-constrained arms: sourced by the experiment
# scripts, which export them to the jobs they run two at a time (xargs -P). Reads PYTHON, OUT (checkpoints), RES (the
# record) and STEPS.
train_once() {  # train_once KEY ARG...: train.py ARG... into $OUT/KEY, its log kept as $RES/runs/KEY/log.jsonl
    local key=$1 dir=$OUT/$1 keep=$RES/runs/$1 start=--init_from=scratch
    shift
    # a log in the record that reached the budget: done; a checkpoint left by an interrupted run: resume from it
    [ -f "$keep/log.jsonl" ] && [ "$(tail -n 1 "$keep/log.jsonl" | grep -c "\"iter\": $STEPS,")" = 1 ] && return 0
    [ -f "$dir/ckpt_last.pt" ] && start=--init_from=resume
    mkdir -p "$(dirname "$dir")"
    $PYTHON train.py "$@" $start --overwrite=True --out_dir="$dir" > "$dir.txt" 2>&1 ||
        { echo "failed: $dir (see $dir.txt)" >&2; return 1; }
    mkdir -p "$keep" && cp "$dir/log.jsonl" "$keep/log.jsonl"
    echo "done: $key"
}

config() {  # config ARM: the data-constrained arm's config and how its held-out curve is read (a likelihood per byte)
    case $1 in
        ar) echo "config/ar_shakespeare_bytes.py" ;;
        dar) echo "config/dar_shakespeare_bytes.py --eval_objective=ar" ;;
        dar4) echo "config/dar_shakespeare_bytes.py --t=4 --eval_objective=ar" ;;
        ar_random) echo "config/ar_shakespeare_bytes.py --random_order=True" ;;
        mdlm) echo "config/mdlm_2s_shakespeare_bytes.py" ;;
        vm) echo "config/vm_shakespeare_bytes.py --eval_objective=mdlm" ;;
    esac
}
export -f train_once config
