# Sourced by every experiment script: the checks of what it reads from its environment (and the refusal of what it
# does not), a command's output written into the record only once it has succeeded, one training run of a
# registered experiment (resumable), and the data-constrained arms. The scripts export the functions to the jobs
# they run two at a time (xargs -P). train_once reads PYTHON, OUT (checkpoints), RES (the record) and STEPS.

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
            STEPS|BYTE_STEPS|JOBS|NUM_SAMPLES|OMP_NUM_THREADS)  # JOBS=0 would be xargs -P 0: every job at once
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
            PROTOCOLS)
                words=($value)
                for word in "${words[@]}"; do [[ " $PILOT_PROTOCOLS " == *" $word "* ]] || words=(); done
                [ ${#words[@]} -gt 0 ] || env_error PROTOCOLS "must name one or more of $PILOT_PROTOCOLS" ;;
            PYTHON) command -v -- "${value%% *}" > /dev/null ||
                env_error PYTHON "names no command: set it to a python that has torch (default: python)" ;;
            OUT|RES|KEEP) [ ! -e "$value" ] || [ -d "$value" ] || env_error "$name" "is a file, not a folder" ;;
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
export -f run_failed train_once config
