/*
 * test_procns.c — core/mount procns.c's one call per namespace change
 * (pohm_proc_ns) on a cache over the in-memory store: when the storage
 * answers, the host's real call is not made; when the kernel must answer
 * (a name only the kernel holds: a bound socket), it is made once, and a
 * stored name such a rename replaced leaves the storage afterwards (the
 * decision that used to pass from preload's before hook to its after
 * hook in a thread-local).  Other caches on the same store are the
 * other hosts that see the storage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "cache_hosts.h"
#include "kv.h"
#include "mount.h"

/* The fake host's real call: a rename of host h's local names, counted. */
static int calls;
struct ren { const char *from, *to; };

static int real_rename(void *v)
{
	const struct ren *x = v;

	calls++;
	return rename(x->from, x->to) ? -errno : 0;
}

static int real_none(void *v)
{
	calls++;
	return -EPERM;
}

TEST(the_storage_answers_alone_for_the_root_and_a_new_directory)
{
	struct pohm_proc_ns_arg arg = { .mode = 0755 };
	struct pohm_proc_real real = { real_none, NULL, NULL };
	struct pohm_cache *c, *c2;
	struct stat st;

	ch_setup();
	c = ch_host("h");
	c2 = ch_host("h2");
	EXPECT(c && c2);
	calls = 0;
	EXPECT_EQ_INT(pohm_proc_ns(c, POHM_PN_MKDIR, "", NULL, &arg, &real), -EEXIST);
	EXPECT_EQ_INT(pohm_proc_ns(c, POHM_PN_RMDIR, "", NULL, &arg, &real), -EBUSY);
	EXPECT_EQ_INT(pohm_proc_ns(c, POHM_PN_MKDIR, "d", NULL, &arg, &real), 0);
	EXPECT_EQ_INT(calls, 0);
	EXPECT_EQ_INT(stat(ch_path("h", "d"), &st), 0);
	EXPECT(S_ISDIR(st.st_mode));
	EXPECT_EQ_INT(pohm_cache_materialize(c2, "d", 0), 0);	/* the other host sees it */
	pohm_cache_close(c);
	pohm_cache_close(c2);
}

/* issue 22 item 4: a socket renamed over a stored file. */
TEST(a_local_only_rename_is_the_kernels_and_drops_the_stored_name_it_replaced)
{
	struct pohm_proc_ns_arg arg = { 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pohm_cache *c, *c2, *c3;
	struct ren x;
	struct pohm_proc_real real = { real_rename, &x, NULL };
	int fd, s;

	ch_setup();
	c = ch_host("h");
	c2 = ch_host("h2");
	EXPECT(c && c2);
	/* A stored file "b", as the shim makes one. */
	EXPECT_EQ_INT(pohm_cache_create(c, "b", 0644, 0), 0);
	fd = open(ch_path("h", "b"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	pohm_cache_opened(c, "b", fd);
	EXPECT_EQ_INT((int)write(fd, "x", 1), 1);
	EXPECT(pohm_cache_push_fd(c, fd) >= 0);
	close(fd);
	EXPECT_EQ_INT(pohm_cache_materialize(c2, "b", 0), 0);
	EXPECT_EQ_INT(access(ch_path("h2", "b"), F_OK), 0);	/* the other host has it */
	/* A socket "s" only the kernel holds. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ch_path("h", "s"));
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT(s >= 0);
	EXPECT_EQ_INT(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	x.from = ch_path("h", "s");
	x.to = ch_path("h", "b");
	calls = 0;
	EXPECT_EQ_INT(pohm_proc_ns(c, POHM_PN_RENAME, "s", "b", &arg, &real), 0);
	EXPECT_EQ_INT(calls, 1);
	c3 = ch_host("h3");	/* a host that never saw "b" asks the storage */
	EXPECT(c3 != NULL);
	pohm_cache_materialize(c3, "b", 0);
	EXPECT_EQ_INT(access(ch_path("h3", "b"), F_OK), -1);
	EXPECT_EQ_INT(errno, ENOENT);
	close(s);
	pohm_cache_close(c);
	pohm_cache_close(c2);
	pohm_cache_close(c3);
}
