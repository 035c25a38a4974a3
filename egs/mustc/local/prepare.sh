#!/usr/bin/env bash
# MuST-C v1/v2 (English side) or the mini corpus (same layout) -> lhotse manifests
# mustc_{recordings,supervisions}_{train,dev,test}.jsonl.gz with words and punctuation labels.
# With --unipunc-dir, train/dev/test follow UniPunc (EfficientPunct's Table 3 split).
set -euo pipefail

# Begin configuration section.
unipunc_dir=       # folder with UniPunc's train-audio.json and test-audio.json (optional)
seed=42            # seed of the UniPunc train/dev split
normalize_config=  # YAML with the punctuation mark -> label mapping (punct/text/normalize.py); empty: defaults
overwrite=false    # rewrite manifests prepared before from the same inputs
splits="train dev test"  # splits to prepare (test = tst-COMMON); ignored with --unipunc-dir
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <mustc-en-x-dir> <manifest-dir>"
  echo "e.g.: $0 /data/MUSTC_v1.0/en-de data/manifests"
  echo "Options: --unipunc-dir DIR, --seed N, --normalize-config FILE, --overwrite true|false, --splits \"train dev test\""
  exit 1
fi
corpus=$1
out=$2

for split in $splits; do
  [ "$split" = test ] && split=tst-COMMON
  f=$corpus/data/$split/txt
  [ -d "$f" ] || [ -d "$corpus/$split/txt" ] || { echo "$0: no such directory: $f" >&2; exit 1; }
done
opts=(--seed "$seed" --splits $splits)
[ -n "$unipunc_dir" ] && opts+=(--unipunc-dir "$unipunc_dir")
[ -n "$normalize_config" ] && opts+=(--normalize-config "$normalize_config")
$overwrite && opts+=(--overwrite)
mkdir -p "$out/log"
python -m punct.bin.prepare_mustc "${opts[@]}" --log-file "$out/log/prepare_mustc.log" "$corpus" "$out"
