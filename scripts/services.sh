#!/usr/bin/env bash
# Makes sure MariaDB (127.0.0.1:3306, root without password) and Redis
# (127.0.0.1:6379) are running. Installs them from Debian packages when
# they are missing and we are root; otherwise says what to do. Also
# installs what the Galera test needs (galera-4, rsync, ss).
set -euo pipefail

say() { printf 'services: %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    say "$1 is not running on 127.0.0.1:$2 and I am not root: start it yourself (or run this script with sudo), then retry."
    exit 1
  fi
}

apt_install() {
  say "installing $* from Debian packages"
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq >/dev/null; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_port() {
  for _ in $(seq 1 60); do port_open "$1" && return 0; sleep 0.5; done
  return 1
}

# MariaDB
if ! port_open 3306; then
  need_root MariaDB 3306
  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || apt_install mariadb-server
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  say "starting MariaDB"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
  wait_port 3306 || { say "MariaDB did not come up on 127.0.0.1:3306"; exit 1; }
fi
# A fresh Debian MariaDB only lets root in over the socket: allow TCP with
# an empty password, as the default DSN expects.
if command -v mariadb >/dev/null 2>&1 && ! mariadb -h127.0.0.1 -uroot -e 'SELECT 1' >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    mariadb -e "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('');" 2>/dev/null || true
    mariadb -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;" 2>/dev/null || true
  fi
fi

# Redis
if ! port_open 6379; then
  need_root Redis 6379
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  say "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/leadpipe.log
  wait_port 6379 || { say "Redis did not come up on 127.0.0.1:6379"; exit 1; }
fi

# The Galera test's tools (internal/faults/galera_test.go, run by .ci/run):
# the galera-4 provider, and for its rsync state transfer (wsrep_sst_rsync)
# rsync and a socket lister (ss from iproute2, or lsof). Without them the
# test skips; as root we install them so a fresh machine runs it.
galera_missing=()
[ -e /usr/lib/galera/libgalera_smm.so ] || galera_missing+=(galera-4)
command -v rsync >/dev/null 2>&1 || galera_missing+=(rsync)
command -v ss >/dev/null 2>&1 || command -v lsof >/dev/null 2>&1 || galera_missing+=(iproute2)
if [ "${#galera_missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt_install "${galera_missing[@]}" || say "could not install ${galera_missing[*]}: the Galera test will skip"
  else
    say "missing ${galera_missing[*]} (apt-get install them as root): the Galera test will skip"
  fi
fi
say "MariaDB and Redis are up"
