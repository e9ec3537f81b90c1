#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium and its WebDriver for the console's browser test
# (mvn -Pbrowser). Does nothing when both are there already. Needs root or sudo and apt.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "install-chromium: installing chromium and chromium-driver from Debian's packages" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >&2
command -v chromium >/dev/null && command -v chromedriver >/dev/null
