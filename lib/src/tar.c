// SPDX-License-Identifier: MIT
#include "tar.h"

void or_sched_init(struct or_sched *s, unsigned int n, unsigned int incast)
{
	s->n = n;
	if (n <= 1) {
		s->incast = s->r1 = s->r2 = 0;
		return;
	}
	s->incast = incast == 0 || incast > n - 1 ? n - 1 : incast;
	s->r1 = (n - 1 + s->incast - 1) / s->incast;
	s->r2 = s->incast >= n - 1 ? 1 : (n + s->incast - 1) / s->incast;
}

unsigned int or_sched_p1_round(const struct or_sched *s, unsigned int src,
			       unsigned int dst)
{
	unsigned int d = (dst + s->n - src) % s->n;

	return (d - 1) / s->incast;
}

unsigned int or_sched_p1_peers(const struct or_sched *s, unsigned int r,
			       unsigned int k, int recv, unsigned int *out)
{
	unsigned int cnt = 0;

	for (unsigned int d = k * s->incast + 1;
	     d <= (k + 1) * s->incast && d <= s->n - 1; d++)
		out[cnt++] = recv ? (r + s->n - d) % s->n : (r + d) % s->n;
	return cnt;
}

unsigned int or_sched_p2_round(const struct or_sched *s, unsigned int j)
{
	return s->r2 == 1 ? 0 : j / s->incast;
}

void or_tar_reduce(float *acc, size_t len, const struct or_contrib *c,
		   unsigned int nc, unsigned int n, int compensate,
		   struct or_comp_event *scratch, struct or_comp_stats *st)
{
	for (unsigned int k = 0; k < nc; k++) {
		const float *d = c[k].data;
		size_t pos = 0;

		/* Add the gaps between missing ranges, then the tail. */
		for (uint32_t i = 0; i <= c[k].nr_missing; i++) {
			size_t a = len, b = len;

			if (i < c[k].nr_missing)
				or_range_entries(&c[k].missing[i], len, &a, &b);
			for (size_t j = pos; j < a; j++)
				acc[j] += d[j];
			if (b > pos)
				pos = b;
		}
	}
	or_comp_rescale(acc, len, c, nc, n, compensate, scratch, st);
}
