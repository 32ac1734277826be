/* test_sha512.c — FIPS 180-4 vectors, the namespace vector of PROTOCOL.md
 * §3.5, incremental updates across block boundaries, and sha512sum(1) on
 * random inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "proto.h"
#include "sha512.h"

static void hex(char *out, const uint8_t *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static int digest_is(const void *p, size_t n, const char *want)
{
	uint8_t d[64];
	char h[129];

	pohm_sha512(p, n, d);
	hex(h, d, 64);
	if (strcmp(h, want))
		printf("# got  %s\n# want %s\n", h, want);
	return !strcmp(h, want);
}

TEST(fips_abc)
{
	EXPECT(digest_is("abc", 3,
		"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
		"2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"));
}

TEST(fips_empty)
{
	EXPECT(digest_is("", 0,
		"cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
		"47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"));
}

TEST(fips_896_bits)
{
	const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
			"hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

	EXPECT(digest_is(m, strlen(m),
		"8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
		"501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"));
}

TEST(fips_million_a_incremental)
{
	struct pohm_sha512 s;
	uint8_t d[64], chunk[1000];
	char h[129];
	int i;

	memset(chunk, 'a', sizeof(chunk));
	pohm_sha512_init(&s);
	for (i = 0; i < 1000; i++)
		pohm_sha512_update(&s, chunk, sizeof(chunk));
	pohm_sha512_final(&s, d);
	hex(h, d, 64);
	EXPECT_EQ_STR(h, "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
			 "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b");
}

TEST(namespace_vector)
{
	uint8_t id[64];
	char h[129];

	pohm_key_id(id, "ns", 2, "key", 3);
	hex(h, id, 64);
	EXPECT_EQ_STR(h, "729642227c8b8fe42b656cf4aa1f5d4d20eaf71c52a22ab637bbee0907b1b122"
			 "b75a2e6538e828d0715288bede01b1a55a288b1a81b1976cfc1c201b64e8538a");
	/* No namespace: plain sha512 of the key. */
	pohm_key_id(id, NULL, 0, "abc", 3);
	hex(h, id, 64);
	EXPECT(!strncmp(h, "ddaf35a193617aba", 16));
}

/* Every split point of a 300-byte message gives the one-shot digest. */
TEST(split_updates)
{
	uint8_t msg[300], a[64], b[64];
	struct pohm_sha512 s;
	size_t i, j;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	pohm_sha512(msg, sizeof(msg), a);
	for (i = 0; i <= sizeof(msg); i += 7) {
		for (j = i; j <= sizeof(msg); j += 13) {
			pohm_sha512_init(&s);
			pohm_sha512_update(&s, msg, i);
			pohm_sha512_update(&s, msg + i, j - i);
			pohm_sha512_update(&s, msg + j, sizeof(msg) - j);
			pohm_sha512_final(&s, b);
			EXPECT_MEM(a, b, 64);
		}
	}
}

/* Multi-block and padding-boundary lengths (111/112: the length field
 * just fits / spills into a second block; 127/128, 239/240; 1 MiB, the
 * chunk size) of the pattern byte i = i * 31 + 7, digests from Python's
 * hashlib — no sha512sum(1) needed. */
TEST(boundary_lengths)
{
	static const struct { size_t n; const char *hex; } v[] = {
		{ 111, "da780d8338a8a920ceb6892cb4ecbb0cc0c66956269aadd5dd0f48790a00857b"
		       "d975890f3b2955a317738cc7a770820c29f922ffbc22020f1909d594cc987d1b" },
		{ 112, "053182f7fa4e59f8636e415a77ed4fdc650f0a43834c9d35adf899599c3ab9c4"
		       "153f02ff50bd01888060cd36a6fa12d9db242fc35164c80135613514186d5843" },
		{ 127, "a7a75593826fd37d4e60f6101eabb9f8ab1cf4d5319ebc805266d5da8deb5097"
		       "de1a235fc5d9d3d73c50ac100ffc75089fb454674ab61232091bd19cbdc67396" },
		{ 128, "df007a08f3aaae47e0c92ef840ecd43645ae6098c819f2a4a66174ef1cd49e5c"
		       "6dfccf0616895e570b7564af641de5863dff9f89c752913d30cf0ecf678e1635" },
		{ 239, "38980139aa28f1ccec548e21fd73d927488c4aa749a4b304fe0c5f7797fb80a0"
		       "3bc0557584ef42f47e0d3ff4eee0011084ac8421cf08dd2cea6a132bcd075c90" },
		{ 240, "eb5690f4b1753298de6626f031576ca2b93cec042d597a7a1f9e47534af610f4"
		       "09acb608d88fdaeade8b36fd09a6cd81f2ff8ec10962e79cd791eebc26d569f5" },
		{ 1048576, "bbd88befcaa6abb0735609ac35e1dfbb5ab8064dca98effd5d493ccb0a0244cd"
		       "88d5a01e86696eb17f0e7c087f89dd7f06161ecefd1776a74dfc60a27e89bc06" },
	};
	uint8_t *buf = malloc(1 << 20);
	size_t i, k;

	EXPECT(buf != NULL);
	if (!buf)
		return;
	for (i = 0; i < 1 << 20; i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	for (k = 0; k < sizeof(v) / sizeof(v[0]); k++)
		EXPECT(digest_is(buf, v[k].n, v[k].hex));
	free(buf);
}

/* Throughput on 1 MiB (printed, not asserted: the machine is shared). */
TEST(throughput_report)
{
	size_t n = 1 << 20, i;
	uint8_t *buf = malloc(n), d[64];
	struct timespec t0, t1;
	double s;
	int r, rounds = 32;

	EXPECT(buf != NULL);
	if (!buf)
		return;
	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)i;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (r = 0; r < rounds; r++) {
		pohm_sha512(buf, n, d);
		buf[0] ^= d[0];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("# sha512: %.0f MB/s\n", s > 0 ? rounds * (n / 1e6) / s : 0.0);
	free(buf);
}

/* Random inputs of lengths around block boundaries against sha512sum(1). */
TEST(random_vs_sha512sum)
{
	static const size_t lens[] = { 1, 111, 112, 113, 127, 128, 129, 239, 240, 1000, 65537,
				       1 << 20 };
	char path[] = "/tmp/pohm-sha-XXXXXX", cmd[128], want[129], got[129];
	uint8_t *buf, d[64];
	size_t i, k;

	if (system("command -v sha512sum >/dev/null 2>&1"))
		SKIP("sha512sum not installed");
	srand(12345);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		FILE *f, *p;
		int fd = mkstemp(path);

		buf = malloc(lens[k]);
		for (i = 0; i < lens[k]; i++)
			buf[i] = (uint8_t)rand();
		f = fdopen(fd, "w");
		fwrite(buf, 1, lens[k], f);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "sha512sum %s", path);
		p = popen(cmd, "r");
		EXPECT(p && fscanf(p, "%128s", want) == 1);
		if (p)
			pclose(p);
		pohm_sha512(buf, lens[k], d);
		hex(got, d, 64);
		EXPECT_EQ_STR(got, want);
		unlink(path);
		strcpy(path, "/tmp/pohm-sha-XXXXXX");
		free(buf);
	}
}
