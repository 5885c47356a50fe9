// SPDX-License-Identifier: MIT
/* Transpose AllReduce schedule: every ordered pair once in phase 1, at most
 * I senders per receiver per round, every owner once in phase 2. */
#include <string.h>

#include "helpers.h"
#include "tar.h"

static void check(unsigned int n, unsigned int incast)
{
	static unsigned char seen[128][128];
	unsigned int peers[128], np, recv_cnt[128];
	struct or_sched s;

	or_sched_init(&s, n, incast);
	if (n == 1) {
		T_ASSERT(s.r1 == 0 && s.r2 == 0, "n 1 has no rounds");
		return;
	}
	unsigned int I = incast == 0 || incast > n - 1 ? n - 1 : incast;

	T_ASSERT(s.incast == I, "incast %u for %u", s.incast, incast);
	T_ASSERT(s.r1 == (n - 1 + I - 1) / I, "n %u I %u r1 %u", n, I, s.r1);
	memset(seen, 0, sizeof(seen));
	for (unsigned int k = 0; k < s.r1; k++) {
		memset(recv_cnt, 0, sizeof(recv_cnt));
		for (unsigned int r = 0; r < n; r++) {
			np = or_sched_p1_peers(&s, r, k, 0, peers);
			T_ASSERT(np <= I, "too many targets");
			for (unsigned int i = 0; i < np; i++) {
				T_ASSERT(peers[i] != r, "self send");
				T_ASSERT(!seen[r][peers[i]], "pair twice");
				seen[r][peers[i]] = 1;
				recv_cnt[peers[i]]++;
				T_ASSERT(or_sched_p1_round(&s, r, peers[i]) == k,
					 "round of pair");
			}
			/* What r receives in round k is what others send it. */
			np = or_sched_p1_peers(&s, r, k, 1, peers);
			for (unsigned int i = 0; i < np; i++)
				T_ASSERT(or_sched_p1_round(&s, peers[i], r) == k,
					 "receive round");
		}
		for (unsigned int r = 0; r < n; r++) {
			T_ASSERT(recv_cnt[r] <= I, "incast exceeded: %u > %u",
				 recv_cnt[r], I);
			np = or_sched_p1_peers(&s, r, k, 1, peers);
			T_ASSERT(np == recv_cnt[r], "receive count");
		}
	}
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int b = 0; b < n; b++)
			T_ASSERT(seen[a][b] == (a != b), "pair %u->%u missing", a, b);
	/* Phase 2: at most I senders per round (others than the receiver). */
	for (unsigned int g = 0; g < s.r2; g++) {
		unsigned int cnt = 0;

		for (unsigned int j = 0; j < n; j++)
			cnt += or_sched_p2_round(&s, j) == g;
		T_ASSERT(cnt >= 1, "empty phase-2 round");
		T_ASSERT(cnt <= I || (s.r2 == 1 && cnt == n && I == n - 1),
			 "phase-2 round %u has %u senders", g, cnt);
	}
	for (unsigned int j = 0; j < n; j++)
		T_ASSERT(or_sched_p2_round(&s, j) < s.r2, "owner round range");
	/* Paper: about 2 * ceil((n-1)/I) rounds. */
	T_ASSERT(s.r1 + s.r2 <= 2 * ((n - 1 + I - 1) / I) + 1, "too many rounds");
}

int main(void)
{
	for (unsigned int n = 1; n <= 100; n++)
		for (unsigned int I = 0; I <= n + 1; I++)
			check(n, I);
	return 0;
}
