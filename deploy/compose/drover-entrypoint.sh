#!/bin/sh
# Entrypoint of the drover image: runs `drover "$@"` as the unprivileged user drover (10001).
#
# Compose mounts its `secrets:` as bind mounts under /run/secrets that keep the host file's
# owner and mode (outside Swarm, compose ignores a secret's uid, gid and mode). Drover refuses a
# secret file that is not owner-only (mode 600), and the drover user cannot read a mode-600 file
# that another uid owns. So, started as root, this copies each /run/secrets/NAME to
# /run/drover/secrets/NAME (a tmpfs in compose.yaml), owned by drover with mode 600, and then
# drops to drover for good; the *-file flags name the copies. Started as any other user (as
# Kubernetes runs it, runAsUser 10001), it runs drover directly and copies nothing.
set -eu

if [ "$(id -u)" = 0 ]; then
  install -d -o drover -g drover -m 700 /run/drover/secrets
  if [ -d /run/secrets ]; then
    for src in /run/secrets/*; do
      [ -f "$src" ] || continue
      install -o drover -g drover -m 600 "$src" "/run/drover/secrets/${src##*/}"
    done
  fi
  # A bind-mounted host directory is not owned by drover as a fresh named volume is: hand over
  # the top of the data directories (not recursively; drover created what is below).
  for dir in /var/lib/drover /var/lib/drover-agent; do
    if [ -d "$dir" ] && [ "$(stat -c %u "$dir")" != 10001 ]; then
      chown drover:drover "$dir" && chmod 700 "$dir"
    fi
  done
  exec setpriv --reuid=drover --regid=drover --init-groups --no-new-privs \
    -- /usr/local/bin/drover "$@"
fi
exec /usr/local/bin/drover "$@"
