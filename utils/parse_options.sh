#!/usr/bin/env bash
# Command-line options for recipe and step scripts, in the manner Kaldi users know.
#
# Source this file after the script has set its default variables:
#
#     stage=0
#     nj=4
#     use_gpu=false
#     . utils/parse_options.sh
#
# Then `--stage 3` sets stage=3 and `--use-gpu true` sets use_gpu=true (dashes in an
# option name become underscores).  Rules:
#   * an option must name a variable the script already set, otherwise it is an error;
#   * a variable that holds true/false only accepts true or false;
#   * `--name=value` is accepted as well as `--name value`;
#   * `--config FILE` sources FILE (shell assignments) at that point, so later options win;
#   * `--help` or `-h` prints $help_message, or else the script's header comment followed by its
#     options: the lines between "# Begin configuration section." and "# End configuration section."
#     as `--name default  # comment`, where a line `. utils/X.sh` in that section (options shared by
#     several scripts, e.g. utils/train_options.sh) stands for the options of X.sh's own section;
#     then it exits 0;
#   * parsing stops at `--` or at the first argument that does not start with `--`;
#     the remaining arguments are left in "$@".

__po_usage() {
  if [ -n "${help_message:-}" ]; then
    printf '%s\n' "$help_message"
  else
    # The script's leading comment block, without the shebang, then its options with their defaults.
    sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
    if grep -q '^# Begin configuration section' "$0"; then
      echo "Options (--name default  # what it is):"
      __po_options "$0"
    fi
  fi
}

# __po_options FILE: the configuration section of FILE as `--name default  # comment` lines; a sourced
# `. utils/X.sh` line there is replaced by X.sh's own section.
__po_options() {
  local line
  awk '/^# End configuration section/ { on = 0 }
       on && /^\. [^ ]+\.sh/ { print "\001" $2; next }
       on && /^[A-Za-z_][A-Za-z0-9_]*=/ {
         eq = index($0, "="); name = substr($0, 1, eq - 1); gsub(/_/, "-", name)
         print "  --" name " " substr($0, eq + 1); next }
       on { print "  " $0 }
       /^# Begin configuration section/ { on = 1 }' "$1" |
  while IFS= read -r line; do
    if [[ $line == $'\001'* ]]; then
      __po_options "${line#?}"
    else
      printf '%s\n' "$line"
    fi
  done
}

while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h)
      __po_usage
      exit 0
      ;;
    --)
      shift
      break
      ;;
    --*=*)
      __po_name=${1%%=*}
      __po_value=${1#*=}
      shift
      ;;
    --*)
      if [ $# -lt 2 ]; then
        echo "$0: option $1 needs a value" >&2
        exit 1
      fi
      __po_name=$1
      __po_value=$2
      shift 2
      ;;
    *)
      break
      ;;
  esac

  __po_var=${__po_name#--}
  __po_var=${__po_var//-/_}

  if [ "$__po_var" = config ]; then
    if [ ! -r "$__po_value" ]; then
      echo "$0: --config: cannot read file '$__po_value'" >&2
      exit 1
    fi
    # shellcheck disable=SC1090
    . "$__po_value"
    continue
  fi

  if ! [[ "$__po_var" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || [ -z "${!__po_var+set}" ]; then
    echo "$0: unknown option $__po_name (try --help)" >&2
    exit 1
  fi

  case "${!__po_var}" in
    true|false)
      if [ "$__po_value" != true ] && [ "$__po_value" != false ]; then
        echo "$0: option $__po_name takes true or false, not '$__po_value'" >&2
        exit 1
      fi
      ;;
  esac
  printf -v "$__po_var" '%s' "$__po_value"
done

unset __po_name __po_value __po_var
true
