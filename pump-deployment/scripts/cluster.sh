#!/usr/bin/env bash
# A pg_auto_failover formation on loopback: a monitor, a primary and a synchronous standby
# (PostgreSQL 15), plus PgBouncer in transaction pooling mode in front of the nodes.
#
#   cluster.sh install            apt-get the Debian packages (once; needs root)
#   cluster.sh start              create (first time) and start monitor, node1, node2, pgbouncer
#   cluster.sh stop               stop everything this script started
#   cluster.sh destroy            stop and remove the data directories
#   cluster.sh state              pg_autoctl show state
#   cluster.sh primary            prints the port of the current primary
#   cluster.sh wait-healthy [s]   waits until one primary and one secondary are reported
#   cluster.sh switchover         pg_autoctl perform switchover (controlled)
#   cluster.sh kill-postmaster    kill -9 the primary's postmaster (its keeper restarts it)
#   cluster.sh kill-node          kill -9 the primary's keeper and postmaster (a lost host)
#   cluster.sh restart-node N     starts node N's keeper again (after kill-node)
#   cluster.sh sync on|off        synchronous (default) or asynchronous replication
#   cluster.sh bouncer            (re)starts PgBouncer pointing at the current primary
#
# Ports (loopback only): DEPLOY_PORT_BASE (55400) + 1 monitor, + 2 node1, + 3 node2,
# + 10 pgbouncer. Data under DEPLOY_DIR (/tmp/pump-deployment). PostgreSQL refuses to run as
# root, so every server runs as the user "postgres".
set -euo pipefail

BASE=${DEPLOY_PORT_BASE:-55400}
DIR=${DEPLOY_DIR:-/tmp/pump-deployment}
MONITOR_PORT=$((BASE + 1))
NODE1_PORT=$((BASE + 2))
NODE2_PORT=$((BASE + 3))
BOUNCER_PORT=$((BASE + 10))
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
RUNAS=postgres
MONITOR_URI="postgres://autoctl_node@127.0.0.1:${MONITOR_PORT}/pg_auto_failover?sslmode=disable"

as_pg() {
  if [ "$(id -un)" = "$RUNAS" ]; then env PATH="$PGBIN:$PATH" "$@"; else
    runuser -u "$RUNAS" -- env PATH="$PGBIN:$PATH" PG_CONFIG="$PGBIN/pg_config" XDG_CONFIG_HOME="$DIR/config" XDG_DATA_HOME="$DIR/share" "$@"
  fi
}

autoctl() { as_pg pg_autoctl "$@"; }

node_port() { if [ "$1" = 1 ]; then echo "$NODE1_PORT"; else echo "$NODE2_PORT"; fi; }

install() {
  if command -v pg_autoctl >/dev/null && command -v pgbouncer >/dev/null; then
    echo "packages already installed"
    return
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-15-auto-failover \
    pg-auto-failover-cli pgbouncer >/dev/null
}

run_keeper() { # name pgdata
  local name=$1 pgdata=$2
  if [ -f "$DIR/$name.pid" ] && kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then return; fi
  as_pg bash -c "nohup setsid env XDG_CONFIG_HOME='$DIR/config' XDG_DATA_HOME='$DIR/share' \
    pg_autoctl run --pgdata '$pgdata' >>'$DIR/$name.log' 2>&1 & echo \$! >'$DIR/$name.pid'"
}

pg_isready_port() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$1"; }

wait_port() { # port seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do pg_isready_port "$1" && return 0; sleep 0.1; done
  echo "port $1 not ready after $2 s" >&2; return 1
}

start() {
  mkdir -p "$DIR"
  chown "$RUNAS" "$DIR"
  if [ ! -d "$DIR/monitor" ]; then
    autoctl create monitor --pgdata "$DIR/monitor" --pgport "$MONITOR_PORT" \
      --hostname 127.0.0.1 --auth trust --no-ssl --pgctl "$PGBIN/pg_ctl" >>"$DIR/create.log" 2>&1
  fi
  run_keeper monitor "$DIR/monitor"
  wait_port "$MONITOR_PORT" 60
  for n in 1 2; do
    if [ ! -d "$DIR/node$n" ]; then
      autoctl create postgres --pgdata "$DIR/node$n" --pgport "$(node_port $n)" \
        --hostname 127.0.0.1 --name "node$n" --dbname pump --monitor "$MONITOR_URI" \
        --auth trust --no-ssl --pgctl "$PGBIN/pg_ctl" >>"$DIR/create.log" 2>&1
      run_keeper "node$n" "$DIR/node$n"
      wait_healthy_nodes "$n" 120
    else
      run_keeper "node$n" "$DIR/node$n"
    fi
  done
  wait_healthy 120
  # The test user, with a password for PgBouncer's md5 auth file.
  local primary
  primary=$(primary_port) || { echo "no primary answers after start" >&2; return 1; }
  as_pg psql -qAt -h 127.0.0.1 -p "$primary" -d pump -c \
    "DO \$\$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname='pump') THEN
       CREATE ROLE pump LOGIN SUPERUSER PASSWORD 'pump'; END IF; END\$\$;" >/dev/null
  start_bouncer
}

start_bouncer() {
  mkdir -p "$DIR/pgbouncer"
  cat >"$DIR/pgbouncer/pgbouncer.ini" <<INI
[databases]
; The current primary. PgBouncer does not follow a failover by itself: "cluster.sh bouncer"
; points it at the primary again and reloads it (docs/deployment.md).
pump = host=127.0.0.1 port=$(primary_port) dbname=pump

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = md5
auth_file = $DIR/pgbouncer/userlist.txt
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
admin_users = pump
logfile = $DIR/pgbouncer/pgbouncer.log
pidfile = $DIR/pgbouncer/pgbouncer.pid
INI
  echo '"pump" "pump"' >"$DIR/pgbouncer/userlist.txt"
  chown -R "$RUNAS" "$DIR/pgbouncer"
  if [ -f "$DIR/pgbouncer/pgbouncer.pid" ] && kill -0 "$(cat "$DIR/pgbouncer/pgbouncer.pid")" 2>/dev/null; then
    # Restart rather than reload (SIGHUP would do after a failover): tests start on fresh
    # server connections.
    local pid; pid=$(cat "$DIR/pgbouncer/pgbouncer.pid")
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  as_pg pgbouncer -d "$DIR/pgbouncer/pgbouncer.ini"
  wait_port "$BOUNCER_PORT" 30
}

stop() {
  if [ -f "$DIR/pgbouncer/pgbouncer.pid" ]; then
    kill "$(cat "$DIR/pgbouncer/pgbouncer.pid")" 2>/dev/null || true
  fi
  for n in node2 node1 monitor; do
    if [ -d "$DIR/$n" ]; then autoctl stop --pgdata "$DIR/$n" >/dev/null 2>&1 || true; fi
  done
  for n in node2 node1 monitor; do
    if [ -f "$DIR/$n.pid" ]; then
      local pid; pid=$(cat "$DIR/$n.pid")
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$DIR/$n.pid"
    fi
    if [ -f "$DIR/$n/postmaster.pid" ]; then
      as_pg pg_ctl -D "$DIR/$n" stop -m fast >/dev/null 2>&1 || true
    fi
  done
}

destroy() { stop; rm -rf "$DIR"; }

state() { autoctl show state --monitor "$MONITOR_URI"; }

# Ports whose server is reachable and not in recovery.
primary_port() {
  local p
  for p in "$NODE1_PORT" "$NODE2_PORT"; do
    if [ "$(as_pg psql -qAt -h 127.0.0.1 -p "$p" -d pump -c 'SELECT NOT pg_is_in_recovery()' 2>/dev/null)" = t ]; then
      echo "$p"; return 0
    fi
  done
  return 1
}

primary_node() { if [ "$(primary_port)" = "$NODE1_PORT" ]; then echo 1; else echo 2; fi; }

# True when the monitor reports one primary and one secondary, both as assigned, and both
# reported in the last 10 s: right after "start", the monitor still holds the states the nodes
# reported before they were stopped.
healthy() {
  local states
  states=$(as_pg psql -qAt -h 127.0.0.1 -p "$MONITOR_PORT" -d pg_auto_failover -c \
    "SELECT string_agg(reportedstate::text, ',' ORDER BY reportedstate::text)
       FROM pgautofailover.node WHERE reportedstate = goalstate
        AND reporttime > now() - interval '10 seconds'" 2>/dev/null || true)
  [ "$states" = "primary,secondary" ] && primary_port >/dev/null
}

wait_healthy_nodes() { # nodes seconds
  local want=$1 i
  for ((i = 0; i < $2 * 5; i++)); do
    local n
    n=$(as_pg psql -qAt -h 127.0.0.1 -p "$MONITOR_PORT" -d pg_auto_failover -c \
      "SELECT count(*) FROM pgautofailover.node WHERE reportedstate = goalstate
         AND reportedstate IN ('single','primary','secondary')
         AND reporttime > now() - interval '10 seconds'" 2>/dev/null || echo 0)
    [ "$n" -ge "$want" ] && return 0
    sleep 0.2
  done
  state >&2 || true
  echo "formation not healthy after $2 s" >&2; return 1
}

wait_healthy() {
  local i
  for ((i = 0; i < ${1:-120} * 5; i++)); do healthy && return 0; sleep 0.2; done
  state >&2 || true
  echo "formation not healthy after ${1:-120} s" >&2; return 1
}

switchover() { autoctl perform switchover --monitor "$MONITOR_URI" >>"$DIR/switchover.log" 2>&1; }

postmaster_pid() { head -1 "$DIR/node$1/postmaster.pid"; }

kill_postmaster() {
  local n; n=$(primary_node)
  kill -9 "$(postmaster_pid "$n")"
  echo "node$n"
}

kill_node() {
  local n; n=$(primary_node)
  local pm; pm=$(postmaster_pid "$n")
  # The keeper runs in a session of its own (setsid) with its services and PostgreSQL: kill -9
  # the whole process group at once, as a host that vanished. Killing the keeper first and the
  # postmaster after gives the keeper time to restart PostgreSQL in between.
  local pgid; pgid=$(ps -o pgid= -p "$pm" | tr -d ' ')
  kill -9 -- "-$pgid"
  rm -f "$DIR/node$n.pid"
  echo "node$n"
}

restart_node() { run_keeper "node$1" "$DIR/node$1"; }

sync_mode() {
  local n
  case "$1" in
    on) for n in 1 2; do autoctl set node replication-quorum true --pgdata "$DIR/node$n" >/dev/null 2>&1; done ;;
    off) for n in 1 2; do autoctl set node replication-quorum false --pgdata "$DIR/node$n" >/dev/null 2>&1; done ;;
  esac
  # The primary applies the new setting through the monitor (apply_settings): wait until both
  # nodes are back in their steady states.
  sleep 2
  wait_healthy 120
  local sync; sync=$(as_pg psql -qAt -h 127.0.0.1 -p "$(primary_port)" -d pump -c 'SHOW synchronous_standby_names')
  echo "synchronous_standby_names=$sync"
}

cmd=${1:-}
shift || true
case "$cmd" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  destroy) destroy ;;
  state) state ;;
  primary) primary_port ;;
  wait-healthy) wait_healthy "${1:-120}" ;;
  switchover) switchover ;;
  kill-postmaster) kill_postmaster ;;
  kill-node) kill_node ;;
  restart-node) restart_node "$1" ;;
  sync) sync_mode "$1" ;;
  bouncer) start_bouncer ;;
  *) sed -n '2,20p' "$0"; exit 2 ;;
esac
