#!/bin/bash
# Start the stand-in apiserver (etcd + HTTPS API). See README.md.
#   run.sh --data DIR [--bind] [--port N] [--node-name NAME] [-v]
# Prints "ready https://127.0.0.1:PORT" once it serves; SIGTERM/SIGINT stops
# the server and the etcd it started.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec /usr/bin/python3 -B "$here/server.py" "$@"
