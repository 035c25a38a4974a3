#!/usr/bin/env bash
# One-command setup for punct: a virtual environment with the package (pyproject.toml) at the exact
# versions CI tested (constraints.txt), the offline default BERT, and the Debian packages the recipes
# and tests use.
#
#   ./install.sh               # create .venv (idempotent: a second run is quick)
#   ./install.sh --no-apt      # skip Debian packages (prints the command instead)
#   ./install.sh --with-slurm  # also the SLURM and munge packages that the SLURM tests start (default under CI=true
#                              # only: on a real cluster node installing slurmctld/slurmd is intrusive)
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv=${PUNCT_VENV:-$top/.venv}
python=${PYTHON:-python3}
use_apt=true
with_slurm=false
[ "${CI:-}" = true ] && with_slurm=true
for arg in "$@"; do
  case $arg in
    --no-apt) use_apt=false ;;
    --with-slurm) with_slurm=true ;;
    *) echo "install.sh: unknown option '$arg' (options: --no-apt, --with-slurm)" >&2; exit 1 ;;
  esac
done

# python3-venv: the virtual environment; gcc and python3-dev: ctc-segmentation is an sdist with a C extension
debian_packages=(python3-venv python3-dev gcc espeak-ng libespeak-ng1 sox libsox-fmt-all)
$with_slurm && debian_packages+=(slurmctld slurmd slurm-client munge)

log() { echo "$(date '+%F %T') [install.sh] $*"; }

install_debian_packages() {
  local missing=()
  for p in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages present: ${debian_packages[*]}"
    return
  fi
  local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
  if ! $use_apt || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "not installing Debian packages; as root run: apt-get update && $cmd"
    return
  fi
  log "installing Debian packages: ${missing[*]}"
  # No systemd here: keep package scripts from trying to start the SLURM/munge services.
  local added_policy=false
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    added_policy=true
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  $cmd -qq >/dev/null
  if $added_policy; then rm -f /usr/sbin/policy-rc.d; fi
}

install_python_packages() {
  local stamp=$venv/.punct-requirements
  if [ ! -x "$venv/bin/python" ]; then
    log "creating virtual environment $venv"
    "$python" -m venv "$venv"
  fi
  if [ -f "$stamp" ] && cat "$top/pyproject.toml" "$top/constraints.txt" | cmp -s "$stamp" -; then
    log "Python packages already installed in $venv"
    return
  fi
  log "installing punct and its dependencies into $venv (versions from constraints.txt)"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -c "$top/constraints.txt" -e "$top[dev]"
  cat "$top/pyproject.toml" "$top/constraints.txt" > "$stamp"
}

install_debian_packages
install_python_packages
"$venv/bin/python" -c "import torch, lhotse, kaldi_native_fbank, kaldiio, transformers, ctc_segmentation; print('python stack ok: torch', torch.__version__, 'lhotse', lhotse.__version__, 'transformers', transformers.__version__)"
log "done; activate with: . ./path.sh"
