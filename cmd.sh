# How recipe stages run their parallel jobs.  Choose the backend here or with
# PUNCT_BACKEND=slurm in the environment:
#   local  every JOB is a process on this machine (utils/run.pl)
#   slurm  every JOB is a task of one sbatch --array (utils/slurm.pl; options mapped by the recipe's
#          conf/slurm.conf, else by slurm.pl's built-in default, of which the top-level conf/slurm.conf is a copy)
# Stages that run a network on cuda use "$cuda_cmd --gpu N" (utils/device.sh): N GPUs for a training
# (torchrun ranks), one per job for inference.
# Usage in a stage:  $train_cmd --mem 4G JOB=1:$nj exp/x/log/y.JOB.log python -m punct.bin.y --job JOB --nj $nj
backend=${PUNCT_BACKEND:-local}

case "$backend" in
  local)
    export train_cmd="utils/run.pl"
    export decode_cmd="utils/run.pl"
    export cuda_cmd="utils/run.pl --gpu 1"
    ;;
  slurm)
    export train_cmd="utils/slurm.pl --mem 4G"
    export decode_cmd="utils/slurm.pl --mem 4G"
    # --mem is per CPU: a 6-CPU AM training (2 ranks x (2 loader workers + 1)) asks 6 x 4 GB = 24 GB.  Measured
    # (docs/scaling.md, benchmarks/bench_scale.py, 1.2 to 9.7 h of speech): the CPU jobs' largest process 0.25-0.4 GB
    # and flat in the corpus' hours (10x under 4 GB); the trainings' largest 0.5-1.6 GB at mini size; conf/slurm.conf
    # says how to size it from your own jobs' peaks
    export cuda_cmd="utils/slurm.pl --gpu 1 --mem 4G"
    ;;
  *)
    echo "cmd.sh: unknown backend '$backend' (local or slurm)" >&2
    return 1 2>/dev/null || exit 1
    ;;
esac
