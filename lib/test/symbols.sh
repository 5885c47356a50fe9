#!/bin/bash
# SPDX-License-Identifier: MIT
# The shared library exports exactly the functions of the public header,
# each at the version node src/liboptireduce.map puts it in (a new node,
# OPTIREDUCE_0.2 say, needs no change here), under the soname the
# Makefile's SOVERSION gives.
B=${B:-build}
sover=$(sed -n 's/^SOVERSION[[:space:]]*:\?=[[:space:]]*//p' Makefile)
[ -n "$sover" ] || { echo "no SOVERSION in Makefile"; exit 1; }
so=$B/liboptireduce.so.$sover
[ -e "$so" ] || { echo "no $so"; exit 1; }
command -v nm >/dev/null || { echo "nm missing"; exit 77; }

# "symbol@@NODE" for every global of the map: a node opens with
# "NAME {", its globals follow "global:" up to "local:" or its "}".
map=$(awk '
	/^[A-Za-z_][A-Za-z0-9_.]*[[:space:]]*\{/ { node = $1; sub(/\{.*/, "", node); glob = 1; next }
	/global:/ { glob = 1; next }
	/local:/ { glob = 0; next }
	/^\}/ { node = ""; next }
	node != "" && glob && /^[[:space:]]*[a-z_]+;/ {
		s = $1; sub(/;.*/, "", s); print s "@@" node }' src/liboptireduce.map |
	sort)
[ -n "$map" ] || { echo "no symbols in src/liboptireduce.map"; exit 1; }
exported=$(nm -D --defined-only --with-symbol-versions "$so" |
	awk '$2 == "T" { print $3 }' | sort)
header=$(grep -oE '^[a-z_ ]*\*?(optireduce_[a-z_]+)\(' include/optireduce.h |
	grep -oE 'optireduce_[a-z_]+' | sort -u)
if [ "$(echo "$map" | sed 's/@@.*//' | sort -u)" != "$header" ]; then
	echo "the map's symbols differ from the header's functions:"
	diff <(echo "$header") <(echo "$map" | sed 's/@@.*//' | sort -u)
	exit 1
fi
if [ "$(echo "$map" | sed 's/@@.*//' | uniq -d)" ]; then
	echo "in more than one node of the map:"
	echo "$map" | sed 's/@@.*//' | uniq -d
	exit 1
fi
if [ "$exported" != "$map" ]; then
	echo "exports differ from the map:"
	diff <(echo "$map") <(echo "$exported")
	exit 1
fi
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "liboptireduce.so.$sover" ] || { echo "soname $soname"; exit 1; }
# Every public function has its man page.
for f in $header; do
	[ -f "man/$f.3" ] || { echo "man/$f.3 missing"; exit 1; }
done
exit 0
