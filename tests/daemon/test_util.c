/* test_util.c - daemon/util.c: ids, times, secret comparison, whole-file
 * reads, number parsing, file-system space and the hash map. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "partd.h"
#include "util.h"

static void test_ids_are_random_hex(void **state)
{
    (void)state;
    char a[PARTD_ID_LEN + 1], b[PARTD_ID_LEN + 1];
    assert_int_equal(partd_id_new(a), PARTD_OK);
    assert_int_equal(partd_id_new(b), PARTD_OK);
    assert_true(partd_id_valid(a));
    assert_string_not_equal(a, b);
    assert_false(partd_id_valid("0123"));
    assert_false(partd_id_valid("0123456789ABCDEF0123456789abcdef"));
    assert_false(partd_id_valid("0123456789abcdef0123456789abcdef0"));
    assert_true(partd_id_valid("0123456789abcdef0123456789abcdef"));
}

static void test_rfc3339(void **state)
{
    (void)state;
    char buf[32];
    partd_rfc3339(0, buf);
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    partd_rfc3339(1700000000123, buf);
    assert_string_equal(buf, "2023-11-14T22:13:20.123Z");
}

static void test_secret_equal(void **state)
{
    (void)state;
    assert_true(partd_secret_equal("abc", 3, "abc", 3));
    assert_false(partd_secret_equal("abc", 3, "abd", 3));
    assert_false(partd_secret_equal("abc", 3, "abcd", 4));
    assert_false(partd_secret_equal("", 0, "a", 1));
}

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
    assert_int_equal(partd_read_file(path, 100000, &buf, &len), PARTD_OK);
    assert_int_equal(len, 100000);
    assert_int_equal(buf[99999], 'a' + 99999 % 26);
    assert_int_equal(buf[len], '\0');
    free(buf);
    assert_int_equal(partd_read_file(path, 99999, &buf, &len), PARTD_ETOOBIG);
    assert_int_equal(errno, EFBIG);
    unlink(path);
    assert_int_equal(partd_read_file(path, 100000, &buf, &len), PARTD_EIO);
    assert_int_equal(errno, ENOENT);
}

static void test_parse_u64(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(partd_parse_u64("0", 10, &v), PARTD_OK);
    assert_int_equal(v, 0);
    assert_int_equal(partd_parse_u64("1000", 1000, &v), PARTD_OK);
    assert_int_equal(partd_parse_u64("1001", 1000, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("18446744073709551615", UINT64_MAX, &v), PARTD_OK);
    assert_true(v == UINT64_MAX);
    assert_int_equal(partd_parse_u64("18446744073709551616", UINT64_MAX, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("-1", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64(" 1", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("1x", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("", 10, &v), PARTD_EINVALID);
}

static void test_map(void **state)
{
    (void)state;
    partd_map m;
    partd_map_init(&m);
    static char keys[1000][16];
    for (int i = 0; i < 1000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        assert_int_equal(partd_map_put(&m, keys[i], &keys[i]), PARTD_OK);
    }
    assert_int_equal(m.count, 1000);
    for (int i = 0; i < 1000; i++)
        assert_ptr_equal(partd_map_get(&m, keys[i]), &keys[i]);
    assert_null(partd_map_get(&m, "nope"));
    for (int i = 0; i < 1000; i += 2)
        assert_ptr_equal(partd_map_remove(&m, keys[i]), &keys[i]);
    assert_int_equal(m.count, 500);
    assert_null(partd_map_get(&m, "k0"));
    assert_non_null(partd_map_get(&m, "k1"));
    assert_null(partd_map_remove(&m, "k0"));
    partd_map_free(&m);
}

static void test_id_rejects_non_hex(void **state)
{
    (void)state;
    assert_false(partd_id_valid(""));
    assert_false(partd_id_valid("0123456789abcdef0123456789abcdeg"));
    assert_false(partd_id_valid("0123456789abcdef 123456789abcdef"));
}

static void test_read_file_directory_is_an_error(void **state)
{
    (void)state;
    char *buf = (char *)0x1;
    size_t len = 7;
    assert_int_not_equal(partd_read_file("/", 1 << 20, &buf, &len), PARTD_OK);
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

static void test_map_replaces_and_grows_back_empty(void **state)
{
    (void)state;
    partd_map m;
    partd_map_init(&m);
    int a = 1, b = 2;
    assert_int_equal(partd_map_put(&m, "k", &a), PARTD_OK);
    assert_int_equal(partd_map_put(&m, "k", &b), PARTD_OK);
    assert_int_equal(m.count, 1);
    assert_ptr_equal(partd_map_get(&m, "k"), &b);
    assert_ptr_equal(partd_map_remove(&m, "k"), &b);
    assert_int_equal(m.count, 0);
    assert_null(partd_map_get(&m, "k"));
    partd_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_are_random_hex),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_id_rejects_non_hex),
        cmocka_unit_test(test_read_file_directory_is_an_error),
        cmocka_unit_test(test_fs_space),
        cmocka_unit_test(test_map_replaces_and_grows_back_empty),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
