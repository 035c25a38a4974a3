#!/usr/bin/env bash
# Recognition of long recordings with a CTC acoustic model: ~30 s chunks with 5 s overlap, greedy
# decoding or (--lm) beam search with a word n-gram LM (punct.recognition.beam_search), word times by CTC segmentation, chunk transcripts merged at the overlap midpoints
# (punct.recognition.recognise).  The model is the recipe's AM (<am-dir>: best-valid-loss.pt, mfcc.yaml) or,
# with --asr-model DIR, a local transformers CTC folder (processor + model, e.g. a Czech wav2vec2;
# punct.recognition.transformers_ctc).  Recordings are shared between nj jobs; each recording's
# <out-dir>/<id>.words.tsv is written atomically and finished recordings are skipped on a re-run.
# Merge counts (and with --ref-dir the WER against reference words) in <out-dir>/../summary.txt.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl             # job runner ($decode_cmd)
nj=2                         # parallel jobs (recordings are shared between them)
checkpoint=best-valid-loss.pt  # checkpoint inside <am-dir>
asr_model=                   # a transformers CTC folder (processor + model) instead of <am-dir>
ref_dir=                     # optional folder of reference <id>.words.tsv (e.g. data/corpus_mini_natural/synth)
chunk_config=                # optional YAML with chunk_seconds, overlap_seconds, tolerance (default 30, 5, 0.5)
lm=                          # a word n-gram LM (ARPA) for beam search; empty: greedy decoding
decode_config=               # YAML with the beam search's values (punct.recognition.beam_search.BeamSearchConfig)
device=auto                  # auto, cpu or cuda
num_threads=1                # torch CPU threads per job
overwrite=false              # recognise finished recordings again
min_words_per_minute=10      # stop when fewer words per minute of audio were recognised (the recogniser learned
                             # nothing; speech has ~100-150); 0: no check
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ -n "$asr_model" ] && [ $# -eq 2 ]; then
  manifests=$1
  dir=$2
  model_opts=(--asr-model "$asr_model")
  inputs=("$asr_model/config.json")
elif [ -z "$asr_model" ] && [ $# -eq 3 ]; then
  manifests=$1
  am_dir=$2
  dir=$3
  model_opts=(--am-dir $am_dir --checkpoint $checkpoint)
  inputs=($am_dir/$checkpoint $am_dir/mfcc.yaml)
else
  echo "Usage: $0 [options] <manifest-dir> <am-dir> <out-dir>"
  echo "   or: $0 [options] --asr-model <transformers-ctc-dir> <manifest-dir> <out-dir>"
  echo "e.g.: $0 --nj 2 --ref-dir data/corpus_mini_natural/synth data/manifests exp/am exp/asr/words"
  echo "e.g.: $0 --nj 2 --asr-model /models/wav2vec2-cs data/manifests exp/asr/words"
  echo "Options: --cmd CMD, --nj N, --asr-model DIR, --ref-dir DIR, --chunk-config YAML, --lm ARPA, --decode-config YAML,"
  echo "         --device DEV, --overwrite true, --min-words-per-minute N"
  exit 1
fi

if [ -n "$decode_config" ] && [ -z "$lm" ]; then echo "$0: --decode-config is for the beam search: give --lm" >&2; exit 1; fi
for f in $manifests/parczech_recordings_all.jsonl.gz "${inputs[@]}" $chunk_config $lm $decode_config; do
  if [ ! -f "$f" ]; then echo "$0: no such file: $f" >&2; exit 1; fi
done

opts=(--prefix parczech --manifest-dir $manifests "${model_opts[@]}" --out-dir $dir)
[ -n "$chunk_config" ] && opts+=(--config "$chunk_config")
[ -n "$lm" ] && opts+=(--lm "$lm")
[ -n "$decode_config" ] && opts+=(--decode-config "$decode_config")
log_dir=$(dirname $dir)/log
mkdir -p $dir $log_dir
job_opts=(--device $device --num-threads $num_threads)
[ -n "$ref_dir" ] && job_opts+=(--ref-dir "$ref_dir")
$overwrite && job_opts+=(--overwrite)
$cmd JOB=1:$nj $log_dir/recognise.JOB.log \
  python -m punct.bin.recognise_long "${opts[@]}" "${job_opts[@]}" --job JOB --nj $nj
rc=0
python -m punct.bin.recognise_long "${opts[@]}" --summary $(dirname $dir)/summary.txt \
  --min-words-per-minute $min_words_per_minute 2> $log_dir/summary.log || rc=$?
[ -f $(dirname $dir)/summary.txt ] && sed "s|^|$0: |" $(dirname $dir)/summary.txt
if [ $rc -ne 0 ]; then
  grep -h "ERROR" $log_dir/summary.log >&2 || tail -n 5 $log_dir/summary.log >&2
  echo "$0: stopped (see $log_dir/summary.log)" >&2
  exit 1
fi
