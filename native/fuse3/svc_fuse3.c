/*
 * svc_fuse3: a Node-API binding of libfuse 3's high-level (path) API, built by
 * scripts/build-native.mjs and loaded by src/native/fuse.ts, which falls back to fuse-native
 * (libfuse 2) when this cannot be built or loaded.
 *
 * Why a binding of our own: libfuse 2, and so fuse-native, cannot negotiate requests larger than
 * 128 KiB (libfuse 3 takes 1 MiB writes, FUSE_MAX_PAGES), has no READDIRPLUS or copy_file_range in
 * reach of JS, and is no longer maintained (docs/performance.md has the measurements).
 *
 * Threads. fuse_loop_mt runs on a thread of its own (started by mount) and serves each request on
 * one of libfuse's worker threads, which queues it for the JS thread (a libuv async handle) and
 * waits on the request's semaphore. Not a Node-API thread-safe function: Node wakes the JS thread
 * while still holding that function's lock, so the JS thread woke only to sleep again on the lock,
 * once for every request (a stat took 40-48 us against fuse-native's 30). JS answers with reply(),
 * on its own thread: reply() only stores the answer in the request and posts the semaphore; the
 * worker thread copies it into libfuse's structures. So no libfuse structure is touched from the
 * JS thread, and a request the worker gave up on (timeout) is freed by whichever side lets go last
 * (a reference count).
 *
 * Memory handed to JS: never libfuse's, except for a write when every pooled buffer is busy (see
 * SLOT_SIZE): reads and writes go through buffers of the mount's own, copied into libfuse's by the
 * worker thread, so a late answer never touches freed memory. JS must not keep a request's Buffer
 * after answering (a slot serves the next request).
 */
#define FUSE_USE_VERSION 312
#define _GNU_SOURCE
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <node_api.h>
#include <uv.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Operation codes passed to JS; src/native/fuse.ts holds the same table. */
enum {
  OP_GETATTR = 1, OP_READDIR, OP_OPEN, OP_CREATE, OP_READ, OP_WRITE, OP_TRUNCATE, OP_FTRUNCATE,
  OP_FLUSH, OP_FSYNC, OP_FSYNCDIR, OP_RELEASE, OP_UNLINK, OP_RENAME, OP_LINK, OP_MKNOD, OP_SYMLINK,
  OP_READLINK, OP_MKDIR, OP_RMDIR, OP_CHMOD, OP_CHOWN, OP_UTIMENS, OP_STATFS, OP_COPY_FILE_RANGE,
  OP_LSEEK,
};

/* Events passed to JS's event callback. */
enum { EV_INIT = 1, EV_EXIT = 2, EV_DETACHED = 3 };

/*
 * Reads and writes go through buffers the addon allocates once per mount and shows to JS as Buffers
 * made once (a pool of 1 MiB slots, the largest request libfuse 3 negotiates): a Buffer made for
 * every request counts as new external
 * memory to V8, and 256 MiB of them started eleven full collections a 256 MiB write. The worker
 * thread copies a write's bytes into a slot before handing the request over, and a read's bytes
 * out of it once JS has answered, so JS never holds libfuse's memory and both may time out. When
 * every slot is busy, the request gets a Buffer of its own.
 */
#define SLOT_SIZE (1 << 20)
#define SLOTS 16

typedef struct slot_s {
  char *mem;    /* allocated here, freed with the mount: valid for the worker threads even while Node exits */
  napi_ref ref; /* the Buffer over it, made once */
  atomic_int busy; /* taken by compare-and-swap: no lock on the request path */
} slot_t;

typedef struct mount_s {
  struct fuse *fuse;
  slot_t slots[SLOTS];
  char *dir;
  napi_env env;
  uv_async_t async;           /* wakes the JS thread for the queue below */
  pthread_mutex_t qlock;      /* guards the queue */
  struct req_s *qhead, *qtail; /* requests and events for the JS thread, in order */
  napi_async_context actx;    /* JS is called in a callback scope of this context */
  napi_ref resource;
  napi_ref dispatch;
  napi_ref events;
  pthread_t loop;
  int timeout_ms;
  double cache_seconds;
  atomic_int unmounting;
  atomic_int refs; /* the JS handle, the async handle until closed, the loop thread, a running detach thread */
  /*
   * Guards the async handle's life against the threads that signal it: `closed` once the loop's
   * last event was taken (the handle is closing), `env_gone` once Node tears the environment
   * down (the process exits). After either, nobody may queue or signal any more.
   */
  pthread_mutex_t lock;
  int closed;
  int env_gone;
} mount_t;

/*
 * Queue `r` for the JS thread and wake it; false when it cannot be (the mount's handle is closing,
 * or the environment is going away). The queue's lock is let go before the wake-up; the mount's
 * lock, held across it, is one the JS thread takes only to close the handle (and unmount to check).
 */
static bool post(mount_t *m, struct req_s *r);

/* A free pooled buffer (the lowest, so few slots are ever touched), or NULL when all are busy. */
static slot_t *take_slot(mount_t *m) {
  for (int i = 0; i < SLOTS; i++) {
    int free_ = 0;
    if (m->slots[i].mem && atomic_compare_exchange_strong(&m->slots[i].busy, &free_, 1)) return &m->slots[i];
  }
  return NULL;
}

static void give_slot(mount_t *m, slot_t *slot) {
  (void)m;
  atomic_store(&slot->busy, 0);
}

static void mount_unref(mount_t *m) {
  if (atomic_fetch_sub(&m->refs, 1) == 1) {
    for (int i = 0; i < SLOTS; i++) free(m->slots[i].mem);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->qlock);
    free(m->dir);
    free(m);
  }
}

enum { PENDING = 0, REPLIED = 1, ABANDONED = 2 };

typedef struct req_s {
  struct req_s *next; /* in the mount's queue */
  int op;            /* OP_* or, for events, -EV_* */
  mount_t *m;
  atomic_int refs;   /* worker thread + JS side */
  atomic_int state;  /* PENDING → REPLIED (JS answered) or ABANDONED (the worker timed out) */
  sem_t done;
  char *path, *path2;
  double n[4];       /* numeric arguments (fh, mode, size, offset, ...) */
  uid_t uid;         /* the calling process's (file system) ids, from the request's FUSE context */
  gid_t gid;
  const char *in;    /* a write's bytes when no slot was free (libfuse's buffer) */
  char *data;        /* a read's buffer when no slot was free, allocated here */
  struct slot_s *slot; /* a read's or write's pooled buffer, given back when the request is freed */
  size_t len;
  /* The answer. */
  int code;          /* 0 or a negative errno; for read and write the byte count when >= 0 */
  struct stat st;     /* getattr's answer; create's, when JS gave the new file's attributes */
  bool has_st;
  struct statvfs sv;
  uint64_t fh;
  char *text;        /* readlink */
  char **names;      /* readdir */
  struct stat *stats; /* readdir: each entry's attributes, when JS gave them */
  uint32_t count;
} req_t;

static void give_slot(mount_t *m, slot_t *slot);

static void req_free(req_t *r) {
  if (r->slot) give_slot(r->m, r->slot);
  free(r->path);
  free(r->path2);
  free(r->data);
  free(r->text);
  if (r->names) {
    for (uint32_t i = 0; i < r->count; i++) free(r->names[i]);
    free(r->names);
  }
  free(r->stats);
  sem_destroy(&r->done);
  free(r);
}

static void req_unref(req_t *r) {
  if (atomic_fetch_sub(&r->refs, 1) == 1) req_free(r);
}

static bool post(mount_t *m, req_t *r) {
  pthread_mutex_lock(&m->lock);
  bool ok = !m->closed && !m->env_gone;
  if (ok) {
    r->next = NULL;
    pthread_mutex_lock(&m->qlock);
    if (m->qtail) m->qtail->next = r; else m->qhead = r;
    m->qtail = r;
    pthread_mutex_unlock(&m->qlock);
    uv_async_send(&m->async);
  }
  pthread_mutex_unlock(&m->lock);
  return ok;
}

/* An event for JS's event callback, from any thread. */
static void post_event(mount_t *m, int ev) {
  req_t *r = calloc(1, sizeof *r);
  if (!r) return;
  r->op = -ev;
  r->m = m;
  atomic_init(&r->refs, 1);
  sem_init(&r->done, 0, 0);
  if (!post(m, r)) req_unref(r);
}

/*
 * The file this thread has just created, with the attributes JS gave: libfuse's create asks for
 * them at once (a getattr with the new handle) to answer the kernel's entry, and op_getattr
 * answers that from here instead of going back to JS. Any other request on the thread forgets it.
 */
static __thread struct { uint64_t fh; struct stat st; bool valid; } created;

static req_t *req_new(int op, const char *path) {
  created.valid = false;
  req_t *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  const struct fuse_context *ctx = fuse_get_context();
  r->op = op;
  r->m = ctx->private_data;
  r->uid = ctx->uid;
  r->gid = ctx->gid;
  atomic_init(&r->refs, 2);
  atomic_init(&r->state, PENDING);
  sem_init(&r->done, 0, 0);
  r->path = strdup(path ? path : "");
  if (!r->path) {
    sem_destroy(&r->done);
    free(r);
    return NULL;
  }
  return r;
}

/* req_run's answer when the worker let the request go (it may be freed): return -ETIMEDOUT or -EIO. */
#define GONE_TIMEOUT (-0x40000001)
#define GONE_IO (-0x40000002)
#define GONE(code) ((code) == GONE_TIMEOUT || (code) == GONE_IO)
#define GONE_ERRNO(code) ((code) == GONE_TIMEOUT ? -ETIMEDOUT : -EIO)

/*
 * Hand the request to JS and wait for the answer. Returns JS's code, with the request still the
 * caller's to read and req_unref; or GONE_TIMEOUT once the mount's timeout passed (unless the
 * caller asked for none: a write over libfuse's own buffer) or GONE_IO when JS cannot be reached,
 * and then the caller must not touch it again.
 */
static int req_run(req_t *r, int may_time_out) {
  if (!post(r->m, r)) {
    req_free(r); /* JS never saw it: both references are ours */
    return GONE_IO;
  }
  if (!may_time_out || r->m->timeout_ms <= 0) {
    while (sem_wait(&r->done) != 0 && errno == EINTR) {}
    return r->code;
  }
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += r->m->timeout_ms / 1000;
  until.tv_nsec += (long)(r->m->timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
  for (;;) {
    if (sem_timedwait(&r->done, &until) == 0) return r->code;
    if (errno == EINTR) continue;
    int expected = PENDING;
    if (atomic_compare_exchange_strong(&r->state, &expected, ABANDONED)) {
      req_unref(r); /* JS's reply, whenever it comes, frees it */
      return GONE_TIMEOUT;
    }
    /* JS answered just now: its post is on the way. */
    while (sem_wait(&r->done) != 0 && errno == EINTR) {}
    return r->code;
  }
}

/*
 * Run `r` (NULL: out of memory) and answer its code; when JS answered 0, `take` first copies the
 * answer to `out` while the request is still held.
 */
static int ask(req_t *r, void (*take)(const req_t *r, void *out), void *out) {
  if (!r) return -ENOMEM;
  int code = req_run(r, 1);
  if (GONE(code)) return GONE_ERRNO(code);
  if (code == 0 && take) take(r, out);
  req_unref(r);
  return code;
}

/* Run a request whose answer is its code only. */
static int simple(req_t *r) { return ask(r, NULL, NULL); }

static void take_stat(const req_t *r, void *out) { *(struct stat *)out = r->st; }
static void take_statvfs(const req_t *r, void *out) { *(struct statvfs *)out = r->sv; }
static void take_fh(const req_t *r, void *out) { ((struct fuse_file_info *)out)->fh = r->fh; }
static void take_created(const req_t *r, void *out) {
  take_fh(r, out);
  if (r->has_st) {
    created.fh = r->fh;
    created.st = r->st;
    created.valid = true;
  }
}
/* lseek's answer, an offset, travels in `fh` (64 bits; the code is an int). */
static void take_offset(const req_t *r, void *out) { *(uint64_t *)out = r->fh; }

/* A readlink's answer into libfuse's buffer: truncated to fit, always terminated. */
struct text_out { char *buf; size_t size; };
static void take_text(const req_t *r, void *out) {
  struct text_out *t = out;
  const char *text = r->text ? r->text : "";
  size_t n = strlen(text);
  if (t->size == 0) return;
  if (n >= t->size) n = t->size - 1;
  memcpy(t->buf, text, n);
  t->buf[n] = '\0';
}

/* ------------------------------------------------------------------ operations */

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  if (fi && created.valid && created.fh == fi->fh) {
    *st = created.st;
    created.valid = false;
    return 0;
  }
  return ask(req_new(OP_GETATTR, path), take_stat, st);
}

static int op_readlink(const char *path, char *buf, size_t size) {
  struct text_out out = { buf, size };
  return ask(req_new(OP_READLINK, path), take_text, &out);
}

static int op_mknod(const char *path, mode_t mode, dev_t dev) {
  req_t *r = req_new(OP_MKNOD, path);
  if (!r) return -ENOMEM;
  r->n[0] = mode;
  r->n[1] = (double)dev;
  return simple(r);
}

static int op_mkdir(const char *path, mode_t mode) {
  req_t *r = req_new(OP_MKDIR, path);
  if (!r) return -ENOMEM;
  r->n[0] = mode;
  return simple(r);
}

static int op_unlink(const char *path) { return simple(req_new(OP_UNLINK, path)); }
static int op_rmdir(const char *path) { return simple(req_new(OP_RMDIR, path)); }

static int two_paths(int op, const char *a, const char *b) {
  req_t *r = req_new(op, a);
  if (!r) return -ENOMEM;
  r->path2 = strdup(b ? b : "");
  if (!r->path2) {
    req_free(r);
    return -ENOMEM;
  }
  return simple(r);
}

/* symlink(target, linkpath): JS gets (target, path) in that order, as fuse-native passed them. */
static int op_symlink(const char *target, const char *path) { return two_paths(OP_SYMLINK, target, path); }

static int op_rename(const char *from, const char *to, unsigned int flags) {
  /* RENAME_NOREPLACE / RENAME_EXCHANGE are not offered: callers fall back to rename(2). */
  if (flags) return -EINVAL;
  return two_paths(OP_RENAME, from, to);
}

static int op_link(const char *from, const char *to) { return two_paths(OP_LINK, from, to); }

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
  (void)fi;
  req_t *r = req_new(OP_CHMOD, path);
  if (!r) return -ENOMEM;
  r->n[0] = mode;
  return simple(r);
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
  (void)fi;
  req_t *r = req_new(OP_CHOWN, path);
  if (!r) return -ENOMEM;
  /* (uid_t)-1 / (gid_t)-1 (4294967295) mean "unchanged", as for chown(2). */
  r->n[0] = (double)uid;
  r->n[1] = (double)gid;
  return simple(r);
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  req_t *r = req_new(fi ? OP_FTRUNCATE : OP_TRUNCATE, path);
  if (!r) return -ENOMEM;
  r->n[0] = fi ? (double)fi->fh : 0;
  r->n[1] = (double)size;
  return simple(r);
}


/*
 * A file opened read-only is opened with FOPEN_NOFLUSH: its close sends no FLUSH, whose only work
 * is committing what a handle wrote (a read-only one cannot), so a program reading many small
 * files waits for two round trips per file (open, then an asynchronous release) instead of three.
 */
static int op_open(const char *path, struct fuse_file_info *fi) {
  req_t *r = req_new(OP_OPEN, path);
  if (r) r->n[0] = fi->flags;
  /* JS answers the new handle's number, kept as the file's fh. */
  int code = ask(r, take_fh, fi);
  if (code == 0 && (fi->flags & O_ACCMODE) == O_RDONLY) fi->noflush = 1;
  return code;
}
/* create: JS answers the handle and, optionally, the new file's attributes (see `created`). */
static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
  req_t *r = req_new(OP_CREATE, path);
  if (r) r->n[0] = mode;
  return ask(r, take_created, fi);
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  req_t *r = req_new(OP_READ, path);
  if (!r) return -ENOMEM;
  if (size <= SLOT_SIZE) r->slot = take_slot(r->m);
  if (!r->slot && !(r->data = malloc(size ? size : 1))) { req_free(r); return -ENOMEM; }
  r->len = size;
  r->n[0] = (double)fi->fh;
  r->n[1] = (double)off;
  int code = req_run(r, 1);
  if (GONE(code)) return GONE_ERRNO(code);
  if (code > 0) memcpy(buf, r->slot ? r->slot->mem : r->data, (size_t)code > size ? size : (size_t)code);
  if (code > (int)size) code = (int)size;
  req_unref(r);
  return code;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  req_t *r = req_new(OP_WRITE, path);
  if (!r) return -ENOMEM;
  if (size <= SLOT_SIZE) r->slot = take_slot(r->m);
  if (r->slot) memcpy(r->slot->mem, buf, size);
  else r->in = buf;
  r->len = size;
  r->n[0] = (double)fi->fh;
  r->n[1] = (double)off;
  /* Without a slot JS reads libfuse's own buffer, valid only while this thread waits: no timeout. */
  int code = req_run(r, r->slot != NULL);
  if (GONE(code)) return GONE_ERRNO(code);
  req_unref(r);
  return code;
}

/*
 * copy_file_range(2) between two files of the mount (`cp` uses it): JS copies inside the daemon,
 * so the bytes never travel to the program and back. JS may copy less than asked (the caller
 * repeats); 0 at the end of the source.
 */
static ssize_t op_copy_file_range(const char *path_in, struct fuse_file_info *fi_in, off_t off_in, const char *path_out,
                                  struct fuse_file_info *fi_out, off_t off_out, size_t size, int flags) {
  if (flags) return -EINVAL;
  req_t *r = req_new(OP_COPY_FILE_RANGE, path_in);
  if (!r) return -ENOMEM;
  r->path2 = strdup(path_out ? path_out : "");
  if (!r->path2) { req_free(r); return -ENOMEM; }
  r->n[0] = (double)fi_in->fh;
  r->n[1] = (double)off_in;
  r->n[2] = (double)fi_out->fh;
  r->n[3] = (double)off_out;
  r->len = size > ((size_t)1 << 50) ? ((size_t)1 << 50) : size; /* exact as a double */
  return simple(r);
}

static int op_statfs(const char *path, struct statvfs *sv) { return ask(req_new(OP_STATFS, path), take_statvfs, sv); }

static int with_fh(int op, const char *path, struct fuse_file_info *fi, double extra) {
  req_t *r = req_new(op, path);
  if (!r) return -ENOMEM;
  r->n[0] = fi ? (double)fi->fh : 0;
  r->n[1] = extra;
  return simple(r);
}

static int op_flush(const char *path, struct fuse_file_info *fi) { return with_fh(OP_FLUSH, path, fi, 0); }
static int op_release(const char *path, struct fuse_file_info *fi) { return with_fh(OP_RELEASE, path, fi, 0); }
static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi) { return with_fh(OP_FSYNC, path, fi, datasync); }
static int op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi) { return with_fh(OP_FSYNCDIR, path, fi, datasync); }

/*
 * A directory handle: the listing JS gave at the first readdir (offset 0), served from here for
 * the kernel's following requests, which each take one buffer's worth of entries from an offset
 * (entry i is at offset i + 1). libfuse only passes READDIRPLUS attributes on in this offset mode,
 * and answering every request from one listing keeps a large directory from being listed once per
 * buffer.
 */
typedef struct dir_s {
  pthread_mutex_t lock;
  req_t *list; /* the answered readdir request: names and, when JS gave them, attributes */
} dir_t;

static int op_opendir(const char *path, struct fuse_file_info *fi) {
  (void)path;
  dir_t *d = calloc(1, sizeof *d);
  if (!d) return -ENOMEM;
  pthread_mutex_init(&d->lock, NULL);
  fi->fh = (uint64_t)(uintptr_t)d;
  return 0;
}

static int op_releasedir(const char *path, struct fuse_file_info *fi) {
  (void)path;
  dir_t *d = (dir_t *)(uintptr_t)fi->fh;
  if (!d) return 0;
  if (d->list) req_unref(d->list);
  pthread_mutex_destroy(&d->lock);
  free(d);
  return 0;
}

/*
 * With READDIRPLUS each entry carries the attributes JS gave, as a lookup would: `ls -l`, `find`
 * and file managers then stat from the kernel's cache instead of asking once per entry.
 */
static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags) {
  dir_t *d = (dir_t *)(uintptr_t)fi->fh;
  if (!d) return -EBADF;
  pthread_mutex_lock(&d->lock);
  if (off == 0 || !d->list) {
    /* Offset 0 (a new listing or rewinddir): ask again. */
    if (d->list) req_unref(d->list);
    d->list = NULL;
    req_t *r = req_new(OP_READDIR, path);
    if (!r) { pthread_mutex_unlock(&d->lock); return -ENOMEM; }
    int code = req_run(r, 1);
    if (GONE(code)) { pthread_mutex_unlock(&d->lock); return GONE_ERRNO(code); }
    if (code != 0) { req_unref(r); pthread_mutex_unlock(&d->lock); return code; }
    d->list = r;
  }
  req_t *r = d->list;
  enum fuse_fill_dir_flags plus = (flags & FUSE_READDIR_PLUS) && r->stats ? FUSE_FILL_DIR_PLUS : 0;
  for (uint32_t i = (uint32_t)off; i < r->count; i++) {
    if (filler(buf, r->names[i], r->stats ? &r->stats[i] : NULL, (off_t)i + 1, plus)) break; /* buffer full */
  }
  pthread_mutex_unlock(&d->lock);
  return 0;
}

static double ms_of(const struct timespec *t) {
  if (t->tv_nsec == UTIME_NOW) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec * 1000 + (double)(now.tv_nsec / 1000000);
  }
  return (double)t->tv_sec * 1000 + (double)(t->tv_nsec / 1000000);
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
  (void)fi;
  /* Only the modification time is stored: nothing to do when it is to be left as it is. */
  if (tv[1].tv_nsec == UTIME_OMIT) return 0;
  req_t *r = req_new(OP_UTIMENS, path);
  if (!r) return -ENOMEM;
  r->n[0] = tv[0].tv_nsec == UTIME_OMIT ? -1 : ms_of(&tv[0]);
  r->n[1] = ms_of(&tv[1]);
  return simple(r);
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  mount_t *m = fuse_get_context()->private_data;
  cfg->entry_timeout = m->cache_seconds;
  cfg->attr_timeout = m->cache_seconds;
  cfg->negative_timeout = m->cache_seconds;
  /* Keep a file's pages across opens while its size and mtime are unchanged (compared at open). */
  cfg->auto_cache = 1;
  cfg->kernel_cache = 0;
  cfg->use_ino = 0;
  cfg->nullpath_ok = 0;
  conn->max_write = 1 << 20;
  /*
   * Behave as libfuse 2 did where the file system relies on it: O_TRUNC comes as a truncate after
   * open, directory operations are serialised by the kernel, and the page cache is kept or dropped
   * by auto_cache alone. READDIRPLUS on every readdir request, not only the first of a listing
   * (the kernel's adaptive mode): `find` reads a whole directory before it stats its entries.
   */
  conn->want &= ~(FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_AUTO_INVAL_DATA |
                  FUSE_CAP_READDIRPLUS_AUTO);
  post_event(m, EV_INIT);
  return m;
}

/* SEEK_DATA and SEEK_HOLE (the kernel answers the other kinds itself): JS answers the offset. */
static off_t op_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi) {
  req_t *r = req_new(OP_LSEEK, path);
  if (!r) return -ENOMEM;
  r->n[0] = fi ? (double)fi->fh : 0;
  r->n[1] = (double)off;
  r->n[2] = whence;
  uint64_t at = 0;
  int code = ask(r, take_offset, &at);
  return code < 0 ? code : (off_t)at;
}

static const struct fuse_operations ops = {
  .getattr = op_getattr,
  .readlink = op_readlink,
  .mknod = op_mknod,
  .mkdir = op_mkdir,
  .unlink = op_unlink,
  .rmdir = op_rmdir,
  .symlink = op_symlink,
  .rename = op_rename,
  .link = op_link,
  .chmod = op_chmod,
  .chown = op_chown,
  .truncate = op_truncate,
  .open = op_open,
  .write = op_write,
  .statfs = op_statfs,
  .flush = op_flush,
  .release = op_release,
  .fsync = op_fsync,
  .opendir = op_opendir,
  .readdir = op_readdir,
  .releasedir = op_releasedir,
  .fsyncdir = op_fsyncdir,
  .init = op_init,
  .create = op_create,
  .utimens = op_utimens,
  .read = op_read,
  .copy_file_range = op_copy_file_range,
  .lseek = op_lseek,
};

/* ------------------------------------------------------------------ JS side */

#define CHECK(call)                                                             \
  do {                                                                          \
    if ((call) != napi_ok) {                                                    \
      const napi_extended_error_info *info_;                                    \
      napi_get_last_error_info(env, &info_);                                    \
      bool pending_;                                                            \
      napi_is_exception_pending(env, &pending_);                                \
      if (!pending_)                                                            \
        napi_throw_error(env, NULL, info_ && info_->error_message ? info_->error_message : #call); \
      return NULL;                                                              \
    }                                                                           \
  } while (0)

static napi_value num(napi_env env, double v) {
  napi_value out;
  napi_create_double(env, v, &out);
  return out;
}

static napi_value str(napi_env env, const char *s) {
  napi_value out;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &out);
  return out;
}

/*
 * The JS side gives up on a request it holds (JS cannot be called, or it threw): answer EIO unless
 * JS already answered, and let go of the JS side's reference exactly once.
 */
static void fail_from_js(req_t *r) {
  r->code = -EIO;
  int expected = PENDING;
  if (atomic_compare_exchange_strong(&r->state, &expected, REPLIED)) {
    sem_post(&r->done);
    req_unref(r);
  } else if (expected == ABANDONED) {
    if (atomic_compare_exchange_strong(&r->state, &expected, REPLIED)) req_unref(r);
  } /* REPLIED: JS answered and let go already */
}

static void on_closed(uv_handle_t *handle);

/* One queued request or event, on the JS thread (inside on_async's scopes). */
static void dispatch_one(napi_env env, req_t *r) {
  mount_t *m = r->m;
  napi_value undefined, fn;
  napi_get_undefined(env, &undefined);
  if (r->op < 0) {
    int ev = -r->op;
    req_unref(r);
    /* Detached: what is still open in the mount must not keep the process alive. */
    if (ev == EV_DETACHED || ev == EV_EXIT) uv_unref((uv_handle_t *)&m->async);
    if (napi_get_reference_value(env, m->events, &fn) == napi_ok && fn) {
      napi_value argv[1] = { num(env, ev) };
      if (napi_call_function(env, undefined, fn, 1, argv, NULL) != napi_ok) {
        /* Not left pending: the rest of the batch must still reach JS. */
        bool pending;
        napi_is_exception_pending(env, &pending);
        if (pending) { napi_value e; napi_get_and_clear_last_exception(env, &e); }
      }
    }
    if (ev == EV_EXIT) {
      /* The loop's last word: nothing is queued after it; the handle can go. */
      pthread_mutex_lock(&m->lock);
      m->closed = 1;
      pthread_mutex_unlock(&m->lock);
      uv_close((uv_handle_t *)&m->async, on_closed);
    }
    return;
  }
  if (napi_get_reference_value(env, m->dispatch, &fn) != napi_ok || !fn) {
    fail_from_js(r);
    return;
  }
  /*
   * dispatch(req, op, path, path2, n0, n1, buffer, length, n2, n3); for the operations that make
   * an entry (which have no n2 or n3), n2 and n3 are the caller's uid and gid.
   */
  bool makes = r->op == OP_CREATE || r->op == OP_MKDIR || r->op == OP_SYMLINK || r->op == OP_MKNOD;
  napi_value argv[10];
  napi_create_external(env, r, NULL, NULL, &argv[0]);
  argv[1] = num(env, r->op);
  argv[2] = str(env, r->path);
  argv[3] = r->path2 ? str(env, r->path2) : undefined;
  argv[4] = num(env, r->n[0]);
  argv[5] = num(env, r->n[1]);
  argv[6] = undefined;
  argv[7] = num(env, (double)r->len);
  argv[8] = num(env, makes ? (double)r->uid : r->n[2]);
  argv[9] = num(env, makes ? (double)r->gid : r->n[3]);
  napi_status made = napi_ok;
  if (r->op == OP_READ || r->op == OP_WRITE) {
    /* A slot's whole Buffer (JS reads or fills `length` bytes of it), or one over this request's bytes. */
    made = r->slot ? napi_get_reference_value(env, r->slot->ref, &argv[6])
                   : napi_create_external_buffer(env, r->len, r->op == OP_READ ? (void *)r->data : (void *)r->in, NULL, NULL, &argv[6]);
  }
  napi_value result;
  if (made != napi_ok || napi_call_function(env, undefined, fn, 10, argv, &result) != napi_ok) {
    bool pending;
    napi_is_exception_pending(env, &pending);
    if (pending) { napi_value e; napi_get_and_clear_last_exception(env, &e); }
    fail_from_js(r);
  }
}

/*
 * The JS thread's side of the queue: everything queued so far, in order, inside one callback scope
 * (so promise jobs and process.nextTick callbacks run once the batch is through, as for any I/O).
 */
static void on_async(uv_async_t *handle) {
  mount_t *m = handle->data;
  pthread_mutex_lock(&m->qlock);
  req_t *r = m->qhead;
  m->qhead = m->qtail = NULL;
  pthread_mutex_unlock(&m->qlock);
  if (!r) return;
  napi_env env = m->env;
  napi_handle_scope scope;
  napi_callback_scope cb_scope;
  napi_value resource;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  bool in_scope = napi_get_reference_value(env, m->resource, &resource) == napi_ok &&
                  napi_open_callback_scope(env, resource, m->actx, &cb_scope) == napi_ok;
  while (r) {
    req_t *next = r->next; /* r may be freed by the time it returns */
    napi_handle_scope each;
    bool own = napi_open_handle_scope(env, &each) == napi_ok;
    dispatch_one(env, r);
    if (own) napi_close_handle_scope(env, each);
    r = next;
  }
  if (in_scope) napi_close_callback_scope(env, cb_scope);
  napi_close_handle_scope(env, scope);
}

static bool get_prop(napi_env env, napi_value obj, const char *name, double *out) {
  napi_value v;
  napi_valuetype t;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok) return false;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) return false;
  return napi_get_value_double(env, v, out) == napi_ok;
}

/*
 * Attributes arrive packed as doubles (src/native/fuse.ts, packStat): mode, uid, gid, size, nlink,
 * blksize, blocks, atime, mtime, ctime (times in ms since the epoch). One typed array per answer
 * costs one call here, where an object's eleven properties cost thirty-odd.
 */
#define STAT_FIELDS 10

static void fill_stat(const double *v, struct stat *st) {
  memset(st, 0, sizeof *st);
  st->st_mode = (mode_t)v[0];
  st->st_uid = (uid_t)v[1];
  st->st_gid = (gid_t)v[2];
  st->st_size = (off_t)v[3];
  st->st_nlink = v[4] > 0 ? (nlink_t)v[4] : 1;
  st->st_blksize = (blksize_t)v[5];
  st->st_blocks = (blkcnt_t)v[6];
  struct timespec *times[3] = { &st->st_atim, &st->st_mtim, &st->st_ctim };
  for (int i = 0; i < 3; i++) {
    int64_t ms = (int64_t)v[7 + i];
    times[i]->tv_sec = ms / 1000;
    times[i]->tv_nsec = (long)(ms % 1000) * 1000000L;
    if (times[i]->tv_nsec < 0) { times[i]->tv_sec--; times[i]->tv_nsec += 1000000000L; }
  }
}

/* The doubles of a Float64Array holding at least `count` packed attributes, or NULL. */
static const double *packed_stats(napi_env env, napi_value v, size_t count) {
  bool is_typed = false;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed) return NULL;
  napi_typedarray_type type;
  size_t length;
  void *data;
  if (napi_get_typedarray_info(env, v, &type, &length, &data, NULL, NULL) != napi_ok) return NULL;
  if (type != napi_float64_array || length < count * STAT_FIELDS) return NULL;
  return data;
}

static char *dup_string(napi_env env, napi_value v) {
  size_t len;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return NULL;
  char *s = malloc(len + 1);
  if (s && napi_get_value_string_utf8(env, v, s, len + 1, &len) != napi_ok) { free(s); return NULL; }
  return s;
}

/* reply(req, code, value?, extra?): store the answer and wake the waiting worker thread. */
static napi_value js_reply(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  req_t *r;
  if (argc < 2 || napi_get_value_external(env, argv[0], (void **)&r) != napi_ok) {
    napi_throw_type_error(env, NULL, "reply(req, code, value?)");
    return NULL;
  }
  if (atomic_load(&r->state) != PENDING) {
    /* Answered twice, or after the worker gave up: nothing to do but let go once. */
    if (atomic_load(&r->state) == ABANDONED) {
      int expected = ABANDONED;
      /* Mark it so a third call does not drop another reference. */
      if (atomic_compare_exchange_strong(&r->state, &expected, REPLIED)) req_unref(r);
    }
    return NULL;
  }
  double code;
  if (napi_get_value_double(env, argv[1], &code) != napi_ok) code = -EIO;
  int c = (int)code;
  napi_valuetype t = napi_undefined;
  if (argc > 2) napi_typeof(env, argv[2], &t);
  if (c >= 0) {
    switch (r->op) {
      case OP_GETATTR: {
        const double *v = t == napi_object ? packed_stats(env, argv[2], 1) : NULL;
        if (v) fill_stat(v, &r->st); else c = -EIO;
        break;
      }
      case OP_STATFS:
        if (t == napi_object) {
          double v;
          memset(&r->sv, 0, sizeof r->sv);
          if (get_prop(env, argv[2], "bsize", &v)) r->sv.f_bsize = (unsigned long)v;
          if (get_prop(env, argv[2], "frsize", &v)) r->sv.f_frsize = (unsigned long)v;
          if (get_prop(env, argv[2], "blocks", &v)) r->sv.f_blocks = (fsblkcnt_t)v;
          if (get_prop(env, argv[2], "bfree", &v)) r->sv.f_bfree = (fsblkcnt_t)v;
          if (get_prop(env, argv[2], "bavail", &v)) r->sv.f_bavail = (fsblkcnt_t)v;
          if (get_prop(env, argv[2], "files", &v)) r->sv.f_files = (fsfilcnt_t)v;
          if (get_prop(env, argv[2], "ffree", &v)) r->sv.f_ffree = (fsfilcnt_t)v;
          if (get_prop(env, argv[2], "favail", &v)) r->sv.f_favail = (fsfilcnt_t)v;
          if (get_prop(env, argv[2], "fsid", &v)) r->sv.f_fsid = (unsigned long)v;
          if (get_prop(env, argv[2], "flag", &v)) r->sv.f_flag = (unsigned long)v;
          if (get_prop(env, argv[2], "namemax", &v)) r->sv.f_namemax = (unsigned long)v;
        } else c = -EIO;
        break;
      case OP_OPEN:
      case OP_CREATE:
      case OP_LSEEK: {
        double fh = 0;
        if (t == napi_number) napi_get_value_double(env, argv[2], &fh);
        r->fh = (uint64_t)fh;
        napi_valuetype t3 = napi_undefined;
        if (r->op == OP_CREATE && argc > 3 && napi_typeof(env, argv[3], &t3) == napi_ok && t3 == napi_object) {
          const double *v = packed_stats(env, argv[3], 1);
          if (v) {
            fill_stat(v, &r->st);
            r->has_st = true;
          }
        }
        break;
      }
      case OP_READLINK:
        if (t == napi_string) { r->text = dup_string(env, argv[2]); if (!r->text) c = -ENOMEM; } else c = -EIO;
        break;
      case OP_READDIR: {
        bool is_array = false;
        if (t == napi_object) napi_is_array(env, argv[2], &is_array);
        if (!is_array) { c = -EIO; break; }
        uint32_t n;
        napi_get_array_length(env, argv[2], &n);
        /* The entries' attributes, packed (all of them or none). */
        const double *stats = argc > 3 ? packed_stats(env, argv[3], n) : NULL;
        bool have_stats = stats != NULL;
        r->names = calloc(n ? n : 1, sizeof *r->names);
        if (have_stats) r->stats = calloc(n ? n : 1, sizeof *r->stats);
        if (!r->names || (have_stats && !r->stats)) { c = -ENOMEM; break; }
        for (uint32_t i = 0; i < n; i++) {
          napi_value v;
          napi_get_element(env, argv[2], i, &v);
          r->names[i] = dup_string(env, v);
          if (!r->names[i]) { c = -EIO; break; }
          r->count = i + 1;
          if (have_stats) {
            fill_stat(stats + (size_t)i * STAT_FIELDS, &r->stats[i]);
            /*
             * libfuse numbers every entry but "." and ".." itself (the node id); those two keep this
             * one, and readdir(3) skips an entry whose inode number is 0.
             */
            r->stats[i].st_ino = 0xffffffff;
          }
        }
        break;
      }
      default:
        break;
    }
  }
  r->code = c;
  int expected = PENDING;
  if (atomic_compare_exchange_strong(&r->state, &expected, REPLIED)) {
    sem_post(&r->done);
    req_unref(r);
  } else {
    req_unref(r); /* abandoned meanwhile: the worker let go already */
  }
  return NULL;
}

/* Signals are Node's to take, on its own thread: none on the threads started here (nor theirs). */
static void block_signals(void) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *loop_main(void *arg) {
  mount_t *m = arg;
  block_signals();
  struct fuse_loop_config *cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, 0);
  fuse_loop_cfg_set_max_threads(cfg, 64);
  fuse_loop_cfg_set_idle_threads(cfg, 8);
  fuse_loop_mt(m->fuse, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_unmount(m->fuse);
  fuse_destroy(m->fuse);
  m->fuse = NULL;
  /* The JS thread closes the async handle when it takes this event (or Node is exiting). */
  post_event(m, EV_EXIT);
  mount_unref(m); /* the loop's own reference */
  return NULL;
}

/* The JS handle was collected. */
static void mount_finalize(napi_env env, void *data, void *hint) {
  (void)env; (void)hint;
  mount_unref(data);
}

/*
 * Node is tearing the environment down (the process exits, perhaps while a mount's threads still
 * run): from now on they must not queue or signal, and the mount stays allocated for them (a
 * reference never given back); queued requests stay unanswered (their workers time out, or the
 * process is gone first).
 */
static void env_cleanup(void *arg) {
  mount_t *m = arg;
  pthread_mutex_lock(&m->lock);
  bool was_closed = m->closed;
  m->env_gone = 1;
  m->closed = 1;
  pthread_mutex_unlock(&m->lock);
  atomic_fetch_add(&m->refs, 1);
  if (!was_closed) uv_close((uv_handle_t *)&m->async, NULL);
}

/* The async handle is closed (after the loop's exit event): let go of what JS held for the mount. */
static void on_closed(uv_handle_t *handle) {
  mount_t *m = handle->data;
  napi_env env = m->env;
  /* Events queued after the last batch was taken (a detach's, racing the loop's end): dropped. */
  for (req_t *r = m->qhead, *next; r; r = next) {
    next = r->next;
    if (r->op > 0) fail_from_js(r); else req_unref(r);
  }
  m->qhead = m->qtail = NULL;
  napi_remove_env_cleanup_hook(env, env_cleanup, m);
  for (int i = 0; i < SLOTS; i++) {
    if (m->slots[i].ref) napi_delete_reference(env, m->slots[i].ref);
  }
  napi_delete_reference(env, m->dispatch);
  napi_delete_reference(env, m->events);
  napi_delete_reference(env, m->resource);
  napi_async_destroy(env, m->actx);
  mount_unref(m);
}

/*
 * mount(dir, args: string[], cacheSeconds, timeoutMs, dispatch, events) → handle.
 * Mounts synchronously (fuse_mount) and starts serving on a thread of its own; `events(1)` once the
 * kernel's INIT is answered, `events(2)` once the loop has ended and the connection is closed.
 */
static napi_value js_mount(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  uint32_t nargs = 0;
  double cache_seconds, timeout;
  napi_valuetype fn1, fn2;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6 || napi_get_array_length(env, argv[1], &nargs) != napi_ok ||
      napi_get_value_double(env, argv[2], &cache_seconds) != napi_ok ||
      napi_get_value_double(env, argv[3], &timeout) != napi_ok ||
      napi_typeof(env, argv[4], &fn1) != napi_ok || fn1 != napi_function ||
      napi_typeof(env, argv[5], &fn2) != napi_ok || fn2 != napi_function) {
    napi_throw_type_error(env, NULL, "mount(dir, args, cacheSeconds, timeoutMs, dispatch, events)");
    return NULL;
  }
  mount_t *m = calloc(1, sizeof *m);
  char **args = calloc(nargs + 2, sizeof *args);
  if (m) m->dir = dup_string(env, argv[0]);
  if (!m || !args || !m->dir) {
    if (m) free(m->dir);
    free(m);
    free(args);
    napi_throw_error(env, "ENOMEM", "out of memory");
    return NULL;
  }
  m->cache_seconds = cache_seconds;
  m->timeout_ms = (int)timeout;
  args[0] = strdup("svc");
  for (uint32_t i = 0; i < nargs; i++) {
    napi_value v;
    if (napi_get_element(env, argv[1], i, &v) == napi_ok) args[i + 1] = dup_string(env, v);
  }
  struct fuse_args fargs = FUSE_ARGS_INIT((int)nargs + 1, args);
  m->fuse = fuse_new(&fargs, &ops, sizeof ops, m);
  fuse_opt_free_args(&fargs);
  for (uint32_t i = 0; i <= nargs; i++) free(args[i]);
  free(args);
  if (!m->fuse) {
    free(m->dir);
    free(m);
    napi_throw_error(env, "EINVAL", "libfuse refused the mount options");
    return NULL;
  }
  if (fuse_mount(m->fuse, m->dir) != 0) {
    fuse_destroy(m->fuse);
    free(m->dir);
    free(m);
    napi_throw_error(env, "EMOUNT", "libfuse could not mount (is /dev/fuse usable and fusermount3 installed?)");
    return NULL;
  }
  for (int i = 0; i < SLOTS; i++) {
    napi_value buf;
    char *mem = malloc(SLOT_SIZE); /* untouched pages cost no memory until a request uses them */
    /* A slot that cannot be made is left out: its requests get Buffers of their own. */
    if (!mem) break;
    if (napi_create_external_buffer(env, SLOT_SIZE, mem, NULL, NULL, &buf) != napi_ok ||
        napi_create_reference(env, buf, 1, &m->slots[i].ref) != napi_ok) {
      free(mem);
      break;
    }
    m->slots[i].mem = mem;
  }
  /* The JS handle, the async handle until closed, the loop thread. */
  atomic_init(&m->refs, 3);
  pthread_mutex_init(&m->lock, NULL);
  pthread_mutex_init(&m->qlock, NULL);
  m->env = env;
  uv_loop_t *loop = NULL;
  napi_value resource, name = str(env, "svc-fuse3");
  bool ready = napi_create_reference(env, argv[4], 1, &m->dispatch) == napi_ok &&
               napi_create_reference(env, argv[5], 1, &m->events) == napi_ok &&
               napi_create_object(env, &resource) == napi_ok &&
               napi_create_reference(env, resource, 1, &m->resource) == napi_ok &&
               napi_async_init(env, resource, name, &m->actx) == napi_ok &&
               napi_get_uv_event_loop(env, &loop) == napi_ok &&
               uv_async_init(loop, &m->async, on_async) == 0;
  if (!ready) {
    fuse_unmount(m->fuse);
    fuse_destroy(m->fuse);
    if (m->dispatch) napi_delete_reference(env, m->dispatch);
    if (m->events) napi_delete_reference(env, m->events);
    if (m->resource) napi_delete_reference(env, m->resource);
    if (m->actx) napi_async_destroy(env, m->actx);
    for (int i = 0; i < SLOTS; i++) if (m->slots[i].ref) napi_delete_reference(env, m->slots[i].ref);
    atomic_store(&m->refs, 1);
    mount_unref(m);
    napi_throw_error(env, "EAGAIN", "cannot set up the mount's hand-over to JS");
    return NULL;
  }
  m->async.data = m;
  /* Without the hook a process exiting with the mount alive could crash on the way out; mount anyway. */
  napi_add_env_cleanup_hook(env, env_cleanup, m);
  napi_value handle;
  if (napi_create_external(env, m, mount_finalize, NULL, &handle) != napi_ok) {
    atomic_fetch_sub(&m->refs, 1); /* no JS handle */
    goto no_thread;
  }
  if (pthread_create(&m->loop, NULL, loop_main, m) != 0) goto no_thread;
  pthread_detach(m->loop);
  return handle;
no_thread:
  fuse_unmount(m->fuse);
  fuse_destroy(m->fuse);
  m->fuse = NULL;
  atomic_fetch_sub(&m->refs, 1); /* no loop thread */
  pthread_mutex_lock(&m->lock);
  m->closed = 1;
  pthread_mutex_unlock(&m->lock);
  uv_close((uv_handle_t *)&m->async, on_closed); /* lets go of the rest */
  napi_throw_error(env, "EAGAIN", "cannot start the FUSE thread");
  return NULL;
}

/* fd(handle): the connection's /dev/fuse descriptor, for kernel notifications; -1 once closed. */
static napi_value js_fd(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  mount_t *m;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  CHECK(napi_get_value_external(env, argv[0], (void **)&m));
  int fd = m->fuse ? fuse_session_fd(fuse_get_session(m->fuse)) : -1;
  return num(env, fd);
}

typedef struct detach_s {
  mount_t *m;
  char *dir;
} detach_t;

extern char **environ;

static void *detach_main(void *arg) {
  detach_t *d = arg;
  block_signals();
  /*
   * Detach lazily, without closing the connection: the loop's threads then see it end (ENODEV) once
   * nothing in the mount is open any more, and loop_main closes and frees what is left. Open files
   * keep being served until then, as on a lazily unmounted disk.
   */
  if (geteuid() == 0) {
    umount2(d->dir, MNT_DETACH);
  } else {
    const char *helpers[] = { "fusermount3", "fusermount" };
    for (int i = 0; i < 2; i++) {
      char *argv[] = { (char *)helpers[i], "-u", "-q", "-z", "--", d->dir, NULL };
      posix_spawn_file_actions_t quiet;
      posix_spawn_file_actions_init(&quiet);
      posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
      pid_t pid;
      int spawned = posix_spawnp(&pid, helpers[i], &quiet, NULL, argv, environ);
      posix_spawn_file_actions_destroy(&quiet);
      if (spawned != 0) continue; /* not installed: try the next name */
      int status;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      break;
    }
  }
  /* This thread holds a reference of its own, so the mount is still allocated here. */
  post_event(d->m, EV_DETACHED);
  mount_unref(d->m);
  free(d->dir);
  free(d);
  return NULL;
}

/*
 * unmount(handle) → true when a detach was started (events(3) follows once done, unless the loop's
 * end, events(2), comes first), false when the mount has ended already. The detach runs on a thread of its own: it may need this mount answered.
 */
static napi_value js_unmount(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  mount_t *m;
  napi_value result;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  CHECK(napi_get_value_external(env, argv[0], (void **)&m));
  int started = 0;
  if (!atomic_exchange(&m->unmounting, 1)) {
    pthread_mutex_lock(&m->lock);
    started = !m->closed && !m->env_gone;
    pthread_mutex_unlock(&m->lock);
  }
  if (!started) {
    napi_get_boolean(env, false, &result);
    return result;
  }
  atomic_fetch_add(&m->refs, 1); /* the detach thread's */
  detach_t *d = calloc(1, sizeof *d);
  pthread_t t;
  if (d) { d->m = m; d->dir = strdup(m->dir); }
  if (!d || !d->dir || pthread_create(&t, NULL, detach_main, d) != 0) {
    if (d) free(d->dir);
    free(d);
    mount_unref(m);
    atomic_store(&m->unmounting, 0);
    napi_throw_error(env, "EAGAIN", "cannot start the unmount thread");
    return NULL;
  }
  pthread_detach(t);
  napi_get_boolean(env, true, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    { "mount", NULL, js_mount, NULL, NULL, NULL, napi_default, NULL },
    { "reply", NULL, js_reply, NULL, NULL, NULL, napi_default, NULL },
    { "fd", NULL, js_fd, NULL, NULL, NULL, napi_default, NULL },
    { "unmount", NULL, js_unmount, NULL, NULL, NULL, napi_default, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
