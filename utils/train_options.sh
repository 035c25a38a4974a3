# The options every network training step shares (steps/train_bert.sh, steps/train_tdnn.sh,
# egs/parczech/local/train_mm.sh): the job runner, the device, DDP ranks under torchrun, mixed precision,
# the seed, and what a re-run does with a finished or interrupted training (utils/fresh.sh).
# Source it as the first line of the step's configuration section (then the step's own options), so that
# utils/parse_options.sh accepts these options and its --help lists them with the step's own:
#
#   . utils/train_options.sh   # cmd device nproc torchrun_opts amp seed resume overwrite
#
# train_usage prints the same options for the step's Usage message.

# shellcheck shell=bash disable=SC2034  # the options are read by the step that sources this file
# Begin configuration section.
cmd=utils/run.pl       # job runner ($cuda_cmd for a GPU)
device=auto            # auto, cpu or cuda
nproc=1                # processes (GPUs) under torchrun (DDP); 1 = plain python
torchrun_opts=         # extra torchrun options (several nodes: "--nnodes 2 --node-rank 0 --rdzv-endpoint host:29400")
amp=                   # mixed precision: none, bf16, fp16 (CUDA only), auto or fastest (timed); empty: the
                       # config's amp where the config has one (egs/parczech's conf/mm*.yaml), else none
seed=42
resume=false           # continue from the newest epoch-N.pt even if options or inputs changed
overwrite=false        # retrain from scratch even if finished
# End configuration section.

train_usage() {
  echo "--device auto|cpu|cuda, --nproc N (torchrun ranks), --amp none|bf16|fp16|auto|fastest, --cmd CMD, --resume true, --overwrite true"
}
