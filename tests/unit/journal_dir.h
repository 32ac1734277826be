/*
 * journal_dir.h — the scratch journal of a journal test program, in the
 * directory dir, /tmp/pohm-JOURNAL_DIR_NAME.<pid> (named at the first
 * fresh: a forked child's fresh uses its parent's).  Define
 * JOURNAL_DIR_NAME, then include once, after harness.h and journal.h.
 */
#ifndef POHM_TESTS_JOURNAL_DIR_H
#define POHM_TESTS_JOURNAL_DIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[96];

/* j: a journal opened on a new empty dir. */
static void fresh(struct pohm_journal *j)
{
	char cmd[200];

	if (!dir[0])
		snprintf(dir, sizeof(dir), "/tmp/pohm-%s.%d", JOURNAL_DIR_NAME, (int)getpid());
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("# %s failed\n", cmd);
	EXPECT_EQ_INT(pohm_journal_open(j, dir), 0);
}

/* Close j and remove dir. */
static void done(struct pohm_journal *j)
{
	char cmd[200];

	pohm_journal_close(j);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("# %s failed\n", cmd);
}

#endif
