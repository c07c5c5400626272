#!/usr/bin/env bash
# Installs scheduled-events-bridge as a systemd service from this checkout:
#   sudo scripts/install-linux.sh
# Copies the checkout to /opt/se-bridge, installs its dependencies (Node 24 comes with them),
# creates the se-bridge user, /etc/se-bridge/{bridge.yaml,se-bridge.env}, and the unit.
set -euo pipefail
[ "$(id -u)" = "0" ] || { echo "run as root (sudo)" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is needed once, to install the pinned Node 24 and the dependencies" >&2; exit 1; }
src="$(cd "$(dirname "$0")/.." && pwd)"
id se-bridge >/dev/null 2>&1 || useradd --system --home-dir /var/lib/se-bridge --shell /usr/sbin/nologin se-bridge
mkdir -p /opt/se-bridge /etc/se-bridge
cp -a "$src"/{package.json,package-lock.json,bin,src,config,README.md} /opt/se-bridge/
(cd /opt/se-bridge && npm ci --no-audit --no-fund)
[ -f /etc/se-bridge/bridge.yaml ] || install -m 0640 -g se-bridge "$src/config/bridge.example.yaml" /etc/se-bridge/bridge.yaml
[ -f /etc/se-bridge/se-bridge.env ] || install -m 0600 "$src/config/systemd/se-bridge.env" /etc/se-bridge/se-bridge.env
install -m 0644 "$src/config/systemd/se-bridge.service" /etc/systemd/system/se-bridge.service
systemctl daemon-reload
echo "edit /etc/se-bridge/bridge.yaml and /etc/se-bridge/se-bridge.env, then:"
echo "  systemctl enable --now se-bridge && journalctl -u se-bridge -f"
