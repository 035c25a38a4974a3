"""utils/device.sh and the recipes' device rule: which runner, how many GPUs, how many torchrun ranks.

The recipe runs use stand-in ``sbatch``/``squeue``/``scontrol``/``nvidia-smi``/``torchrun`` that record
their arguments (this machine has no GPU), so the tests read the command lines a GPU cluster would get.
"""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.recipe_copy import copy_recipe

REPO = Path(__file__).resolve().parents[2]


def _write_tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


def _device_sh(script: str, env: dict, cwd: Path = REPO) -> str:
    out = subprocess.run(
        ["bash", "-c", f". utils/device.sh; {script}"],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_auto_device_follows_the_gpus_the_backend_offers(tmp_path):
    fakes = tmp_path / "bin"
    fakes.mkdir()
    _write_tool(fakes, "nvidia-smi", 'echo "GPU 0: A100 (UUID: a)"; echo "GPU 1: A100 (UUID: b)"\n')
    _write_tool(fakes, "sinfo", 'echo "gpu:a100:4(S:0-1),mps:100"; echo "(null)"\n')
    base = {k: v for k, v in os.environ.items() if k not in ("PUNCT_GPUS", "CUDA_VISIBLE_DEVICES")}
    base.update(PATH=f"{fakes}:{os.environ['PATH']}", PUNCT_BACKEND="local")

    def run(script: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-c", f". utils/device.sh; {script}"],
            cwd=REPO,
            env={**base, **env},
            capture_output=True,
            text=True,
        )

    assert run("gpus_available").stdout == "2\n"
    assert run("resolve_device auto").stdout == "cuda\n"
    assert run("gpus_available", PUNCT_BACKEND="slurm").stdout == "4\n"
    # CUDA_VISIBLE_DEVICES limits what nvidia-smi lists; set but empty means no GPU at all
    assert run("gpus_available", CUDA_VISIBLE_DEVICES="1").stdout == "1\n"
    assert run("gpus_available", CUDA_VISIBLE_DEVICES="").stdout == "0\n"
    assert run("resolve_device auto", CUDA_VISIBLE_DEVICES="").stdout == "cpu\n"
    assert run("gpus_available", CUDA_VISIBLE_DEVICES="0,-1,1").stdout == "1\n"  # CUDA stops at -1
    assert run("gpus_available", CUDA_VISIBLE_DEVICES="", PUNCT_GPUS_HELD="2,3").stdout == "2\n"
    (fakes / "nvidia-smi").unlink()
    assert run("gpus_available").stdout == "0\n"
    assert run("resolve_device auto").stdout == "cpu\n"
    assert run("resolve_device cuda").stdout == "cuda\n"  # explicit cuda is taken as given
    assert run("gpus_available", PUNCT_GPUS="3").stdout == "3\n"
    bad = run("resolve_device cuda:1")
    assert bad.returncode != 0 and "each job and rank is given its own GPU" in bad.stderr


def test_stage_commands_and_launcher():
    env = {
        "PUNCT_GPUS": "0",
        "train_cmd": "utils/run.pl",
        "decode_cmd": "utils/run.pl",
        "cuda_cmd": "utils/slurm.pl --gpu 1 --mem 16G",
    }
    assert (
        _device_sh('network_commands cuda 2; echo "$device|$train_net_cmd|$decode_net_cmd"', env)
        == "cuda|utils/slurm.pl --mem 16G --gpu 2|utils/slurm.pl --mem 16G --gpu 1"
    )
    assert (
        _device_sh('network_commands auto 1; echo "$device|$train_net_cmd|$decode_net_cmd"', env)
        == "cpu|utils/run.pl|utils/run.pl"
    )
    refused = subprocess.run(
        ["bash", "-c", ". utils/device.sh; network_commands cpu 2"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "2 GPUs asked for" in refused.stderr
    assert _device_sh("launcher 1", env) == "python"
    assert _device_sh("launcher 4", env) == "python -m torch.distributed.run --standalone --nproc-per-node 4"
    assert (
        _device_sh("launcher 2 --nnodes 2 --rdzv-endpoint h:29400", env)
        == "python -m torch.distributed.run --nproc-per-node 2 --nnodes 2 --rdzv-endpoint h:29400"
    )


# What the stand-in training and inference commands leave behind: the model a training step checks for,
# the WER files of the AM's decode, and punctuate's per-job outputs.
_OUTPUTS_OF_ARGS = r"""  prev= out= exp= job=1 nj=1
  for a in "$@"; do
    case $prev in --out-dir) out=$a ;; --exp-dir) exp=$a ;; --job) job=$a ;; --nj) nj=$a ;; esac
    prev=$a
  done
  case " $* " in
    *" punct.bin.train_am "*) touch $exp/best-valid-loss.pt ;;
    *" punct.bin.decode_am "*) for s in dev test; do echo "%WER 0.0 [ 0 / 10 ]" > $exp/wer_$s.txt; done ;;
    *" punct.bin.punctuate "*) [ $nj -gt 1 ] && sfx=.$job || sfx=
      touch $out/text$sfx $out/punct$sfx.jsonl $out/failed$sfx ;;
  esac"""


def _recipe_with_fakes(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of egs/mustc whose path.sh puts the stand-in tools first, with stage-5 inputs."""
    recipe = tmp_path / "mustc"
    fakes = tmp_path / "bin"
    records = tmp_path / "records"
    for d in (recipe, fakes, records):
        d.mkdir()
    # the stand-in torchrun below starts the DDP ranks (utils/device.sh's launcher: $PUNCT_TORCHRUN)
    (recipe / "path.sh").write_text(f". {REPO}/path.sh\nexport PATH={fakes}:$PATH PUNCT_TORCHRUN=torchrun\n")
    copy_recipe(REPO, "mustc", recipe)
    manifests = recipe / "data" / "manifests"
    manifests.mkdir(parents=True)
    for split in ("train", "dev"):
        with gzip.open(manifests / f"mustc_supervisions_{split}.jsonl.gz", "wt") as f:
            f.write("")
    # torchrun: records its arguments and the GPUs it was given, as a training would start, and leaves the
    # model file the training steps check for
    _write_tool(
        fakes,
        "torchrun",
        f"""echo "CUDA_VISIBLE_DEVICES=${{CUDA_VISIBLE_DEVICES:-}} $*" >> {records}/torchrun
{_OUTPUTS_OF_ARGS}
""",
    )
    # sbatch: records its arguments, then runs each array task of the job script at once, with "python" a
    # shell function that records its arguments and writes the files the steps read after their jobs
    _write_tool(
        fakes,
        "sbatch",
        f"""echo "$*" >> {records}/sbatch
script="${{@: -1}}"
array=$(printf '%s\\n' "$@" | sed -n 's/^--array=\\([0-9]*\\)-\\([0-9]*\\).*/\\1 \\2/p')
python() {{
  echo "$*" >> {records}/python
{_OUTPUTS_OF_ARGS}
}}
export -f python
for task in $(seq $array); do SLURM_ARRAY_TASK_ID=$task bash "$script"; done
echo 4242
""",
    )
    _write_tool(fakes, "squeue", "exit 0\n")
    _write_tool(fakes, "scontrol", 'echo "JobId=4242 ArrayTaskId=1 JobState=COMPLETED"\n')
    return recipe, records


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_recipe_training_stage_on_two_gpus(tmp_path, backend):
    recipe, records = _recipe_with_fakes(tmp_path)
    env = {**os.environ, "PUNCT_BACKEND": backend, "PUNCT_GPUS": "2"}
    out = subprocess.run(
        ["./run.sh", "--stage", "5", "--stop-stage", "5", "--device", "cuda", "--ngpu", "2", "--amp", "bf16"],
        cwd=recipe,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    torchrun = (records / "torchrun").read_text()
    assert "--standalone --nproc-per-node 2 -m punct.bin.train_bert" in torchrun  # world size 2
    assert "--device cuda" in torchrun and "--amp bf16" in torchrun
    if backend == "slurm":
        sbatch = (records / "sbatch").read_text()
        assert "--gres=gpu:2" in sbatch and "--array=1-1" in sbatch
    else:  # run.pl gives the job its two GPUs
        assert not (records / "sbatch").exists()
        assert torchrun.startswith("CUDA_VISIBLE_DEVICES=0,1 ")
    log = (recipe / "exp" / "bert" / "log" / "train_bert.log").read_text()
    assert "torchrun --standalone --nproc-per-node 2" in log


def test_recipe_refuses_several_gpus_on_cpu(tmp_path):
    recipe, _ = _recipe_with_fakes(tmp_path)
    out = subprocess.run(
        ["./run.sh", "--stage", "5", "--stop-stage", "5", "--device", "cpu", "--ngpu", "2"],
        cwd=recipe,
        env={**os.environ, "PUNCT_BACKEND": "local"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "2 GPUs asked for" in out.stderr


def _touch(folder: Path, *names: str) -> None:
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")


def _submissions(records: Path) -> dict:
    """job name -> the sbatch options of its submission (the last one of that name)."""
    jobs = {}
    for line in (records / "sbatch").read_text().splitlines():
        options = line.split()
        name = next(o for o in options if o.startswith("--job-name="))[len("--job-name=") :]
        jobs[name] = options[: options.index("--parsable")]
    return jobs


def _sbatch_line(records: Path, name: str) -> str:
    """The last sbatch command line of job ``name``, as docs/slurm_gpu.md shows it."""
    lines = [line for line in (records / "sbatch").read_text().splitlines() if f" --job-name={name} " in line]
    return "sbatch " + lines[-1]


def _run_recipe(recipe: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PUNCT_BACKEND": "slurm", "PUNCT_GPUS": "2"}
    return subprocess.run(["./run.sh", *args], cwd=recipe, env=env, capture_output=True, text=True, timeout=120)


def test_gpu_trainings_ask_for_a_cpu_per_rank_and_loader_worker_with_amp_auto(tmp_path):
    recipe, records = _recipe_with_fakes(tmp_path)
    _touch(
        recipe / "data" / "fbank",
        *(f"mustc_cuts_{s}.jsonl.gz" for s in ("train", "dev")),
        *(f"cmvn_{s}.json" for s in ("train", "dev")),
    )
    out = _run_recipe(recipe, "--stage", "2", "--stop-stage", "2", "--device", "cuda", "--ngpu", "2")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    train = _submissions(records)["train"]
    # 2 ranks x (2 loader workers + 1): the AM config reads in the training process (num_workers 0), 2 on cuda
    assert "--gres=gpu:2" in train and "--cpus-per-task=6" in train, train
    torchrun = (records / "torchrun").read_text()
    assert "--num-workers 2" in torchrun and "--amp auto" in torchrun  # no --amp given: auto on cuda
    print("\nthe AM training job runs:\n" + torchrun.splitlines()[0].split(" ", 1)[1])
    out = _run_recipe(recipe, "--stage", "5", "--stop-stage", "5", "--device", "cuda", "--ngpu", "2")
    assert out.returncode == 0, out.stderr[-3000:]
    train_bert = _submissions(records)["train_bert"]
    assert "--gres=gpu:2" in train_bert and "--cpus-per-task=2" in train_bert, train_bert  # no loader workers
    _touch(
        recipe,
        *(f"data/fbank/mustc_cuts_{s}_ali.jsonl.gz" for s in ("train", "dev")),
        *(
            f"exp/emb_{model}/{split}/{name}{ext}"
            for model, name in (("am", "emb"), ("bert", "vec"))
            for split in ("train", "dev")
            for ext in (".scp", ".1.scp.done")
        ),
    )
    out = _run_recipe(recipe, "--stage", "7", "--stop-stage", "7", "--device", "cuda", "--ngpu", "2")
    assert out.returncode == 0, out.stderr[-3000:]
    train_tdnn = _submissions(records)["train_tdnn"]
    # conf/tdnn_mini.yaml has one window-cutting worker: two on cuda, so 2 x (2 + 1) CPUs
    assert "--gres=gpu:2" in train_tdnn and "--cpus-per-task=6" in train_tdnn, train_tdnn
    assert "--num-workers 2" in (records / "torchrun").read_text().splitlines()[-1]
    print(
        "\n--ngpu 2 AM training (stage 2):\n" + _sbatch_line(records, "train"),
        "\n--ngpu 2 BERT training (stage 5):\n" + _sbatch_line(records, "train_bert"),
        "\n--ngpu 2 TDNN training (stage 7):\n" + _sbatch_line(records, "train_tdnn"),
    )


def test_cpu_only_jobs_of_gpu_stages_ask_for_no_gpu(tmp_path):
    recipe, records = _recipe_with_fakes(tmp_path)
    splits = ("train", "dev", "test")
    _touch(
        recipe / "data" / "fbank", *(f"mustc_cuts_{s}.jsonl.gz" for s in splits), *(f"cmvn_{s}.json" for s in splits)
    )
    _touch(recipe, "data/corpus_mini_natural/data/.keep")
    out = _run_recipe(recipe, "--stage", "2", "--stop-stage", "3", "--device", "cuda")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    jobs = _submissions(records)
    assert "--gres=gpu:1" in jobs["train"] and "--gres=gpu:1" in jobs["align"]
    # the AM's greedy WER decode and the alignment merge run on the CPU partition, with no GPU
    for name in ("decode", "merge"):
        assert not any(o.startswith("--gres") for o in jobs[name]), (name, jobs[name])
        assert jobs[name][-1] != "--partition=gpu", (name, jobs[name])
    assert "punct.bin.decode_am" in (records / "python").read_text() and "--device cpu" in next(
        line for line in (records / "python").read_text().splitlines() if "decode_am" in line
    )
    (records / "sbatch").unlink()
    _touch(recipe, "exp/am/best-valid-loss.pt")
    out = _run_recipe(recipe, "--stage", "4", "--stop-stage", "4", "--device", "cuda")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    jobs = _submissions(records)
    assert "--gres=gpu:1" in jobs["dump"] and not any(o.startswith("--gres") for o in jobs["merge"])


def test_punctuate_on_cuda_asks_each_job_for_a_gpu(tmp_path):
    recipe, records = _recipe_with_fakes(tmp_path)
    _touch(
        recipe,
        "data/new/wav.scp",
        "data/new/text",
        "exp/am/best-valid-loss.pt",
        "exp/bert/best-valid-f1/punct_model.json",
        "exp/tdnn/best-valid-f1.pt",
    )
    env = {**os.environ, "PUNCT_BACKEND": "slurm"}
    out = subprocess.run(
        [
            "steps/punctuate.sh",
            "--cmd",
            "utils/slurm.pl --mem 4G",
            "--device",
            "cuda",
            "--nj",
            "2",
            "data/new",
            "exp/punctuate/new",
        ],
        cwd=recipe,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    punctuate = _submissions(records)["punctuate"]
    assert "--gres=gpu:1" in punctuate and "--array=1-2" in (records / "sbatch").read_text()
    assert "--device cuda" in (records / "python").read_text()
    print("\nsteps/punctuate.sh --device cuda --nj 2:\n" + _sbatch_line(records, "punctuate"))


@pytest.mark.parametrize("name", ["mustc", "parczech"])
def test_recipes_refuse_an_unknown_amp_at_once(tmp_path, name):
    recipe = copy_recipe(REPO, name, tmp_path / name)
    refusals = (("fp17", "--amp must be none, bf16, fp16, auto or fastest"), ("fp16", "--amp fp16 needs --device cuda"))
    for amp, why in refusals:
        out = subprocess.run(
            ["./run.sh", "--amp", amp, "--device", "cpu", "--stage", "99"],
            cwd=recipe,
            env={**os.environ, "PUNCT_BACKEND": "local"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2 and why in out.stderr, out.stderr


@pytest.mark.parametrize("name", ["mustc", "parczech"])
def test_recipes_print_their_usage_on_a_stray_argument(tmp_path, name):
    recipe = copy_recipe(REPO, name, tmp_path / name)
    out = subprocess.run(
        ["./run.sh", "stray"],
        cwd=recipe,
        env={**os.environ, "PUNCT_BACKEND": "local"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "unexpected arguments: stray" in out.stderr and "Usage:" in out.stderr
