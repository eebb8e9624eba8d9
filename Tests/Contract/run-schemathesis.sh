#!/usr/bin/env bash
# Contract test: validates openapi/data4help.yaml, then runs schemathesis against a live
# `data4help serve` (embedded PostgreSQL in a throwaway directory) for every operation.
# Usage: Tests/Contract/run-schemathesis.sh <path-to-data4help-binary> <python-venv-bin-dir>
set -euo pipefail

binary=${1:?path to the data4help binary}
venv=${2:?python venv bin directory}
root=$(cd "$(dirname "$0")/../.." && pwd)
spec="$root/openapi/data4help.yaml"

"$venv/python" - "$spec" <<'PY'
import sys
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename
document, _ = read_from_filename(sys.argv[1])
validate(document)
print(f"openapi-spec-validator: {sys.argv[1]} is a valid OpenAPI {document['openapi']} document")
PY

work=$(mktemp -d /tmp/data4help-contract-XXXXXX)
chmod 755 "$work"   # the embedded PostgreSQL may run as the postgres user
port=$("$venv/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# Limits high enough that every generated request reaches its handler (429 is documented;
# the limits themselves are tested in LimitsTests).
DATA_DIR="$work/data" PORT=$port HOST=127.0.0.1 LOG_LEVEL=warning \
  RATE_LIMIT_REQUESTS=1000000 SHARE_PAGE_REQUESTS_PER_MINUTE=1000000 LOGIN_FAILURES_PER_ACCOUNT=10000 LOGIN_FAILURES_PER_ADDRESS=1000000 \
  MIGRATIONS_DIR="$root/migrations" OPENAPI_PATH="$spec" PAGES_DIR="$root/Sources/HTTPAPI/Pages/Templates" \
  "$binary" serve >"$work/server.log" 2>&1 &
server=$!
runs=()
cleanup() {
  for pid in "${runs[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  kill -TERM "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

for _ in $(seq 1 120); do
  curl -fsS "$base/readyz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log"; echo "server exited" >&2; exit 1; }
  sleep 0.5
done
curl -fsS "$base/readyz" >/dev/null

json_field() { "$venv/python" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
password='contract test password'
# Registration answers 202 and mails a link (to DATA_DIR/mail here, no relay being set): the
# two accounts are confirmed with the tokens from their messages, as a person would.
confirm() {   # surface email
  local token=""
  for _ in $(seq 1 100); do
    token=$(grep -h -l "^To: <$2>" "$work/data/mail/"*.eml 2>/dev/null | xargs -r grep -h -o 'token=d4hc_[A-Za-z0-9_-]*' | tail -1 | cut -d= -f2) || true
    [ -n "$token" ] && break
    sleep 0.2
  done
  [ -n "$token" ] || { echo "no confirmation message for $2" >&2; exit 1; }
  curl -fsS -X POST "$base/api/$1/registration/confirmation" -H 'Content-Type: application/json' -d "{\"token\":\"$token\"}" >/dev/null
}
curl -fsS -X POST "$base/api/users/registration" -H 'Content-Type: application/json' \
  -d "{\"email\":\"contract@example.org\",\"password\":\"$password\",\"fiscalCode\":\"RSSMRA85T10A562S\",\"fullName\":\"Contract Test\",\"birthDate\":\"1950-01-01\",\"sex\":\"other\",\"homeArea\":\"IT-MI\"}" >/dev/null
curl -fsS -X POST "$base/api/thirdparties/registration" -H 'Content-Type: application/json' \
  -d "{\"name\":\"Contract Org\",\"email\":\"contract@acme.test\",\"password\":\"$password\"}" >/dev/null
confirm users contract@example.org
confirm thirdparties contract@acme.test
user_token=$(curl -fsS -X POST "$base/api/users/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"contract@example.org\",\"password\":\"$password\"}" | json_field token)
party_token=$(curl -fsS -X POST "$base/api/thirdparties/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"contract@acme.test\",\"password\":\"$password\"}" | json_field token)

# Every check schemathesis has. Logout is run last, on its own, so that it does not end the
# session the other operations are tested with. One worker per run: with two, hypothesis's
# caches (not thread-safe) sometimes fail inside schemathesis with a KeyError.
# --mode all: schema-valid data and negative data (every way a value can break its schema);
# the coverage phase adds each schema's boundary values (minimum − 1, maximum + 1, empty, …).
common=(--url "$base" --checks all --mode all --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-60}" --seed "${SCHEMATHESIS_SEED:-4242}"
        --workers 1 --suppress-health-check too_slow,filter_too_much --warnings off --no-color)
status=0
run() { "$venv/schemathesis" --config-file "$root/Tests/Contract/schemathesis.toml" run "$spec" "${common[@]}" "$@"; }

# The three surfaces run side by side, each in a schemathesis process of its own (no shared
# caches): one run waits on the server between its requests about as long as the server works,
# so on two cores three at once take about half the time of one after another (the contract
# test was 14 of `make test`'s minutes). Each prints when all have ended, in this order.
surfaces=("public and operations endpoints" "individuals' surface" "third parties' surface")
run --exclude-path-regex '^/api/(users|thirdparties)/(?!registration(/confirmation)?$|login$)' >"$work/surface-0.log" 2>&1 &
runs+=($!)
run -H "Authorization: Bearer $user_token" --include-path-regex '^/api/users/(?!registration(/confirmation)?$|login$)' \
  --exclude-operation-id logoutIndividual >"$work/surface-1.log" 2>&1 &
runs+=($!)
run -H "Authorization: Bearer $party_token" --include-path-regex '^/api/thirdparties/(?!registration(/confirmation)?$|login$)' \
  --exclude-operation-id logoutThirdParty >"$work/surface-2.log" 2>&1 &
runs+=($!)
for index in "${!runs[@]}"; do
  wait "${runs[$index]}" || status=1
  echo "== schemathesis: ${surfaces[$index]}"
  cat "$work/surface-$index.log"
done
echo "== schemathesis: logout"
run -H "Authorization: Bearer $user_token" --include-operation-id logoutIndividual --max-examples 5 || status=1
run -H "Authorization: Bearer $party_token" --include-operation-id logoutThirdParty --max-examples 5 || status=1

# One request must never take the server down: the process that started is the one still
# answering, and it never logged a fatal error (a Swift trap prints "Fatal error").
if ! kill -0 "$server" 2>/dev/null || ! curl -fsS "$base/readyz" >/dev/null; then
  echo "the server process ended or stopped answering during the contract test:" >&2
  tail -50 "$work/server.log" >&2
  status=1
fi
if grep -qiE 'fatal error|"level":"critical"' "$work/server.log"; then
  echo "the server logged a fatal error during the contract test:" >&2
  grep -iE 'fatal error|"level":"critical"' "$work/server.log" >&2
  status=1
fi
if grep -q '"level":"error"' "$work/server.log"; then
  echo "the server logged errors during the contract test:" >&2
  grep '"level":"error"' "$work/server.log" >&2
  status=1
fi
exit $status
