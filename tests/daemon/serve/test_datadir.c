/* test_datadir.c - daemon/serve/datadir.c: the data directory is created when
 * missing and locked for one daemon; a second lock on it fails naming the
 * directory and the holder's pid; the lock is free again once released; a
 * directory that cannot be made is not reported as held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "serve/datadir.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/partd-datadir-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_second_lock_names_the_directory_and_holder(void **state)
{
    (void)state;
    char data[128], err[512], pid[32];
    snprintf(data, sizeof data, "%s/data", dir); /* created by the lock */
    int held = -1;
    int fd = partd_datadir_lock(data, &held, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(held, 0);

    /* Another open file description conflicts even in this process. */
    assert_int_equal(partd_datadir_lock(data, &held, err, sizeof err), -1);
    assert_int_equal(held, 1);
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    if (!strstr(err, data) || !strstr(err, pid))
        fail_msg("expected '%s' and '%s' in: %s", data, pid, err);

    partd_datadir_unlock(fd);
    fd = partd_datadir_lock(data, &held, err, sizeof err);
    assert_true(fd >= 0);
    partd_datadir_unlock(fd);
}

static void test_a_directory_that_cannot_be_made_is_not_held(void **state)
{
    (void)state;
    char file[128], sub[160], err[512];
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(sub, sizeof sub, "%s/data", file);
    int held = -1;
    assert_int_equal(partd_datadir_lock(sub, &held, err, sizeof err), -1);
    assert_int_equal(held, 0);
    assert_non_null(strstr(err, "cannot create the data directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_lock_names_the_directory_and_holder, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_directory_that_cannot_be_made_is_not_held, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("datadir", tests, NULL, NULL);
}
