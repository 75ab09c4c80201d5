/* test_output.c - output.c: regular files replaced atomically (mode kept,
 * symlinks followed, nothing left on failure), devices and FIFOs written
 * into and never replaced. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "output.h"
#include "partd.h"
#include "util.h"

typedef struct dir_fixture {
    char dir[64];
} dir_fixture;

static int make_dir(void **state)
{
    dir_fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/partd-output-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int remove_dir(void **state)
{
    dir_fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

static char *path_in(const dir_fixture *f, const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", f->dir, name);
    return buf;
}

static unsigned entries(const dir_fixture *f)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", f->dir);
    FILE *p = popen(cmd, "r");
    unsigned n = 0;
    assert_int_equal(fscanf(p, "%u", &n), 1);
    pclose(p);
    return n;
}

static void assert_content(const char *path, const char *want)
{
    char *buf;
    size_t len;
    assert_int_equal(partd_read_file(path, 1 << 20, &buf, &len), PARTD_OK);
    assert_string_equal(buf, want);
    free(buf);
}

static void test_new_file_is_created_with_the_umask_mode(void **state)
{
    dir_fixture *f = *state;
    mode_t old = umask(022);
    assert_int_equal(partd_write_output(path_in(f, "new.json"), "{}", 2), PARTD_OK);
    umask(old);
    struct stat st;
    assert_int_equal(stat(path_in(f, "new.json"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_content(path_in(f, "new.json"), "{}");
    assert_int_equal(entries(f), 1);
}

static void test_existing_file_is_replaced_and_keeps_its_mode(void **state)
{
    dir_fixture *f = *state;
    char *p = path_in(f, "old.json");
    FILE *w = fopen(p, "w");
    fputs("old contents", w);
    fclose(w);
    assert_int_equal(chmod(p, 0600), 0);
    assert_int_equal(partd_write_output(p, "new", 3), PARTD_OK);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_content(p, "new");
    assert_int_equal(entries(f), 1);
}

static void test_abort_leaves_the_old_file_and_no_temporary(void **state)
{
    dir_fixture *f = *state;
    char p[256];
    snprintf(p, sizeof p, "%s", path_in(f, "keep.json"));
    FILE *w = fopen(p, "w");
    fputs("keep", w);
    fclose(w);
    partd_output o;
    assert_int_equal(partd_output_open(&o, p), PARTD_OK);
    assert_int_equal(partd_output_write(&o, "half", 4), PARTD_OK);
    assert_int_equal(entries(f), 2); /* the temporary file beside it */
    partd_output_abort(&o);
    partd_output_abort(&o); /* harmless twice */
    assert_content(p, "keep");
    assert_int_equal(entries(f), 1);
}

static void test_symlink_is_kept_and_its_target_replaced(void **state)
{
    dir_fixture *f = *state;
    char target[256], link[256];
    snprintf(target, sizeof target, "%s", path_in(f, "target"));
    snprintf(link, sizeof link, "%s", path_in(f, "link"));
    FILE *w = fopen(target, "w");
    fputs("x", w);
    fclose(w);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(partd_write_output(link, "through", 7), PARTD_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_content(target, "through");
}

static void test_device_is_written_into_not_replaced(void **state)
{
    (void)state;
    struct stat before, after;
    assert_int_equal(stat("/dev/null", &before), 0);
    assert_int_equal(partd_write_output("/dev/null", "gone", 4), PARTD_OK);
    assert_int_equal(stat("/dev/null", &after), 0);
    assert_true(S_ISCHR(after.st_mode));
    assert_int_equal(after.st_rdev, before.st_rdev);
}

static void test_fifo_is_written_into(void **state)
{
    dir_fixture *f = *state;
    char p[256];
    snprintf(p, sizeof p, "%s", path_in(f, "fifo"));
    assert_int_equal(mkfifo(p, 0600), 0);
    int rd = open(p, O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open succeeds */
    assert_true(rd >= 0);
    assert_int_equal(partd_write_output(p, "piped", 5), PARTD_OK);
    char buf[16] = {0};
    assert_int_equal(read(rd, buf, sizeof buf), 5);
    assert_string_equal(buf, "piped");
    close(rd);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
}

static void test_errors_name_the_reason(void **state)
{
    dir_fixture *f = *state;
    char p[256];
    snprintf(p, sizeof p, "%s/no-such-dir/out.json", f->dir);
    errno = 0;
    assert_int_equal(partd_write_output(p, "x", 1), PARTD_EIO);
    assert_int_equal(errno, ENOENT);
    errno = 0;
    assert_int_equal(partd_write_output(f->dir, "x", 1), PARTD_EIO);
    assert_int_equal(errno, EISDIR);
    assert_int_equal(entries(f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_file_is_created_with_the_umask_mode, make_dir,
                                        remove_dir),
        cmocka_unit_test_setup_teardown(test_existing_file_is_replaced_and_keeps_its_mode,
                                        make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_abort_leaves_the_old_file_and_no_temporary, make_dir,
                                        remove_dir),
        cmocka_unit_test_setup_teardown(test_symlink_is_kept_and_its_target_replaced, make_dir,
                                        remove_dir),
        cmocka_unit_test(test_device_is_written_into_not_replaced),
        cmocka_unit_test_setup_teardown(test_fifo_is_written_into, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_errors_name_the_reason, make_dir, remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
