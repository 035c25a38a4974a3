#!/usr/bin/env bash
# EfficientPunct on MuST-C (Liu & Beigi 2023): multimodal punctuation restoration with
# acoustic embeddings from a TDNN acoustic model, BERT word vectors, a punctuation TDNN,
# and a TDNN+BERT ensemble.  With no --mustc-root the recipe builds the embedded English
# mini corpus (espeak-ng over Jane Austen) and runs end to end on it.
#
#   ./run.sh                                  # everything, mini corpus
#   ./run.sh --stage 3 --stop-stage 5         # a range of stages
#   ./run.sh --mustc-root /data/MUSTC_v1.0/en-de --unipunc-dir /data/unipunc \
#     --bert-model bert-base-uncased        # the paper's settings (README: differences from the paper)
#   ./run.sh --manifests data/libritts --train-parts train-clean-100 --dev-part dev-clean \
#     --test-part test-clean --text-field orig_text   # a corpus of your own: lhotse manifests (or --data-dir)
set -euo pipefail
command_line="$0 $*"
run_args=("$@")

# Begin configuration section.
stage=0              # first stage to run
stop_stage=100       # last stage to run
nj=2                 # parallel jobs for features, alignment and embedding dumps
mustc_root=          # MuST-C v1/v2 en-X directory (holds data/{train,dev,tst-COMMON}); empty: mini corpus
manifests=           # instead: lhotse manifests of your own corpus, <corpus>_{recordings,supervisions}_<part>.jsonl.gz
                     # with punctuated text (what lhotse's prepare_* recipes write)
data_dir=            # instead: Kaldi data dirs of your own corpus, <dir>/<part>/{wav.scp,text[,segments,utt2spk]}
                     # with punctuated text
train_parts=train    # --manifests/--data-dir: comma-separated parts that make the train split
dev_part=dev         # --manifests/--data-dir: the part (or comma-separated parts) of the dev split
test_part=test       # --manifests/--data-dir: the part (or comma-separated parts) of the test split
text_field=text      # --manifests: the supervisions' field with the punctuated text: text, or a key of their
                     # custom (LibriTTS: orig_text; its text is the normalized one)
unipunc_dir=         # folder with UniPunc's train-audio.json/test-audio.json (optional)
corpus_size=mini     # mini corpus size when no --mustc-root: tiny (tests) or mini (about an hour)
am_extra_size=none   # AM-only extra talks beside the mini corpus: mini_am (~1.7 h of other voices) or none
conf_suffix=         # conf/<model><suffix>.yaml; default "_mini" (or "_tiny") for the mini corpus, "" for MuST-C
bert_model=          # local folder or hub name of the BERT encoder; empty: conf/bert*.yaml's (there: the offline
                     # MiniLM); the paper's is bert-base-uncased
bert_loss=           # stage 5's loss: ce, scl (CE + lambda SCL, Huang et al.) or focal; empty: conf/bert*.yaml's
                     # (conf/bert.yaml: ce, the paper's; mini: ce, chosen on dev; tiny: scl, so that CI trains it)
bert_extra_text=auto # punctuated prose (no audio) added to stage 5's training text: a file, none, or auto = the
                     # mini corpus' text/train_extra.txt (50k words of the training novels), none for MuST-C
tdnn_config=         # stage 7's config; empty: conf/tdnn<suffix>.yaml (conf/tdnn_window.yaml: EfficientPunct's exact windows)
tdnn_word_vectors=auto  # BERT word vectors of stage 6 that the TDNN fuses: fine-tuned (stage 5's encoder, the
                     # paper), pretrained (the encoder before stage 5), or auto = fine-tuned, but pretrained for
                     # --corpus-size mini --prosody marks (dev ensemble F1, corpus seed 2026, seeds 1-3: 73.1 / 71.0 /
                     # 74.3 against 68.8 / 72.6 / 69.0 fine-tuned); under natural fine-tuned (corpus seed 3141, seeds
                     # 1-3, dev: TDNN 59.5 +- 3.2 against 51.7 +- 0.4, ensemble 60.0 +- 2.4 against 59.2 +- 2.0)
device=auto          # auto, cpu or cuda (auto: cuda when the backend in cmd.sh offers a GPU)
ngpu=1               # GPUs per training stage (torchrun ranks, one GPU each); inference jobs use one GPU each
amp=                 # mixed precision of training: none, bf16, fp16 (CUDA only), auto
                     # or fastest (timed); empty: auto on cuda,
                     # else each config's (float32 but conf/bert_mini.yaml: auto = bf16 where the hardware computes in it natively)
seed=42              # seed of every training and sampling choice (models, batches, UniPunc dev split)
corpus_seed=42       # seed of the mini corpus (text, voices, pauses): fixed, so that --seed varies only training
prosody=natural      # mini corpus: what espeak-ng is told about the marks: natural (the words, with pauses drawn by
                     # conf/prosody.yaml), marks (the punctuated text, every mark spoken as a pause) or none (the words
                     # alone); the corpus goes to data/corpus_<size>_<prosody>
overlap_branches=true  # stages 5-6 (BERT, text only) run in the background beside stages 1-4 (features, acoustic model)
branch_threads=      # torch threads of stages 2 and 5; empty: 1 when the branches overlap on one machine, else torch's default
# End configuration section.

help_message=$(cat <<HELP
Usage: $0 [options]
EfficientPunct recipe (egs/mustc).  Stages:
  0  corpus -> lhotse manifests (builds the mini corpus when no --mustc-root)   data/manifests
  1  kaldi-native-fbank MFCC (40-dim hires) and CMVN                            data/fbank
  2  train the TDNN acoustic model (CTC over characters; + data/fbank_am)        exp/am
  3  CTC forced alignment of the reference words, greedy WER                   exp/am/ali
  4  dump layer-12 acoustic embeddings to ark/scp shards                         exp/emb_am
  5  fine-tune BERT for punctuation (loss from conf/bert*.yaml: ce, scl, focal)  exp/bert
  6  dump per-word BERT vectors (--tdnn-word-vectors) and posteriors            exp/emb_bert
  7  train the punctuation TDNN on fused windows                                 exp/tdnn
  8  score BERT, TDNN, ensemble and pause-only; choose alpha on dev; tables    exp/results, exp/pause
  9  export the punctuator as one folder with its model card (punct-export)    exp/model
Options (defaults in brackets):
  --stage N            first stage [${stage}]
  --stop-stage N       last stage [${stop_stage}]
  --nj N               parallel jobs [${nj}]
  --mustc-root DIR     MuST-C en-X directory; empty builds the mini corpus [${mustc_root}]
  --manifests DIR      instead of MuST-C: lhotse manifests <corpus>_{recordings,supervisions}_<part>.jsonl.gz,
                       punctuated text (lhotse's prepare_* recipes write them) [${manifests}]
  --data-dir DIR       instead of MuST-C: Kaldi data dirs DIR/<part>/{wav.scp,text} (+ segments, utt2spk),
                       punctuated text [${data_dir}]
  --train-parts A,B    parts of --manifests/--data-dir that make train [${train_parts}]
  --dev-part X         part(s) that make dev [${dev_part}]
  --test-part Y        part(s) that make test [${test_part}]
  --text-field F       --manifests: supervision field with the punctuated text: text or a custom key
                       (LibriTTS: orig_text) [${text_field}]
  --unipunc-dir DIR    UniPunc split (train-audio.json, test-audio.json) [${unipunc_dir}]
  --corpus-size SIZE   tiny or mini, for the mini corpus; <H>h: about H hours of training talks (benchmarks/bench_scale.py;
                       needs --conf-suffix) [${corpus_size}]
  --am-extra-size S    AM-only extra talks beside the mini corpus: mini_am or none [${am_extra_size}]
  --conf-suffix S      use conf/<model>S.yaml [${conf_suffix}]
  --bert-model NAME    BERT folder or hub name; empty: the config's (offline MiniLM); the paper's:
                       bert-base-uncased [${bert_model}]
  --bert-loss L        stage 5's loss: ce, scl or focal; empty: the config's (MuST-C and mini: ce;
                       tiny: scl) [${bert_loss}]
  --bert-extra-text F  extra training text of stage 5 (file, none, auto: the mini corpus') [${bert_extra_text}]
  --tdnn-config FILE   stage 7's config; empty: conf/tdnn<suffix>.yaml (paper size in windows: conf/tdnn_window.yaml) [${tdnn_config}]
  --tdnn-word-vectors V  word vectors the TDNN fuses: fine-tuned, pretrained, auto (fine-tuned; pretrained for
                       --corpus-size mini --prosody marks) [${tdnn_word_vectors}]
  --device DEV         auto, cpu or cuda [${device}]
  --ngpu N             GPUs per training stage (DDP under torchrun) [${ngpu}]
  --amp MODE           mixed precision of training: none, bf16, fp16, auto, fastest; empty: auto on cuda, else each config's [${amp}]
  --seed N             random seed of training [${seed}]
  --corpus-seed N      random seed of the mini corpus [${corpus_seed}]
  --prosody P          mini corpus speech: natural (pauses and question rises drawn from conf/prosody.yaml),
                       marks (punctuated text spoken), none (words alone); data/corpus_<size>_<prosody> [${prosody}]
  --overlap-branches B true: stages 5-6 run in the background beside stages 1-4 (log in
                       exp/log/text_branch.log) [${overlap_branches}]; on one machine (PUNCT_BACKEND=local) they
                       share --nj (stages 1, 3, 4: nj - branch threads jobs), on a cluster each gets --nj
  --branch-threads N   torch threads of stages 2 and 5; empty: 1 when overlapping on one machine [${branch_threads}]
Jobs run through \$train_cmd/\$decode_cmd from cmd.sh (PUNCT_BACKEND=local or slurm); on cuda the network
stages (2-8) ask \$cuda_cmd --gpu N instead: training N = --ngpu, inference jobs 1 each.
HELP
)

. ./path.sh
. ./cmd.sh
. utils/parse_options.sh
. utils/recipe.sh   # log, no_positional_arguments, network_options

no_positional_arguments "$@"

# The corpus: the mini corpus (built), MuST-C, or a corpus of your own (lhotse manifests or Kaldi data dirs).
corpus_form=mini
[ -n "$mustc_root" ] && corpus_form=mustc && corpus_dir=$mustc_root
[ -n "$manifests" ] && corpus_form=manifests && corpus_dir=$manifests
[ -n "$data_dir" ] && corpus_form=data-dir && corpus_dir=$data_dir
if [ "$(printf '%s\n' "$mustc_root" "$manifests" "$data_dir" | grep -c .)" -gt 1 ]; then
  echo "$0: give only one of --mustc-root, --manifests and --data-dir" >&2
  exit 2
fi
if [ $corpus_form = mini ]; then
  corpus_dir=data/corpus_${corpus_size}_${prosody}
  if [[ $corpus_size =~ ^[0-9]+(\.[0-9]+)?h$ ]] && [ -z "$conf_suffix" ]; then
    echo "$0: --corpus-size $corpus_size has no configs of its own: give --conf-suffix (benchmarks/bench_scale.py" \
      "writes conf/{am,bert,tdnn}_scale.yaml)" >&2
    exit 2
  fi
  conf_suffix=${conf_suffix:-_${corpus_size}}   # tiny: toy models for CI; mini: the recipe default
  # the tiny corpus' toy TDNN learns only from the fine-tuned vectors
  [ "$tdnn_word_vectors" = auto ] && [ "$corpus_size" = mini ] && [ "$prosody" = marks ] && tdnn_word_vectors=pretrained
else
  am_extra_size=none
fi
case $prosody in
  marks|none) prosody_config_opt= ;;
  natural) prosody_config_opt="--prosody-config conf/prosody.yaml" ;;
  *) echo "$0: --prosody must be marks, none or natural, got '$prosody'" >&2; exit 2 ;;
esac
[ "$tdnn_word_vectors" = auto ] && tdnn_word_vectors=fine-tuned
case $tdnn_word_vectors in
  fine-tuned|pretrained) ;;
  *) echo "$0: --tdnn-word-vectors must be fine-tuned, pretrained or auto, got '$tdnn_word_vectors'" >&2; exit 2 ;;
esac
# --am-extra-size mini_am: the acoustic model also trains on talks of the corpus' training text spoken
# by other voices (data/fbank_am): a lower AM dev WER, but not a better punctuation TDNN (docs/decisions.md).
am_extra_opts=
[ "$am_extra_size" != none ] && am_extra_opts="--extra-train-dirs data/fbank_am"

# The network stages: $device (auto -> cpu or cuda), their runners $train_net_cmd (--ngpu GPUs on cuda) and
# $decode_net_cmd (one GPU per job), and $train_opts of every training (on cuda an empty --amp is auto).
network_options "$device" "$ngpu" "$amp" "$seed"
# Stages 5-6 need only the manifests: with --overlap-branches they run as a second run.sh in the background
# while stages 1-4 compute features, train and use the acoustic model (the AM's small layers keep one CPU core
# busy, not two).
text_branch=
overlap=false
acoustic_nj=$nj   # jobs of stages 1, 3 and 4
text_nj=$nj       # jobs of stage 6 in the background text branch
# The branches share this machine's cores when cmd.sh runs every job here (utils/run.pl: PUNCT_BACKEND=local); on a
# cluster (PUNCT_BACKEND=slurm) each job is an allocation of its own, and both branches get --nj jobs.
jobs_share_machine=false
case "${train_cmd%% *}" in run.pl|*/run.pl) jobs_share_machine=true ;; esac
if $overlap_branches && $jobs_share_machine; then
  # stages 1, 3 and 4 leave the text branch its core(s): with --nj 2 on 2 cores the second job of stages 3-4
  # slowed BERT's last epoch by ~25 s while the acoustic branch had time to spare.  Also when this run starts
  # after stage 2: the job count shards their outputs, and a rerun (--stage 3) must find the default run's shards
  acoustic_nj=$(( nj > ${branch_threads:-1} ? nj - ${branch_threads:-1} : 1 ))
  text_nj=${branch_threads:-1}
fi
if $overlap_branches && [ $stage -le 2 ] && [ $stop_stage -ge 6 ]; then
  overlap=true
  # on a cluster the text branch's jobs keep torch's default threads (their allocation's cores)
  $jobs_share_machine && branch_threads=${branch_threads:-1}
fi
[ -n "$branch_threads" ] && branch_threads_opt="--num-threads $branch_threads" || branch_threads_opt=

log "$command_line"
if $overlap_branches; then
  where=$($jobs_share_machine && echo "jobs share this machine" || echo "each job an allocation of its own")
  log "Jobs of --nj $nj: stages 1, 3 and 4 run $acoustic_nj, the text branch's stage 6 $text_nj ($where: ${train_cmd%% *})"
fi
if [ $corpus_form != mini ] && [ -z "$bert_model" ]; then
  # a real corpus runs the paper's settings but for the encoder: the one conf/bert.yaml names, else the offline MiniLM
  conf_encoder=$(python -c "import sys, yaml; print((yaml.safe_load(open(sys.argv[1])) or {}).get('bert_model') or '')" \
    conf/bert${conf_suffix}.yaml)
  if [ "$(basename "${conf_encoder:-none}")" != bert-base-uncased ]; then
    log "WARNING: no --bert-model: stage 5 fine-tunes ${conf_encoder:-the offline MiniLM (6 layers, hidden 384)}," \
      "not the paper's encoder bert-base-uncased (--bert-model bert-base-uncased, or a local copy of it)"
  fi
fi

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  log "Stage 0: corpus -> lhotse manifests: ${corpus_dir} -> data/manifests"
  if [ $corpus_form = mini ]; then
    # The embedded mini corpus (Jane Austen read by espeak-ng) in MuST-C layout.  A built corpus
    # is kept; rebuild it with: local/build_english_corpus.sh --overwrite true --size $corpus_size $corpus_dir
    local/build_english_corpus.sh --size $corpus_size --seed $corpus_seed --nj $nj --prosody $prosody \
      $prosody_config_opt --normalize-config conf/normalize.yaml $corpus_dir
  fi
  # English text + words and labels per segment (mark -> label mapping: conf/normalize.yaml);
  # test = tst-COMMON, or UniPunc's split with --unipunc-dir.
  if [ $corpus_form = manifests ] || [ $corpus_form = data-dir ]; then
    # Your own corpus: the same manifests, words and labels; other sampling rates resampled to 16 kHz.
    local/prepare_imported.sh --form $corpus_form --train-parts "$train_parts" --dev-part "$dev_part" \
      --test-part "$test_part" --text-field "$text_field" --normalize-config conf/normalize.yaml \
      "$corpus_dir" data/manifests
  else
    local/prepare.sh --seed $seed --normalize-config conf/normalize.yaml \
      ${unipunc_dir:+--unipunc-dir "$unipunc_dir"} $corpus_dir data/manifests
  fi
  if [ "$am_extra_size" != none ]; then
    log "Stage 0: AM-only training talks: data/corpus_${am_extra_size} -> data/manifests_am"
    am_corpus_dir=data/corpus_${am_extra_size}_${prosody}
    local/build_english_corpus.sh --size $am_extra_size --seed $corpus_seed --nj $nj --prosody $prosody \
      $prosody_config_opt --normalize-config conf/normalize.yaml $am_corpus_dir
    local/prepare.sh --splits train --normalize-config conf/normalize.yaml $am_corpus_dir data/manifests_am
  fi
fi

if $overlap; then
  log "Stages 5-6 start in the background beside stages 1-4: exp/log/text_branch.log"
  mkdir -p exp/log
  # its own process group, so that a failing acoustic branch can stop it (the trap below); its stage 6 runs
  # $text_nj job(s) per split (one machine: $branch_threads, the acoustic branch holds the other core(s), and each
  # job loads the encoders; a cluster: --nj)
  setsid "$0" "${run_args[@]}" --stage 5 --stop-stage 6 --overlap-branches false --branch-threads "$branch_threads" \
    --nj $text_nj > exp/log/text_branch.log 2>&1 &
  text_branch=$!
  trap '[ -n "$text_branch" ] && kill -- -$text_branch 2>/dev/null || true' EXIT
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  log "Stage 1: MFCC features: data/manifests -> data/fbank"
  # 40-dim hires MFCC (kaldi-native-fbank), one cut per supervision, per-speaker CMVN stats.
  steps/compute_features.sh --nj $acoustic_nj --cmd "$train_cmd" --prefix mustc --feat-config conf/mfcc.yaml data/manifests data/fbank
  if [ "$am_extra_size" != none ]; then
    steps/compute_features.sh --nj $acoustic_nj --cmd "$train_cmd" --prefix mustc --feat-config conf/mfcc.yaml --splits train \
      data/manifests_am data/fbank_am
  fi
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  log "Stage 2: train the acoustic model: data/fbank -> exp/am"
  # TDNN (tdnn1d-like, 13 layers, CTC over characters); greedy WER on dev/test in exp/am/wer_<split>.txt.
  steps/train_am.sh --cmd "$train_net_cmd" --cpu-cmd "$decode_cmd" --prefix mustc --am-config conf/am${conf_suffix}.yaml $train_opts \
    --hint "AM-only talks beside the mini corpus: ./run.sh --am-extra-size mini_am" \
    $branch_threads_opt $am_extra_opts data/fbank exp/am
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  log "Stage 3: forced alignment and WER: exp/am -> exp/am/ali"
  # Word times in data/fbank/mustc_cuts_<split>_ali.jsonl.gz and exp/am/ali/<split>.ctm; on the mini
  # corpus also the word-start error against the synthesizer's times (exp/am/ali/<split>.ali_error.txt).
  # The tiny CI corpus' toy AM has not seen every character: allow more unalignable cuts there.
  ali_opts=
  [ $corpus_form = mini ] && ali_opts="--word-times-dir $corpus_dir/data"
  [ $corpus_form = mini ] && [ "$corpus_size" = tiny ] && ali_opts="$ali_opts --max-fail 0.5"
  steps/align.sh --nj $acoustic_nj --cmd "$decode_net_cmd" --cpu-cmd "$decode_cmd" --prefix mustc --device $device $ali_opts data/fbank exp/am
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  log "Stage 4: layer-12 embeddings: exp/am -> exp/emb_am"
  # One (frames x dim) matrix per cut id at 100 frames/s, kaldiio two-byte compression; the log also
  # gives the dump throughput at this model's size and at paper size (conf/am.yaml).
  steps/dump_am_embeddings.sh --nj $acoustic_nj --cmd "$decode_net_cmd" --cpu-cmd "$decode_cmd" --prefix mustc --device $device --layer 12 \
    --benchmark-config conf/am.yaml data/fbank exp/am exp/emb_am
fi

if [ -n "$text_branch" ]; then
  log "Stages 5-6: waiting for the background run (exp/log/text_branch.log)"
  if ! wait $text_branch; then
    tail -n 20 exp/log/text_branch.log >&2
    echo "$0: stages 5-6 failed in the background: see exp/log/text_branch.log" >&2
    exit 1
  fi
  text_branch=
  stage=7   # stages 5-6 are done
fi

if [ $stage -le 5 ] && [ $stop_stage -ge 5 ]; then
  case $bert_extra_text in
    none) extra_text= ;;
    auto) extra_text=
      if [ $corpus_form = mini ]; then
        extra_text=$corpus_dir/text/train_extra.txt
        if [ ! -f $extra_text ]; then  # a mini corpus built before the file existed, or manifests made elsewhere
          log "WARNING: no $extra_text: stage 5 trains on the talks only"
          extra_text=
        fi
      fi ;;
    *) extra_text=$bert_extra_text ;;
  esac
  log "Stage 5: fine-tune BERT: data/manifests${extra_text:+ + $extra_text} -> exp/bert"
  steps/train_bert.sh --cmd "$train_net_cmd" --model-config conf/bert${conf_suffix}.yaml \
    --bert-model "$bert_model" --loss "$bert_loss" --extra-text "$extra_text" --normalize-config conf/normalize.yaml \
    $train_opts $branch_threads_opt \
    data/manifests/mustc_supervisions_train.jsonl.gz data/manifests/mustc_supervisions_dev.jsonl.gz exp/bert
fi

if [ $stage -le 6 ] && [ $stop_stage -ge 6 ]; then
  log "Stage 6: BERT word vectors ($tdnn_word_vectors encoder) and posteriors: exp/bert -> exp/emb_bert"
  # The three splits at once (a job's start-up, imports and the encoder, is most of its time): in a default run
  # this stage mostly comes after the acoustic branch has ended, so the cores are free.  A failed one stops the stage.
  pids=()
  for split in train dev test; do
    steps/dump_bert.sh --cmd "$decode_net_cmd" --nj $nj --device $device --word-vectors $tdnn_word_vectors \
      exp/bert/best-valid-f1 data/manifests/mustc_supervisions_${split}.jsonl.gz exp/emb_bert/$split &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait $pid; done
  for split in dev test; do
    python -m punct.bin.score_text --title "BERT text-only, $split" --posteriors exp/emb_bert/$split/post.scp \
      --supervisions data/manifests/mustc_supervisions_${split}.jsonl.gz --out exp/bert/results-$split
  done
fi

if [ $stage -le 7 ] && [ $stop_stage -ge 7 ]; then
  log "Stage 7: train the punctuation TDNN: exp/emb_am + exp/emb_bert -> exp/tdnn"
  # Windows of 301 fused [BERT ; layer-12] frames are cut at load time from the per-utterance shards.
  steps/train_tdnn.sh --cmd "$train_net_cmd" --model-config ${tdnn_config:-conf/tdnn${conf_suffix}.yaml} $train_opts \
    --cuts-pattern "mustc_cuts_{split}_ali.jsonl.gz" data/fbank exp/emb_am exp/emb_bert exp/tdnn
fi

if [ $stage -le 8 ] && [ $stop_stage -ge 8 ]; then
  log "Stage 8: score, ensemble and pause-only baseline: exp/tdnn + exp/emb_bert + exp/am/ali -> exp/results"
  # TDNN posteriors (fully convolutional) for dev and test, alpha chosen on dev, RESULTS.md + plots; the pause-only
  # baseline (exp/pause: a small classifier on stage 3's word times alone, fit on train and chosen on dev) as a row of
  # its own, and paired bootstrap differences of TDNN, ensemble and BERT against it.
  local/score.sh --cmd "$decode_net_cmd" --nj $nj --device $device --am-model-dir exp/am --bert-model-dir exp/bert/best-valid-f1 \
    --supervisions-dir data/manifests --seed $seed --pause-dir exp/pause \
    data/fbank exp/emb_am exp/emb_bert exp/tdnn exp/results
  cat exp/results/RESULTS.md
fi

if [ $stage -le 9 ] && [ $stop_stage -ge 9 ]; then
  log "Stage 9: export the punctuator and its model card: exp/{am,bert,tdnn,results} -> exp/model"
  # What punctuate --model needs and nothing else (no epochs, no optimizer), with README.md made from
  # exp/results/results.json; punctuate is timed on 20 dev utterances with the folder for the card.
  case $corpus_form in
    mini) card_opts=(--corpus "punct English mini corpus ($corpus_size, corpus seed $corpus_seed)" --synthetic
            --prosody $prosody --corpus-licence "text: Jane Austen's novels, public domain; speech: espeak-ng") ;;
    mustc) card_opts=(--corpus "MuST-C ($(basename "$corpus_dir"))" --corpus-licence "CC BY-NC-ND 4.0 (MuST-C)") ;;
    *) card_opts=(--corpus "$(basename "$corpus_dir")") ;;
  esac
  python -m punct.bin.export_model --recipe-dir . --prefix mustc --out exp/model "${card_opts[@]}" \
    --command "$command_line" --speed-cuts data/fbank/mustc_cuts_dev.jsonl.gz
fi

log "$0: success"
