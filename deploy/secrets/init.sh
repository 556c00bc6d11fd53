#!/bin/sh
# Writes one random secret per file beside this script, for deploy/compose.yaml; existing files are kept.
# config.yaml reads them through ${file:/run/secrets/gateway/NAME}; postgres, rabbitmq and grafana through *_FILE.
set -eu
cd "$(dirname "$0")"
# Readable by every user: the containers read them as their own users (node 1000, postgres 999, rabbitmq 999,
# grafana 472), and a bind mount keeps the host's owner. Keep this folder on a host only you administer, or use
# Docker secrets or a Kubernetes Secret instead.
umask 022
random() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
put() { [ -s "$1" ] || printf '%s\n' "$2" > "$1"; }
for name in postgres_password rabbitmq_password grafana_admin_password crm_api_key crm_webhook_api_key admin_api_key relay_api_key sandbox_receipt_secret; do
  put "$name" "$(random)"
done
put database_url "postgres://gateway:$(head -n1 postgres_password)@postgres:5432/crm_sms_gateway"
put rabbitmq_url "amqp://gateway:$(head -n1 rabbitmq_password)@rabbitmq:5672"
echo "secrets in $(pwd): $(ls | grep -v -e init.sh -e .gitignore | tr '\n' ' ')"
