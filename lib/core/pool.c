/* pool.c: a small fork-join thread pool.  tfm_pool_run hands out task indices
 * through an atomic counter; the calling thread works too, and the call
 * returns when every task is done. */
#include "tfm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct tfm_pool {
	int n;                  /* threads including the caller */
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	uint64_t gen;           /* bumped for each run */
	int quit;
	void (*fn)(void *, int, int);
	void *ctx;
	int n_tasks;
	atomic_int next;
	int busy;               /* workers still inside the current run */
};

static void work(struct tfm_pool *p)
{
	for (;;) {
		int i = atomic_fetch_add(&p->next, 1);
		if (i >= p->n_tasks)
			break;
		p->fn(p->ctx, i, p->n_tasks);
	}
}

static void *worker(void *arg)
{
	struct tfm_pool *p = arg;
	uint64_t seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		work(p);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
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
	pthread_cond_init(&p->done, NULL);
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
	p->quit = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n - 1; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
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
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	p->n_tasks = n_tasks;
	atomic_store(&p->next, 0);
	p->busy = p->n - 1;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	work(p);
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

int tfm_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
