#!/usr/bin/env bash
# cloudbuild.yaml's schema steps: `npm run db:apply -- "$@"` against Cloud SQL through the Cloud SQL
# Auth Proxy (IAM-authorized, encrypted), as the schema owner (DATABASE_OWNER_URL, a secret no
# runtime unit can read), granting each unit's role to its login (DB_RUNTIME_LOGINS).
# Needs SQL_INSTANCE, SQL_PROXY_FLAGS (may be empty) and .cloudbuild/cloud-sql-proxy.
set -euo pipefail
# shellcheck disable=SC2086 # the flags are words
.cloudbuild/cloud-sql-proxy --port 5432 ${SQL_PROXY_FLAGS} "${SQL_INSTANCE}" &
proxy=$!
trap 'kill $proxy' EXIT
ready=0
for _ in $(seq 1 30); do
  if (echo > /dev/tcp/127.0.0.1/5432) 2>/dev/null; then ready=1; break; fi
  sleep 1
done
[ "$ready" = 1 ] || { echo "Cloud SQL Auth Proxy did not start" >&2; exit 1; }
DATABASE_URL="$(printf '%s' "$DATABASE_OWNER_URL" | sed -E 's#@[^/]+/#@127.0.0.1:5432/#; s#sslmode=[^&]*#sslmode=disable#')"
export DATABASE_URL
npm run db:apply -- "$@"
