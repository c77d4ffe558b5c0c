#!/usr/bin/env bash
# ps_completion_hook: scales the parameter servers to zero once the worker
# Job has ended, so they stop holding nodes and GPUs. Runs in the cluster as
# the Job ps-completion-hook (deploy/k8s/base/completion-hook.yaml), from the
# same image as the servers (/opt/ps/bin/ps_completion_hook).
#
#   ps_completion_hook [--job=ps-worker] [--statefulset=ps-server]...
#                      [--namespace=NS] [--poll_s=15] [--appear_timeout_s=600]
#                      [--etcd=URL --etcd_prefix=/ps/<cluster_id>/
#                       [--drain_timeout_s=300] [--etcd_ca_file=F]
#                       [--etcd_cert_file=F --etcd_key_file=F]]
#                      [--api=URL] [--token_file=F] [--ca_file=F]
#
# Every --poll_s it reads the Job (GET .../jobs/<job>). When its Complete or
# Failed condition is True, or it is gone after having been seen (deleted by
# hand or by its TTL), it sets each StatefulSet's replicas to 0 (PATCH
# .../statefulsets/<name>/scale, a merge patch). Each server then gets
# SIGTERM and writes its final checkpoint. --statefulset may be given more
# than once (replicated shards: one StatefulSet per replica rank); without
# it: ps-server.
#
# Replicated shards keep each shard's in_sync set in etcd (no lease), which
# would make the next run's fresh replicas refuse to serve. With --etcd (an
# http:// or https:// client URL of etcd) and --etcd_prefix (the cluster's
# key prefix, starting and ending with "/"), after the scale-down it waits
# until every StatefulSet reports status.replicas 0 for its current
# generation (GET .../statefulsets/<name>: no pod of it runs, so no
# shutting-down primary can write in_sync again), then deletes every key
# under the prefix through etcd's v3 JSON gateway (POST <etcd>/v3/kv/
# deleterange) and logs how many it deleted. Waiting for the pods and
# reaching etcd together get --drain_timeout_s from the scale-down; etcd
# errors are retried every --poll_s until then. For an etcd with TLS (an
# https:// URL): --etcd_ca_file is the CA that signed etcd's certificate
# (else the system's CAs), and --etcd_cert_file / --etcd_key_file the client
# certificate an etcd with client-certificate auth asks for (the same files
# as the cluster config's replication.etcd_tls, which `ps_ctl render-k8s`
# passes).
#
# Defaults are those of a pod: the API server from KUBERNETES_SERVICE_HOST /
# _PORT, the service account's token, CA and namespace under
# /var/run/secrets/kubernetes.io/serviceaccount (the token is re-read on
# every request: projected tokens rotate).
#
# Exit status: 0 scaled to zero (and, with --etcd, the prefix cleared); 1 the
# Job never appeared within --appear_timeout_s, the API refused access
# (401/403: RBAC), a StatefulSet is missing, or a scale request failed
# (etcd is then left alone: servers may still run); with --etcd also: the
# StatefulSets still had pods after --drain_timeout_s, or etcd did not
# delete the prefix by then (its message is logged; the keys stay); 2 bad
# usage. Other API errors (5xx, connection refused) are retried every
# --poll_s.
# Needs curl, jq and, with --etcd, base64.
set -uo pipefail

sa=/var/run/secrets/kubernetes.io/serviceaccount
job=ps-worker
statefulsets=()
namespace=""
poll_s=15
appear_timeout_s=600
etcd=""
etcd_prefix=""
drain_timeout_s=300
etcd_ca_file=""
etcd_cert_file=""
etcd_key_file=""
api=""
token_file=$sa/token
ca_file=$sa/ca.crt

log() { echo "ps_completion_hook: $*" >&2; }
# The usage lines of the header above.
usage() { log "$1"; sed -n '/^#   ps_completion_hook/,/^#$/p' "$0" >&2; exit 2; }

for arg in "$@"; do
  case $arg in
    --job=*) job=${arg#*=} ;;
    --statefulset=*) statefulsets+=("${arg#*=}") ;;
    --namespace=*) namespace=${arg#*=} ;;
    --poll_s=*) poll_s=${arg#*=} ;;
    --appear_timeout_s=*) appear_timeout_s=${arg#*=} ;;
    --etcd=*) etcd=${arg#*=} ;;
    --etcd_prefix=*) etcd_prefix=${arg#*=} ;;
    --drain_timeout_s=*) drain_timeout_s=${arg#*=} ;;
    --etcd_ca_file=*) etcd_ca_file=${arg#*=} ;;
    --etcd_cert_file=*) etcd_cert_file=${arg#*=} ;;
    --etcd_key_file=*) etcd_key_file=${arg#*=} ;;
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
[[ $drain_timeout_s =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  usage "--drain_timeout_s must be a number of seconds"
if [[ -n $etcd || -n $etcd_prefix ]]; then
  [[ -n $etcd && -n $etcd_prefix ]] ||
    usage "--etcd and --etcd_prefix go together (etcd's URL and the cluster's key prefix)"
  [[ $etcd =~ ^https?://[^/]+/?$ ]] ||
    usage "--etcd '$etcd' is not http://HOST:PORT or https://HOST:PORT"
  etcd=${etcd%/}
  # "/" alone would be every key of an etcd that other clusters may share.
  [[ $etcd_prefix == /*/ && $etcd_prefix =~ [^/] ]] ||
    usage "--etcd_prefix '$etcd_prefix' must start and end with '/' and name something (/ps/<cluster_id>/)"
fi
# curl's TLS options for etcd: --cacert, --cert, --key.
etcd_tls=()
if [[ -n $etcd_ca_file || -n $etcd_cert_file || -n $etcd_key_file ]]; then
  [[ $etcd == https://* ]] ||
    usage "--etcd_ca_file, --etcd_cert_file and --etcd_key_file need --etcd=https://HOST:PORT (got '$etcd')"
  if [[ -n $etcd_cert_file && -z $etcd_key_file ]] || [[ -z $etcd_cert_file && -n $etcd_key_file ]]; then
    usage "--etcd_cert_file and --etcd_key_file go together (etcd's client certificate and its key)"
  fi
  for flag in ca:"$etcd_ca_file" cert:"$etcd_cert_file" key:"$etcd_key_file"; do
    file=${flag#*:}
    [[ -z $file || -r $file ]] ||
      usage "--etcd_${flag%%:*}_file '$file' cannot be read (mount the Secret holding replication.etcd_tls's files into this Job too)"
  done
  [[ -n $etcd_ca_file ]] && etcd_tls+=(--cacert "$etcd_ca_file")
  [[ -n $etcd_cert_file ]] && etcd_tls+=(--cert "$etcd_cert_file" --key "$etcd_key_file")
fi
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
tools=(curl jq)
[[ -n $etcd ]] && tools+=(base64)
for tool in "${tools[@]}"; do
  command -v $tool >/dev/null || { log "$tool is not installed"; exit 1; }
done

body=$(mktemp)
trap 'rm -f "$body" "$body.err"' EXIT

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
  "${statefulsets[*]} to 0${etcd:+ and clearing $etcd_prefix at $etcd} (polling every ${poll_s}s)"
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
[[ -z $etcd ]] && exit $failed
if ((failed)); then
  log "not clearing etcd's $etcd_prefix: servers may still run"
  exit 1
fi
drain_deadline_ms=$(($(now_ms) + $(to_ms "$drain_timeout_s")))

# drained NAME: whether StatefulSet NAME has no pods left (status.replicas 0
# for its current generation, i.e. after the scale-down). Exits 1 on RBAC
# refusal or a StatefulSet that is gone (its pods may still be stopping).
drained() {
  local path=/apis/apps/v1/namespaces/$namespace/statefulsets/$1 status
  status=$(request GET "$path")
  case $status in
    200)
      jq -e '(.status.observedGeneration // 0) >= (.metadata.generation // 0)
             and (.status.replicas // 0) == 0' "$body" >/dev/null && return 0
      log "statefulset $namespace/$1 $(jq -r 'if (.status.observedGeneration // 0) <
          (.metadata.generation // 0) then "has not yet observed the scale-down"
          else "still has \(.status.replicas) pods" end' "$body"); waiting"
      ;;
    401 | 403)
      log "the API refused to read statefulset $namespace/$1 (HTTP $status):" \
        "$(jq -r '.message // empty' "$body" 2>/dev/null)"
      log "the service account needs get on apps/statefulsets $1 (see" \
        "deploy/k8s/components/replicated); etcd's $etcd_prefix not cleared"
      exit 1
      ;;
    404)
      log "statefulset $namespace/$1 is gone: cannot tell whether its pods have" \
        "stopped; etcd's $etcd_prefix not cleared"
      exit 1
      ;;
    *)
      log "reading statefulset $namespace/$1: HTTP $status; retrying"
      ;;
  esac
  return 1
}

# Seconds between polls, or exit 1 with "$1" once the drain deadline passed.
wait_or_give_up() {
  if (($(now_ms) >= drain_deadline_ms)); then
    log "$1"
    log "etcd keys under $etcd_prefix not deleted; once no server pod runs:" \
      "etcdctl --endpoints=$etcd del --prefix $etcd_prefix"
    exit 1
  fi
  sleep "$poll_s"
}

pending=("${statefulsets[@]}")
while ((${#pending[@]})); do
  left=()
  for statefulset in "${pending[@]}"; do
    drained "$statefulset" || left+=("$statefulset")
  done
  pending=("${left[@]}")
  ((${#pending[@]})) || break
  wait_or_give_up "statefulset ${pending[*]} still had pods after ${drain_timeout_s}s"
done
log "no server pod runs; deleting etcd keys under $etcd_prefix at $etcd"

# The range [prefix, prefix with its last byte incremented): the prefix ends
# with "/", and "/" + 1 is "0".
b64() { printf %s "$1" | base64 -w0; }
range=$(jq -cn --arg key "$(b64 "$etcd_prefix")" --arg range_end "$(b64 "${etcd_prefix%/}0")" \
  '{key: $key, range_end: $range_end}') || { log "jq could not build the range"; exit 1; }
while :; do
  status=$(curl -sS -o "$body" -w '%{http_code}' -X POST --connect-timeout 5 --max-time 10 \
    "${etcd_tls[@]}" \
    -H "Content-Type: application/json" --data "$range" "$etcd/v3/kv/deleterange" \
    2>"$body.err" || true)
  if [[ $status == 200 ]]; then
    # The gateway leaves out a zero count.
    log "deleted $(jq -r '.deleted // "0"' "$body") etcd keys under $etcd_prefix"
    exit 0
  fi
  if [[ $status == 000 ]]; then
    error=$(head -c 300 "$body.err")
    # etcd refuses a missing or untrusted client certificate after the
    # handshake, which curl reports as a reset connection.
    [[ $etcd == https://* ]] && error+=" (TLS: does etcd trust the client certificate in --etcd_cert_file, and did --etcd_ca_file's CA sign etcd's?)"
  else
    error=$(jq -r '.message // empty' "$body" 2>/dev/null)
    error="HTTP $status: ${error:-$(head -c 300 "$body")}"
  fi
  log "deleting etcd keys under $etcd_prefix at $etcd: ${error:-no answer}"
  wait_or_give_up "etcd at $etcd did not delete $etcd_prefix within ${drain_timeout_s}s: ${error:-no answer}"
done
