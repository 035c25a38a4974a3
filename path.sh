# Sourced by every recipe and step: the project's virtual environment and package.
# (Symlinked into egs/<corpus>/, so the real location is resolved first.)
PUNCT_ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
export PUNCT_ROOT
# PUNCT_VENV picks another environment (as in install.sh), e.g. one over a GPU machine's own torch.
if [ -x "${PUNCT_VENV:-$PUNCT_ROOT/.venv}/bin/python" ]; then
  export VIRTUAL_ENV=${PUNCT_VENV:-$PUNCT_ROOT/.venv}
  export PATH=$VIRTUAL_ENV/bin:$PATH
elif ! python3 -c "import torch, lhotse" 2>/dev/null; then
  echo "path.sh: no ${PUNCT_VENV:-$PUNCT_ROOT/.venv}; run $PUNCT_ROOT/install.sh first" >&2
  return 1 2>/dev/null || exit 1
fi
export PATH=$PUNCT_ROOT/utils:$PATH
export PYTHONPATH=$PUNCT_ROOT${PYTHONPATH:+:$PYTHONPATH}
export LC_ALL=C           # stable sorting in shell tools
export PYTHONUTF8=1       # ...while Python still reads and writes UTF-8
export PYTHONUNBUFFERED=1 # logs appear as they are written
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # nothing is downloaded at run time
