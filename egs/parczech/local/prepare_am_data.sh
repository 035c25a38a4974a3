#!/usr/bin/env bash
# Stage 1 of egs/parczech (mini corpus): utterance-level acoustic-model training manifests cut
# from the long recordings with the words really spoken and their times (the synth folder); one
# recording is held out for the dev WER.  Supervision speaker = recording id (per-recording CMVN,
# the convention of the long-recording recogniser).  Skipped when <out-dir>/.done exists.
set -euo pipefail

# Begin configuration section.
seed=42           # choice of the held-out dev recording
dev_recordings=1  # recordings held out for the AM's dev WER
overwrite=false   # rebuild finished manifests
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 3 ]; then
  echo "Usage: $0 [options] <manifest-dir> <spoken-words-dir> <out-dir>"
  echo "e.g.: $0 data/manifests data/corpus_mini_natural/synth data/am_manifests"
  echo "Options: --seed N, --dev-recordings N, --overwrite true"
  exit 1
fi
manifests=$1
words=$2
dir=$3

for f in $manifests/parczech_recordings_all.jsonl.gz $manifests/parczech_supervisions_all.jsonl.gz; do
  if [ ! -f "$f" ]; then echo "$0: no such file: $f" >&2; exit 1; fi
done
if [ ! -d "$words" ]; then echo "$0: no such directory: $words" >&2; exit 1; fi
if [ -f $dir/.done ] && ! $overwrite; then
  echo "$0: $dir is done; skipping"
  exit 0
fi
mkdir -p $dir/log
python -m punct.bin.prepare_am_data --prefix parczech --manifest-dir $manifests --words-dir $words --out-dir $dir \
  --seed $seed --dev-recordings $dev_recordings 2>&1 | tee $dir/log/prepare_am_data.log
touch $dir/.done
