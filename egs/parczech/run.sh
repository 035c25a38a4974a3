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
words_from=auto      # recognised words: am (chunked CTC recognition), synth (the mini corpus'
                     # synthesizer transcript), a folder of <id>.words.tsv; auto: synth for the mini corpus, else am
conf_suffix=         # config variant: conf/segments${conf_suffix}.yaml; empty: _mini for the mini corpus
device=auto          # auto, cpu or cuda
seed=42              # seed for every random choice
# End configuration section.

help_message=$(cat <<HELP
Usage: $0 [options]
Speech-informed ITN recipe (egs/parczech).  Stages:
  0  corpus -> lhotse manifests of long recordings and official transcripts   data/manifests
  1  recognised words with times (chunked CTC recognition, or --words-from)    exp/asr/words
  2  align recognised and official words (Needleman-Wunsch), build segments     data/segments
  3  text-only, cross-attention (+PE, random audio) models; decode dev/test    exp/{text,mm,mm_pe,mm_pe_random}
  4  score with bootstrap confidence intervals, RESULTS.md, plots               exp/results
Options (defaults in brackets):
  --stage N            first stage [${stage}]
  --stop-stage N       last stage [${stop_stage}]
  --nj N               parallel jobs [${nj}]
  --parczech-root DIR  ParCzech 3.0 original data [${parczech_root}]
  --corpus-size SIZE   tiny or mini [${corpus_size}]
  --words-from SRC     am, synth or a folder of <id>.words.tsv [${words_from}]
  --conf-suffix SFX    use conf/segments\${conf_suffix}.yaml [${conf_suffix}]
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

if [ -z "$parczech_root" ]; then
  corpus_dir=data/corpus_${corpus_size}
  conf_suffix=${conf_suffix:-_mini}
else
  corpus_dir=$parczech_root
fi
if [ "$words_from" = auto ]; then
  if [ -z "$parczech_root" ]; then words_from=synth; else words_from=am; fi
fi

log "$command_line"

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  log "Stage 0: corpus -> lhotse manifests of long recordings and official words: ${corpus_dir} -> data/manifests"
  if [ -z "$parczech_root" ]; then
    # The embedded Czech mini corpus (fortunes-cs read by espeak-ng) in ParCzech layout.  A built
    # corpus is kept; rebuild it with: local/mini/build_czech_corpus.sh --overwrite true --size $corpus_size $corpus_dir
    local/mini/build_czech_corpus.sh --size $corpus_size --seed $seed $corpus_dir
  fi
  local/parczech/prepare.sh $corpus_dir data/manifests
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  log "Stage 1: recognised words with times (${words_from}): ${corpus_dir} -> exp/asr/words"
  mkdir -p exp/asr
  case "$words_from" in
    am)
      # 30 s chunks with 5 s overlap (punct.itn.chunks), greedy CTC decoding with the acoustic model
      # of punct/am, CTC segmentation for word times, merge at the overlap midpoints.
      echo "$0: stage 1 with --words-from am needs the acoustic model (punct/am); not implemented yet (issue 7)" >&2
      exit 1
      ;;
    synth)
      if [ ! -d "$corpus_dir/synth" ]; then
        echo "$0: --words-from synth needs $corpus_dir/synth (the mini corpus' synthesizer transcript)" >&2
        exit 1
      fi
      ln -sfn "$(readlink -f "$corpus_dir/synth")" exp/asr/words
      ;;
    *)
      if [ ! -d "$words_from" ]; then echo "$0: no such directory: $words_from" >&2; exit 1; fi
      ln -sfn "$(readlink -f "$words_from")" exp/asr/words
      ;;
  esac
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  log "Stage 2: align recognised and official words, build segments: exp/asr/words + data/manifests -> data/segments"
  local/parczech/build_segments.sh --cmd "$train_cmd" --nj $nj --seed $seed --segments-config conf/segments${conf_suffix}.yaml \
    data/manifests exp/asr/words data/segments
fi

# The four models of stage 3 (thesis 5.3, 5.6-5.8) and the row names of RESULTS.md:
# <exp dir>:<model>:<positional>:<random audio>:<row name>
mm_models="text:text:false:false:text-only mm:mm:false:false:multimodal mm_pe:mm:true:false:multimodal+PE
           mm_pe_random:mm:true:true:random-audio"

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  # conf/mm.yaml: thesis values; conf/mm_mini.yaml: the mini corpus; conf/mm_tiny.yaml: the
  # tiny corpus (one quick epoch, the end-to-end test).
  mm_conf=conf/mm${conf_suffix}.yaml
  if [ -z "$parczech_root" ] && [ "$corpus_size" = tiny ]; then mm_conf=conf/mm_tiny.yaml; fi
  log "Stage 3: text-only and cross-attention models (${mm_conf}): data/segments -> exp/{text,mm,mm_pe,mm_pe_random}"
  pids=()
  for m in $mm_models; do
    IFS=: read -r name kind positional random_audio _ <<< "$m"
    steps/train_mm.sh --cmd "$cuda_cmd" --model $kind --model-config $mm_conf --positional $positional \
      --random-audio $random_audio --device $device --seed $seed data/segments exp/$name &
    pids+=($!)
    if [ ${#pids[@]} -ge $nj ]; then  # at most $nj trainings at a time
      wait ${pids[0]} || { echo "$0: a training failed; see exp/*/log/train_mm.log" >&2; exit 1; }
      pids=("${pids[@]:1}")
    fi
  done
  for pid in "${pids[@]}"; do wait $pid || { echo "$0: a training failed; see exp/*/log/train_mm.log" >&2; exit 1; }; done
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  log "Stage 4: score dev and test with bootstrap confidence intervals: exp/{text,mm,mm_pe,mm_pe_random}/decode -> exp/results"
  # An EfficientPunct row is added by giving its decode folder (same jsonl format) as one more
  # "<dir>:<row name>" argument, e.g. exp/efficientpunct:EfficientPunct.
  models=()
  for m in $mm_models; do
    IFS=: read -r name _ _ _ row <<< "$m"
    models+=("exp/$name:$row")
  done
  steps/score_itn.sh --seed $seed exp/results "${models[@]}"
fi
log "$0: success"
