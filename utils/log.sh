# log "message": one line to stderr with the time and the calling script:line, the same
# shape as the Python logs (time, level, file:line).  Source it: . utils/log.sh
log() {
  local caller="${BASH_SOURCE[1]:-$0}"
  echo "$(date '+%Y-%m-%d %H:%M:%S') INFO [$(basename "$caller"):${BASH_LINENO[0]}] $*" >&2
}
