#!/bin/bash
# SPDX-License-Identifier: MIT
# The library's man pages format without a single groff warning (-ww:
# all of them), as man(1) would show them.
command -v groff >/dev/null || { echo "groff missing"; exit 77; }
pages=(man/*.[0-9])
[ -e "${pages[0]}" ] || { echo "no man pages under man/"; exit 1; }
bad=0
for p in "${pages[@]}"; do
	out=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
	if [ -n "$out" ]; then
		echo "$p:"
		echo "$out"
		bad=1
	fi
done
echo "${#pages[@]} pages checked"
exit $bad
