# What every recipe's run.sh does after parsing its options.  Source it after cmd.sh and
# utils/parse_options.sh; it also sources utils/log.sh (log) and utils/device.sh (network_commands):
#
#   . utils/recipe.sh
#
#   no_positional_arguments "$@"      exits 2 with $help_message when run.sh was given an argument that is no option
#   network_options DEVICE NGPU AMP SEED
#                                     checks --amp and --device, then sets what the network stages run with:
#                                     $device (auto resolved to cpu or cuda), $train_net_cmd and $decode_net_cmd
#                                     (utils/device.sh's network_commands), $amp and $train_opts (the options
#                                     every training step gets); exits 2 on a bad combination

# shellcheck shell=bash disable=SC2034,SC2154  # help_message comes from run.sh, train_opts goes to it
. utils/log.sh
. utils/device.sh

no_positional_arguments() {
  if [ $# -ne 0 ]; then
    echo "$0: unexpected arguments: $*" >&2
    echo "$help_message" >&2
    exit 2
  fi
}

network_options() {
  local ngpu=$2 seed=$4
  amp=$3
  case "$amp" in
    ""|none|bf16|fp16|auto|fastest) ;;
    *) echo "$0: --amp must be none, bf16, fp16, auto or fastest (or empty: each config's), not '$amp'" >&2; exit 2 ;;
  esac
  # One rule for every stage that runs a network: on cuda it asks $cuda_cmd for GPUs (training: --ngpu,
  # as torchrun ranks; inference: one per job), on cpu $train_cmd / $decode_cmd.
  network_commands "$1" "$ngpu" || exit 2
  if [ "$amp" = fp16 ] && [ "$device" != cuda ]; then
    echo "$0: --amp fp16 needs --device cuda (on the CPU: --amp bf16 or none)" >&2
    exit 2
  fi
  # On a GPU the trainings default to mixed precision: bf16 where the GPU computes in it natively, else float32.
  [ -z "$amp" ] && [ "$device" = cuda ] && amp=auto
  train_opts="--device $device --seed $seed --nproc $ngpu${amp:+ --amp $amp}"
}
