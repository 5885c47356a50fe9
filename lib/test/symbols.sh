#!/bin/bash
# SPDX-License-Identifier: MIT
# The shared library exports exactly the functions of the public header,
# all at version OPTIREDUCE_0.1, under soname liboptireduce.so.0.
B=${B:-build}
so=$B/liboptireduce.so.0
[ -e "$so" ] || { echo "no $so"; exit 1; }
command -v nm >/dev/null || { echo "nm missing"; exit 77; }

exported=$(nm -D --defined-only --with-symbol-versions "$so" |
	awk '$2 == "T" { print $3 }' | sort)
header=$(grep -oE '^[a-z_ ]*\*?(optireduce_[a-z_]+)\(' include/optireduce.h |
	grep -oE 'optireduce_[a-z_]+' | sort -u)
want=$(for f in $header; do echo "$f@@OPTIREDUCE_0.1"; done | sort)
if [ "$exported" != "$want" ]; then
	echo "exports differ from the header:"
	diff <(echo "$want") <(echo "$exported")
	exit 1
fi
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = liboptireduce.so.0 ] || { echo "soname $soname"; exit 1; }
# Every public function has its man page.
for f in $header; do
	[ -f "man/$f.3" ] || { echo "man/$f.3 missing"; exit 1; }
done
exit 0
