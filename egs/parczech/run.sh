#!/usr/bin/env bash
# Speech-informed inverse text normalisation on ParCzech 3.0 (Stankov 2024): a segment
# dataset built from long recordings and official transcripts, punctuation (9 marks) and
# capitalisation, a cross-attention audio-text model against text-only and EfficientPunct.
# With no --parczech-root the recipe builds the embedded Czech mini corpus.
#
#   ./run.sh
#   ./run.sh --stage 2 --stop-stage 4
set -euo pipefail
command_line="$0 $*"

# Begin configuration section.
stage=0              # first stage to run
stop_stage=100       # last stage to run
nj=2                 # parallel jobs
parczech_root=       # ParCzech 3.0 original data (mp3 + gold verticals); empty: mini corpus
corpus_size=mini     # tiny or mini, for the mini corpus
device=auto          # auto, cpu or cuda
seed=42              # seed for every random choice
# End configuration section.

help_message=$(cat <<HELP
Usage: $0 [options]
Speech-informed ITN recipe (egs/parczech).  Stages:
  0  corpus -> lhotse manifests of long recordings and official transcripts   data/long
  1  features, acoustic model, chunked recognition with CTC segmentation        exp/asr
  2  align recognised and official words (Needleman-Wunsch), build segments     data/segments
  3  text-only, cross-attention, EfficientPunct models                           exp/*
  4  score with bootstrap confidence intervals                                   exp/results
Options (defaults in brackets):
  --stage N            first stage [${stage}]
  --stop-stage N       last stage [${stop_stage}]
  --nj N               parallel jobs [${nj}]
  --parczech-root DIR  ParCzech 3.0 original data [${parczech_root}]
  --corpus-size SIZE   tiny or mini [${corpus_size}]
  --device DEV         auto, cpu or cuda [${device}]
  --seed N             random seed [${seed}]
HELP
)

. ./path.sh
. ./cmd.sh
. utils/parse_options.sh
. utils/log.sh

if [ $# -ne 0 ]; then
  echo "$0: unexpected arguments: $*" >&2
  exit 2
fi

log "$command_line"
for n in 0 1 2 3 4; do
  if [ $stage -le $n ] && [ $stop_stage -ge $n ]; then
    echo "$0: stage $n is not implemented yet (issue 7)" >&2
    exit 1
  fi
done
log "$0: success"
