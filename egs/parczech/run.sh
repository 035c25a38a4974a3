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
am_cpu_ranks=        # stage 1 on the CPU: the AM trains as this many processes (DDP over gloo) of one thread each, each
                     # rank taking max_duration seconds of speech per step; empty: 2 for --corpus-size small (a second
                     # thread added 8 % to one process' speed here, a second process nearly doubles it), else 1
mm_jobs=4            # stage-4 trainings at once, one thread each (4: all of them; on 2 cores the system shares the
                     # cores, so that none idles while the last model trains, as one would with 2 at a time)
parczech_root=       # ParCzech 3.0 original data (mp3 + gold verticals); empty: mini corpus
corpus_size=mini     # tiny, mini or small (~6.7 h, 56 speakers, test set of about a thousand segments), for the mini corpus;
                     # <H>h: small's voices with about H hours of training speech (benchmarks/bench_scale.py), treated as
                     # small below; it has no configs of its own: give --conf-suffix (the benchmark writes conf/*_scale.yaml)
prosody=natural      # mini corpus: what espeak-ng is told about the marks: natural (the words, with pauses drawn by
                     # conf/prosody.yaml), marks (, . ! ? : ; spoken as pauses and tones) or none (the words alone);
                     # the corpus goes to data/corpus_<size>_<prosody>
words_from=auto      # recognised words: am (chunked CTC recognition), synth (the mini corpus'
                     # synthesizer transcript), a folder of <id>.words.tsv; auto: am with --asr-model, for
                     # ParCzech and for --corpus-size small, else (the mini and tiny corpora) synth
asr_model=           # a pretrained CTC ASR model for stage 2: a local transformers folder (processor + model,
                     # e.g. a Czech wav2vec2); empty: stage 2 recognises with the recipe's AM
lm_order=3           # stage 2 decodes by beam search with a word n-gram LM of this order estimated on the
                     # official transcripts (thesis 4.2.2: 3), values in conf/decode<suffix>.yaml; 0: greedy
min_words_per_minute= # stage 2 stops when fewer words per minute of audio were recognised (the recogniser learned
                     # nothing); empty: 10, or 0 (no check) for --corpus-size tiny, whose toy AM recognises almost nothing
am_dir=              # a trained acoustic model (exp/am format: best-valid-loss.pt, tokens.txt, mfcc.yaml) for
                     # recognition (unless --asr-model), EfficientPunct (stage 5: layer-12 embeddings) and the
                     # cross-attention models' audio encoder when conf/mm<suffix>.yaml has sound_encoder: am;
                     # empty: stage 1 trains one (on --am-data, or on the mini corpus' utterances)
am_data=             # utterance-level AM training data for stage 1 (any corpus, e.g. the ParCzech ASR release
                     # as a Kaldi data dir): a Kaldi data dir (wav.scp, text, optional segments, utt2spk), a
                     # folder of lhotse manifests (*recordings* + *supervisions*, or *cuts*), or a cuts manifest;
                     # text and dev-part rules in conf/utterances.yaml; empty: utterances cut from the mini corpus
am_data_dev=         # the dev part of --am-data in the same forms; empty: --am-data's speakers holding a seeded ~10 % of its hours
am_init=             # stage 1 starts from this trained AM checkpoint with the same layer dims (e.g.
                     # ../mustc/exp/am/best-valid-loss.pt) and uses conf/am<suffix>_init.yaml
text_model=          # text encoder of stage 4 (and so of stage 5's text features): a local folder that transformers'
                     # AutoTokenizer/AutoModel read, of any BERT-like type, cased or not (e.g. RobeCzech, RoBERTa:
                     # the thesis'); empty: conf/mm<suffix>.yaml's bert_model ("" there: the offline MiniLM, with
                     # the Czech letters added to its vocabulary when text_letters lists them: conf/mm.yaml)
conf_suffix=         # config variant: conf/{am,decode,segments,mm,tdnn}<suffix>.yaml; empty: _<corpus-size> for the
                     # mini corpus (_tiny: toy models for the tests), none for ParCzech
device=auto          # auto, cpu or cuda (auto: cuda when the backend in cmd.sh offers a GPU)
ngpu=1               # GPUs per training (torchrun ranks, one GPU each); inference jobs use one GPU each
amp=                 # mixed precision of training: none, bf16, fp16 (CUDA only), auto
                     # or fastest (timed); empty: auto on cuda, else
                     # each config's (float32, except conf/am_small.yaml: auto = bf16 where the hardware computes in it natively)
seed=42              # seed for every random choice
# End configuration section.

help_message=$(cat <<HELP
Usage: $0 [options]
Speech-informed ITN recipe (egs/parczech).  Stages:
  0  corpus -> lhotse manifests of long recordings and official transcripts   data/manifests
  1  acoustic model (unless --am-dir) on --am-data, or on utterances cut from
     the mini corpus' recordings                                                exp/am
  2  recognised words with times (chunked CTC recognition with the AM or
     --asr-model, or --words-from)                                              exp/asr/words
  3  align recognised and official words (Needleman-Wunsch), build segments     data/segments
  4  text-only, cross-attention (+PE, random audio) models; decode dev/test
     (sound encoder: conv, or the stage-1 AM with sound_encoder: am)            exp/{text,mm,mm_pe,mm_pe_random}
  5  EfficientPunct: layer-12 + text-model word vectors, TDNN with a case head,
     ensemble with the text-only model                                          exp/efficientpunct{,_tdnn}
  6  score with bootstrap confidence intervals: RESULTS.md, results.json
     (the input of punct.bin.results_table), plots                              exp/results
  7  export stage 4's text-only and cross-attention models as one folder with
     its model card (punct-export; punctuate_itn --model exp/model)             exp/model
Options (defaults in brackets):
  --stage N            first stage [${stage}]
  --stop-stage N       last stage [${stop_stage}]
  --nj N               parallel jobs [${nj}]
  --am-cpu-ranks N     stage-1 AM training on the CPU as N one-thread DDP processes; empty: 2 for small, else 1 [${am_cpu_ranks}]
  --mm-jobs N          stage-4 trainings at once [${mm_jobs}]
  --parczech-root DIR  ParCzech 3.0 original data [${parczech_root}]
  --corpus-size SIZE   tiny, mini, small or <H>h (benchmarks/bench_scale.py; needs --conf-suffix) [${corpus_size}]
  --prosody P          mini corpus speech: natural (pauses and question rises drawn from conf/prosody.yaml),
                       marks (marks spoken), none (words alone); data/corpus_<size>_<prosody> [${prosody}]
  --words-from SRC     am, synth or a folder of <id>.words.tsv [${words_from}]
  --asr-model DIR      transformers CTC folder (e.g. wav2vec2) for stage-2 recognition instead of the AM [${asr_model}]
  --lm-order N         stage-2 beam search with a word N-gram LM of the official transcripts; 0: greedy [${lm_order}]
  --min-words-per-minute N  stage 2 stops below N recognised words per audio minute; empty: 10 (tiny: 0) [${min_words_per_minute}]
  --am-dir DIR         trained AM for recognition and EfficientPunct (no stage-1 training) [${am_dir}]
  --am-data DIR        stage-1 AM training utterances: Kaldi data dir or lhotse manifests [${am_data}]
  --am-data-dev DIR    their dev part; empty: speakers with a seeded ~10 % of --am-data's hours [${am_data_dev}]
  --am-init CKPT       stage-1 training starts from this AM checkpoint [${am_init}]
  --text-model DIR     text encoder folder (AutoTokenizer/AutoModel, e.g. RobeCzech) of stage 4 and of the
                       stage-5 text features; empty: the config's bert_model (offline MiniLM) [${text_model}]
  --conf-suffix SFX    use conf/{am,decode,segments,mm,tdnn}SFX.yaml; empty: _<corpus-size> for the mini corpus [${conf_suffix}]
  --device DEV         auto, cpu or cuda [${device}]
  --ngpu N             GPUs per training (DDP under torchrun) [${ngpu}]
  --amp MODE           mixed precision of training: none, bf16, fp16, auto, fastest; empty: auto on cuda, else each config's [${amp}]
  --seed N             random seed [${seed}]
HELP
)

. ./path.sh
. ./cmd.sh
. utils/parse_options.sh
. utils/recipe.sh   # log, no_positional_arguments, network_options

no_positional_arguments "$@"

# The network stages: $device (auto -> cpu or cuda), their runners $train_net_cmd (--ngpu GPUs on cuda) and
# $decode_net_cmd (one GPU per job), and $train_opts of every training (on cuda an empty --amp is auto).
network_options "$device" "$ngpu" "$amp" "$seed"

conf_suffix_note="(--conf-suffix)"
# A corpus of <H>h (H hours of training speech, the scaling benchmark's) is built and run as the small one
like_size=$corpus_size
[[ $corpus_size =~ ^[0-9]+(\.[0-9]+)?h$ ]] && like_size=small
if [ -z "$parczech_root" ]; then
  corpus_dir=data/corpus_${corpus_size}_${prosody}
  if [ -z "$conf_suffix" ] && [ "$like_size" != "$corpus_size" ]; then
    echo "$0: --corpus-size $corpus_size has no configs of its own: give --conf-suffix (benchmarks/bench_scale.py" \
      "writes conf/{am,decode,segments,mm,tdnn}_scale.yaml)" >&2
    exit 2
  fi
  if [ -z "$conf_suffix" ]; then
    conf_suffix=_${corpus_size}
    conf_suffix_note="(from --corpus-size $corpus_size)"
  fi
else
  corpus_dir=$parczech_root
fi
case $prosody in
  marks|none) prosody_config_opt= ;;
  natural) prosody_config_opt="--prosody-config conf/prosody.yaml" ;;
  *) echo "$0: --prosody must be marks, none or natural, got '$prosody'" >&2; exit 2 ;;
esac
if [ "$words_from" = auto ]; then
  if [ -z "$parczech_root" ] && [ -z "$asr_model" ] && [ "$like_size" != small ]; then
    words_from=synth
  else
    words_from=am
  fi
fi
if [ -n "$am_dir" ] && [ -n "$am_data" ]; then
  echo "$0: --am-dir gives a trained AM (stage 1 trains none) and --am-data training data for stage 1: give one" >&2
  exit 2
fi
if [ -n "$am_data_dev" ] && [ -z "$am_data" ]; then
  echo "$0: --am-data-dev is the dev part of --am-data: give --am-data too" >&2
  exit 2
fi
if [ -n "$asr_model" ] && [ "$words_from" != am ]; then
  echo "$0: --asr-model recognises the recordings in stage 2, but --words-from is $words_from (use am or auto)" >&2
  exit 2
fi
am=${am_dir:-exp/am}
mm_opts=()
if [ -n "$text_model" ]; then
  if [ ! -f "$text_model/config.json" ]; then
    echo "$0: --text-model $text_model: no config.json there (a local folder of transformers model and tokenizer files)" >&2
    exit 1
  fi
  text_model=$(readlink -f "$text_model")
  mm_opts=(--bert-model "$text_model")
fi
# The stage-4 models: conf/models/<name>.conf holds the options of local/train_mm.sh for exp/<name>
# (thesis 5.3, 5.6-5.8) and its row name in RESULTS.md; their hyper-parameters are conf/mm<suffix>.yaml.
mm_models="text mm mm_pe mm_pe_random"

log "$command_line"
log "config variant: conf/{am,decode,segments,mm,tdnn}${conf_suffix}.yaml $conf_suffix_note"
for f in conf/decode${conf_suffix}.yaml conf/segments${conf_suffix}.yaml conf/mm${conf_suffix}.yaml conf/tdnn${conf_suffix}.yaml; do
  [ -f $f ] || { echo "$0: no such file $f (--conf-suffix '$conf_suffix')" >&2; exit 1; }
done

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  log "Stage 0: corpus -> lhotse manifests of long recordings and official words: ${corpus_dir} -> data/manifests"
  if [ -z "$parczech_root" ]; then
    # The embedded Czech mini corpus (fortunes-cs read by espeak-ng) in ParCzech layout.  A built
    # corpus is kept; rebuild it with: local/build_czech_corpus.sh --overwrite true --size $corpus_size $corpus_dir
    local/build_czech_corpus.sh --size $corpus_size --seed $seed --prosody $prosody $prosody_config_opt $corpus_dir
  fi
  local/prepare.sh $corpus_dir data/manifests
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ] && [ -z "$am_dir" ] && [ -z "$am_data" ] && [ -n "$parczech_root" ] \
    && [ -n "$asr_model" ]; then
  log "Stage 1: skipped: stage 2 recognises with --asr-model $asr_model; stage 5 (EfficientPunct) needs the" \
    "recipe's AM for its layer-12 embeddings: give one with --am-dir (or training data with --am-data)," \
    "or stop at stage 4"
elif [ $stage -le 1 ] && [ $stop_stage -ge 1 ] && [ -z "$am_dir" ]; then
  if [ -n "$parczech_root" ] && [ -z "$am_data" ]; then
    echo "$0: ParCzech's original data has no utterance-level transcripts to train an acoustic model on;" >&2
    echo "$0: give utterance-level training data with --am-data DIR (a Kaldi data dir or lhotse manifests, e.g." >&2
    echo "$0: the ParCzech ASR release as a Kaldi data dir), or a trained AM with --am-dir DIR (best-valid-loss.pt," >&2
    echo "$0: tokens.txt, mfcc.yaml: the format of exp/am), or recognise with a pretrained transformers CTC model" >&2
    echo "$0: (--asr-model DIR) and stop at stage 4" >&2
    exit 1
  fi
  am_conf=conf/am${conf_suffix}.yaml
  if [ -n "$am_init" ]; then am_conf=${am_conf%.yaml}_init.yaml; fi
  am_use="recognition and EfficientPunct"
  [ -n "$asr_model" ] && am_use="EfficientPunct (stage 5) only: stage 2 recognises with --asr-model"
  if [ -n "$am_data" ]; then
    # Utterances of any corpus (conf/utterances.yaml: the AM's alphabet, tags, CMVN grouping, dev part).
    # cmvn_group: recording (supervision speaker = recording id) normalises as the long-recording recogniser
    # of stage 2 does.  Own folders, so that the mini corpus' utterances and these never mix; changed data
    # is imported again, and its features and exp/am are redone.
    am_manifests=data/am_manifests_import
    am_fbank=data/am_fbank_import
    log "Stage 1: acoustic model for ${am_use} (${am_conf}): ${am_data}${am_data_dev:+ + $am_data_dev}" \
      "-> ${am_manifests} -> ${am_fbank} -> exp/am"
    steps/import_am_data.sh --prefix parczech --seed $seed --import-config conf/utterances.yaml --feat-config conf/mfcc.yaml \
      ${am_data_dev:+--dev "$am_data_dev"} "$am_data" $am_manifests
  else
    am_manifests=data/am_manifests
    am_fbank=data/am_fbank
    log "Stage 1: acoustic model for ${am_use} (${am_conf}): ${corpus_dir}/synth -> ${am_manifests} -> ${am_fbank} -> exp/am"
    # Utterances: the synthesizer's words split at pauses (<= 15 s), one recording held out for the
    # dev WER.  Recognition (stage 2) then runs over recordings the AM was trained on (the thesis' ASR
    # also saw ParCzech speech).  CMVN per recording (supervision speaker = recording id), as in recognition.
    local/prepare_am_data.sh --seed $seed data/manifests $corpus_dir/synth $am_manifests
  fi
  steps/compute_features.sh --cmd "$train_cmd" --nj $nj --prefix parczech --splits "train dev" \
    --feat-config conf/mfcc.yaml $am_manifests $am_fbank
  am_ranks=()
  if [ "$device" = cpu ]; then
    if [ -z "$am_cpu_ranks" ]; then
      am_cpu_ranks=1
      [ "$like_size" = small ] && [ -z "$parczech_root" ] && am_cpu_ranks=2
    fi
    [ "$am_cpu_ranks" -gt 1 ] && am_ranks=(--nproc $am_cpu_ranks --num-threads 1)
  fi
  local/train_am.sh --cmd "$train_net_cmd" --cpu-cmd "$decode_cmd" --am-config $am_conf --init "$am_init" $train_opts \
    "${am_ranks[@]}" $am_fbank exp/am
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  recogniser=
  if [ "$words_from" = am ]; then
    recogniser=": the recipe's AM $am"
    [ -n "$asr_model" ] && recogniser=": transformers CTC model $asr_model"
    if [ "$lm_order" -gt 0 ]; then
      recogniser+=", beam search with a ${lm_order}-gram LM (conf/decode${conf_suffix}.yaml)"
    else
      recogniser+=", greedy decoding"
    fi
  fi
  log "Stage 2: recognised words with times (${words_from}${recogniser}): ${corpus_dir} -> exp/asr/words"
  mkdir -p exp/asr
  case "$words_from" in
    am)
      # 30 s chunks with 5 s overlap, beam search (or greedy) CTC decoding, CTC segmentation for word times, merge
      # at the overlap midpoints; WER against the synthesizer's words when the corpus has them.
      # The two recognisers write to their own folders; exp/asr/words points to the one used.
      if [ -z "$min_words_per_minute" ]; then
        min_words_per_minute=10
        [ "$corpus_size" = tiny ] && [ -z "$parczech_root" ] && min_words_per_minute=0
      fi
      rec_opts=(--cmd "$decode_net_cmd" --nj $nj --device $device --min-words-per-minute $min_words_per_minute)
      [ -d "$corpus_dir/synth" ] && rec_opts+=(--ref-dir $corpus_dir/synth)
      if [ "$lm_order" -gt 0 ]; then
        # Beam search with a word LM of every official transcript, as the thesis' KenLM (4.2.2); an ARPA file
        # whose text did not change is kept (so finished recordings are not recognised again).
        python -m punct.bin.build_word_lm --order $lm_order data/manifests/parczech_supervisions_all.jsonl.gz \
          exp/asr/lm/words.${lm_order}gram.arpa
        rec_opts+=(--lm exp/asr/lm/words.${lm_order}gram.arpa --decode-config conf/decode${conf_suffix}.yaml)
      fi
      if [ -n "$asr_model" ]; then
        local/recognise_long.sh "${rec_opts[@]}" --asr-model "$asr_model" data/manifests exp/asr/asr_model_words
        ln -sfn asr_model_words exp/asr/words
      else
        local/recognise_long.sh "${rec_opts[@]}" data/manifests $am exp/asr/am_words
        ln -sfn am_words exp/asr/words
      fi
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

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  log "Stage 3: align recognised and official words, build segments: exp/asr/words + data/manifests -> data/segments"
  local/build_segments.sh --cmd "$train_cmd" --nj $nj --seed $seed --segments-config conf/segments${conf_suffix}.yaml \
    data/manifests exp/asr/words data/segments
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  # conf/mm.yaml: thesis values; conf/mm_mini.yaml: the mini corpus; conf/mm_small.yaml: the 4 h corpus;
  # conf/mm_tiny.yaml: the tiny corpus (one quick epoch, the end-to-end test).  Their sound_encoder: conv (mel +
  # conv blocks) or am (the acoustic model $am of stage 1 or --am-dir, frozen: thesis 5.5).
  mm_conf=conf/mm${conf_suffix}.yaml
  log "Stage 4: text-only and cross-attention models (${mm_conf}): data/segments -> exp/{${mm_models// /,}}"
  log "text encoder: ${text_model:-bert_model and text_letters of ${mm_conf}}"
  # With sound_encoder: am, the AM's frames of every segment first, once: of the real audio for the models on it,
  # and of the random-audio control's permuted samples (its seed) for mm_pe_random (each ran the AM itself)
  local/dump_am_frames.sh --cmd "$decode_cmd" --nj $nj --model-config $mm_conf --random-audio-seed $seed \
    data/segments $am exp/am_frames
  # One job per model, at most $mm_jobs at a time: job n trains the n-th name of $mm_models with the options
  # in conf/models/<name>.conf.  The jobs run here (utils/run.pl); each training asks $train_net_cmd for
  # its own CPUs or GPUs (or SLURM job), and writes its log to exp/<name>/log/train_mm.log.
  set -- $mm_models
  utils/run.pl --max-jobs-run $mm_jobs JOB=1:$# exp/log/train_mm.JOB.log \
    bash -c 'name=$(echo $1 | cut -d" " -f$0); shift
             local/train_mm.sh --config conf/models/$name.conf "$@" data/segments exp/$name' \
    JOB "$mm_models" --cmd "$train_net_cmd" --model-config $mm_conf --am-dir $am --am-frames exp/am_frames \
    $train_opts "${mm_opts[@]}"
  grep -h "^local/train_mm.sh: " exp/log/train_mm.*.log || true
fi

if [ $stage -le 5 ] && [ $stop_stage -ge 5 ]; then
  # EfficientPunct (Liu & Beigi 2023) on the same segments, with a case head (9 + 2 channels in the last
  # conv layer, loss 0.5 Lp + 0.5 Lc): MFCC of the segment cuts with the AM's own feature config,
  # layer-12 embeddings of the acoustic model, word times straight from the segments' alignment["word"]
  # (CTC segmentation: no forced alignment), word vectors and punct/case posteriors of the text-only
  # model of stage 4 (its checkpoint holds the text encoder's config and tokenizer: --text-model acts through it).
  # conf/tdnn.yaml: paper values; tdnn_mini.yaml / tdnn_small.yaml: the mini / small corpus; tdnn_tiny.yaml: CI.
  tdnn_conf=conf/tdnn${conf_suffix}.yaml
  cuts_pattern="parczech_cuts_{split}.jsonl.gz"
  if [ ! -f $am/best-valid-loss.pt ]; then
    echo "$0: stage 5 needs the recipe's acoustic model for its layer-12 embeddings: no such file $am/best-valid-loss.pt;" >&2
    echo "$0: give one with --am-dir DIR (--asr-model serves stage-2 recognition only)" >&2
    exit 1
  fi
  log "Stage 5: EfficientPunct with a case head (${tdnn_conf}): data/segments + ${am} + exp/text -> exp/efficientpunct{,_tdnn}"
  steps/compute_features.sh --cmd "$train_cmd" --nj $nj --prefix parczech --feat-config $am/mfcc.yaml \
    data/segments data/fbank_segments
  steps/dump_am_embeddings.sh --cmd "$decode_net_cmd" --cpu-cmd "$decode_cmd" --nj $nj --device $device --prefix parczech \
    data/fbank_segments $am exp/emb_am_segments
  local/dump_itn_text.sh --cmd "$decode_net_cmd" --nj $nj --device $device data/segments exp/text exp/emb_text
  # The TDNN trains alone: with $nj threads (a small run's epochs on 2 cores: 16 instead of 26 s with one thread;
  # another thread count sums in another order, so its numbers differ in the last digits and the training drifts)
  steps/train_tdnn.sh --cmd "$train_net_cmd" --model-config $tdnn_conf --cuts-pattern "$cuts_pattern" \
    --num-threads $nj $train_opts data/fbank_segments exp/emb_am_segments exp/emb_text exp/efficientpunct_tdnn
  steps/decode_tdnn.sh --cmd "$decode_net_cmd" --nj $nj --device $device --cuts-pattern "$cuts_pattern" \
    data/fbank_segments exp/emb_am_segments exp/emb_text exp/efficientpunct_tdnn
  # exp/efficientpunct_tdnn/decode: the TDNN alone; exp/efficientpunct/decode: the per-head ensemble
  # with the text-only model, each head's alpha chosen on dev by the paired rule (as egs/mustc's stage 8: the dev argmax
  # unless a mixture's gain over the better single model is within one paired bootstrap SE; the rule, the dev argmax,
  # the gain and its SE in exp/efficientpunct/alpha.json; local/ensemble_itn.sh --alpha-rule one-se|argmax: the others).
  local/ensemble_itn.sh data/segments exp/emb_text exp/efficientpunct_tdnn exp/efficientpunct
fi

if [ $stage -le 6 ] && [ $stop_stage -ge 6 ]; then
  log "Stage 6: score dev and test with bootstrap confidence intervals: exp/*/decode -> exp/results"
  models=()
  for name in $mm_models; do
    models+=("exp/$name:$(. conf/models/$name.conf; echo "$results_row")")
  done
  if [ -f exp/efficientpunct/decode/test.jsonl ]; then  # stage 5's rows replace the EfficientPunct placeholder
    models+=("exp/efficientpunct_tdnn:EfficientPunct TDNN" "exp/efficientpunct:EfficientPunct ensemble")
  fi
  # The pause-only baseline of the punctuation head: a small classifier on the segments' word times alone (silence
  # after and before each word, its duration, last word or not), fit on train, chosen on dev by macro F1; case blank.
  # Its first-word rule is that of the first stage-4 model's predictions, so that every row is scored alike.
  set -- $mm_models
  python -m punct.bin.train_pause_itn --prefix parczech --segments-dir data/segments --rule-from exp/$1 --seed $seed \
    --exp-dir exp/pause
  models+=("exp/pause:pause-only")
  # results.json also records the run's seed, the AM's dev WER (stage 1) and the recognition WER (stage 2 with
  # --words-from am on the mini corpus), for python -m punct.bin.results_table (the RESULTS.md table).
  local/score_itn.sh --seed $seed --run-seed $seed --am-dir $am --words-dir exp/asr/words \
    exp/results "${models[@]}"
fi
if [ $stage -le 7 ] && [ $stop_stage -ge 7 ]; then
  log "Stage 7: export the punctuate_itn models and their model card: exp/{text,mm,mm_pe} + exp/results -> exp/model"
  # The models a user runs (not the random-audio control), the default the best of them on dev; with
  # sound_encoder: am the AM they read is copied too.  The card is made from exp/results/results.json.
  if [ -z "$parczech_root" ]; then
    card_opts=(--corpus "punct Czech mini corpus ($corpus_size)" --synthetic --prosody $prosody
               --corpus-licence "text: Debian's fortunes-cs, GPL; speech: espeak-ng")
  else
    card_opts=(--corpus "ParCzech 3.0" --corpus-licence "ParCzech 3.0's (see its LINDAT/CLARIAH-CZ record)")
  fi
  python -m punct.bin.export_model --kind itn --recipe-dir . --prefix parczech --manifests-dir data/segments \
    --systems "$(echo $mm_models | tr ' ' '\n' | grep -vx mm_pe_random | paste -sd,)" --out exp/model \
    --language cs "${card_opts[@]}" --command "$command_line"
fi

log "$0: success"
