#!/bin/sh
# The agent container, enrolled automatically: with the admin token, create a one-use
# enrolment token, exchange it for an agent token (`pooltune-agent enroll`, stored 0600 in
# the state volume), then run the daemon. A restarted container keeps its agent token.
set -eu
CONFIG="${POOLTUNE_AGENT_CONFIG:-/etc/pooltune/agent.toml}"
SERVICE_URL="${POOLTUNE_SERVICE_URL:-http://service:8000}"
TOKEN_FILE="${POOLTUNE_STATE_DIR:-/var/lib/pooltune}/agent-token"

until python -c "import httpx, sys; sys.exit(httpx.get('$SERVICE_URL/readyz').status_code != 200)" 2>/dev/null; do
    echo "waiting for the service at $SERVICE_URL"
    sleep 2
done

if [ ! -s "$TOKEN_FILE" ]; then
    POOLTUNE_ENROLLMENT_TOKEN="$(python - "$SERVICE_URL" <<'PY'
import os, sys
import httpx
answer = httpx.post(
    f"{sys.argv[1]}/v1/enrollment-tokens",
    json={"description": "docker-compose agent", "max_uses": 1},
    headers={"Authorization": f"Bearer {os.environ['POOLTUNE_ADMIN_TOKEN']}"},
    timeout=10,
)
answer.raise_for_status()
print(answer.json()["token"])
PY
)"
    export POOLTUNE_ENROLLMENT_TOKEN
    # The database may still be starting: enroll reads the host facts from it.
    until pooltune-agent enroll --config "$CONFIG" --url "$SERVICE_URL"; do
        echo "enrolment failed; retrying"
        sleep 3
    done
fi
exec pooltune-agent run --config "$CONFIG"
