#!/usr/bin/env bash
# Refreshes the screenshots of docs/console.md (docs/console/*.png): runs the console's browser
# test with its screenshots written there instead of under target/. Run it from anywhere; review
# the pictures and commit them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
mvn -B -pl pump-console -am verify -Pbrowser \
  -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
  -Dit.test=ConsoleBrowserIT -Dfailsafe.failIfNoSpecifiedTests=false \
  -Dconsole.screenshots="$root/docs/console"
git -C "$root" status --short docs/console
