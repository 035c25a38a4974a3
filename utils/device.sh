# Which device a stage runs its network on and which runner asks for it.  Source it after cmd.sh:
#   . utils/device.sh
#
#   resolve_device auto|cpu|cuda     prints cpu or cuda; auto is cuda when the backend offers a GPU
#   gpus_available                   prints how many GPUs the backend offers to one job (0: none)
#   stage_cmd DEVICE CPU_CMD [NGPU]  prints the runner of a stage: "$cuda_cmd --gpu NGPU" (default 1)
#                                    on cuda, CPU_CMD ($train_cmd or $decode_cmd) on cpu
#   network_commands DEVICE NGPU     resolves DEVICE into $device and sets $train_net_cmd (NGPU GPUs) and
#                                    $decode_net_cmd (one GPU per job), the runners of the network stages
#   launcher NPROC [TORCHRUN_OPTS]   prints how a training entry point starts: "python" for one process,
#                                    torchrun with NPROC processes per node otherwise (one GPU per rank):
#                                    $PUNCT_TORCHRUN, default "python -m torch.distributed.run" (the environment's
#                                    own torchrun, also where torch comes from another environment's packages)
#   config_value YAML KEY DEFAULT    prints a top-level value of a YAML config (DEFAULT when it has none)
#   loader_workers DEVICE GIVEN YAML the DataLoader workers of a training: GIVEN when not empty, else the
#                                    config's num_workers, at least 2 on cuda (batches ready while the GPU works)
#   gpu_job_threads NPROC WORKERS    the CPUs a training on NPROC GPUs asks its runner for (--num-threads):
#                                    one per rank and one per rank's loader worker, NPROC x (WORKERS + 1)
#
# The GPUs the backend offers: $PUNCT_GPUS when set; on SLURM (PUNCT_BACKEND=slurm) the largest GPU
# count of a node's generic resources (sinfo %G, e.g. gpu:a100:4); locally the GPUs an outer run.pl job
# holds (PUNCT_GPUS_HELD), else the entries of CUDA_VISIBLE_DEVICES when it is set (empty: no GPU; CUDA
# stops at the first invalid entry), else the GPUs nvidia-smi lists.

gpus_available() {
  if [ -n "${PUNCT_GPUS:-}" ]; then
    echo "$PUNCT_GPUS"
  elif [ "${PUNCT_BACKEND:-local}" = slurm ]; then
    { sinfo -h -o '%G' 2>/dev/null || true; } | tr ',' '\n' | awk '
      { sub(/\(.*/, ""); n = split($0, part, ":") }
      part[1] == "gpu" && part[n] ~ /^[0-9]+$/ && part[n] + 0 > max { max = part[n] + 0 }
      END { print max + 0 }'
  elif [ -n "${PUNCT_GPUS_HELD:-}" ]; then
    echo "$PUNCT_GPUS_HELD" | tr ',' '\n' | grep -c . || true
  elif [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | awk '
      { gsub(/^[ \t]+|[ \t]+$/, "") }
      $0 == "" || $0 == "NoDevFiles" || $0 ~ /^-/ { exit }
      { n++ }
      END { print n + 0 }'
  else
    { nvidia-smi -L 2>/dev/null || true; } | grep -c '^GPU' || true
  fi
}

resolve_device() {
  case "$1" in
    cpu|cuda) echo "$1" ;;
    auto) if [ "$(gpus_available)" -gt 0 ]; then echo cuda; else echo cpu; fi ;;
    cuda:*) echo "resolve_device: give --device cuda; each job and rank is given its own GPU" >&2; return 1 ;;
    *) echo "resolve_device: unknown device '$1' (auto, cpu or cuda)" >&2; return 1 ;;
  esac
}

stage_cmd() {
  local device=$1 cpu_cmd=$2 ngpu=${3:-1}
  if [ "$device" = cuda ]; then
    # cmd.sh's $cuda_cmd asks for one GPU of its own ("--gpu 1"); the stage's count replaces it
    echo "$(sed -E 's/ --gpu[ =][0-9]+//g' <<< "$cuda_cmd") --gpu $ngpu"
  else
    echo "$cpu_cmd"
  fi
}

launcher() {
  local nproc=$1
  shift
  if [ $# -gt 0 ] && [ -n "$*" ]; then
    echo "${PUNCT_TORCHRUN:-python -m torch.distributed.run} --nproc-per-node $nproc $*"
  elif [ "$nproc" -gt 1 ]; then
    echo "${PUNCT_TORCHRUN:-python -m torch.distributed.run} --standalone --nproc-per-node $nproc"
  else
    echo "python"
  fi
}

network_commands() {
  device=$(resolve_device "$1") || return 1
  local ngpu=$2
  if [ "$device" = cpu ] && [ "$ngpu" -gt 1 ]; then
    echo "network_commands: $ngpu GPUs asked for, but the device is cpu (--device cuda, or a backend with GPUs)" >&2
    return 1
  fi
  train_net_cmd=$(stage_cmd $device "$train_cmd" $ngpu)
  decode_net_cmd=$(stage_cmd $device "$decode_cmd")
}

config_value() {
  python3 -c '
import sys, yaml
config = yaml.safe_load(open(sys.argv[1])) or {}
print(config.get(sys.argv[2], sys.argv[3]) if isinstance(config, dict) else sys.argv[3])' "$1" "$2" "$3"
}

loader_workers() {
  local device=$1 given=$2 config=$3 workers
  if [ -n "$given" ]; then
    echo "$given"
    return
  fi
  workers=$(config_value "$config" num_workers 0) || return 1
  [ "$device" = cuda ] && [ "$workers" -lt 2 ] && workers=2
  echo "$workers"
}

gpu_job_threads() {
  echo $(( $1 * ($2 + 1) ))
}
