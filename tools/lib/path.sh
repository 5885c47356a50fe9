# SPDX-License-Identifier: GPL-2.0
# System tools first. Sourced, never run.
#
# A user's PATH may put e.g. a pyenv python3 shim ahead of Debian's, which
# is slow to start in the guest and lacks Debian's modules.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
