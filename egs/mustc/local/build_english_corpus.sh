#!/usr/bin/env bash
# Builds the embedded English mini corpus (Jane Austen read by espeak-ng) in MuST-C v1 layout.
# The text comes from the Debian package r-cran-janeaustenr, fetched with `apt-get download`
# into --cache-dir and unpacked with dpkg-deb -x (R is not installed).  An existing complete
# corpus is kept (and this script says so) unless --overwrite true.
set -euo pipefail

# Begin configuration section.
size=mini          # tiny (a few minutes, tests/CI) or mini (about 80 min)
seed=42            # seed of every random choice (text, voices, pauses, noise)
cache_dir=         # where the .deb is downloaded; empty: $PUNCT_CACHE or ~/.cache/punct
nj=1               # talks synthesized in parallel
normalize_config=  # YAML with the punctuation mapping (words of the word-time file); empty: defaults
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
  echo "Options: --size tiny|mini, --seed N, --nj N, --prosody marks|none|natural, --prosody-config FILE,"
  echo "         --cache-dir DIR, --overwrite true|false"
  exit 1
fi
dir=$1

opts=(--size "$size" --seed "$seed" --nj "$nj" --prosody "$prosody")
[ -n "$prosody_config" ] && opts+=(--prosody-config "$prosody_config")
[ -n "$cache_dir" ] && opts+=(--cache-dir "$cache_dir")
[ -n "$normalize_config" ] && opts+=(--normalize-config "$normalize_config")
$overwrite && opts+=(--overwrite)
mkdir -p "$(dirname "$dir")/log"
python -m punct.bin.build_mini_corpus "${opts[@]}" --log-file "$(dirname "$dir")/log/build_$(basename "$dir").log" "$dir"
