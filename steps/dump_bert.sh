#!/usr/bin/env bash
# Dumps per-word BERT vectors (the final hidden state at each word's last sub-token, words x hidden)
# and per-word posteriors (words x classes softmax) of one split to kaldiio ark/scp shards (stage 6),
# one shard pair per JOB, merged into <out-dir>/vec.scp and <out-dir>/post.scp.
# Finished shards are skipped on a re-run.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl       # job runner
nj=2                   # parallel jobs
device=auto            # auto, cpu or cuda
num_threads=1          # torch threads per job, and the CPUs each job asks its runner for (--num-threads)
batch_size=64          # chunks per forward pass
compression=none       # kaldiio compression of the vectors: none, two_byte, speech_feature
word_vectors=fine-tuned  # encoder of the word vectors: fine-tuned (the model's) or pretrained (the one it started
                         # from); the posteriors are the fine-tuned model's either way
overwrite=false        # rewrite finished shards
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 3 ]; then
  echo "Usage: $0 [options] <model-dir> <supervisions> <out-dir>"
  echo "e.g.: $0 --nj 2 exp/bert/best-valid-f1 data/manifests/mustc_supervisions_dev.jsonl.gz exp/emb_bert/dev"
  echo "Main options: --nj N, --cmd CMD, --device auto|cpu|cuda, --compression none|two_byte, --overwrite true,"
  echo "              --word-vectors fine-tuned|pretrained"
  exit 1
fi
model_dir=$1
sups=$2
dir=$3

for f in $model_dir/punct_model.json $sups; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done
mkdir -p $dir/log

# Shards made by another model (stage 5 retrained) are redone: the model's fingerprint is kept in $dir/model.id.
model_files=()
for f in heads.pt heads.safetensors model.safetensors; do  # heads.pt: folders saved before safetensors heads
  if [ -f $model_dir/$f ]; then model_files+=($model_dir/$f); fi
done
model_id="$(readlink -f $model_dir) $(stat -c '%Y %s' "${model_files[@]}" | tr '\n' ' ')vectors=$word_vectors"
if [ -f $dir/model.id ] && [ "$(cat $dir/model.id)" != "$model_id" ]; then
  echo "$0: $dir was dumped with another model; redoing it"
  overwrite=true
fi
# $dir/num_jobs: the --nj the shards were made with.  A complete set made with another --nj (the background
# text branch of run.sh dumps with one job per split) is kept as it is; an incomplete one is redone at this --nj.
shard_nj=$nj
[ -f $dir/num_jobs ] && shard_nj=$(cat $dir/num_jobs)
complete=true
for n in $(seq $shard_nj); do
  [ -f $dir/vec.$n.scp.done ] && [ -f $dir/post.$n.scp.done ] || complete=false
done
if [ $shard_nj != $nj ] && ! $complete; then
  echo "$0: $dir holds unfinished shards of --nj $shard_nj; redoing them with --nj $nj"
  overwrite=true
fi
extra=()
$overwrite && extra+=(--overwrite)
if ! $overwrite && $complete; then
  echo "$0: all $shard_nj shard pairs in $dir are done; skipping (--overwrite true to redo)"
else
  shard_nj=$nj
  rm -f $dir/model.id
  echo $nj > $dir/num_jobs
  $cmd --num-threads $num_threads JOB=1:$nj $dir/log/dump_bert.JOB.log \
    python -m punct.bin.dump_bert --model-dir $model_dir --supervisions $sups --out-dir $dir \
      --device $device --num-threads $num_threads --batch-size $batch_size --compression $compression \
      --word-vectors $word_vectors \
      --job JOB --nj $nj "${extra[@]}"
  echo "$model_id" > $dir/model.id
fi

for name in vec post; do
  parts=()
  for n in $(seq $shard_nj); do parts+=($dir/$name.$n.scp); done
  python -c "import sys; from punct.io.shards import merge_scps; print(merge_scps(sys.argv[2:], sys.argv[1]))" \
    $dir/$name.scp "${parts[@]}" > $dir/log/merge_$name.log
done
echo "$0: $(wc -l < $dir/vec.scp) utterances in $dir/vec.scp and $dir/post.scp"
