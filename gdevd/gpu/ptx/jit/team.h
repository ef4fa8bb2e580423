/*
 * team.h - the engine threads of compiled launches: one slice's groups of slots run in
 * parallel, the caller's group on the calling thread and the others on the threads of a
 * team, joined before the call returns (gdev_jit_parallel, called by launch.py with the
 * GIL released).
 *
 * Teams are plain threads of this object that never touch Python (a host call of a
 * kernel, printf or the device runtime, enters Python through its cffi callback as any
 * foreign thread does).  A slice used to hand its groups to a Python thread pool: on a
 * small virtual machine a submit and its result took about 100 us, a tenth of a 1 ms
 * quantum; a condition variable's round trip takes about 17 us there.
 *
 * A caller takes a free team (one per concurrent caller: each GPU's compute engine
 * thread, a test's direct launch) or makes one, and grows it to the helpers it needs.
 * Invariants: a team is busy for exactly one caller at a time; its helpers run only the
 * tasks of the generation they were woken for; `pending` counts the tasks of the current
 * generation not yet finished.  A child of fork() has none of its parent's threads: a
 * team made by another process is never used (its memory is left as it is).  Helpers run
 * at their caller's niceness (the compute engine's threads run nicer than the daemon's:
 * gdevd/gpu/compute.py), set when a task's differs from theirs.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TEAM_MAX 64	/* helpers of one team */
/* How long a helper that finished its task, or a caller waiting for the helpers, spins
   before it sleeps.  A sleeping thread's vCPU may halt, and waking it costs tens of
   microseconds or more on a virtual machine: a launch's slices follow each other within
   the compute engine's bookkeeping, which spinning covers; at most this much CPU time is
   spent in vain after a launch's last slice. */
#define SPIN_NS 100000

typedef void (*jrun_fn)(struct jctx **cs, int n, int64_t budget);

struct jtask {
	jrun_fn run;
	struct jctx **cs;
	int n;
};

struct jteam {
	pthread_mutex_t m;
	pthread_cond_t work, done;
	struct jteam *next;
	pid_t pid;		/* the process whose threads these are */
	int busy;		/* taken by a caller (under team_lock) */
	int helpers;		/* threads started */
	int ntask;		/* tasks of this generation: helper i runs task i if i < ntask */
	unsigned pending;	/* tasks of this generation still running */
	int sleepers;		/* helpers waiting on `work` */
	int joining;		/* the caller waits on `done` */
	unsigned gen;
	int64_t budget;
	int nice;		/* the caller's niceness, which this generation's tasks take */
	struct jtask task[TEAM_MAX];
};

struct jhelper {
	struct jteam *t;
	int index;
	unsigned seen;	/* the generation when it was made: it runs the next one's task */
};

static uint64_t team_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* spin while (*word == value) == equal, at most SPIN_NS (read without the team's lock:
   the caller checks again under it) */
static void team_spin(const unsigned *word, unsigned value, int equal)
{
	const uint64_t until = team_now() + SPIN_NS;

	for (int k = 1; (__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) == equal; k++) {
		__builtin_ia32_pause();
		if (!(k & 31) && team_now() > until)
			return;
	}
}

/* this thread's niceness (0 if it cannot be read) */
static int team_nice(void)
{
	errno = 0;
	const int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));

	return errno ? 0 : nice;
}

static pthread_mutex_t team_lock = PTHREAD_MUTEX_INITIALIZER;
static struct jteam *teams;

static void *team_helper(void *arg)
{
	struct jhelper h = *(struct jhelper *)arg;
	struct jteam *t = h.t;
	unsigned seen = h.seen;
	int nice = team_nice();

	free(arg);
	for (;;) {
		team_spin(&t->gen, seen, 1);
		pthread_mutex_lock(&t->m);
		while (t->gen == seen) {
			t->sleepers++;
			pthread_cond_wait(&t->work, &t->m);
			t->sleepers--;
		}
		seen = t->gen;
		if (h.index >= t->ntask) {
			pthread_mutex_unlock(&t->m);
			continue;
		}
		const struct jtask task = t->task[h.index];
		const int64_t budget = t->budget;
		const int want = t->nice;

		pthread_mutex_unlock(&t->m);
		/* (lowering it back needs privilege: then the helper stays nicer than asked) */
		if (want != nice && !setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), want))
			nice = want;
		task.run(task.cs, task.n, budget);
		pthread_mutex_lock(&t->m);
		if (__atomic_sub_fetch(&t->pending, 1, __ATOMIC_RELEASE) == 0 && t->joining)
			pthread_cond_signal(&t->done);
		pthread_mutex_unlock(&t->m);
	}
	return NULL;
}

/* a free team of this process, made if there is none; NULL if out of memory */
static struct jteam *team_take(void)
{
	const pid_t pid = getpid();
	struct jteam *t;

	pthread_mutex_lock(&team_lock);
	for (t = teams; t; t = t->next)
		if (!t->busy && t->pid == pid)
			break;
	if (!t && (t = calloc(1, sizeof(*t)))) {
		pthread_mutex_init(&t->m, NULL);
		pthread_cond_init(&t->work, NULL);
		pthread_cond_init(&t->done, NULL);
		t->pid = pid;
		t->next = teams;
		teams = t;
	}
	if (t)
		t->busy = 1;
	pthread_mutex_unlock(&team_lock);
	return t;
}

static void team_give(struct jteam *t)
{
	pthread_mutex_lock(&team_lock);
	t->busy = 0;
	pthread_mutex_unlock(&team_lock);
}

/* start helpers until the team has `want` (fewer if threads cannot be made); how many it
   has.  Helpers block every signal: they are the Python process's, not ours, to handle. */
static int team_grow(struct jteam *t, int want)
{
	sigset_t all, old;
	pthread_attr_t attr;

	if (t->helpers >= want)
		return t->helpers;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (t->helpers < want) {
		struct jhelper *h = malloc(sizeof(*h));
		pthread_t tid;

		if (!h)
			break;
		h->t = t;
		h->index = t->helpers;
		pthread_mutex_lock(&t->m);
		h->seen = t->gen;	/* a new helper waits for the next generation */
		if (pthread_create(&tid, &attr, team_helper, h)) {
			pthread_mutex_unlock(&t->m);
			free(h);
			break;
		}
		t->helpers++;
		pthread_mutex_unlock(&t->m);
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return t->helpers;
}

/*
 * Run `ngroups` groups of slots of one launch, group g being counts[g] consecutive
 * entries of cs, each by run(group, count, budget): group 0 on the calling thread, the
 * others on a team's helpers; returns once every group returned.  Groups a team could not
 * take (no memory or threads) run on the calling thread after its own, so every group
 * always runs exactly once.
 */
void gdev_jit_parallel(jrun_fn run, struct jctx **cs, const int *counts, int ngroups,
		       int64_t budget)
{
	struct jteam *t = ngroups > 1 ? team_take() : NULL;
	int given = 0, off = counts[0];

	if (t) {
		const int want = ngroups - 1 < TEAM_MAX ? ngroups - 1 : TEAM_MAX;

		given = team_grow(t, want);
		if (given > want)
			given = want;
		pthread_mutex_lock(&t->m);
		for (int g = 0; g < given; g++) {
			t->task[g] = (struct jtask){ run, cs + off, counts[g + 1] };
			off += counts[g + 1];
		}
		t->ntask = given;
		t->pending = (unsigned)given;
		t->budget = budget;
		t->nice = team_nice();
		__atomic_store_n(&t->gen, t->gen + 1, __ATOMIC_RELEASE);
		if (t->sleepers)
			pthread_cond_broadcast(&t->work);
		pthread_mutex_unlock(&t->m);
	}
	run(cs, counts[0], budget);
	for (int g = given + 1; g < ngroups; g++) {	/* what no helper took */
		run(cs + off, counts[g], budget);
		off += counts[g];
	}
	if (t) {
		team_spin(&t->pending, 0, 0);
		pthread_mutex_lock(&t->m);
		t->joining = 1;
		while (t->pending)
			pthread_cond_wait(&t->done, &t->m);
		t->joining = 0;
		pthread_mutex_unlock(&t->m);
		team_give(t);
	}
}
