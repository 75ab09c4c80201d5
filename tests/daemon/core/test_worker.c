/* test_worker.c - daemon/core/worker.c: a thread with a FIFO queue that
 * hands its items back to a libuv loop. Items run in the order posted, on
 * the worker's thread, and come back in that order on the loop thread; an
 * idle worker wakes for each post, from any thread and from a `done`; a
 * stop drops or finishes what is queued; close hands back items the loop
 * has not seen yet.
 *
 * No outcome depends on timing: a "gate" item holds the thread while a test
 * needs items to stay queued, and the test waits on condition variables
 * and on the loop, never for a while; a 60 s timer only turns a hang into a
 * failure. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "testutil.h"

#include "core/worker.h"
#include "partd/partd.h"

#define N_ITEMS 64

typedef struct item {
    partd_worker_item link;        /* first: the item is its link */
    int index;
    int reposts;                   /* posted again from done this many times */
} item;

typedef struct fixture {
    uv_loop_t loop;
    uv_timer_t deadline;
    int timed_out;
    pthread_t loop_thread;
    partd_worker *w;
    item items[N_ITEMS];
    /* Worker thread; read by the loop thread after the item came back. */
    int worked[N_ITEMS];
    int n_worked;
    int off_loop;                  /* every work ran off the loop thread */
    /* Loop thread. */
    int done_order[N_ITEMS];
    int done_status[N_ITEMS];
    int n_done;
    int on_loop;                   /* every done ran on the loop thread */
    /* The gate: the first item's work waits here until opened. */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_cond;
    int gated, entered, open;
} fixture;

static void on_deadline(uv_timer_t *t)
{
    fixture *f = t->data;
    f->timed_out = 1;
}

static void pass_gate(fixture *f)
{
    pthread_mutex_lock(&f->gate_lock);
    f->entered = 1;
    pthread_cond_broadcast(&f->gate_cond);
    while (!f->open)
        pthread_cond_wait(&f->gate_cond, &f->gate_lock);
    pthread_mutex_unlock(&f->gate_lock);
}

static void work(partd_worker_item *link, void *ctx)
{
    fixture *f = ctx;
    item *it = (item *)link;
    if (f->gated && f->n_worked == 0)
        pass_gate(f);
    if (pthread_equal(pthread_self(), f->loop_thread))
        f->off_loop = 0;
    f->worked[f->n_worked++] = it->index;
}

static void done(partd_worker_item *link, int status, void *ctx)
{
    fixture *f = ctx;
    item *it = (item *)link;
    if (!pthread_equal(pthread_self(), f->loop_thread))
        f->on_loop = 0;
    f->done_order[f->n_done] = it->index;
    f->done_status[f->n_done] = status;
    f->n_done++;
    if (status == PARTD_OK && it->reposts > 0) {
        it->reposts--;
        partd_worker_post(f->w, link);
    }
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || uv_loop_init(&f->loop) != 0)
        return -1;
    f->loop_thread = pthread_self();
    f->off_loop = f->on_loop = 1;
    for (int i = 0; i < N_ITEMS; i++)
        f->items[i].index = i;
    pthread_mutex_init(&f->gate_lock, NULL);
    pthread_cond_init(&f->gate_cond, NULL);
    uv_timer_init(&f->loop, &f->deadline);
    f->deadline.data = f;
    uv_timer_start(&f->deadline, on_deadline, 60000, 0);
    if (partd_worker_start(&f->w, &f->loop, work, done, f) != PARTD_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    uv_close((uv_handle_t *)&f->deadline, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT); /* the worker's close, then nothing is left */
    int rc = uv_loop_close(&f->loop);
    pthread_cond_destroy(&f->gate_cond);
    pthread_mutex_destroy(&f->gate_lock);
    free(f);
    return rc == 0 ? 0 : -1;
}

/* Runs the loop until n items have come back. */
static void run_until_done(fixture *f, int n)
{
    while (f->n_done < n) {
        if (f->timed_out)
            fail_msg("only %d of %d items came back within 60 s", f->n_done, n);
        uv_run(&f->loop, UV_RUN_ONCE);
    }
}

static void wait_entered(fixture *f)
{
    pthread_mutex_lock(&f->gate_lock);
    while (!f->entered)
        pthread_cond_wait(&f->gate_cond, &f->gate_lock);
    pthread_mutex_unlock(&f->gate_lock);
}

static void open_gate(fixture *f)
{
    pthread_mutex_lock(&f->gate_lock);
    f->open = 1;
    pthread_cond_broadcast(&f->gate_cond);
    pthread_mutex_unlock(&f->gate_lock);
}

static void test_items_run_and_return_in_order(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < N_ITEMS; i++)
        partd_worker_post(f->w, &f->items[i].link);
    run_until_done(f, N_ITEMS);
    assert_int_equal(f->n_worked, N_ITEMS);
    for (int i = 0; i < N_ITEMS; i++) {
        assert_int_equal(f->worked[i], i);
        assert_int_equal(f->done_order[i], i);
        assert_int_equal(f->done_status[i], PARTD_OK);
    }
    assert_true(f->off_loop);
    assert_true(f->on_loop);
    partd_worker_close(f->w);
    assert_int_equal(f->n_done, N_ITEMS); /* nothing handed back twice */
}

typedef struct poster {
    fixture *f;
    item *it;
} poster;

static void *post_from_thread(void *arg)
{
    poster *p = arg;
    partd_worker_post(p->f->w, &p->it->link);
    return NULL;
}

static void test_idle_worker_wakes_for_each_post(void **state)
{
    fixture *f = *state;
    /* One at a time, the worker idle in between. */
    partd_worker_post(f->w, &f->items[0].link);
    run_until_done(f, 1);
    partd_worker_post(f->w, &f->items[1].link);
    run_until_done(f, 2);
    /* From another thread. */
    poster p = {f, &f->items[2]};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, post_from_thread, &p), 0);
    pthread_join(t, NULL);
    run_until_done(f, 3);
    /* From done, on the loop: each repost wakes the worker again. */
    f->items[3].reposts = 5;
    partd_worker_post(f->w, &f->items[3].link);
    run_until_done(f, 3 + 6);
    assert_int_equal(f->n_worked, 9);
    static const int expected[] = {0, 1, 2, 3, 3, 3, 3, 3, 3};
    for (int i = 0; i < 9; i++) {
        assert_int_equal(f->worked[i], expected[i]);
        assert_int_equal(f->done_order[i], expected[i]);
        assert_int_equal(f->done_status[i], PARTD_OK);
    }
    assert_true(f->on_loop);
    partd_worker_close(f->w);
}

/* Items 0..4 posted while item 0 holds the thread at the gate; the stop is
 * asked for before the gate opens. Every item comes back within close, in
 * the order posted: the n_run that ran, then those that never will. */
static void stop_with_items_queued(fixture *f, int drop_queued, int n_run)
{
    f->gated = 1;
    for (int i = 0; i < 5; i++)
        partd_worker_post(f->w, &f->items[i].link);
    wait_entered(f);
    partd_worker_stop(f->w, drop_queued);
    partd_worker_stop(f->w, !drop_queued); /* the first call decides */
    open_gate(f);
    partd_worker_close(f->w);
    assert_int_equal(f->n_worked, n_run);
    assert_int_equal(f->n_done, 5);
    for (int i = 0; i < 5; i++) {
        if (i < n_run)
            assert_int_equal(f->worked[i], i);
        assert_int_equal(f->done_order[i], i);
        assert_int_equal(f->done_status[i], i < n_run ? PARTD_OK : PARTD_ECANCELLED);
    }
    assert_true(f->on_loop);
}

static void test_stop_drops_queued_items(void **state)
{
    stop_with_items_queued(*state, 1, 1);
}

static void test_stop_finishes_queued_items(void **state)
{
    stop_with_items_queued(*state, 0, 5);
}

/* An item that ran but whose wake-up the loop has not handled yet comes
 * back from close itself. */
static void test_close_hands_back_what_the_loop_has_not_seen(void **state)
{
    fixture *f = *state;
    f->gated = 1;
    partd_worker_post(f->w, &f->items[0].link);
    wait_entered(f);
    open_gate(f);
    partd_worker_close(f->w); /* the loop never ran */
    assert_int_equal(f->n_worked, 1);
    assert_int_equal(f->n_done, 1);
    assert_int_equal(f->done_order[0], 0);
    assert_int_equal(f->done_status[0], PARTD_OK);
    assert_true(f->on_loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_items_run_and_return_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_worker_wakes_for_each_post, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_drops_queued_items, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_finishes_queued_items, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_hands_back_what_the_loop_has_not_seen, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
