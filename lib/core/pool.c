/* pool.c: a small fork-join thread pool.  tfm_pool_run hands out task indices
 * through an atomic counter; the calling thread works too, and the call
 * returns when every task is done.
 * Waking sleeping threads through a condition variable costs tens of
 * microseconds, which is more than a decode-step kernel of a small model
 * takes; so workers spin for a short while (SPIN_NS) after each run before
 * they sleep, and the caller spins for completion.  Back-to-back runs (the
 * kernels of one forward pass) then start and finish in well under a
 * microsecond of overhead, while an idle pool still sleeps.
 * A worker must join a run before it takes tasks, and the caller closes the
 * run once every task is claimed: it then waits only for workers that are
 * inside the run, never for one the scheduler has not woken yet (on a
 * loaded machine the caller simply does all the tasks itself). */
#include "tfm.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SPIN_NS 200000 /* how long an idle worker spins before sleeping */

struct tfm_pool {
	int n;                    /* threads including the caller */
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t go;
	int sleepers;             /* workers waiting on go (under mu) */
	atomic_uint_fast64_t gen; /* bumped for each run; workers run when it moves */
	atomic_int quit;
	void (*fn)(void *, int, int);
	void *ctx;
	int n_tasks;
	atomic_int next;          /* next task index */
	/* the current run: low 32 bits of its gen << 32 | CLOSED | workers in it */
	atomic_uint_fast64_t state;
};

#define CLOSED ((uint64_t)1 << 31)
#define IN_MASK (CLOSED - 1)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	sched_yield();
#endif
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void work(struct tfm_pool *p)
{
	for (;;) {
		int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
		if (i >= p->n_tasks)
			break;
		p->fn(p->ctx, i, p->n_tasks);
	}
}

/* Wait until gen differs from seen: spin, then sleep.  Returns the new gen,
 * or 0 when the pool is quitting. */
static uint64_t wait_run(struct tfm_pool *p, uint64_t seen)
{
	int64_t t0 = 0;
	for (unsigned k = 0;; k++) {
		uint64_t g = atomic_load_explicit(&p->gen, memory_order_acquire);
		if (g != seen)
			return g;
		if (atomic_load_explicit(&p->quit, memory_order_relaxed))
			return 0;
		cpu_relax();
		if ((k & 255) == 255) {
			int64_t t = now_ns();
			if (!t0)
				t0 = t;
			else if (t - t0 > SPIN_NS)
				break;
		}
	}
	pthread_mutex_lock(&p->mu);
	p->sleepers++;
	uint64_t g;
	while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
	       !atomic_load(&p->quit))
		pthread_cond_wait(&p->go, &p->mu);
	p->sleepers--;
	pthread_mutex_unlock(&p->mu);
	return atomic_load(&p->quit) ? 0 : g;
}

/* Join run g unless the caller closed it (or a later run began). */
static int join(struct tfm_pool *p, uint64_t g)
{
	uint64_t v = atomic_load_explicit(&p->state, memory_order_acquire);
	for (;;) {
		if ((v >> 32) != (g & 0xffffffffu) || (v & CLOSED))
			return 0;
		if (atomic_compare_exchange_weak_explicit(&p->state, &v, v + 1,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return 1;
	}
}

static void *worker(void *arg)
{
	struct tfm_pool *p = arg;
	uint64_t seen = 0;
	while ((seen = wait_run(p, seen)) != 0) {
		if (!join(p, seen))
			continue;
		work(p);
		atomic_fetch_sub_explicit(&p->state, 1, memory_order_release);
	}
	return NULL;
}

int tfm_pool_new(struct tfm_pool **out, int n)
{
	if (n < 1)
		n = 1;
	struct tfm_pool *p = tfm_calloc(1, sizeof *p);
	if (!p)
		return TFM_E_NOMEM;
	p->n = n;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	if (n > 1) {
		p->th = tfm_calloc((size_t)n - 1, sizeof *p->th);
		if (!p->th) {
			free(p);
			return TFM_E_NOMEM;
		}
		for (int i = 0; i < n - 1; i++)
			if (pthread_create(&p->th[i], NULL, worker, p)) {
				p->n = i + 1;
				break;
			}
	}
	*out = p;
	return TFM_OK;
}

void tfm_pool_free(struct tfm_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->quit, 1);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n - 1; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	free(p->th);
	free(p);
}

int tfm_pool_size(const struct tfm_pool *p) { return p ? p->n : 1; }

void tfm_pool_run(struct tfm_pool *p, void (*fn)(void *, int, int), void *ctx, int n_tasks)
{
	if (!p || p->n == 1 || n_tasks <= 1) {
		for (int i = 0; i < n_tasks; i++)
			fn(ctx, i, n_tasks);
		return;
	}
	p->fn = fn;
	p->ctx = ctx;
	p->n_tasks = n_tasks;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	/* gen 0 means "quit" to wait_run: skip it on wrap-around */
	uint64_t g = atomic_load(&p->gen) + 1;
	if (!g)
		g = 1;
	atomic_store_explicit(&p->state, (g & 0xffffffffu) << 32, memory_order_release);
	atomic_store_explicit(&p->gen, g, memory_order_release);
	pthread_mutex_lock(&p->mu);
	if (p->sleepers)
		pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	work(p);
	/* every task is claimed: close the run, wait for the workers inside */
	atomic_fetch_or_explicit(&p->state, CLOSED, memory_order_acq_rel);
	for (unsigned k = 0; atomic_load_explicit(&p->state, memory_order_acquire) & IN_MASK; k++)
		if (k < 4096)
			cpu_relax();
		else
			sched_yield();
}

int tfm_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
