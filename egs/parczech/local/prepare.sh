#!/usr/bin/env bash
# ParCzech-layout corpus (<term>ps/audio/YYYY/MM/DD/<id>.{mp3,wav} + <id>[.mp3].vert, speakers.tsv)
# -> lhotse manifests of the long recordings and their official transcripts (punct.corpora.parczech).
set -euo pipefail

# Begin configuration section.
# (no options)
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 <corpus-dir> <manifest-dir>"
  echo "e.g.: $0 data/corpus_mini_natural data/manifests"
  exit 1
fi
corpus=$1
dir=$2

if [ ! -d "$corpus" ]; then
  echo "$0: no such directory: $corpus" >&2
  exit 1
fi
mkdir -p "$dir/log"
python -m punct.bin.prepare_parczech --log-file "$dir/log/prepare.log" "$corpus" "$dir"
