#!/usr/bin/env bash
# Stage 3 of egs/parczech: Needleman-Wunsch alignment of recognised and official words, the
# zero-edit-distance runs, and the thesis' segment filters -> lhotse manifests per split.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl       # job runner ($train_cmd)
nj=2                   # parallel jobs (recordings are shared between them)
segments_config=conf/segments.yaml  # ItnDatasetConfig values (YAML; not --config, which parse_options.sh sources)
dev_speakers=          # optional file of dev speaker ids (default: drawn with the config's seed)
test_speakers=         # optional file of test speaker ids
seed=                  # overrides the config's seed (held-out speakers, segment splitting)
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 3 ]; then
  echo "Usage: $0 [options] <manifest-dir> <recognised-words-dir> <out-dir>"
  echo "e.g.: $0 --nj 2 --segments-config conf/segments_mini.yaml data/manifests exp/asr/words data/segments"
  echo "Options: --cmd CMD, --nj N, --segments-config YAML, --seed N, --dev-speakers FILE, --test-speakers FILE"
  exit 1
fi
manifests=$1
words=$2
dir=$3

for f in $manifests/parczech_recordings_all.jsonl.gz $manifests/parczech_supervisions_all.jsonl.gz $segments_config; do
  if [ ! -f "$f" ]; then echo "$0: no such file: $f" >&2; exit 1; fi
done
if [ ! -d "$words" ]; then echo "$0: no such directory: $words" >&2; exit 1; fi

opts=(--config "$segments_config")
[ -n "$seed" ] && opts+=(--seed "$seed")
[ -n "$dev_speakers" ] && opts+=(--dev-speakers "$dev_speakers")
[ -n "$test_speakers" ] && opts+=(--test-speakers "$test_speakers")
mkdir -p $dir/log
$cmd JOB=1:$nj $dir/log/segments.JOB.log \
  python -m punct.bin.build_itn_segments "${opts[@]}" --prefix parczech --manifest-dir $manifests --recognised-dir $words \
    --out-dir $dir --job JOB --nj $nj
python -m punct.bin.build_itn_segments "${opts[@]}" --prefix parczech --merge --manifest-dir $manifests --out-dir $dir --nj $nj \
  --log-file $dir/log/merge.log
