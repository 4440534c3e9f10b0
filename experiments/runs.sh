# Sourced by every experiment script: the checks of what it reads from its environment (and the refusal of what it
# does not), a command's output written into the record only once it has succeeded, one training run of a
# registered experiment (resumable), the data-constrained arms, and the image arms (their configs, a run, its first
# step, an evaluation: vision.sh, vision_pilot.sh, vision_concat.sh). The scripts export the functions to the jobs
# they run two at a time (xargs -P). train_once reads PYTHON, OUT (checkpoints), RES (the record) and STEPS; the
# image functions PYTHON, and DEVICE_FLAGS and TRAIN_FLAGS where the script has them; the text experiments' clocked
# jobs (timed, resumed, pretrain_once, flagged, evaluate: text_scale.sh, text_claim.sh) also OUT, RES and SUITE.

env_error() {  # env_error NAME WHAT: one line naming the variable and what it takes; nothing has run yet
    echo "${0##*/}: error: $1='${!1}' $2" >&2
    exit 2
}
refuse_unread() {  # JOBS, DEVICE_FLAGS and TRAIN_FLAGS are read by some scripts only (NAME=${NAME:-default} in the
    # script): one given to a script that does not read it is refused before anything runs, not ignored without a word
    local name readers script=experiments/${0##*/}
    [ -f "$script" ] || return 0  # runs.sh sourced by hand
    for name in JOBS DEVICE_FLAGS TRAIN_FLAGS; do
        [ -z "${!name:-}" ] || grep -qF "$name=\${$name:-" "$script" && continue
        readers=$(grep -lF "$name=\${$name:-" experiments/*.sh | xargs -n 1 basename | paste -sd ' ')
        env_error "$name" "is not read by ${0##*/}: unset it (the scripts that read it: $readers)"
    done
}
refuse_unread
# the keys every script the experiments run takes, their values checked as those scripts check them
DEVICE_CHECK='
import sys
from configurator import UsageError, configure
from devices import check_device, pick_attn_backend
flags = dict(device="auto", dtype="auto", attn_backend="auto")
try:
    configure(flags, sys.argv[1:])
    pick_attn_backend(flags["attn_backend"], check_device(flags["device"], flags["dtype"]))
except UsageError as error:
    sys.exit(str(error))
'
check_env() {  # check_env NAME...: each variable the script reads from its environment, checked before any run
    local name value word words low why
    for name in "$@"; do
        value=${!name}
        case $name in
            STEPS|BYTE_STEPS|LONG_STEPS|JOBS|NUM_SAMPLES|OMP_NUM_THREADS)  # JOBS=0: xargs -P 0, every job at once
                [[ $value =~ ^[1-9][0-9]*$ ]] || env_error "$name" "must be a whole number from 1 up" ;;
            SEEDS|GPT2_SEEDS|KS)  # each once: two jobs of one seed would write one folder
                low=0; [ "$name" = KS ] && low=1
                words=($value)
                for word in "${words[@]}"; do [[ $word =~ ^[0-9]+$ ]] && [ "$word" -ge $low ] || words=(); done
                [ ${#words[@]} -gt 0 ] && [ -z "$(printf '%s\n' "${words[@]}" | sort | uniq -d)" ] ||
                    env_error "$name" "must be whole numbers from $low up, separated by spaces, each once" ;;
            SMOKE) [[ $value =~ ^[01]$ ]] || env_error SMOKE "must be 0 or 1" ;;
            ROPE) [[ $value =~ ^(True|False)$ ]] || env_error ROPE "must be True or False" ;;
            ARMS)
                words=($value)
                for word in "${words[@]}"; do [[ " $REGISTERED_ARMS " == *" $word "* ]] || words=(); done
                [ ${#words[@]} -gt 0 ] || env_error ARMS "must name one or more of the arms $REGISTERED_ARMS" ;;
            TASKS)  # each once: two jobs of one task would write one file
                words=($value)
                for word in "${words[@]}"; do
                    [[ " $REGISTERED_TASKS " == *" $word "* ]] || words=()
                done
                [ ${#words[@]} -gt 0 ] &&
                    [ -z "$(printf '%s\n' "${words[@]}" | sort | uniq -d)" ] ||
                    env_error TASKS "must name one or more of $REGISTERED_TASKS, each once" ;;
            PROTOCOLS)
                words=($value)
                for word in "${words[@]}"; do [[ " $PILOT_PROTOCOLS " == *" $word "* ]] || words=(); done
                [ ${#words[@]} -gt 0 ] || env_error PROTOCOLS "must name one or more of $PILOT_PROTOCOLS" ;;
            TIERS)
                words=($value)
                for word in "${words[@]}"; do [[ " $REGISTERED_TIERS " == *" $word "* ]] || words=(); done
                [ ${#words[@]} -gt 0 ] || env_error TIERS "must name one or more of the tiers $REGISTERED_TIERS" ;;
            PYTHON) command -v -- "${value%% *}" > /dev/null ||
                env_error PYTHON "names no command: set it to a python that has torch (default: python)" ;;
            OUT|RES|KEEP|SCALES_RECORD) [ ! -e "$value" ] || [ -d "$value" ] || env_error "$name" "is a file, not a folder" ;;
            DEVICE_FLAGS)
                [ -z "$value" ] || why=$($PYTHON -c "$DEVICE_CHECK" $value 2>&1) ||
                    env_error DEVICE_FLAGS "takes --device=, --dtype= and --attn_backend=: $(tail -n 1 <<< "$why")" ;;
            TRAIN_FLAGS)  # train.py's keys: its --help applies them, and stops at an unknown key or a wrong type
                [ -z "$value" ] || why=$($PYTHON train.py $value --help 2>&1 > /dev/null) ||
                    env_error TRAIN_FLAGS "takes train.py's --key=value flags: $(tail -n 1 <<< "$why")" ;;
            *) echo "check_env: no check for $name" >&2; exit 2 ;;
        esac
    done
}

into_record() {  # into_record FILE CMD...: CMD's output becomes FILE only once CMD has succeeded, so a failure leaves a
    # recorded FILE as it was (CMD runs where set -e does not stop it: a function must return its own failure)
    if "${@:2}" > "$1.tmp"; then mv "$1.tmp" "$1"; else local status=$?; rm -f "$1.tmp"; return $status; fi
}

run_failed() {  # run_failed WHAT LOG: a failed job's cause, the last line of its log, where it is seen
    echo "failed: $1: $(tail -n 1 "$2" 2> /dev/null) (its log: $2)" >&2
}

train_once() {  # train_once KEY ARG...: train.py ARG... into $OUT/KEY, its log kept as $RES/runs/KEY/log.jsonl
    local key=$1 dir=$OUT/$1 keep=$RES/runs/$1 start=--init_from=scratch
    shift
    # a log in the record that reached the budget: done; a checkpoint left by an interrupted run: resume from it
    [ -f "$keep/log.jsonl" ] && [ "$(tail -n 1 "$keep/log.jsonl" | grep -c "\"iter\": $STEPS,")" = 1 ] && return 0
    [ -f "$dir/ckpt_last.pt" ] && start=--init_from=resume
    mkdir -p "$(dirname "$dir")"
    $PYTHON train.py "$@" $start --overwrite=True --out_dir="$dir" > "$dir.txt" 2>&1 ||
        { run_failed "$dir" "$dir.txt"; return 1; }
    mkdir -p "$keep" && cp "$dir/log.jsonl" "$keep/log.jsonl"
    echo "done: $key"
}

timed() {  # timed CLOCK LOG CMD...: CMD, its output in LOG, its clock kept as CLOCK if it succeeds; a run that stops
    # (a signal, an error) leaves its clock a line of CLOCK.stopped and returns CMD's status. A TERM to the process
    # group (a session's end) reaches CMD, which saves and exits; the trap keeps this shell alive until then, to
    # write the clock (a trap, unlike an ignored signal, is reset in CMD)
    local TIMEFORMAT="cpu_s %U %S wall_s %R" status
    trap : TERM
    { time "${@:3}" > "$2" 2>&1; } 2> "$1.tmp" && mv "$1.tmp" "$1" ||
        { status=$?; cat "$1.tmp" >> "$1.stopped"; rm -f "$1.tmp"; return $status; }
}
resumed() {  # resumed CLOCK: a run resumed after stops keeps a line a part in CLOCK (the summaries add them up)
    [ -f "$1.stopped" ] || return 0
    cat "$1.stopped" "$1" > "$1.tmp" && mv "$1.tmp" "$1" && rm "$1.stopped"
}
pretrain_once() {  # pretrain_once DIR KEEP STEPS WHAT CONFIG ARG...: train.py CONFIG ARG... for STEPS steps (its own
    # cosine) into DIR, once, under a lock (evaluations of it may start side by side), resumed from an interrupted run's
    # checkpoint; its log and clock kept in KEEP (log_retrained.jsonl beside a recorded log: a clone without
    # checkpoints). A run that fails, not stopped by a signal, is recorded as KEEP/failed.txt and never trained again
    local dir=$1 keep=$2 steps=$3 what=$4 start=--init_from=scratch suffix="" clock status
    shift 4
    mkdir -p "$(dirname "$dir")"
    (
        flock 9
        log_at "$dir/log.jsonl" "$steps" && [ -f "$dir/ckpt_best.pt" ] && exit 0
        [ ! -f "$keep/failed.txt" ] || { echo "failed before: $what pretraining: $keep/failed.txt" >&2; exit 1; }
        [ -f "$dir/ckpt_last.pt" ] && start=--init_from=resume
        mkdir -p "$dir" "$keep"
        log_at "$keep/log.jsonl" "$steps" && suffix=_retrained
        clock=$keep/pretrain$suffix.time
        [ "$start" = --init_from=resume ] || rm -f "$clock.stopped"  # no earlier part to count
        timed "$clock" "$dir.txt" $PYTHON train.py "$1" --max_iters="$steps" --lr_decay_iters="$steps" --progress=False \
            "${@:2}" $start --overwrite=True --out_dir="$dir" || {
            status=$?  # a signal's status (128 + its number) stops a run; any other fails it
            [ $status -gt 128 ] || echo "pretraining: $(tail -n 1 "$dir.txt")" > "$keep/failed.txt"
            run_failed "$what pretraining" "$dir.txt"
            exit 1
        }
        resumed "$clock"
        cp "$dir/log.jsonl" "$keep/log$suffix.jsonl"
        flagged "$keep" "pretrain$suffix"
        echo "done: pretraining $what"
    ) 9> "$dir.lock"
}
flagged() {  # flagged KEEP WHAT: the device and train flags beside the result WHAT, where given
    [ -z "$DEVICE_FLAGS$TRAIN_FLAGS" ] || echo "$2: DEVICE_FLAGS=$DEVICE_FLAGS TRAIN_FLAGS=$TRAIN_FLAGS" >> "$1/flags.txt"
}
evaluate() {  # evaluate KEEP NAME WHAT ARG...: eval_glue.py ARG... on $SUITE, unless KEEP/NAME.json is kept (text
    # experiments: a fine-tune does not resume, so a stopped one's clock is not kept)
    local keep=$1 name=$2 what=$3 dir
    shift 3
    [ -f "$keep/$name.json" ] && return 0
    dir=$OUT/evals/${keep#"$RES"/}/$name
    mkdir -p "$keep" "$dir"
    # shellcheck disable=SC2086
    timed "$keep/$name.time" "$dir.txt" $PYTHON eval_glue.py "$@" --glue_dir="$SUITE" $DEVICE_FLAGS \
        --out_dir="$dir" --overwrite=True --progress=False ||
        { rm -f "$keep/$name.time.stopped"; run_failed "$what" "$dir.txt"; return 1; }
    cp "$dir"/glue_*.json "$keep/$name.json"
    flagged "$keep" "$name"
    echo "done: $what"
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

image_config() {  # image_config ARM: an image arm's pretraining config (Fashion-MNIST, the *_fmnist recipe)
    case $1 in
        ar) echo "config/ar_fmnist.py" ;;  # two-stream: Table 9's t = 1
        ar1s) echo "config/ar_fmnist.py --two_stream=False" ;;
        dar*) echo "config/dar_fmnist.py --t=${1#dar}" ;;
        *) echo "config/$1_fmnist.py" ;;
    esac
}
image_init() {  # image_init ARM: the arm whose initialisation it shares (vision_concat.sh): at a seed every image arm
    # starts from the same weights (one architecture), and the probe encodes with the pretraining mask, so arms with
    # one mask share one; the _long arms are their 1000-step arms' (tests/test_vision_experiment.py checks all this)
    case $1 in ar|ar1s|ar_long) echo ar ;; mae75|vm|mae75_long) echo mae75 ;; *) echo "$1" ;; esac
}
log_at() {  # log_at LOG STEPS: a training log whose last line is step STEPS (a run that reached its budget)
    [ -f "$1" ] && [ "$(tail -n 1 "$1" | grep -c "\"iter\": $2,")" = 1 ]
}
image_pretrain() {  # image_pretrain ARM SEED STEPS DIR KEEP: the arm trained STEPS steps into DIR (resumed from an
    # interrupted run's checkpoint; not again where DIR holds the finished run), its log then kept in the record folder
    # KEEP: as log.jsonl, or as log_retrained.jsonl beside a recorded one (a clone without checkpoints trained again)
    local arm=$1 seed=$2 steps=$3 dir=$4 keep=$5 start=--init_from=scratch
    log_at "$dir/log.jsonl" "$steps" && [ -f "$dir/ckpt_last.pt" ] || {
        [ -f "$dir/ckpt_last.pt" ] && start=--init_from=resume
        mkdir -p "$dir"
        # shellcheck disable=SC2046,SC2086
        $PYTHON train.py $(image_config "$arm") --max_iters="$steps" --lr_decay_iters="$steps" --progress=False \
            ${DEVICE_FLAGS:-} ${TRAIN_FLAGS:-} --seed="$seed" $start --overwrite=True --out_dir="$dir" \
            > "$dir.txt" 2>&1 || { run_failed "$arm $seed training" "$dir.txt"; return 1; }
    }
    mkdir -p "$keep"
    if log_at "$keep/log.jsonl" "$steps"; then cp "$dir/log.jsonl" "$keep/log_retrained.jsonl"
    else cp "$dir/log.jsonl" "$keep/log.jsonl"; fi
}
image_first_step() {  # image_first_step ARM SEED DIR: one step of the arm into DIR, so DIR/ckpt_last.pt holds its
    # architecture, objective and seed: what eval_vision.py --ckpt=random:DIR/ckpt_last.pt reads (never its weights)
    mkdir -p "$3"
    # shellcheck disable=SC2046,SC2086
    $PYTHON train.py $(image_config "$1") --max_iters=1 --progress=False ${DEVICE_FLAGS:-} ${TRAIN_FLAGS:-} \
        --seed="$2" --overwrite=True --out_dir="$3" > "$3.txt" 2>&1 ||
        { run_failed "$1 $2 (1 step)" "$3.txt"; return 1; }
}
image_eval() {  # image_eval WHAT LOG ARG...: eval_vision.py ARG... (config first, then --ckpt=, --out_dir=, ...) on the
    # script's device, its output in LOG; a failure names WHAT and shows LOG's last line
    local what=$1 log=$2
    shift 2
    # shellcheck disable=SC2086
    $PYTHON eval_vision.py "$@" ${DEVICE_FLAGS:-} --overwrite=True --progress=False > "$log" 2>&1 ||
        { run_failed "$what" "$log"; return 1; }
}
export -f run_failed timed resumed pretrain_once flagged evaluate train_once config image_config image_init log_at image_pretrain image_first_step image_eval
