#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Module lifecycle: load/unload loops, the borrowed family number and option
# level, load-time parameter validation, rmmod refused while a socket is
# open, and loading on demand by a lookup of the netlink family.
. "$(dirname "$0")/lib.sh"
require_root

# sock_probe FAMILY: exit status 0 if socket(FAMILY, SOCK_DGRAM, 0) works,
# else print the errno name.
sock_probe() {
	python3 -c '
import errno, socket, sys
try:
    socket.socket(int(sys.argv[1]), socket.SOCK_DGRAM, 0).close()
except OSError as e:
    print(errno.errorcode[e.errno]); sys.exit(1)' "$1"
}

optr_unload || { ktap_fail "module unloads at start"; ktap_finish; }

# Without the module the family is unknown.
ktap_check "no family before load" \
	test "$(sock_probe "$OPTIREDUCE_FAMILY_DEFAULT")" = EAFNOSUPPORT

# A plain insmod on a stock kernel: the module names no other module it
# needs, and loads with none of the networking modules loaded first
# (udp_tunnel, which distribution kernels build as a module, unloaded if
# an earlier test loaded it and nothing holds it).
ktap_check "depends on no other module" \
	test -z "$(modinfo -F depends "$OPTIREDUCE_KO")"
[ -d /sys/module/udp_tunnel ] && rmmod udp_tunnel 2>/dev/null
if [ -d /sys/module/udp_tunnel ] && [ ! -e /sys/module/udp_tunnel/initstate ]; then
	ktap_skip "plain insmod with udp_tunnel absent" "udp_tunnel is built in"
elif [ -d /sys/module/udp_tunnel ]; then
	ktap_skip "plain insmod with udp_tunnel absent" "udp_tunnel in use"
else
	ktap_check "plain insmod with udp_tunnel absent" insmod "$OPTIREDUCE_KO"
	optr_unload
fi

ok=1
for i in $(seq 20); do
	optr_load || { ok=0; echo "# load $i failed"; break; }
	sock_probe "$(optr_family)" >/dev/null || { ok=0; echo "# socket $i failed"; }
	optr_rmmod || { ok=0; echo "# unload $i failed"; break; }
done
ktap_check "load, open, unload 20 times" test $ok -eq 1

optr_load
ktap_check "default family published" test "$(optr_family)" -eq "$OPTIREDUCE_FAMILY_DEFAULT"
ktap_check "default level published" test "$(cat $PARAMS/sol)" -eq "$OPTIREDUCE_SOL_DEFAULT"
ktap_check "default port published" test "$(cat $PARAMS/port)" -eq "$OPTIREDUCE_PORT_DEFAULT"
optr_unload

# A family number chosen at load time is used, and only that one.
if optr_load family=22 sol=300 port=20000; then
	ktap_check "family=22 published" test "$(optr_family)" -eq 22
	ktap_check "sol=300 published" test "$(cat $PARAMS/sol)" -eq 300
	ktap_check "port=20000 published" test "$(cat $PARAMS/port)" -eq 20000
	ktap_check "socket in family 22" sock_probe 22
	ktap_check "default family unused" \
		test "$(sock_probe "$OPTIREDUCE_FAMILY_DEFAULT")" = EAFNOSUPPORT
	optr_unload
else
	ktap_fail "load with family=22 sol=300 port=20000"
fi

# Bad load-time values fail the load cleanly. Family 2 is AF_INET: taken.
for arg in family=0 family=46 family=-1 family=abc family=2 \
	   sol=1 sol=255 sol=65536 port=0 port=65536 port=x; do
	if optr_load "$arg" 2>/dev/null; then
		ktap_fail "load refused with $arg"
		optr_unload
	else
		ktap_check "load refused with $arg" test ! -d /sys/module/optireduce
	fi
done

# An open socket pins the module.
optr_load
coproc HOLD {
	python3 -c '
import socket, sys
s = socket.socket(int(sys.argv[1]), socket.SOCK_DGRAM, 0)
print("open", flush=True)
sys.stdin.readline()' "$(optr_family)"
}
read -r line <&"${HOLD[0]}"
if [ "$line" = open ]; then
	ktap_check "rmmod refused while a socket is open" \
		sh -c '! rmmod optireduce 2>/dev/null'
	echo >&"${HOLD[1]}"
	wait "$HOLD_PID"
	ktap_check "rmmod after the socket closed" optr_rmmod
else
	ktap_fail "hold a socket open"
fi

# A namespace with a socket, deleted after the socket closes.
optr_load
setup_ns NS
ip netns exec "$NS" python3 -c '
import socket, sys
socket.socket(int(sys.argv[1]), socket.SOCK_DGRAM, 0).close()' "$(optr_family)"
ktap_check "socket in a namespace" test $? -eq 0
cleanup_ns
ktap_check "rmmod after namespace deleted" optr_rmmod


# The netlink family's alias: the name genetlink asks modprobe for when a
# lookup finds no family by that name, "net-pf-<PF_NETLINK>-proto-
# <NETLINK_GENERIC>-family-<name>" (both numbers are 16), with the name
# the uapi header gives userspace.
genl_name=$(awk '$1 == "#define" && $2 == "OPTIREDUCE_GENL_NAME" {
	gsub(/"/, "", $3); print $3 }' "$REPO_DIR/uapi/linux/optireduce.h")
genl_alias=net-pf-16-proto-16-family-$genl_name
ktap_check "module alias is the netlink family's" \
	sh -c 'modinfo -F alias "$1" | grep -qxF "$2"' sh \
	"$OPTIREDUCE_KO" "$genl_alias"

# genl_lookup: look the family up by name, as the optireduce tool does.
genl_lookup() { genl ctrl get name "$genl_name" >/dev/null 2>&1; }

# autoload_test MODDIR: install the module in a writable layer over
# MODDIR (/lib/modules, the host's and read-only in the guest), index it
# with depmod, and check that a lookup of the family loads it.
autoload_test() {
	local moddir=$1 kver layer

	kver=$(uname -r)
	layer=$(mktemp -d)
	# An overlay's upper layer cannot itself be on an overlay (/tmp is).
	if ! mount -t tmpfs optr-modules "$layer"; then
		ktap_skip "lookup of the family loads the module" "no tmpfs"
		rmdir "$layer"
		return
	fi
	mkdir "$layer/upper" "$layer/work"
	if ! mount -t overlay optr-modules -o "lowerdir=$moddir,upperdir=$layer/upper,workdir=$layer/work" "$moddir"; then
		ktap_skip "lookup of the family loads the module" "no overlayfs"
		umount "$layer"
		rmdir "$layer"
		return
	fi
	mkdir -p "$moddir/$kver/extra"
	cp "$OPTIREDUCE_KO" "$moddir/$kver/extra/"
	if depmod -a "$kver"; then
		ktap_check "lookup of the family loads the module" genl_lookup
		ktap_check "module loaded by the lookup" optr_loaded
		optr_unload
	else
		ktap_fail "depmod indexes the installed module"
	fi
	umount "$moddir"
	umount "$layer"
	rmdir "$layer"
}

optr_unload
if ! command -v genl >/dev/null || ! command -v depmod >/dev/null; then
	ktap_skip "lookup of the family loads the module" "no genl or depmod"
elif [ ! -w /proc/sys/kernel/modprobe ]; then
	ktap_skip "lookup of the family loads the module" "no module loader"
else
	if modinfo -n optireduce >/dev/null 2>&1; then
		# Installed on this system already (a real host, dkms):
		# the lookup must load that one.
		ktap_check "lookup of the family loads the installed module" \
			genl_lookup
		optr_unload
	elif genl_lookup || optr_loaded; then
		# Not installed, so the lookup must fail and load nothing,
		# or the check below would not show that the alias is what
		# loads the module.
		ktap_fail "no family before the module is installed"
		optr_unload
	else
		ktap_ok "no family before the module is installed"
		autoload_test /lib/modules
	fi
fi

optr_load
ktap_finish
