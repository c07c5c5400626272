#!/usr/bin/env bash
# Installs scheduled-events-bridge as a systemd service from a release file, not a checkout:
#
#   sudo scripts/install-linux.sh se-bridge-linux-x64              # the single executable (no Node needed)
#   sudo scripts/install-linux.sh scheduled-events-bridge-X.Y.Z.tgz # the npm package (needs Node 22.21+ or 24.5+, and npm)
#
# Either way the command is /usr/local/bin/se-bridge. Then: the se-bridge system user, the
# unit, and /etc/se-bridge/{bridge.yaml,se-bridge.env} when they do not exist yet (taken from
# the config/ folder beside this script, or from the installed package).
set -euo pipefail
[ "$(id -u)" = "0" ] || { echo "run as root (sudo)" >&2; exit 1; }
artifact="${1:?usage: install-linux.sh se-bridge-linux-<arch> | scheduled-events-bridge-<version>.tgz}"
[ -f "$artifact" ] || { echo "no such file: $artifact" >&2; exit 1; }
here="$(cd "$(dirname "$0")" && pwd)"
config="$here/../config"

case "$artifact" in
  *.tgz)
    command -v npm >/dev/null || { echo "the npm package needs Node (22.21+ or 24.5+) and npm; or install the single executable instead" >&2; exit 1; }
    npm install --global --omit=dev --no-audit --no-fund --prefix /usr/local "$artifact"
    [ -d "$config" ] || config=/usr/local/lib/node_modules/scheduled-events-bridge/config
    ;;
  *)
    install -m 0755 "$artifact" /usr/local/bin/se-bridge
    ;;
esac
[ -d "$config/systemd" ] || { echo "cannot find the configuration examples (config/); put this script beside them" >&2; exit 1; }

id se-bridge >/dev/null 2>&1 || useradd --system --home-dir /var/lib/se-bridge --shell /usr/sbin/nologin se-bridge
mkdir -p /etc/se-bridge
# a minimal configuration (an audit file, no approvals, no secret); every key: bridge.example.yaml
[ -f /etc/se-bridge/bridge.yaml ] || install -m 0640 -g se-bridge "$config/bridge.minimal.yaml" /etc/se-bridge/bridge.yaml
[ -f /etc/se-bridge/se-bridge.env ] || install -m 0600 "$config/systemd/se-bridge.env" /etc/se-bridge/se-bridge.env
install -m 0644 "$config/systemd/se-bridge.service" /etc/systemd/system/se-bridge.service
systemctl daemon-reload
/usr/local/bin/se-bridge --version
echo "/etc/se-bridge/bridge.yaml records every event in /var/log/se-bridge/events.jsonl; add your"
echo "sinks (every key: $config/bridge.example.yaml) and their secrets in /etc/se-bridge/se-bridge.env, then:"
echo "  systemctl enable --now se-bridge && journalctl -u se-bridge -f"
