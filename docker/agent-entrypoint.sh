#!/bin/sh
# The agent container, enrolled automatically, then `pooltune-agent run`.
# With the admin token it makes a one-use enrolment token scoped to this database host's
# name (read from the database, as the agent reports it) and exchanges it for an agent token
# (`pooltune-agent enroll`, stored 0600 in the state volume). A restarted container keeps its
# agent token. One that lost its volume enrols again: a token scoped to the hostname may
# re-enrol an enrolled host (the service revokes the host's previous agents), where a plain
# enrolment token gets 409. Each attempt makes a fresh token (a one-use token spent by an
# enrolment whose answer was lost cannot be used again); after 20 failed attempts the script
# exits and compose restarts the container. See docker/README.md.
set -eu
CONFIG="${POOLTUNE_AGENT_CONFIG:-/etc/pooltune/agent.toml}"
SERVICE_URL="${POOLTUNE_SERVICE_URL:-http://service:8000}"
TOKEN_FILE="${POOLTUNE_STATE_DIR:-/var/lib/pooltune}/agent-token"
ATTEMPTS=20

until python -c "import httpx, sys; sys.exit(httpx.get('$SERVICE_URL/readyz').status_code != 200)" 2>/dev/null; do
    echo "waiting for the service at $SERVICE_URL"
    sleep 2
done

# Prints an enrolment token for the hostname the agent will enrol with.
scoped_enrolment_token() {
    python - "$SERVICE_URL" "$CONFIG" <<'PY'
import os
import sys
from pathlib import Path

import httpx

from agents.config import load_config
from agents.wiring import make_target

try:
    target = make_target(load_config(Path(sys.argv[2])))
    target.connect()
    try:
        hostname = target.host_facts().hostname
    finally:
        target.close()
    answer = httpx.post(
        f"{sys.argv[1]}/v1/enrollment-tokens",
        json={
            "description": "docker-compose agent",
            "hostname": hostname,
            "max_uses": 1,
            "ttl_hours": 1,
        },
        headers={"Authorization": f"Bearer {os.environ['POOLTUNE_ADMIN_TOKEN']}"},
        timeout=10,
    )
    answer.raise_for_status()
    print(answer.json()["token"])
except Exception as exc:
    sys.exit(f"cannot make an enrolment token: {exc}")
PY
}

attempt=0
while [ ! -s "$TOKEN_FILE" ]; do
    attempt=$((attempt + 1))
    # The database may still be starting: the hostname and `enroll` read it.
    if POOLTUNE_ENROLLMENT_TOKEN="$(scoped_enrolment_token)" \
        && export POOLTUNE_ENROLLMENT_TOKEN \
        && pooltune-agent enroll --config "$CONFIG" --url "$SERVICE_URL"; then
        break
    fi
    if [ "$attempt" -ge "$ATTEMPTS" ]; then
        echo "enrolment failed $attempt times; giving up (the container restarts)" >&2
        exit 1
    fi
    echo "enrolment failed (attempt $attempt of $ATTEMPTS); retrying"
    sleep 3
done
exec pooltune-agent run --config "$CONFIG"
