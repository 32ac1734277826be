/*
 * test_switch.c — the test switches of core/sys (sys.h pohm_sys_test_switch),
 * linked into the test builds only: the test programs, the unit tests and
 * build/test/ (the library, pohmelfs and pohmelfsd that the bats tests
 * needing a switch run).  Its strong definition replaces the weak one that
 * returns NULL, so the shipped binaries hold none of these names.
 */
#include <stdlib.h>

#include "sys.h"

const char *pohm_sys_test_switch(enum pohm_test_switch s)
{
	static const char *const names[] = {
		[POHM_TEST_PASSTHROUGH] = "POHMELFS_TEST_PASSTHROUGH",
		[POHM_TEST_REGULAR_STUBS] = "POHMELFS_TEST_REGULAR_STUBS",
		[POHM_TEST_INTERNAL_FD] = "POHMELFS_TEST_INTERNAL_FD",
		[POHM_TEST_BOOT_ID] = "POHMELFS_TEST_BOOT_ID",
		[POHM_TEST_KILL_AT_RENAME_INTENT] = "POHMELFS_TEST_KILL_AT_RENAME_INTENT",
		[POHM_TEST_KILL_IN_RENAME] = "POHMELFS_TEST_KILL_IN_RENAME",
		[POHM_TEST_KILL_IN_REHINT] = "POHMELFS_TEST_KILL_IN_REHINT",
		[POHM_TEST_KILL_AT_RMDIR_SEALED] = "POHMELFS_TEST_KILL_AT_RMDIR_SEALED",
		[POHM_TEST_DIR_TIME_LAG] = "POHMELFS_TEST_DIR_TIME_LAG",
		[POHM_TEST_REFRESH_IN_OPEN] = "POHMELFS_TEST_REFRESH_IN_OPEN",
		[POHM_TEST_LIST_FAIL] = "POHMELFS_TEST_LIST_FAIL",
	};

	if ((unsigned)s >= sizeof(names) / sizeof(names[0]) || !names[s])
		return NULL;
	return getenv(names[s]);
}
