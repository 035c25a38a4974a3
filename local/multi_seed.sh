#!/usr/bin/env bash
# Runs a recipe once per seed, each in a fresh copy of the recipe folder, and summarises the test
# scores as mean ± sd (punct.bin.results_table): a result holds only if it holds over seeds.
#
#   local/multi_seed.sh --seeds "1 2 3" egs/mustc exp/multi_seed
#   local/multi_seed.sh --seeds "1 2 3" --run-opts "--stop-stage 8" egs/mustc exp/multi_seed
#
# Copy i is <recipe>_seed<N> beside the recipe (its steps/utils/local symlinks are relative); a copy
# whose run finished (exp/results/run.json) is kept and not run again.  Per seed, <out-dir>/seed<N>/
# gets results.json, RESULTS.md and run.json (seed, wall seconds, command); <out-dir>/summary.{json,md}
# hold the table.
set -euo pipefail

# Begin configuration section.
seeds="1 2 3"      # one run per seed
run_opts=          # more options for run.sh (the same for every seed)
readme=            # also rewrite the results:<name> region of this file
name=mustc         # marker name in the README
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/log.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <recipe-dir> <out-dir>"
  echo "e.g.: $0 --seeds \"1 2 3\" egs/mustc exp/multi_seed"
  echo "Options: --seeds \"1 2 3\", --run-opts \"...\", --readme README.md --name mustc"
  exit 1
fi
recipe=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -x "$recipe/run.sh" ] || { echo "$0: no $recipe/run.sh" >&2; exit 1; }

results=()
for seed in $seeds; do
  copy=${recipe}_seed$seed
  if [ -f "$copy/exp/results/run.json" ]; then
    log "seed $seed: $copy finished before; keeping it"
  else
    rm -rf "$copy"
    cp -a "$recipe" "$copy"
    rm -rf "$copy/data" "$copy/exp"   # a fresh run: nothing of the source recipe's outputs
    command="cd $copy && ./run.sh --seed $seed $run_opts"
    log "seed $seed: $command (log: $copy/run.log)"
    start=$(date +%s)
    (cd "$copy" && ./run.sh --seed $seed $run_opts) > "$copy/run.log" 2>&1 || {
      echo "$0: seed $seed failed; see $copy/run.log" >&2; exit 1; }
    wall=$(( $(date +%s) - start ))
    python3 -c 'import json, sys; print(json.dumps({"seed": int(sys.argv[1]), "wall_seconds": int(sys.argv[2]), "command": sys.argv[3]}))' \
      "$seed" "$wall" "$command" > "$copy/exp/results/run.json"
    log "seed $seed: finished in $wall s"
  fi
  mkdir -p "$out/seed$seed"
  cp "$copy/exp/results/results.json" "$copy/exp/results/RESULTS.md" "$copy/exp/results/run.json" "$out/seed$seed/"
  results+=("$out/seed$seed/results.json")
done

opts=(--out-dir "$out" --command "$0 --seeds \"$seeds\"${run_opts:+ --run-opts \"$run_opts\"} $1 $2")
[ -n "$readme" ] && opts+=(--readme "$readme" --name "$name")
python -m punct.bin.results_table "${opts[@]}" "${results[@]}"
cat "$out/summary.md"
log "$0: summary in $out/summary.md"
