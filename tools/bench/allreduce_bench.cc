// SPDX-License-Identifier: GPL-2.0
/*
 * allreduce_bench: one rank of the allreduce benchmark (allreduce-bench).
 * Runs one contender over a list of buffer sizes, a number of iterations
 * each, and prints one line per measured iteration. A size is that of the
 * gradient in float32 (entries = bytes / 4); a contender named with -bf16
 * or -fp16 reduces the same entries in bfloat16 or float16.
 *
 * Contenders
 *   optireduce          liboptireduce, transport "kernel" (the module's
 *                       lossy socket; fails if it is not loaded)
 *   tar-tcp             liboptireduce, transport "tcp": the same Transpose
 *                       AllReduce over its reliable TCP path
 *   gloo-ring, gloo-ring-chunked, gloo-halving-doubling, gloo-bcube
 *                       Gloo (Debian's libgloo), TCP transport, FileStore
 *                       rendezvous
 *   optireduce-bf16, tar-tcp-bf16, optireduce-fp16, tar-tcp-fp16,
 *   gloo-ALGORITHM-fp16
 *                       the same in 16 bits (Gloo has float16, not
 *                       bfloat16)
 *   optireduce-rc       optireduce, run while the module's rate control
 *                       is on (allreduce-bench sets rate_control; the
 *                       name only labels the results)
 *
 * Output (stdout, line-buffered):
 *   iter CONTENDER RANK BYTES ITER DURATION_NS LOST EXPECTED PATH START_NS
 *     one per measured iteration; LOST/EXPECTED are entries (OptiReduce's
 *     per-call result; 0 0 for the others); PATH is lossy or reliable;
 *     START_NS is CLOCK_MONOTONIC at the start (comparable across ranks on
 *     one machine).
 *   size CONTENDER RANK BYTES setup_ms=... bad=N
 *     after each size: how long creating the communicator/algorithm took,
 *     and how many entries of the checked iteration were wrong (reliable
 *     contenders must give 0; a lossy call is not checked).
 *   stats CONTENDER RANK BYTES margin_pct=... late_bytes=... deadline_ms=...
 *         lossy=... fallback=... trips=...
 *     the library's contenders, after each size: its deadline margin and
 *     the late bytes it followed, the bound of the last call, lossy and
 *     fallback calls, safeguard trips (optireduce_comm_stats()).
 *   wire CONTENDER RANK BYTES dtype=TYPE sent_bytes=N
 *     after each size: the element type and the payload one call of this
 *     rank sent its peers: the library's count (optireduce_result's
 *     sent_bytes) for its contenders, 2 (size - 1) / size of the buffer
 *     for Gloo's (each of its four algorithms sends that much).
 *   done CONTENDER RANK ok=1
 * Exit status: 0 when every call worked and every reliable result was
 * exact, 1 otherwise, 2 on a bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <optireduce.h>

namespace {

struct Opts {
	std::string contender;
	std::string base;			// contender less its dtype suffix
	int dtype = OPTIREDUCE_FLOAT32;
	int rank = -1, size = 0;
	std::vector<size_t> sizes;		// bytes
	// per size (one value: all); warmup: discarded calls
	std::vector<int> iters, warmup, or_warmup;
	std::vector<std::string> ips;		// one per rank
	int port_base = 0;			// optireduce / tar-tcp
	std::string store, prefix = "bench";	// gloo
	int timeout_ms = 600000;
	unsigned int hadamard = OPTIREDUCE_HADAMARD_OFF;
	unsigned int loss_threshold_ppm = 1000000;
	int ready_kb = -1;			// -1: the library's default
	int direct_kb = -1;			// -1: the library's default
	int incast = -1;			// -1: the library's default
	bool incast_dynamic = false;
};

int64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void usage()
{
	fprintf(stderr,
"usage: allreduce_bench --contender NAME --rank R --size N --sizes B[,B...]\n"
"         --ips IP0,IP1,... [--iters N[,N...]] [--warmup N[,N...]] [--timeout-ms MS]\n"
"         optireduce, tar-tcp: --port-base P [--or-warmup N[,N...]]\n"
"                              [--hadamard off|on|auto] [--loss-threshold F]\n"
"                              [--ready-kb KB] [--direct-kb KB]\n"
"                              [--incast N|dynamic|dynamic:N]\n"
"         gloo-*:              --store DIR [--prefix STR]\n"
"  NAME: optireduce tar-tcp gloo-ring gloo-ring-chunked\n"
"        gloo-halving-doubling gloo-bcube, each with -fp16 (float16);\n"
"        optireduce and tar-tcp also with -bf16 (bfloat16)\n"
"  B: bytes, a multiple of 4, with an optional K or M suffix\n");
	exit(2);
}

bool parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || !v || v % 4 || v > (1ull << 32))
		return false;
	*out = v;
	return true;
}

bool parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

std::vector<std::string> split(const std::string &s)
{
	std::vector<std::string> v;
	size_t a = 0, b;

	while ((b = s.find(',', a)) != std::string::npos) {
		v.push_back(s.substr(a, b - a));
		a = b + 1;
	}
	v.push_back(s.substr(a));
	return v;
}

std::vector<int> parse_list(const char *s, int lo)
{
	std::vector<int> v;

	for (auto &x : split(s)) {
		int n;

		if (!parse_int(x.c_str(), lo, 1000000, &n))
			usage();
		v.push_back(n);
	}
	return v;
}

void parse(int argc, char **argv, Opts &o)
{
	static const struct option lo[] = {
		{ "contender", 1, 0, 'c' }, { "rank", 1, 0, 'r' },
		{ "size", 1, 0, 'n' }, { "sizes", 1, 0, 's' },
		{ "iters", 1, 0, 'i' }, { "warmup", 1, 0, 'w' },
		{ "ips", 1, 0, 'a' }, { "port-base", 1, 0, 'p' },
		{ "store", 1, 0, 'S' }, { "prefix", 1, 0, 'P' },
		{ "timeout-ms", 1, 0, 't' }, { "or-warmup", 1, 0, 'W' },
		{ "hadamard", 1, 0, 'H' }, { "loss-threshold", 1, 0, 'L' },
		{ "ready-kb", 1, 0, 'R' }, { "direct-kb", 1, 0, 'D' },
		{ "incast", 1, 0, 'I' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	int ch;
	double f;
	char *end;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'c': o.contender = optarg; break;
		case 'r': if (!parse_int(optarg, 0, 1023, &o.rank)) usage(); break;
		case 'n': if (!parse_int(optarg, 1, 1024, &o.size)) usage(); break;
		case 's':
			for (auto &s : split(optarg)) {
				size_t b;

				if (!parse_size(s.c_str(), &b))
					usage();
				o.sizes.push_back(b);
			}
			break;
		case 'i': o.iters = parse_list(optarg, 1); break;
		case 'w': o.warmup = parse_list(optarg, 0); break;
		case 'a': o.ips = split(optarg); break;
		case 'p': if (!parse_int(optarg, 1024, 60000, &o.port_base)) usage(); break;
		case 'S': o.store = optarg; break;
		case 'P': o.prefix = optarg; break;
		case 't': if (!parse_int(optarg, 1, 86400000, &o.timeout_ms)) usage(); break;
		case 'W': o.or_warmup = parse_list(optarg, 0); break;
		case 'H':
			if (!strcmp(optarg, "off"))
				o.hadamard = OPTIREDUCE_HADAMARD_OFF;
			else if (!strcmp(optarg, "on"))
				o.hadamard = OPTIREDUCE_HADAMARD_ON;
			else if (!strcmp(optarg, "auto"))
				o.hadamard = OPTIREDUCE_HADAMARD_AUTO;
			else
				usage();
			break;
		case 'L':
			f = strtod(optarg, &end);
			if (end == optarg || *end || !(f >= 0 && f <= 1))
				usage();
			o.loss_threshold_ppm = (unsigned int)(f * 1e6 + 0.5);
			break;
		case 'R':
			if (!parse_int(optarg, 0, 16777216, &o.ready_kb))
				usage();
			break;
		case 'D':
			if (!parse_int(optarg, 0, 4096, &o.direct_kb))
				usage();
			break;
		case 'I':
			// N: a fixed limit; dynamic[:N]: adapted, at most N.
			if (!strncmp(optarg, "dynamic", 7)) {
				o.incast_dynamic = true;
				if (optarg[7] == ':' ?
				    !parse_int(optarg + 8, 1, 1023, &o.incast) :
				    optarg[7] != 0)
					usage();
			} else if (!parse_int(optarg, 1, 1023, &o.incast)) {
				usage();
			}
			break;
		default: usage();
		}
	}
	if (o.iters.empty())
		o.iters.push_back(10);
	if (o.warmup.empty())
		o.warmup.push_back(2);
	if (o.or_warmup.empty())
		o.or_warmup.push_back(10);
	for (auto *v : { &o.iters, &o.warmup, &o.or_warmup }) {
		if (v->size() == 1)
			v->resize(o.sizes.size(), (*v)[0]);
		if (v->size() != o.sizes.size())
			usage();
	}
	o.base = o.contender;
	if (o.base == "optireduce-rc")
		o.base = "optireduce";
	for (auto sfx : { "-bf16", "-fp16" }) {
		size_t n = strlen(sfx);

		if (o.base.size() > n &&
		    o.base.compare(o.base.size() - n, n, sfx) == 0) {
			o.base.resize(o.base.size() - n);
			o.dtype = sfx[1] == 'b' ? OPTIREDUCE_BFLOAT16 :
						  OPTIREDUCE_FLOAT16;
		}
	}
	if (optind != argc || o.contender.empty() || o.rank < 0 ||
	    o.size < 1 || o.rank >= o.size || o.sizes.empty() ||
	    (int)o.ips.size() != o.size)
		usage();
	bool gloo = o.contender.rfind("gloo-", 0) == 0;
	if (gloo && (o.store.empty() || o.dtype == OPTIREDUCE_BFLOAT16))
		usage();
	if (!gloo && !o.port_base)
		usage();
	if (o.port_base && o.port_base + 16 * (int)o.sizes.size() > 65535)
		usage();
}

/*
 * The buffer of an iteration: every rank contributes (rank + 1) * pattern,
 * pattern small integers, so every partial sum is exact in float32 and the
 * result is sum_r (r + 1) * pattern = size (size + 1) / 2 * pattern. With
 * 8 ranks at most that is below 256: exact in bfloat16 and float16 too.
 */
uint16_t to_16(int dtype, float f)
{
	uint32_t u;

	if (dtype == OPTIREDUCE_FLOAT16)
		return gloo::cpu_float2half_rn(f).x;
	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);	/* exact: 8 significant bits at most */
}

float from_16(int dtype, uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	if (dtype == OPTIREDUCE_FLOAT16) {
		gloo::float16 g;

		g.x = h;
		return gloo::cpu_half2float(g);
	}
	memcpy(&f, &u, 4);
	return f;
}

struct Data {
	std::vector<float> pattern, buf;
	std::vector<uint16_t> buf16;
	size_t count = 0;
	int dtype = OPTIREDUCE_FLOAT32;

	void init(size_t n, int rank, int type)
	{
		count = n;
		dtype = type;
		pattern.resize(n);
		if (dtype == OPTIREDUCE_FLOAT32)
			buf.resize(n);
		else
			buf16.resize(n);
		for (size_t i = 0; i < n; i++)
			pattern[i] = (float)((rank + 1) * (int)(i % 7 + 1));
	}
	void *ptr()
	{
		return dtype == OPTIREDUCE_FLOAT32 ? (void *)buf.data() :
						     (void *)buf16.data();
	}
	size_t elem() const { return dtype == OPTIREDUCE_FLOAT32 ? 4 : 2; }
	void refill()
	{
		if (dtype == OPTIREDUCE_FLOAT32)
			memcpy(buf.data(), pattern.data(), count * sizeof(float));
		else
			for (size_t i = 0; i < count; i++)
				buf16[i] = to_16(dtype, pattern[i]);
	}
	float at(size_t i) const
	{
		return dtype == OPTIREDUCE_FLOAT32 ? buf[i] :
						     from_16(dtype, buf16[i]);
	}
	// Entries that differ from the exact sum.
	size_t bad(int rank, int size) const
	{
		float k = (float)size * (size + 1) / 2 / (rank + 1);
		size_t n = 0;

		for (size_t i = 0; i < count; i++)
			n += at(i) != k * pattern[i];
		return n;
	}
};

const char *dtype_name(int dtype)
{
	return dtype == OPTIREDUCE_BFLOAT16 ? "bfloat16" :
	       dtype == OPTIREDUCE_FLOAT16 ? "float16" : "float32";
}

void print_wire(const Opts &o, size_t bytes, uint64_t sent)
{
	printf("wire %s %d %zu dtype=%s sent_bytes=%llu\n", o.contender.c_str(),
	       o.rank, bytes, dtype_name(o.dtype), (unsigned long long)sent);
}

void print_iter(const Opts &o, size_t bytes, int it, int64_t dur,
		uint64_t lost, uint64_t expected, bool reliable, int64_t start)
{
	printf("iter %s %d %zu %d %lld %llu %llu %s %lld\n",
	       o.contender.c_str(), o.rank, bytes, it, (long long)dur,
	       (unsigned long long)lost, (unsigned long long)expected,
	       reliable ? "reliable" : "lossy", (long long)start);
}

/* ---- liboptireduce: optireduce and tar-tcp ------------------------------ */

/*
 * One communicator per size: the library's deadline estimator learns per
 * size class from its reliable warm-up calls, and each size gets its own
 * warm-up. Listening ports differ per size so that a communicator never
 * waits for the previous one's sockets.
 */
int run_optireduce(const Opts &o)
{
	bool kernel = o.base == "optireduce";
	int failed = 0;

	for (size_t si = 0; si < o.sizes.size(); si++) {
		size_t bytes = o.sizes[si], count = bytes / 4;
		std::vector<std::string> peers;
		std::vector<const char *> pp;
		struct optireduce_config cfg;
		struct optireduce_result res;
		optireduce_comm *c;
		Data d;
		size_t bad = 0;
		int rc;

		for (int r = 0; r < o.size; r++)
			peers.push_back(o.ips[r] + ":" +
					std::to_string(o.port_base + 16 * (int)si + r));
		for (auto &p : peers)
			pp.push_back(p.c_str());
		optireduce_config_init(&cfg);
		cfg.rank = o.rank;
		cfg.size = o.size;
		cfg.peers = pp.data();
		cfg.transport = kernel ? OPTIREDUCE_TRANSPORT_KERNEL :
					 OPTIREDUCE_TRANSPORT_TCP;
		cfg.hadamard = o.hadamard;
		cfg.warmup_calls = kernel ? o.or_warmup[si] : 0;
		cfg.loss_threshold_ppm = o.loss_threshold_ppm;
		cfg.timeout_ms = o.timeout_ms;
		if (o.ready_kb >= 0)
			cfg.ready_kb = (unsigned int)o.ready_kb;
		if (o.direct_kb >= 0)
			cfg.direct_kb = (unsigned int)o.direct_kb;
		if (o.incast >= 0)
			cfg.incast = (unsigned int)o.incast;
		if (o.incast_dynamic)
			cfg.flags |= OPTIREDUCE_CFG_INCAST_DYNAMIC;
		cfg.flags |= OPTIREDUCE_CFG_QUIET;
		d.init(count, o.rank, o.dtype);
		int64_t t0 = now_ns();
		rc = optireduce_comm_create(&cfg, &c);
		if (rc) {
			fprintf(stderr, "%s rank %d: create: %s\n",
				o.contender.c_str(), o.rank, optireduce_strerror(rc));
			return 1;
		}
		int64_t setup = now_ns() - t0;
		int total = (int)cfg.warmup_calls + o.warmup[si] + o.iters[si];
		for (int it = 0; it < total; it++) {
			d.refill();
			int64_t start = now_ns();
			rc = optireduce_allreduce(c, d.ptr(), count, o.dtype,
						  OPTIREDUCE_SUM, &res);
			int64_t dur = now_ns() - start;
			if (rc) {
				fprintf(stderr, "%s rank %d: %zu bytes, call %d: %s\n",
					o.contender.c_str(), o.rank, bytes, it,
					optireduce_strerror(rc));
				failed = 1;
				break;
			}
			bool reliable = res.flags & OPTIREDUCE_RES_RELIABLE;
			int m = it - (int)cfg.warmup_calls - o.warmup[si];
			/* The first measured iteration is checked, if reliable. */
			if (m == 0 && reliable && !res.lost)
				bad = d.bad(o.rank, o.size);
			if (m >= 0)
				print_iter(o, bytes, m, dur, res.lost, res.expected,
					   reliable, start);
		}
		struct optireduce_stats st;

		if (!optireduce_comm_stats(c, &st))
			printf("stats %s %d %zu margin_pct=%llu late_bytes=%llu "
			       "deadline_ms=%.1f lossy=%llu fallback=%llu trips=%llu "
			       "ready_wait_ms=%.1f ready_missed=%llu "
			       "catch_up=%llu direct=%llu incast=%u "
			       "incast_lowered=%u\n",
			       o.contender.c_str(), o.rank, bytes,
			       (unsigned long long)st.margin_pct,
			       (unsigned long long)st.late_bytes,
			       st.deadline_ns / 1e6,
			       (unsigned long long)st.calls_lossy,
			       (unsigned long long)st.calls_fallback,
			       (unsigned long long)st.safeguard_trips,
			       st.ready_wait_ns / 1e6,
			       (unsigned long long)st.ready_missed,
			       (unsigned long long)st.catch_up_calls,
			       (unsigned long long)st.calls_direct,
			       st.incast, st.incast_lowered);
		optireduce_comm_destroy(c);
		printf("size %s %d %zu setup_ms=%.1f bad=%zu\n", o.contender.c_str(),
		       o.rank, bytes, setup / 1e6, bad);
		if (!failed)
			print_wire(o, bytes, res.sent_bytes);
		fflush(stdout);
		if (failed)
			return 1;
		if (bad) {
			fprintf(stderr, "%s rank %d: %zu bytes: %zu entries wrong\n",
				o.contender.c_str(), o.rank, bytes, bad);
			return 1;
		}
	}
	return 0;
}

/* ---- Gloo ----------------------------------------------------------------- */

template <typename T>
std::unique_ptr<gloo::Algorithm> make_typed(
	const std::string &name, const std::shared_ptr<gloo::Context> &ctx,
	T *buf, int count)
{
	std::vector<T *> ptrs{ buf };

	if (name == "gloo-ring")
		return std::unique_ptr<gloo::Algorithm>(
			new gloo::AllreduceRing<T>(ctx, ptrs, count));
	if (name == "gloo-ring-chunked")
		return std::unique_ptr<gloo::Algorithm>(
			new gloo::AllreduceRingChunked<T>(ctx, ptrs, count));
	if (name == "gloo-halving-doubling")
		return std::unique_ptr<gloo::Algorithm>(
			new gloo::AllreduceHalvingDoubling<T>(ctx, ptrs, count));
	if (name == "gloo-bcube")
		return std::unique_ptr<gloo::Algorithm>(
			new gloo::AllreduceBcube<T>(ctx, ptrs, count));
	return nullptr;
}

/* float32, or float16 (gloo::float16: the same bits as buf16's). */
std::unique_ptr<gloo::Algorithm> make_algorithm(
	const Opts &o, const std::shared_ptr<gloo::Context> &ctx, Data &d)
{
	if (o.dtype == OPTIREDUCE_FLOAT16)
		return make_typed(o.base, ctx,
				  reinterpret_cast<gloo::float16 *>(d.buf16.data()),
				  (int)d.count);
	return make_typed(o.base, ctx, d.buf.data(), (int)d.count);
}

/*
 * Leaving safely. Gloo's run() (and its barriers) can return while this
 * rank's last sends are still queued in the transport, and an algorithm
 * may leave messages its peers never read (bcube's notifications): closing
 * then either cuts sends a peer still waits for ("Connection closed by
 * peer") or resets the connection because of the unread data ("Connection
 * reset by peer"). So every rank first sends a byte to every other and
 * waits for every peer's byte and for its own to be written (all traffic
 * that matters is through), then says so in the store and waits until
 * every rank has: only then does anyone close a connection.
 */
void goodbye(gloo::Context &ctx, gloo::rendezvous::Store &store)
{
	char out = 1;
	std::vector<char> in(ctx.size);
	std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> rx;
	auto tx = ctx.createUnboundBuffer(&out, 1);
	uint64_t slot = ctx.nextSlot();

	for (int p = 0; p < ctx.size; p++) {
		if (p == ctx.rank)
			continue;
		rx.push_back(ctx.createUnboundBuffer(&in[p], 1));
		rx.back()->recv(p, slot);
	}
	for (int p = 0; p < ctx.size; p++)
		if (p != ctx.rank)
			tx->send(p, slot);
	for (auto &b : rx)
		b->waitRecv();
	for (int p = 0; p < ctx.size - 1; p++)
		tx->waitSend();

	std::vector<std::string> keys;

	for (int p = 0; p < ctx.size; p++)
		keys.push_back("goodbye/" + std::to_string(p));
	store.set(keys[ctx.rank], std::vector<char>{ 1 });
	store.wait(keys, ctx.getTimeout());
}

int run_gloo(const Opts &o)
{
	if (o.base != "gloo-ring" && o.base != "gloo-ring-chunked" &&
	    o.base != "gloo-halving-doubling" && o.base != "gloo-bcube")
		usage();
	gloo::transport::tcp::attr attr(o.ips[o.rank].c_str());
	auto dev = gloo::transport::tcp::CreateDevice(attr);
	gloo::rendezvous::FileStore fs(o.store);
	gloo::rendezvous::PrefixStore store(o.prefix, fs);
	auto ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);

	ctx->setTimeout(std::chrono::milliseconds(o.timeout_ms));
	int64_t t0 = now_ns();
	ctx->connectFullMesh(store, dev);
	int64_t connect = now_ns() - t0;

	for (size_t si = 0; si < o.sizes.size(); si++) {
		size_t bytes = o.sizes[si], count = bytes / 4;
		Data d;
		size_t bad = 0;

		if (count > (size_t)INT32_MAX) {
			fprintf(stderr, "gloo: %zu bytes: count too large\n", bytes);
			return 1;
		}
		d.init(count, o.rank, o.dtype);
		t0 = now_ns();
		auto alg = make_algorithm(o, ctx, d);
		int64_t setup = now_ns() - t0 + connect;
		connect = 0;
		for (int it = 0; it < o.warmup[si] + o.iters[si]; it++) {
			d.refill();
			int64_t start = now_ns();
			alg->run();
			int64_t dur = now_ns() - start;
			int m = it - o.warmup[si];
			if (m == 0)
				bad = d.bad(o.rank, o.size);
			if (m >= 0)
				print_iter(o, bytes, m, dur, 0, 0, true, start);
		}
		printf("size %s %d %zu setup_ms=%.1f bad=%zu\n", o.contender.c_str(),
		       o.rank, bytes, setup / 1e6, bad);
		print_wire(o, bytes, 2 * (uint64_t)(o.size - 1) * count *
				     d.elem() / o.size);
		fflush(stdout);
		if (bad) {
			fprintf(stderr, "%s rank %d: %zu bytes: %zu entries wrong\n",
				o.contender.c_str(), o.rank, bytes, bad);
			return 1;
		}
	}
	goodbye(*ctx, store);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;
	int rc;

	/*
	 * Buffered, flushed after each size: a line-buffered write per
	 * iteration is a system call between two measured calls, and where
	 * the output is on a slow file system (the guest's virtiofs: a round
	 * trip to the host) it blocked ranks for a different time each,
	 * so that they started their next call out of step.
	 */
	static char outbuf[1 << 20];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	parse(argc, argv, o);
	try {
		if (o.base == "optireduce" || o.base == "tar-tcp")
			rc = run_optireduce(o);
		else if (o.contender.rfind("gloo-", 0) == 0)
			rc = run_gloo(o);
		else
			usage();
	} catch (const std::exception &e) {
		fprintf(stderr, "%s rank %d: %s\n", o.contender.c_str(), o.rank,
			e.what());
		rc = 1;
	}
	printf("done %s %d ok=%d\n", o.contender.c_str(), o.rank, rc == 0);
	return rc;
}
