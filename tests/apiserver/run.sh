#!/bin/bash
# Start the stand-in apiserver (etcd + HTTPS API). See README.md.
#   run.sh --data DIR [--bind] [--port N] [--node-name NAME] [-v]
# Prints "ready https://127.0.0.1:PORT" once it serves; SIGTERM/SIGINT stops
# the server and the etcd it started. CUBELET_STANDIN_PROFILE=FILE runs it
# under cProfile (cprofile_run.py), every thread's CPU time written to FILE at exit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -z "${CUBELET_STANDIN_PROFILE:-}" ] || exec /usr/bin/python3 -B "$here/cprofile_run.py" "$@"
exec /usr/bin/python3 -B "$here/server.py" "$@"
