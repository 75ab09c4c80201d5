/* test_fs.c - daemon/core/fs.c: whole-file reads and file-system space. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "core/fs.h"
#include "partd/partd.h"

static void test_read_file(void **state)
{
    (void)state;
    char path[] = "/tmp/partd-read-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    for (int i = 0; i < 100000; i++)
        fputc('a' + i % 26, f);
    fclose(f);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(partd_fs_read_file(path, 100000, &buf, &len), PARTD_OK);
    assert_int_equal(len, 100000);
    assert_int_equal(buf[99999], 'a' + 99999 % 26);
    assert_int_equal(buf[len], '\0');
    free(buf);
    assert_int_equal(partd_fs_read_file(path, 99999, &buf, &len), PARTD_ETOOBIG);
    assert_int_equal(errno, EFBIG);
    unlink(path);
    assert_int_equal(partd_fs_read_file(path, 100000, &buf, &len), PARTD_EIO);
    assert_int_equal(errno, ENOENT);
}

static void test_read_file_directory_is_an_error(void **state)
{
    (void)state;
    char *buf = (char *)0x1;
    size_t len = 7;
    assert_int_not_equal(partd_fs_read_file("/", 1 << 20, &buf, &len), PARTD_OK);
}

static void test_fs_space(void **state)
{
    (void)state;
    uint64_t avail = 0;
    int ro = -1;
    assert_int_equal(partd_fs_space("/tmp", &avail, &ro), PARTD_OK);
    assert_true(ro == 0 || ro == 1);
    assert_int_equal(partd_fs_space("/nonexistent/partd/dir", &avail, &ro), PARTD_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_read_file_directory_is_an_error),
        cmocka_unit_test(test_fs_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
