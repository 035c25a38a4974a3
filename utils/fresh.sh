# Skip-if-done-and-fresh for the training steps (steps/train_{am,bert,tdnn}.sh, egs/parczech/local/train_mm.sh) and
# the feature step (steps/compute_features.sh, per split: is_done_and_fresh and finish_stamped only).
# Sourced after utils/parse_options.sh.  One rule for all of them:
#
#   stamp=$(make_stamp "<options>" <input-file>...)
#   if ! $overwrite && is_done_and_fresh <marker> "$stamp"; then exit 0; fi   # logs "<output> is done; skipping"
#   begin_stamped <marker> "$stamp" $resume $overwrite <checkpoint>...        # before training
#   ...train...
#   finish_stamped <marker> "$stamp"                                          # after it succeeded
#
# The stamp is the text "options: <options>" followed by one line "<path> <size> <mtime>" per input
# file ("<path> missing" when absent), where <options> is everything that changes the result (the
# entry point's flags, the number of ranks): a changed config file, input or option gives another stamp.
# Options that cannot change the result stay out of it, whatever step passes them: threads, device
# placement, data-loader workers, log intervals and progress bars (STAMP_IGNORED_OPTIONS), so that
# `run.sh --stage 3` after a finished run, whose stages 5-6 ran in the background with one thread the
# first time, trains nothing again.
# The stamp is computed before training, so an input that changes during training also counts as changed.
#
# <marker> is the output's .done file (<dir>/.done for a directory, <file>.done for a file, as in
# punct/utils/atomic.py).  finish_stamped writes the stamp into it atomically (temporary name, then
# rename) as the very last step; begin_stamped removes it first, so an interrupted run never looks done.
# An entry point that writes its own empty marker is overwritten by the step's stamp afterwards.
#
# What a re-run does:
#   - marker holds this run's stamp              -> skipped (unless --overwrite true), with a log line;
#   - --overwrite true                           -> <checkpoint>... removed, trained from scratch;
#   - --resume true                              -> checkpoints kept, training continues from the newest;
#   - <marker>.started holds this run's stamp    -> an interrupted run of the same options and inputs:
#                                                   checkpoints kept, training continues from the newest;
#   - otherwise (finished or interrupted with other options or inputs)
#                                                -> <checkpoint>... removed, trained from scratch.

# Flags that take a value and cannot change a trained model; --no-progress takes none.
STAMP_IGNORED_OPTIONS="--num-threads --device --num-workers --log-interval"

# _result_options <options>: <options> without STAMP_IGNORED_OPTIONS (and their values) and --no-progress.
_result_options() {
  local word skip=false kept=() words
  read -ra words <<< "$1"  # split on blanks, no glob expansion
  for word in "${words[@]}"; do
    if $skip; then skip=false; continue; fi
    case " $STAMP_IGNORED_OPTIONS " in
      *" $word "*) skip=true; continue ;;
    esac
    [ "$word" = --no-progress ] || kept+=("$word")
  done
  echo "${kept[*]}"
}

# make_stamp <options> <input-file>...: prints the stamp (see above).
make_stamp() {
  local options f
  options=$(_result_options "$1")
  shift
  echo "options: $options"
  for f in "$@"; do
    if [ -e "$f" ]; then
      stat -L -c '%n %s %y' -- "$f"
    else
      echo "$f missing"
    fi
  done
}

# _output_of <marker>: the output a marker stands for (<dir>/.done -> <dir>, <file>.done -> <file>).
_output_of() {
  case "$1" in
    */.done) echo "${1%/.done}" ;;
    *) echo "${1%.done}" ;;
  esac
}

# is_done_and_fresh <marker> <stamp> [<redo>]: true when <marker> holds <stamp>, and then logs the skip;
# otherwise false, and logs why the output is redone (no marker, or the lines that changed).  <redo> names
# what happens then in the log lines: "training again" (the default) or e.g. "computing again" for data steps.
is_done_and_fresh() {
  local marker=$1 stamp=$2 redo=${3:-training again} output
  output=$(_output_of "$marker")
  if [ ! -f "$marker" ]; then
    return 1
  fi
  if [ "$(cat "$marker")" = "$stamp" ]; then
    echo "$0: $output is done; skipping (options and inputs unchanged; --overwrite true to redo)"
    return 0
  fi
  if [ ! -s "$marker" ]; then
    # written by the entry point, but the step did not stamp it: interrupted just before, or made
    # before utils/fresh.sh (--resume true then continues from its last epoch-N.pt instead)
    echo "$0: $output has no stamp of its options and inputs; $redo"
    return 1
  fi
  echo "$0: $output was made with other options or inputs; $redo. Changed since (< then, > now):"
  diff <(cat "$marker") <(echo "$stamp") | grep '^[<>]' | sed 's/^/  /' || true
  return 1
}

# begin_stamped <marker> <stamp> <resume> <overwrite> <checkpoint>...: clears the marker and decides
# whether the checkpoints (files or folders, globs allowed) are kept for resuming or removed (see above).
begin_stamped() {
  local marker=$1 stamp=$2 resume=$3 overwrite=$4 started
  shift 4
  started=${marker%.done}.started
  rm -f "$marker"
  if $overwrite; then
    echo "$0: --overwrite true: training from scratch"
    rm -rf "$@"
  elif $resume; then
    echo "$0: --resume true: continuing from the newest checkpoint, if any"
  elif [ -f "$started" ] && [ "$(cat "$started")" = "$stamp" ]; then
    echo "$0: continuing the interrupted run of the same options and inputs"
  else
    rm -rf "$@"
  fi
  mkdir -p "$(dirname "$marker")"
  printf '%s\n' "$stamp" > "$started.tmp" && mv "$started.tmp" "$started"
}

# finish_stamped <marker> <stamp>: writes <stamp> into <marker> atomically; the run is done.
finish_stamped() {
  local marker=$1 stamp=$2
  printf '%s\n' "$stamp" > "$marker.tmp" && mv "$marker.tmp" "$marker"
  rm -f "${marker%.done}.started"
}
