#!/usr/bin/env bash
# A corpus of your own -> lhotse manifests mustc_{recordings,supervisions}_{train,dev,test}.jsonl.gz with words
# and punctuation labels, as local/prepare.sh writes them for MuST-C.  The input is either lhotse manifests
# (what lhotse's prepare_* recipes write: <corpus>_{recordings,supervisions}_<part>.jsonl.gz) or Kaldi data
# dirs (<dir>/<part>/{wav.scp,text} with optional segments and utt2spk), with punctuated text.
set -euo pipefail

# Begin configuration section.
form=manifests     # manifests (lhotse) or data-dir (Kaldi)
train_parts=train  # comma-separated parts that make the train split (e.g. train-clean-100,train-clean-360)
dev_part=dev       # comma-separated part(s) of the dev split
test_part=test     # comma-separated part(s) of the test split
text_field=text    # supervision field with the punctuated text: text or a key of custom (LibriTTS: orig_text)
normalize_config=  # YAML with the punctuation mark -> label mapping (punct/text/normalize.py); empty: defaults
overwrite=false    # rewrite manifests prepared before from the same inputs
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <input-dir> <manifest-dir>"
  echo "e.g.: $0 --form manifests --train-parts train-clean-100 --dev-part dev-clean --test-part test-clean \\"
  echo "        --text-field orig_text data/libritts_manifests data/manifests"
  echo "      $0 --form data-dir /data/kaldi/data data/manifests    # /data/kaldi/data/{train,dev,test}"
  echo "Options: --form manifests|data-dir, --train-parts A[,B], --dev-part X, --test-part Y, --text-field F,"
  echo "         --normalize-config FILE, --overwrite true|false"
  exit 1
fi
input=$1
out=$2

[ -d "$input" ] || { echo "$0: no such directory: $input" >&2; exit 1; }
opts=(--form "$form" --train-parts ${train_parts//,/ } --dev-part ${dev_part//,/ } --test-part ${test_part//,/ }
      --text-field "$text_field")
[ -n "$normalize_config" ] && opts+=(--normalize-config "$normalize_config")
$overwrite && opts+=(--overwrite)
mkdir -p "$out/log"
python -m punct.bin.prepare_imported "${opts[@]}" --log-file "$out/log/prepare_imported.log" "$input" "$out"
