#!/usr/bin/env bash
# Runs a recipe once per seed, each in a fresh copy of the recipe folder, one after the other, and
# summarises the scores as mean ± sample sd (punct.bin.results_table): a result holds only if it
# holds over seeds.
#
#   utils/multi_seed.sh --seeds "1 2 3" egs/mustc egs/mustc/exp/multi_seed
#   cd egs/mustc && utils/multi_seed.sh --seeds "1 2 3" . exp/multi_seed --stop-stage 8 --nj 2
#   cd egs/parczech && utils/multi_seed.sh --seeds "1 2 3" . exp/multi_seed   # results.json of stage 6
#
# Arguments after <recipe-dir> <out-dir> go to every run.sh (--seed is set here, per run).
# Copy of seed N: <work-dir>/<recipe name>_seed<N> (default <work-dir>: the recipe's parent, so
# egs/mustc -> egs/mustc_seed1); run.sh, conf/ and local/ are copied, data/ and exp/ are not, and the
# recipe's links (steps, utils, path.sh, cmd.sh) must resolve in the copy: a relative link that
# would not (a copy outside egs/) is made absolute.  A copy whose run finished
# (exp/results/run.json) is kept and not run again unless --overwrite true.
# Per seed, <out-dir>/seed<N>/ gets results.json, RESULTS.md and run.json (seed, wall seconds,
# command, start time, git commit, the digest of a mini corpus' audio: data/corpus_*/build.json's md5s, and the
# host's speed before and after the run: punct.bin.machine_speed);
# <out-dir>/summary.{json,md} hold the tables.
set -euo pipefail

# Begin configuration section.
seeds="1 2 3"      # one run per seed
work_dir=          # where the copies go; empty: the recipe's parent folder
overwrite=false    # true: rerun seeds whose copy already finished
readme=            # also rewrite the results:<name> region of this file
name=              # marker name in the README; empty: the recipe folder's name (egs/mustc: mustc)
# End configuration section.

help_message=$(cat <<HELP
Usage: $0 [options] <recipe-dir> <out-dir> [run.sh options]
Runs <recipe-dir>/run.sh --seed N in a fresh copy per seed and writes <out-dir>/summary.{json,md}.
e.g.: $0 --seeds "1 2 3" egs/mustc egs/mustc/exp/multi_seed --nj 2
Options (defaults in brackets):
  --seeds "N ..."      one run per seed [${seeds}]
  --work-dir DIR       where the copies <recipe>_seed<N> go; empty: beside the recipe [${work_dir}]
  --overwrite BOOL     rerun seeds whose copy already finished [${overwrite}]
  --readme FILE        also rewrite the <!-- results:NAME:begin/end --> region of FILE [${readme}]
  --name NAME          marker name; empty: the recipe folder's name [${name}]
HELP
)

. ./path.sh
. utils/parse_options.sh
. utils/log.sh

if [ $# -lt 2 ]; then
  echo "$help_message" >&2
  exit 1
fi
invocation="utils/multi_seed.sh --seeds \"$seeds\" $*"   # shown under the tables
recipe=$(cd "$1" && pwd)
out=$2
shift 2
run_opts=("$@")
for opt in "${run_opts[@]}"; do
  case "$opt" in
    --seed|--seed=*) echo "$0: --seed is set per run by --seeds; do not pass it to run.sh" >&2; exit 1 ;;
  esac
done
[ -x "$recipe/run.sh" ] || { echo "$0: no executable $recipe/run.sh" >&2; exit 1; }
[ -n "$seeds" ] || { echo "$0: --seeds is empty" >&2; exit 1; }
work_dir=${work_dir:-$(dirname "$recipe")}
mkdir -p "$work_dir" "$out"
work_dir=$(cd "$work_dir" && pwd)
out=$(cd "$out" && pwd)
commit=$(git -C "$recipe" rev-parse --short HEAD 2>/dev/null || echo unknown)

# fresh_copy <copy>: run.sh, conf/ and the rest of the recipe without data/, exp/ and logs; links
# that do not resolve from the copy's place point to the recipe's targets instead.
fresh_copy() {
  local copy=$1 entry base target
  rm -rf "$copy"
  mkdir -p "$copy"
  for entry in "$recipe"/* "$recipe"/.[!.]*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    base=$(basename "$entry")
    case "$base" in data|exp|*.log) continue ;; esac
    cp -a "$entry" "$copy/$base"
    if [ -L "$entry" ] && [ ! -e "$copy/$base" ]; then
      target=$(readlink -f "$entry")
      ln -sfn "$target" "$copy/$base"
      log "$copy/$base -> $target (the relative link does not resolve there)"
    fi
  done
  for base in steps utils local path.sh cmd.sh; do
    if [ -L "$recipe/$base" ] && [ ! -e "$copy/$base" ]; then
      echo "$0: $copy/$base does not resolve" >&2; exit 1
    fi
  done
}

results=()
for seed in $seeds; do
  copy=$work_dir/$(basename "$recipe")_seed$seed
  if [ "$copy" = "$recipe" ]; then
    echo "$0: the copy of seed $seed would be the recipe itself ($copy)" >&2; exit 1
  fi
  if [ -f "$copy/exp/results/run.json" ] && ! $overwrite; then
    log "seed $seed: $copy finished before; keeping it (--overwrite true reruns it)"
  else
    log "seed $seed: fresh copy $recipe -> $copy"
    fresh_copy "$copy"
    command="cd $copy && ./run.sh --seed $seed${run_opts[*]:+ $(printf '%q ' "${run_opts[@]}")}"
    log "seed $seed: $command (log: $copy/run.log)"
    # the host's speed before and after (a fixed one-thread workload, punct.results.machine_speed): wall times of
    # runs made at other hours compare only through it
    speed_before=$(python -m punct.bin.machine_speed)
    started=$(date -Iseconds)
    start=$(date +%s)
    (cd "$copy" && ./run.sh --seed "$seed" "${run_opts[@]}") > "$copy/run.log" 2>&1 || {
      echo "$0: seed $seed failed; see $copy/run.log" >&2; exit 1; }
    wall=$(( $(date +%s) - start ))
    [ -f "$copy/exp/results/results.json" ] || {
      echo "$0: seed $seed: run.sh wrote no exp/results/results.json (did it reach its scoring stage: 8 of" \
        "egs/mustc, 6 of egs/parczech?)" >&2; exit 1; }
    # the audio the run heard (a mini corpus records each wav file's md5): seeds compare only on the same corpus
    corpus_audio=$(python -c 'import sys; from punct.synthesis.build_record import corpora_digest
print(corpora_digest(sys.argv[1:]))' "$copy"/data/corpus_*)
    python3 -c 'import json, sys; print(json.dumps(dict(zip(("seed", "wall_seconds", "command", "started", "commit",
        "corpus_audio", "machine_speed"), (int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6], sys.argv[6] or None,
        {"before": json.loads(sys.argv[7])})))))' \
      "$seed" "$wall" "${command% }" "$started" "$commit" "$corpus_audio" "$speed_before" > "$copy/exp/results/run.json.tmp"
    mv "$copy/exp/results/run.json.tmp" "$copy/exp/results/run.json"
    python -m punct.bin.machine_speed --into "$copy/exp/results/run.json" --key after
    python -m punct.bin.stage_times "$copy/run.log" "$copy/exp/results/run.json"   # + each stage's time
    log "seed $seed: finished in $wall s"
  fi
  mkdir -p "$out/seed$seed"
  cp "$copy/exp/results/results.json" "$copy/exp/results/RESULTS.md" "$copy/exp/results/run.json" "$out/seed$seed/"
  results+=("$out/seed$seed/results.json")
done

log "summary of ${#results[@]} run(s) -> $out/summary.{json,md}"
opts=(--out-dir "$out" --command "$invocation")
[ -n "$readme" ] && opts+=(--readme "$readme")
[ -n "$readme" ] && opts+=(--name "${name:-$(basename "$recipe")}")
python -m punct.bin.results_table "${opts[@]}" "${results[@]}"
cat "$out/summary.md"
log "$0: done; summary in $out/summary.md"
