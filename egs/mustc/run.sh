#!/usr/bin/env bash
# EfficientPunct on MuST-C (Liu & Beigi 2023): multimodal punctuation restoration with
# acoustic embeddings from a TDNN acoustic model, BERT word vectors, a punctuation TDNN,
# and a TDNN+BERT ensemble.  With no --mustc-root the recipe builds the embedded English
# mini corpus (espeak-ng over Jane Austen) and runs end to end on it.
#
#   ./run.sh                                  # everything, mini corpus
#   ./run.sh --stage 3 --stop-stage 5         # a range of stages
#   ./run.sh --mustc-root /data/MUSTC_v1.0/en-de --unipunc-dir /data/unipunc   # the real corpus
set -euo pipefail
command_line="$0 $*"

# Begin configuration section.
stage=0              # first stage to run
stop_stage=100       # last stage to run
nj=2                 # parallel jobs for features, alignment and embedding dumps
mustc_root=          # MuST-C v1/v2 en-X directory (holds data/{train,dev,tst-COMMON}); empty: mini corpus
unipunc_dir=         # folder with UniPunc's train-audio.json/test-audio.json (optional)
corpus_size=mini     # mini corpus size when no --mustc-root: tiny (tests) or mini (about an hour)
conf_suffix=         # conf/<model><suffix>.yaml; default "_mini" for the mini corpus, "" for MuST-C
bert_model=          # local folder or hub name of the BERT encoder; empty: the offline MiniLM
device=auto          # auto, cpu or cuda
seed=42              # seed for every random choice
# End configuration section.

help_message=$(cat <<HELP
Usage: $0 [options]
EfficientPunct recipe (egs/mustc).  Stages:
  0  corpus -> lhotse manifests (builds the mini corpus when no --mustc-root)   data/manifests
  1  kaldi-native-fbank MFCC (40-dim hires) and CMVN                            data/fbank
  2  train the TDNN acoustic model (CTC over characters)                         exp/am
  3  CTC forced alignment of the reference words, greedy WER                   exp/am/ali
  4  dump layer-12 acoustic embeddings to ark/scp shards                         exp/emb_am
  5  fine-tune BERT for punctuation (loss from conf/bert*.yaml: ce, scl, focal)  exp/bert
  6  dump per-word BERT vectors and posteriors                                   exp/emb_bert
  7  train the punctuation TDNN on fused windows                                 exp/tdnn
  8  score BERT, TDNN and ensemble; choose alpha on dev; tables and plots        exp/results
Options (defaults in brackets):
  --stage N            first stage [${stage}]
  --stop-stage N       last stage [${stop_stage}]
  --nj N               parallel jobs [${nj}]
  --mustc-root DIR     MuST-C en-X directory; empty builds the mini corpus [${mustc_root}]
  --unipunc-dir DIR    UniPunc split (train-audio.json, test-audio.json) [${unipunc_dir}]
  --corpus-size SIZE   tiny or mini, for the mini corpus [${corpus_size}]
  --conf-suffix S      use conf/<model>S.yaml [${conf_suffix}]
  --bert-model NAME    BERT folder or hub name [${bert_model}]
  --device DEV         auto, cpu or cuda [${device}]
  --seed N             random seed [${seed}]
Jobs run through \$train_cmd/\$decode_cmd/\$cuda_cmd from cmd.sh (PUNCT_BACKEND=local or slurm).
HELP
)

. ./path.sh
. ./cmd.sh
. utils/parse_options.sh
. utils/log.sh

if [ $# -ne 0 ]; then
  echo "$0: unexpected arguments: $*" >&2
  echo "$help_message" >&2
  exit 2
fi

if [ -z "$mustc_root" ]; then
  corpus_dir=data/corpus_${corpus_size}
  conf_suffix=${conf_suffix:-_mini}
else
  corpus_dir=$mustc_root
fi

log "$command_line"

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  log "Stage 0: corpus -> lhotse manifests: ${corpus_dir} -> data/manifests"
  echo "$0: stage 0 is not implemented yet (issue 3)" >&2; exit 1
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  log "Stage 1: MFCC features: data/manifests -> data/fbank"
  echo "$0: stage 1 is not implemented yet (issue 4)" >&2; exit 1
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  log "Stage 2: train the acoustic model: data/fbank -> exp/am"
  echo "$0: stage 2 is not implemented yet (issue 4)" >&2; exit 1
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  log "Stage 3: forced alignment and WER: exp/am -> exp/am/ali"
  echo "$0: stage 3 is not implemented yet (issue 4)" >&2; exit 1
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  log "Stage 4: layer-12 embeddings: exp/am -> exp/emb_am"
  echo "$0: stage 4 is not implemented yet (issue 4)" >&2; exit 1
fi

if [ $stage -le 5 ] && [ $stop_stage -ge 5 ]; then
  log "Stage 5: fine-tune BERT: data/manifests -> exp/bert"
  echo "$0: stage 5 is not implemented yet (issue 5)" >&2; exit 1
fi

if [ $stage -le 6 ] && [ $stop_stage -ge 6 ]; then
  log "Stage 6: BERT word vectors and posteriors: exp/bert -> exp/emb_bert"
  echo "$0: stage 6 is not implemented yet (issue 5)" >&2; exit 1
fi

if [ $stage -le 7 ] && [ $stop_stage -ge 7 ]; then
  log "Stage 7: train the punctuation TDNN: exp/emb_am + exp/emb_bert -> exp/tdnn"
  echo "$0: stage 7 is not implemented yet (issue 6)" >&2; exit 1
fi

if [ $stage -le 8 ] && [ $stop_stage -ge 8 ]; then
  log "Stage 8: score and ensemble: exp/tdnn + exp/emb_bert -> exp/results"
  echo "$0: stage 8 is not implemented yet (issue 6)" >&2; exit 1
fi

log "$0: success"
