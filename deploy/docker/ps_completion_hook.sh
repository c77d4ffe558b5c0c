#!/usr/bin/env bash
# ps_completion_hook: scales the parameter servers to zero once the worker
# Job has ended, so they stop holding nodes and GPUs. Runs in the cluster as
# the Job ps-completion-hook (deploy/k8s/base/completion-hook.yaml), from the
# same image as the servers (/opt/ps/bin/ps_completion_hook).
#
#   ps_completion_hook [--job=ps-worker] [--statefulset=ps-server]...
#                      [--namespace=NS] [--poll_s=15] [--appear_timeout_s=600]
#                      [--api=URL] [--token_file=F] [--ca_file=F]
#
# Every --poll_s it reads the Job (GET .../jobs/<job>). When its Complete or
# Failed condition is True, or it is gone after having been seen (deleted by
# hand or by its TTL), it sets each StatefulSet's replicas to 0 (PATCH
# .../statefulsets/<name>/scale, a merge patch) and exits 0. Each server then
# gets SIGTERM and writes its final checkpoint. --statefulset may be given
# more than once (replicated shards: one StatefulSet per replica rank);
# without it: ps-server.
#
# Defaults are those of a pod: the API server from KUBERNETES_SERVICE_HOST /
# _PORT, the service account's token, CA and namespace under
# /var/run/secrets/kubernetes.io/serviceaccount (the token is re-read on
# every request: projected tokens rotate).
#
# Exit status: 0 scaled to zero; 1 the Job never appeared within
# --appear_timeout_s, the API refused access (401/403: RBAC), the
# StatefulSet is missing, or the scale request failed; 2 bad usage. Other
# errors (5xx, connection refused) are retried every --poll_s.
# Needs curl and jq.
set -uo pipefail

sa=/var/run/secrets/kubernetes.io/serviceaccount
job=ps-worker
statefulsets=()
namespace=""
poll_s=15
appear_timeout_s=600
api=""
token_file=$sa/token
ca_file=$sa/ca.crt

log() { echo "ps_completion_hook: $*" >&2; }
usage() { log "$1"; sed -n '4,6p' "$0" >&2; exit 2; }

for arg in "$@"; do
  case $arg in
    --job=*) job=${arg#*=} ;;
    --statefulset=*) statefulsets+=("${arg#*=}") ;;
    --namespace=*) namespace=${arg#*=} ;;
    --poll_s=*) poll_s=${arg#*=} ;;
    --appear_timeout_s=*) appear_timeout_s=${arg#*=} ;;
    --api=*) api=${arg#*=} ;;
    --token_file=*) token_file=${arg#*=} ;;
    --ca_file=*) ca_file=${arg#*=} ;;
    *) usage "unknown argument '$arg'" ;;
  esac
done
((${#statefulsets[@]})) || statefulsets=(ps-server)
[[ $poll_s =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage "--poll_s must be a number of seconds"
[[ $appear_timeout_s =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  usage "--appear_timeout_s must be a number of seconds"
if [[ -z $namespace ]]; then
  namespace=$(cat "$sa/namespace" 2>/dev/null) ||
    usage "no --namespace and no $sa/namespace"
fi
if [[ -z $api ]]; then
  [[ -n ${KUBERNETES_SERVICE_HOST:-} ]] ||
    usage "no --api and no KUBERNETES_SERVICE_HOST (not in a pod?)"
  host=$KUBERNETES_SERVICE_HOST
  [[ $host == *:* ]] && host="[$host]"  # IPv6
  api="https://$host:${KUBERNETES_SERVICE_PORT:-443}"
fi
for tool in curl jq; do
  command -v $tool >/dev/null || { log "$tool is not installed"; exit 1; }
done

body=$(mktemp)
trap 'rm -f "$body"' EXIT

# request METHOD PATH [DATA]: prints the HTTP status ("000" when no answer);
# the response body is left in $body.
request() {
  local token
  token=$(cat "$token_file" 2>/dev/null) || { log "cannot read $token_file"; exit 1; }
  local args=(-sS -o "$body" -w '%{http_code}' -X "$1" --max-time 30
              -H "Authorization: Bearer $token" -H "Accept: application/json")
  [[ $api == https://* && -f $ca_file ]] && args+=(--cacert "$ca_file")
  if [[ $# -ge 3 ]]; then
    args+=(-H "Content-Type: application/merge-patch+json" --data "$3")
  fi
  curl "${args[@]}" "$api$2" 2>/dev/null || true
}

job_path=/apis/batch/v1/namespaces/$namespace/jobs/$job

log "waiting for job $namespace/$job to end, then scaling statefulset" \
  "${statefulsets[*]} to 0 (polling every ${poll_s}s)"
seen=0
# Milliseconds: bash's SECONDS counts whole seconds from a fractional start,
# so "1 s" could end after a few milliseconds at a second's boundary.
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }
to_ms() {
  local int=${1%%.*} frac=000
  [[ $1 == *.* ]] && frac=${1#*.}000
  echo $((10#$int * 1000 + 10#${frac:0:3}))
}
appear_timeout_ms=$(to_ms "$appear_timeout_s")
start_ms=$(now_ms)
reason=""
while [[ -z $reason ]]; do
  status=$(request GET "$job_path")
  case $status in
    200)
      seen=1
      reason=$(jq -r '[.status.conditions[]? | select(.status == "True")
                       | select(.type == "Complete" or .type == "Failed")
                       | .type + (if .reason then " (" + .reason + ")" else "" end)]
                      | first // empty' "$body")
      ;;
    404)
      if ((seen)); then
        reason="deleted"
      elif (($(now_ms) - start_ms >= appear_timeout_ms)); then
        log "job $namespace/$job did not appear within ${appear_timeout_s}s"
        exit 1
      fi
      ;;
    401 | 403)
      log "the API refused to read job $namespace/$job (HTTP $status):" \
        "$(jq -r '.message // empty' "$body" 2>/dev/null)"
      log "the service account needs get on batch/jobs $job (see completion-hook.yaml)"
      exit 1
      ;;
    *)
      log "reading job $namespace/$job: HTTP $status; retrying"
      ;;
  esac
  [[ -n $reason ]] || sleep "$poll_s"
done

log "job $namespace/$job ended: $reason; scaling statefulset ${statefulsets[*]} to 0"
failed=0
for statefulset in "${statefulsets[@]}"; do
  scale_path=/apis/apps/v1/namespaces/$namespace/statefulsets/$statefulset/scale
  status=$(request PATCH "$scale_path" '{"spec":{"replicas":0}}')
  if [[ $status != 200 ]]; then
    log "scaling statefulset $namespace/$statefulset failed: HTTP $status" \
      "$(jq -r '.message // empty' "$body" 2>/dev/null)"
    failed=1
    continue
  fi
  log "statefulset $namespace/$statefulset scaled to 0; its servers stop"
done
exit $failed
