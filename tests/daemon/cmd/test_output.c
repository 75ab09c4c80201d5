/* test_output.c - output.c: regular files replaced atomically (mode kept,
 * symlinks followed, nothing left on failure), devices and FIFOs written
 * into and never replaced; a command's input read whole and its failures
 * and problems reported on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "testutil.h"

#include "cmd/output.h"
#include "core/fs.h"
#include "partd/partd.h"
#include "partd/problem.h"

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
    assert_int_equal(partd_fs_read_file(path, 1 << 20, &buf, &len), PARTD_OK);
    assert_string_equal(buf, want);
    free(buf);
}

static void test_new_file_is_created_with_the_umask_mode(void **state)
{
    dir_fixture *f = *state;
    mode_t old = umask(022);
    assert_int_equal(partd__cmd_output_write_file(path_in(f, "new.json"), "{}", 2), PARTD_OK);
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
    assert_int_equal(partd__cmd_output_write_file(p, "new", 3), PARTD_OK);
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
    partd__cmd_output o;
    assert_int_equal(partd__cmd_output_open(&o, p), PARTD_OK);
    assert_int_equal(partd__cmd_output_write(&o, "half", 4), PARTD_OK);
    assert_int_equal(entries(f), 2); /* the temporary file beside it */
    partd__cmd_output_abort(&o);
    partd__cmd_output_abort(&o); /* harmless twice */
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
    assert_int_equal(partd__cmd_output_write_file(link, "through", 7), PARTD_OK);
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
    assert_int_equal(partd__cmd_output_write_file("/dev/null", "gone", 4), PARTD_OK);
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
    assert_int_equal(partd__cmd_output_write_file(p, "piped", 5), PARTD_OK);
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
    assert_int_equal(partd__cmd_output_write_file(p, "x", 1), PARTD_EIO);
    assert_int_equal(errno, ENOENT);
    errno = 0;
    assert_int_equal(partd__cmd_output_write_file(f->dir, "x", 1), PARTD_EIO);
    assert_int_equal(errno, EISDIR);
    assert_int_equal(entries(f), 0);
}

/* The helpers as a command would call them: argv[1] in, argv[2] out. */
static int copy_command(int argc, char **argv)
{
    (void)argc;
    char *body;
    size_t len;
    if (partd__cmd_output_read_input("copy", argv[1], &body, &len) != PARTD_OK)
        return 1;
    int rc = partd__cmd_output_write_output("copy", argv[2], body, len);
    free(body);
    return rc == PARTD_OK ? 0 : 1;
}

static int problem_command(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    partd_problem pb;
    partd_problem_init(&pb);
    partd_problem_set(&pb, 422, "some-slug", "Some title", "why");
    partd_problem_add(&pb, "/a/0", "bad");
    partd__cmd_output_problem(&pb);
    partd_problem_free(&pb);
    return 2;
}

static void test_command_input_output_and_problem(void **state)
{
    dir_fixture *f = *state;
    char in[256], out[256], err[256], so[256];
    snprintf(in, sizeof in, "%s/in.txt", f->dir);
    snprintf(out, sizeof out, "%s/out.txt", f->dir);
    snprintf(err, sizeof err, "%s/stderr", f->dir);
    snprintf(so, sizeof so, "%s/stdout", f->dir);
    tu_write_text(in, "hello");
    char *argv[] = {"copy", in, out, NULL};
    assert_int_equal(tu_run_captured(copy_command, 3, argv, NULL, so, err), 0);
    assert_content(out, "hello");
    char *dash[] = {"copy", "-", out, NULL};
    tu_write_text(in, "from stdin");
    assert_int_equal(tu_run_captured(copy_command, 3, dash, in, so, err), 0);
    assert_content(out, "from stdin");
    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing", f->dir);
    char *argv2[] = {"copy", missing, out, NULL};
    assert_int_equal(tu_run_captured(copy_command, 3, argv2, NULL, so, err), 1);
    char *text = tu_read_text(err);
    assert_non_null(strstr(text, "partd copy: cannot read "));
    assert_non_null(strstr(text, "No such file"));
    free(text);
    char nodir[256];
    snprintf(nodir, sizeof nodir, "%s/no/out", f->dir);
    char *argv3[] = {"copy", in, nodir, NULL};
    assert_int_equal(tu_run_captured(copy_command, 3, argv3, NULL, so, err), 1);
    text = tu_read_text(err);
    assert_non_null(strstr(text, "partd copy: cannot write "));
    free(text);
    char *argv4[] = {"problem", NULL};
    assert_int_equal(tu_run_captured(problem_command, 1, argv4, NULL, so, err), 2);
    text = tu_read_text(err);
    assert_string_equal(text, "{\"type\":\"urn:partd:problem:some-slug\",\"title\":\"Some title\","
                              "\"status\":422,\"detail\":\"why\",\"errors\":[{\"pointer\":\"/a/0\","
                              "\"message\":\"bad\"}]}\n");
    free(text);
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
        cmocka_unit_test_setup_teardown(test_command_input_output_and_problem, make_dir,
                                        remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
