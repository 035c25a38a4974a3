#!/usr/bin/env bash
# Builds the embedded Czech mini corpus (fortunes-cs read by espeak-ng's cs voice) in ParCzech
# layout: long "sittings" (wav), gold verticals (.vert), speakers.tsv, and synth/<id>.words.tsv
# (what was really said, with times).  The text comes from the Debian package fortunes-cs: used
# from /usr/share/games/fortunes/cs when installed, else fetched with `apt-get download` into
# --cache-dir and unpacked with dpkg-deb -x.  An existing complete corpus is kept unless --overwrite true.
set -euo pipefail

# Begin configuration section.
size=mini          # tiny (about 5 min, tests), mini (about an hour) or small (~6.7 h, 56 speakers); <H>h: small's
                   # voices, about H hours of training speakers and 3 each for dev and test (benchmarks/bench_scale.py)
seed=42            # seed of every random choice (text, speakers, record edits, pauses, noise)
cache_dir=         # where the .deb is downloaded; empty: $PUNCT_CACHE or ~/.cache/punct
prosody=natural    # what espeak-ng is told about the marks: natural, marks or none (punct/synthesis/prosody.py)
prosody_config=    # --prosody natural: YAML of its pause model (conf/prosody.yaml); empty: the code's defaults
overwrite=false    # rebuild an existing corpus
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 1 ]; then
  echo "Usage: $0 [options] <corpus-dir>"
  echo "e.g.: $0 --size tiny --prosody natural data/corpus_tiny_natural"
  echo "Options: --size tiny|mini|small|<H>h, --seed N, --prosody marks|none|natural, --prosody-config FILE,"
  echo "         --cache-dir DIR, --overwrite true|false"
  exit 1
fi
dir=$1

opts=(--size "$size" --seed "$seed" --prosody "$prosody")
[ -n "$prosody_config" ] && opts+=(--prosody-config "$prosody_config")
[ -n "$cache_dir" ] && opts+=(--cache-dir "$cache_dir")
$overwrite && opts+=(--overwrite)
mkdir -p "$(dirname "$dir")/log"
python -m punct.bin.build_parczech_mini "${opts[@]}" --log-file "$(dirname "$dir")/log/build_$(basename "$dir").log" "$dir"
