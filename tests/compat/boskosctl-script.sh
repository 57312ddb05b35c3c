#!/usr/bin/env bash
# A CI script written for boskosctl (its README's workflow), run unchanged against Drover through
# a `boskosctl` symlink to `drover`: acquire with a wait, heartbeat, read metrics with jq,
# release. BOSKOS_URL and PASSWORD_FILE come from the caller.
set -euo pipefail

boskos=(boskosctl --server-url "${BOSKOS_URL}" --owner-name "ci-job" --username "ci" --password-file "${PASSWORD_FILE}")

resource="$("${boskos[@]}" acquire --type "gce-project" --state "free" --target-state "busy" --timeout 30s)"
name="$(jq -r .name <<<"${resource}")"
[ "$(jq -r .owner <<<"${resource}")" = "ci-job" ]
release() { "${boskos[@]}" release --name "${name}" --target-state "dirty"; }
trap release EXIT

"${boskos[@]}" heartbeat --resource "${resource}" --period 1s --timeout 3s
"${boskos[@]}" metrics --type "gce-project" | jq -e '.current.busy == 1' >/dev/null
"${boskos[@]}" metrics --type "gce-project" | jq -e --arg owner ci-job '.owner[$owner] == 1' >/dev/null
echo "acquired ${name}"
