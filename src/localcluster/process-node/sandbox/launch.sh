#!/bin/sh
# The process node's container launcher. Run as root with a clean environment, as the first
# process of new mount, PID, UTS and IPC namespaces (`unshare --mount --pid --uts --ipc --fork`,
# entered into the pod's network namespace by `nsenter`); it builds the container's root
# filesystem on a tmpfs, pivots into it and becomes the container's init, without privileges:
#
#   launch.sh ROOT SPEC UID GID GROUPS USERNS CAPS HOSTNAME
#
# ROOT     an empty folder to mount the container's root on (seen only inside these namespaces)
# SPEC     a folder holding `mounts` (tab-separated lines: kind, source, target, in that order;
#          kinds dir-ro, dir-rw, file-ro, file-rw, tmpfs, device — the TUN device, usable) and `exec` (NUL-separated: NAME=VALUE of the
#          environment, then the program and its arguments), and `workdir`
# UID GID  the user and group the program runs as; GROUPS its supplementary groups (`-`: none)
# USERNS   1: the program runs as root of a user namespace of its own, mapped to UID outside
# CAPS     capabilities kept (`-`: none; only net_bind_service and net_admin are ever granted)
#
# The init (bash, as UID) forwards SIGTERM, SIGINT and SIGHUP to the program and exits with its
# status; when it ends the kernel kills whatever else is left in the PID namespace.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
root=$1 spec=$2 uid=$3 gid=$4 groups=$5 userns=$6 caps=$7 name=$8
tab=$(printf '\t')

mount -t tmpfs -o mode=0755,nosuid,nodev tenantry-root "$root"
cd "$root"
mkdir -p usr etc proc dev tmp run var/tmp home
# The host's top-level links into /usr (a merged-/usr Debian) come along as links.
for top in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$top" ]; then ln -s "$(readlink "/$top")" "$top"; fi
done

mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs tmp
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs var/tmp
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs run
mount -t tmpfs -o mode=0755,nosuid tmpfs dev
for device in null zero full random urandom tty; do
  : >"dev/$device"
  mount --bind "/dev/$device" "dev/$device"
done
mkdir dev/pts dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts dev/pts
ln -s pts/ptmx dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev shm dev/shm
ln -s /proc/self/fd dev/fd
ln -s /proc/self/fd/0 dev/stdin
ln -s /proc/self/fd/1 dev/stdout
ln -s /proc/self/fd/2 dev/stderr
mount -t proc -o nosuid,nodev,noexec proc proc
for writable in sys sysrq-trigger; do
  [ -e "proc/$writable" ] || continue
  mount --bind "proc/$writable" "proc/$writable"
  mount -o remount,bind,ro,nosuid,nodev,noexec "proc/$writable"
done

while IFS=$tab read -r kind source target; do
  [ -n "$kind" ] || continue
  at="$root$target"
  case $kind in
  dir-ro | dir-rw)
    mkdir -p "$at"
    mount --rbind "$source" "$at"
    if [ "$kind" = dir-ro ]; then
      mount -o remount,bind,ro,nosuid,nodev "$at"
    else
      mount -o remount,bind,nosuid,nodev "$at"
    fi
    ;;
  file-ro | file-rw)
    mkdir -p "$(dirname "$at")"
    [ -e "$at" ] || : >"$at"
    mount --bind "$source" "$at"
    if [ "$kind" = file-ro ]; then
      mount -o remount,bind,ro,nosuid,nodev "$at"
    else
      mount -o remount,bind,nosuid,nodev "$at"
    fi
    ;;
  device)
    mkdir -p "$(dirname "$at")"
    [ -e "$at" ] || : >"$at"
    mount --bind "$source" "$at"
    ;;
  tmpfs)
    mkdir -p "$at"
    mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$at"
    ;;
  *)
    echo "launch.sh: unknown mount kind $kind" >&2
    exit 127
    ;;
  esac
done <"$spec/mounts"

# What the init reads: the program and its environment, for its user only.
mkdir run/tenantry
cp "$spec/exec" run/tenantry/exec
workdir=$(cat "$spec/workdir")
mkdir -p "$root$workdir"
chown -R "$uid:$gid" run/tenantry
chmod 0700 run/tenantry
chmod 0400 run/tenantry/exec

hostname "$name"
mkdir .old-root
pivot_root . .old-root
cd /
umount -l /.old-root
rmdir /.old-root
mount -o remount,bind,ro,nosuid,nodev /
cd "$workdir" 2>/dev/null || cd /

# The init: reads the program and its environment, runs it, forwards signals, exits with its status.
init='
set -u
mapfile -d "" -t exec_argv </run/tenantry/exec
rm -f /run/tenantry/exec
/usr/bin/env -i -- "${exec_argv[@]}" &
child=$!
unset exec_argv
forward() { kill -s "$1" "$child" 2>/dev/null; }
trap "forward TERM" TERM
trap "forward INT" INT
trap "forward HUP" HUP
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || exit "$status"
done
'
if [ "$groups" = - ]; then group_flags=--clear-groups; else group_flags=--groups=$groups; fi
if [ "$caps" = - ]; then
  set -- --inh-caps=-all --bounding-set=-all
else
  set -- --inh-caps="-all,+$caps" --ambient-caps="+$caps" --bounding-set="-all,+$caps"
fi
if [ "$userns" = 1 ]; then
  exec setpriv --reuid="$uid" --regid="$gid" "$group_flags" "$@" --no-new-privs -- \
    unshare --user --map-root-user -- setpriv --inh-caps=-all --bounding-set=-all -- /bin/bash -c "$init" init
fi
exec setpriv --reuid="$uid" --regid="$gid" "$group_flags" "$@" --no-new-privs -- /bin/bash -c "$init" init
