#!/usr/bin/env bash
# Stage 1 with utterance-level training data: a Kaldi data directory (wav.scp, text, optional segments and
# utt2spk) or lhotse manifests (recordings + supervisions, or cuts) -> the acoustic model's manifests
# <out-dir>/<prefix>_{recordings,supervisions}_{train,dev}.jsonl.gz (punct.am_data.utterances: lowercase
# words of the config's alphabet, the dev part given or drawn by speaker/recording with --seed, CMVN grouped
# by recording or speaker).  Counts of skipped utterances in <out-dir>/import_stats.json.  Skipped when
# <out-dir>/.done holds the stamp of the same options and input files (utils/fresh.sh).
set -euo pipefail

# Begin configuration section.
prefix=            # required: output manifest name prefix (e.g. the recipe's corpus name)
dev=               # dev utterances in the same forms; empty: a seeded dev_share of the hours of <data> (config: dev_unit, dev_share)
import_config=     # YAML of UtteranceImportConfig values (alphabet, tags, cmvn_group, dev_unit, dev_share ...)
feat_config=       # the AM's feature config: audio is resampled to its sampling_rate
seed=42            # choice of the held-out dev speakers/recordings
overwrite=false    # import again even if done
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/fresh.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <data> <out-dir>"
  echo "e.g.: $0 --prefix parczech --import-config conf/utterances.yaml --dev data/asr_dev data/asr_train data/am_manifests_import"
  echo "main options: --prefix NAME (required) --dev DIR --import-config YAML --feat-config YAML --seed N --overwrite true"
  echo "<data>: a Kaldi data dir (wav.scp, text, [segments], [utt2spk]), a folder of lhotse manifests or a cuts manifest"
  exit 1
fi
[ -n "$prefix" ] || { echo "$0: --prefix is required (manifests are named <prefix>_..._<split>.jsonl.gz)" >&2; exit 1; }
data=$1
dir=$2

for d in "$data" $dev; do
  [ -e "$d" ] || { echo "$0: no such directory: $d" >&2; exit 1; }
done
for f in $import_config $feat_config; do
  [ -f "$f" ] || { echo "$0: no such file: $f" >&2; exit 1; }
done

opts=(--prefix "$prefix" --data "$data" --out-dir "$dir" --seed "$seed")
[ -n "$dev" ] && opts+=(--dev "$dev")
[ -n "$import_config" ] && opts+=(--config "$import_config")
[ -n "$feat_config" ] && opts+=(--feat-config "$feat_config")
# The stamp covers the options and the input tables/manifests (not the audio files they name).
inputs=$(find "$data" $dev -maxdepth 1 -type f | LC_ALL=C sort)
stamp=$(make_stamp "${opts[*]}" $import_config $feat_config $inputs)
if ! $overwrite && [ -f "$dir/.done" ] && [ "$(cat "$dir/.done")" = "$stamp" ]; then
  echo "$0: $dir is done; skipping (options and inputs unchanged; --overwrite true to import again)"
  exit 0
fi
rm -f "$dir/.done"
mkdir -p "$dir/log"
python -m punct.bin.import_am_data "${opts[@]}" 2>&1 | tee "$dir/log/import_am_data.log"
finish_stamped "$dir/.done" "$stamp"
