/*
 * svc_fuse3: a Node-API binding of libfuse 3's low-level API, served on the JS thread. Built by
 * scripts/build-native.mjs and loaded by src/native/fuse.ts, which falls back to fuse-native
 * (libfuse 2) when this cannot be built or loaded.
 *
 * Why a binding of our own: libfuse 2, and so fuse-native, cannot negotiate requests larger than
 * 128 KiB (libfuse 3 takes 1 MiB writes, FUSE_MAX_PAGES), has no READDIRPLUS or copy_file_range in
 * reach of JS, and is no longer maintained (docs/performance.md has the measurements).
 *
 * One thread. The mount's /dev/fuse descriptor is non-blocking and watched by the JS thread's
 * event loop (a libuv poll handle): each time it is readable, up to BATCH requests are read and
 * handed to JS there, and JS's answers (reply()) go to the kernel at once, from the same thread.
 * The high-level API this binding used before served each request on one of libfuse's threads,
 * which woke the JS thread and then slept until JS answered: two thread wake-ups per request,
 * most of a small request's cost (docs/performance.md, "The thread hand-over removed"). After a
 * turn of the event loop that served requests, the thread watches for the next one a moment before
 * it sleeps (on_check). The only other thread is the one a lazy unmount runs on (it may need the
 * mount answered meanwhile).
 *
 * Paths. The low-level API names files by node id; JS's operations take paths. The node table
 * here keeps what libfuse's high-level layer kept: each node's name and parent (so renames move
 * whole subtrees), the kernel's lookup count (a node lives until the kernel forgets it), open
 * handles, and a file's last size and mtime, by which a reopened file keeps its pages or drops
 * them (auto_cache). The number `stat` reports is the node id; nodeOf() gives transports/fuse/
 * kernel-cache the id of a path without asking the kernel. A file unlinked or renamed over while
 * open is renamed to `.fuse_hidden…` and unlinked when its last handle closes, as libfuse did
 * (transports/fuse/operations handles both). Unlinks and renames wait for opens and releases of the
 * files they name or of files below them (parked_t), and requests about what an unlink or rename is
 * changing wait for it (held_t), as libfuse's path locks made them.
 *
 * Memory handed to JS: never libfuse's. A write's bytes are copied into a buffer of the mount's
 * own before JS sees them (libfuse reuses its buffer for the next request), and a read is answered
 * from one; JS must not keep a request's Buffer after answering (a slot serves the next request).
 */
#define FUSE_USE_VERSION 312
#define _GNU_SOURCE
#include <fuse_lowlevel.h>
#include <node_api.h>
#include <uv.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
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
  OP_LSEEK, OP_FALLOCATE,
};

/*
 * Whether a rename hides an open file, and why (n[0] of OP_RENAME): for an unlink, JS deletes the
 * stored file before answering; for a rename over it, the rename that follows replaces the stored
 * file (or, failing, gives the file its name back). HIDE_NONE: a rename asked for by a program,
 * whatever its names. src/native/fuse.ts reads the same values.
 */
enum { HIDE_NONE = 0, HIDE_FOR_UNLINK = 1, HIDE_FOR_RENAME = 2 };

/* Events passed to JS's event callback. */
enum { EV_INIT = 1, EV_EXIT = 2, EV_DETACHED = 3 };

/*
 * Reads and writes go through buffers the addon allocates once per mount and shows to JS as Buffers
 * made once (a pool of 1 MiB slots, the largest request libfuse 3 negotiates): a Buffer made for
 * every request counts as new external memory to V8, and 256 MiB of them started eleven full
 * collections a 256 MiB write. When every slot is busy, the request gets a Buffer of its own.
 */
#define SLOT_SIZE (1 << 20)
#define SLOTS 16
/* Requests read from /dev/fuse before the event loop gets its turn again. */
#define BATCH 64
/*
 * The longest the JS thread waits for more requests in one turn of the event loop (see on_check),
 * however many it finds: timers and other I/O get their turn at least this often.
 */
#define SPIN_TURN_MAX_NS 1000000ull
/* What readdir(3) sees as the inode number of an entry not looked up ("unknown"). */
#define UNKNOWN_INO 0xffffffffu
/* Attributes packed per entry by src/native/fuse.ts (packStat). */
#define STAT_FIELDS 10

typedef struct slot_s {
  char *mem;    /* allocated here, freed with the mount */
  napi_ref ref; /* the Buffer over it, made once */
  bool busy;
} slot_t;

/* One inode the kernel knows (it looked it up and has not forgotten it), or a parent of one. */
typedef struct node_s {
  fuse_ino_t ino;
  struct node_s *parent; /* NULL for the root, and once unlinked */
  char *name;            /* NULL for the root, and once unlinked */
  uint64_t nlookup;      /* the kernel's references */
  uint32_t children;     /* nodes named in this one (each keeps it) */
  uint32_t open_count;   /* open handles */
  uint32_t pending;      /* opens, flushes, fsyncs and releases under way in JS (unlinks and renames wait) */
  uint32_t pending_below; /* the same, of nodes below this directory (renames and removals of it wait) */
  uint32_t changing;     /* unlinks and renames of it under way in JS (requests about it or below it wait: held_t) */
  uint32_t waiting;      /* unlinks and renames of it parked: requests about it or below it arriving meanwhile queue behind them */
  bool hidden;           /* renamed to .fuse_hidden… while open: unlinked at the last close */
  /*
   * Hides of it under way (an unlink or a rename over it while it is open; keep_for_hide), each
   * with its rename after it for a rename: its last close leaves the hidden name to them, and the
   * node is kept (even once the kernel forgets it) until they settle.
   */
  uint32_t hiding;
  /* auto_cache: the size and mtime last answered, and when. */
  bool cache_valid;
  /*
   * Written (or its size or times set) through this mount since its last open: a change of size or
   * mtime seen meanwhile is this mount's own, and the kernel's pages, written through, are current.
   */
  bool own_change;
  struct timespec mtime;
  off_t size;
  double stat_updated;
  struct node_s *ino_next, *name_next; /* hash chains */
} node_t;

typedef struct table_s {
  node_t **buckets;
  size_t size, count; /* size: a power of two */
} table_t;

/* A directory handle: the listing JS gave at offset 0, served from here for the following offsets. */
typedef struct dir_s {
  char **names;
  struct stat *stats; /* each entry's attributes, when JS gave them */
  uint32_t count;
  bool loaded;
  uint64_t edits; /* the mount's `edits` when the listing was asked for */
} dir_t;

/*
 * Unlinks and renames are kept apart from the requests about the files they change, as libfuse's
 * path locks kept them (read locks on a file and on every directory above it, write locks for
 * unlinks and renames). Two lists:
 *
 * - parked_t: an unlink, rmdir or rename waits while an open, flush, fsync or release of the file it
 *   names, or of a file below the directory it names, is under way in JS. close(2) does not wait for
 *   the release it sends, so `close; unlink` (git dropping its index.lock) would reach JS while the
 *   close still commits, which could then store the name the unlink removed; a directory renamed
 *   while a close below it commits would get the file back under its old name. An open takes no
 *   directory lock in the kernel, so a rename over the file (or its unlink) could reach JS before
 *   the open is answered, and replace or delete the stored file under the new handle without the
 *   hide that an open file gets (its chunks freed, its reads failing).
 * - held_t: while an unlink or rename is under way in JS, or parked, a request naming the node it
 *   changes or a node below it (getattr, setattr, open, flush, release, a lookup, create, unlink or
 *   rename in a directory below it...) waits as the kernel sent it, and is served once that is over,
 *   with the paths it leaves. Otherwise it would reach JS with the old path while the store already
 *   had the new one: fstat(2) of an open file failed with ENOENT while its directory was renamed,
 *   and a close could commit to the old name. While an unlink or rename is parked, what arrives for
 *   its nodes queues behind it (writers first, as libfuse's queue of waiting locks did), so a stream
 *   of opens or stats cannot keep it waiting. Reads and writes name an open handle, not a path: they
 *   never wait.
 */
typedef struct parked_s {
  struct parked_s *next;
  int op; /* OP_UNLINK, OP_RMDIR, OP_RENAME */
  fuse_req_t fr;
  fuse_ino_t parent, newparent;
  char *name, *newname;
  fuse_ino_t waits_on[2];  /* its nodes, counted in their `waiting` */
} parked_t;

/* A request the kernel sent, held unread by libfuse until the unlink or rename it waits for is over. */
typedef struct held_s {
  struct held_s *next;
  size_t size;
  char mem[]; /* the request as read from /dev/fuse */
} held_t;

typedef struct mount_s {
  struct fuse_session *se;
  struct fuse_buf buf; /* the request being read (libfuse's memory, reused) */
  char *dir;
  napi_env env;
  uv_poll_t poll;   /* /dev/fuse readable */
  uv_timer_t timer; /* request timeouts */
  uv_async_t async; /* the detach thread's word */
  uv_check_t check; /* after each turn of the event loop: a moment's wait for the next request */
  int open_handles; /* of the four above, not yet closed */
  bool poll_open, timer_open, async_open, check_open;
  uint64_t spin_ns; /* how long on_check waits after the last request (0: not at all) */
  bool served;      /* requests were served since the last on_check */
  napi_async_context actx; /* JS is called in a callback scope of this context */
  napi_ref resource, dispatch, events;
  slot_t slots[SLOTS];
  table_t by_ino, by_name;
  node_t *root;
  fuse_ino_t next_ino;
  uint64_t hidden_seq;
  struct req_s *first, *last; /* requests the kernel waits for, oldest first (deadlines) */
  parked_t *parked_first, *parked_last;
  held_t *held_first, *held_last;
  uint32_t changes; /* the `changing` and `waiting` counts of all nodes together (0: nothing is held) */
  /*
   * Changes asked for through the mount, or reported by other faces (js_node_of), so far: a
   * listing taken before one carries no attributes any more (answer_listing).
   */
  uint64_t edits;
  int timeout_ms;
  double cache_seconds;
  bool ended; /* the connection is over */
  atomic_int refs; /* the JS handle, the handles until closed, each request, a running detach thread */
  atomic_int unmounting;
  /* Between the JS thread and the detach thread. */
  pthread_mutex_t lock;
  int closed;   /* the async handle is closing: nobody may signal it */
  int env_gone; /* Node tore the environment down */
  int detached; /* the detach thread is done, JS not told yet */
} mount_t;

/* What a request does with JS's answer. */
enum {
  K_ERR = 1,      /* answer the code */
  K_ATTR,         /* attributes */
  K_LOOKUP,       /* a getattr for a lookup: an entry (a negative one for ENOENT) */
  K_NEW_ENTRY,    /* a getattr after mkdir/symlink/mknod/link: an entry */
  K_MADE,         /* mkdir, symlink, mknod, link done: getattr next */
  K_MKNOD_CREATED, K_MKNOD_RELEASED, /* a regular file's mknod: create, release, getattr */
  K_OPEN, K_OPEN_ATTR,
  K_CREATE, K_CREATE_ATTR,
  K_READ, K_WRITE, K_LSEEK, K_READLINK, K_STATFS, K_READDIR,
  K_SETATTR,      /* one step of a setattr done: the next */
  K_FALLOCATE,
  K_RELEASE, K_RELEASE_HIDDEN,
  K_UNLINK,       /* unlink or rmdir done */
  K_HIDE_UNLINK,  /* an open file renamed to its hidden name instead of unlinked */
  K_HIDE_TARGET,  /* an open rename target hidden: the rename next */
  K_RENAME,
  K_RENAME_HIDDEN, /* a rename over an open file closed meanwhile done: the hidden name goes */
  K_QUIET,        /* the kernel is not waiting (a release after an open it never saw) */
};

typedef struct req_s {
  struct req_s *prev, *next; /* in the mount's list while `fr` waits */
  bool listed;
  mount_t *m;
  fuse_req_t fr;   /* the kernel's request; NULL once answered (or timed out, or the mount ended) */
  uint64_t deadline;
  int op;          /* the JS operation asked now */
  int then;        /* K_*: what its answer leads to */
  unsigned step;   /* counts the operations asked */
  bool js_pending; /* JS holds the request */
  bool pends;      /* an open, flush, fsync or release counted in its node's `pending` */
  fuse_ino_t *above; /* and the directories above it then, counted in their `pending_below` */
  uint32_t above_count;
  fuse_ino_t changes[2]; /* an unlink's or rename's nodes, counted in their `changing` */
  int busy;        /* calls into JS under way on this request (it is freed only after them) */
  bool dead;       /* finished while busy: freed when the last call returns */
  char *path, *path2;
  double n[4];     /* numeric arguments (fh, mode, size, offset, ...) */
  uid_t uid;       /* the calling process's (file system) ids */
  gid_t gid;
  fuse_ino_t ino;  /* the node asked about; the parent, for a request naming an entry */
  char *name;      /* that entry */
  fuse_ino_t ino2; /* a rename's new parent and name */
  char *name2;
  char *hidden;    /* the hidden name chosen for an open file */
  fuse_ino_t hidden_ino; /* the open file this unlink or rename hides (keep_for_hide; 0: none) */
  struct fuse_file_info fi;
  bool has_fi;
  struct stat attr; /* setattr's wanted attributes */
  int to_set;       /* setattr's steps left */
  int saved;        /* an earlier step's code, answered at the end (release) */
  size_t size;      /* readdir's buffer size */
  off_t off;        /* readdir's offset */
  bool plus;        /* readdirplus */
  uint64_t edits;   /* readdir: the mount's `edits` when it was asked for */
  slot_t *slot;     /* a read's or write's pooled buffer */
  char *data;       /* its own buffer when no slot was free */
  size_t len;
  /* JS's answer. */
  struct stat st;
  bool has_st;
  struct statvfs sv;
  uint64_t fh;
  char *text;
  char **names;
  struct stat *stats;
  uint32_t count;
} req_t;

static void mount_unref(mount_t *m);
static void advance(req_t *r, int code);

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t now_ms(void) { return (uint64_t)(now_seconds() * 1000); }

/* ------------------------------------------------------------------ the node table */

static size_t hash_ino(fuse_ino_t ino, size_t size) { return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 24) & (size - 1); }

static size_t hash_name(fuse_ino_t parent, const char *name, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull ^ (parent * 0x9E3779B97F4A7C15ull);
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
  return (size_t)(h ^ (h >> 29)) & (size - 1);
}

static bool table_init(table_t *t) {
  t->size = 1024;
  t->count = 0;
  t->buckets = calloc(t->size, sizeof *t->buckets);
  return t->buckets != NULL;
}

static node_t *by_ino(mount_t *m, fuse_ino_t ino) {
  for (node_t *n = m->by_ino.buckets[hash_ino(ino, m->by_ino.size)]; n; n = n->ino_next) {
    if (n->ino == ino) return n;
  }
  return NULL;
}

static node_t *by_name(mount_t *m, node_t *parent, const char *name) {
  for (node_t *n = m->by_name.buckets[hash_name(parent->ino, name, m->by_name.size)]; n; n = n->name_next) {
    if (n->parent == parent && strcmp(n->name, name) == 0) return n;
  }
  return NULL;
}

/* Double a table when it is more than half full (left as it is when memory is short: chains grow). */
static void grow(table_t *t, bool names) {
  if (t->count * 2 <= t->size) return;
  size_t size = t->size * 2;
  node_t **buckets = calloc(size, sizeof *buckets);
  if (!buckets) return;
  for (size_t i = 0; i < t->size; i++) {
    for (node_t *n = t->buckets[i], *next; n; n = next) {
      if (names) {
        next = n->name_next;
        size_t h = hash_name(n->parent->ino, n->name, size);
        n->name_next = buckets[h];
        buckets[h] = n;
      } else {
        next = n->ino_next;
        size_t h = hash_ino(n->ino, size);
        n->ino_next = buckets[h];
        buckets[h] = n;
      }
    }
  }
  free(t->buckets);
  t->buckets = buckets;
  t->size = size;
}

static void ino_insert(mount_t *m, node_t *n) {
  m->by_ino.count++;
  grow(&m->by_ino, false);
  node_t **b = &m->by_ino.buckets[hash_ino(n->ino, m->by_ino.size)];
  n->ino_next = *b;
  *b = n;
}

static void ino_remove(mount_t *m, node_t *n) {
  for (node_t **p = &m->by_ino.buckets[hash_ino(n->ino, m->by_ino.size)]; *p; p = &(*p)->ino_next) {
    if (*p == n) {
      *p = n->ino_next;
      m->by_ino.count--;
      return;
    }
  }
}

/* Name `n` `name` (taken over) in `parent`. */
static void name_insert(mount_t *m, node_t *n, node_t *parent, char *name) {
  n->parent = parent;
  n->name = name;
  parent->children++;
  m->by_name.count++;
  grow(&m->by_name, true);
  node_t **b = &m->by_name.buckets[hash_name(parent->ino, name, m->by_name.size)];
  n->name_next = *b;
  *b = n;
}

/* Take `n`'s name away; its old parent is left to the caller (see node_release). */
static node_t *name_remove(mount_t *m, node_t *n) {
  node_t *parent = n->parent;
  if (!n->name) return NULL;
  for (node_t **p = &m->by_name.buckets[hash_name(parent->ino, n->name, m->by_name.size)]; *p; p = &(*p)->name_next) {
    if (*p == n) {
      *p = n->name_next;
      m->by_name.count--;
      break;
    }
  }
  free(n->name);
  n->name = NULL;
  n->parent = NULL;
  parent->children--;
  return parent;
}

/* Free `n` (and then perhaps its parents) once nothing needs it any more. */
static void node_release(mount_t *m, node_t *n) {
  while (n && n != m->root && n->nlookup == 0 && n->children == 0 && n->open_count == 0 && n->hiding == 0) {
    node_t *parent = name_remove(m, n);
    ino_remove(m, n);
    free(n);
    n = parent;
  }
}

static void node_move(mount_t *m, node_t *n, node_t *parent, const char *name);

/*
 * `dir` is going (removed, or renamed over): what the store held in it is gone, but files unlinked
 * while open and hidden in it (never stored, so it was empty) move to the root under their unique
 * hidden names, where their descriptors keep working and their last close finds them. The
 * operations move theirs alike (transports/fuse/operations, #rehomeHidden). A full scan, but only
 * of a directory that still names nodes after its removal: rare (hidden files, or names another
 * face removed that the kernel still holds).
 */
static void rehome_hidden(mount_t *m, node_t *dir) {
  if (dir->children == 0) return;
  dir->children++; /* keeps `dir` while its last names go */
  for (size_t b = 0; b < m->by_ino.size; b++) {
    for (node_t *n = m->by_ino.buckets[b]; n; n = n->ino_next) {
      if (n->parent == dir && n->hidden) node_move(m, n, m->root, n->name);
    }
  }
  dir->children--;
}

/* Unlink `n` from its directory (the kernel may still hold it). */
static void node_unlink(mount_t *m, node_t *n) {
  rehome_hidden(m, n);
  node_t *parent = name_remove(m, n);
  node_release(m, n);
  node_release(m, parent);
}

/* The node named `name` in `parent`, made when there is none (its lookup count is the caller's). */
static node_t *node_get(mount_t *m, node_t *parent, const char *name) {
  node_t *n = by_name(m, parent, name);
  if (n) return n;
  n = calloc(1, sizeof *n);
  char *copy = strdup(name);
  if (!n || !copy) {
    free(n);
    free(copy);
    return NULL;
  }
  n->ino = m->next_ino++;
  ino_insert(m, n);
  name_insert(m, n, parent, copy);
  return n;
}

/* Move `n` to `name` in `parent` (a node already there is unlinked first). */
static void node_move(mount_t *m, node_t *n, node_t *parent, const char *name) {
  char *copy = strdup(name);
  if (!copy) return; /* left where it was: its path is wrong until forgotten (out of memory) */
  parent->children++; /* keeps the new parent while names go */
  node_t *there = by_name(m, parent, name);
  if (there && there != n) node_unlink(m, there);
  node_t *old = name_remove(m, n);
  name_insert(m, n, parent, copy);
  parent->children--;
  node_release(m, old);
}

static void node_forget(mount_t *m, fuse_ino_t ino, uint64_t count) {
  node_t *n = by_ino(m, ino);
  if (!n || n == m->root) return;
  n->nlookup = count >= n->nlookup ? 0 : n->nlookup - count;
  node_release(m, n);
}

/* Record attributes answered for `n`: a changed size or mtime means its cached pages are stale. */
static void node_saw(node_t *n, const struct stat *st) {
  if (!n) return;
  if (n->cache_valid && !n->own_change &&
      (n->mtime.tv_sec != st->st_mtim.tv_sec || n->mtime.tv_nsec != st->st_mtim.tv_nsec || n->size != st->st_size)) {
    n->cache_valid = false;
  }
  n->mtime = st->st_mtim;
  n->size = st->st_size;
  n->stat_updated = now_seconds();
}

/* The node at `path` (changed: taken apart into its names), looked up from the root; NULL when the table holds none. */
static node_t *node_at(mount_t *m, char *path) {
  node_t *n = m->root;
  char *save = NULL;
  for (char *part = strtok_r(path, "/", &save); part && n; part = strtok_r(NULL, "/", &save)) n = by_name(m, n, part);
  return n;
}

/* The path of `n` (with `/child` when given), allocated; NULL when `n` is no longer in the tree. */
static char *path_of(mount_t *m, node_t *n, const char *child) {
  size_t len = child ? 1 + strlen(child) : 0;
  node_t *p = n;
  for (; p && p->name; p = p->parent) len += 1 + strlen(p->name);
  if (p != m->root) return NULL;
  if (len == 0) return strdup("/");
  char *s = malloc(len + 1);
  if (!s) return NULL;
  char *at = s + len;
  *at = '\0';
  if (child) {
    size_t l = strlen(child);
    at -= l;
    memcpy(at, child, l);
    *--at = '/';
  }
  for (p = n; p->name; p = p->parent) {
    size_t l = strlen(p->name);
    at -= l;
    memcpy(at, p->name, l);
    *--at = '/';
  }
  return s;
}

/*
 * Why path_of gave no path for `n`: it is no longer in the tree (unlinked, or below a directory
 * renamed over or removed meanwhile: ENOENT, as for any name that is gone), or memory ran out.
 */
static int path_errno(mount_t *m, node_t *n) {
  node_t *p = n;
  while (p && p->name) p = p->parent;
  return p == m->root ? ENOMEM : ENOENT;
}

/* ------------------------------------------------------------------ requests */

static void unlist(req_t *r) {
  if (!r->listed) return;
  mount_t *m = r->m;
  if (r->prev) r->prev->next = r->next; else m->first = r->next;
  if (r->next) r->next->prev = r->prev; else m->last = r->prev;
  r->prev = r->next = NULL;
  r->listed = false;
}

/* A request for the kernel's `fr` (NULL: one of the binding's own), waiting in the mount's list. */
static req_t *req_new(mount_t *m, fuse_req_t fr) {
  req_t *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->m = m;
  r->fr = fr;
  atomic_fetch_add(&m->refs, 1);
  if (fr) {
    const struct fuse_ctx *ctx = fuse_req_ctx(fr);
    r->uid = ctx->uid;
    r->gid = ctx->gid;
    r->deadline = now_ms() + (uint64_t)(m->timeout_ms > 0 ? m->timeout_ms : 0);
    r->prev = m->last;
    if (m->last) m->last->next = r; else m->first = r;
    m->last = r;
    r->listed = true;
  }
  return r;
}

static void free_listing(char **names, struct stat *stats, uint32_t count) {
  if (names) {
    for (uint32_t i = 0; i < count; i++) free(names[i]);
    free(names);
  }
  free(stats);
}

static void req_free(req_t *r) {
  mount_t *m = r->m;
  unlist(r);
  if (r->slot) r->slot->busy = false;
  free(r->path);
  free(r->path2);
  free(r->name);
  free(r->name2);
  free(r->hidden);
  free(r->data);
  free(r->text);
  free_listing(r->names, r->stats, r->count);
  free(r);
  mount_unref(m);
}

static bool settle(req_t *r);
static bool unchange(req_t *r);
static void run_parked(mount_t *m);

/*
 * The request is done with: freed now, or when the calls into JS under way on it return. What
 * waited for it (parked_t) runs now.
 */
static void finish(req_t *r) {
  mount_t *m = r->m;
  bool woke = settle(r);
  woke |= unchange(r);
  unlist(r);
  atomic_fetch_add(&m->refs, 1); /* m outlives the request for the parked ones */
  if (r->busy > 0) r->dead = true;
  else req_free(r);
  if (woke && (m->parked_first || m->held_first)) run_parked(m);
  mount_unref(m);
}

/* The kernel has its answer (sent by the caller): finish. */
static void replied(req_t *r) {
  r->fr = NULL;
  finish(r);
}

/* Answer the kernel `code` (0 or a negative errno) and finish. */
static void answer(req_t *r, int code) {
  if (r->fr) fuse_reply_err(r->fr, code < 0 ? -code : 0);
  replied(r);
}

/* A request the kernel no longer waits for stays only for JS's answer. */
static void let_go(req_t *r) {
  r->fr = NULL;
  unlist(r);
}

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

static void clear_exception(napi_env env) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (pending) {
    napi_value e;
    napi_get_and_clear_last_exception(env, &e);
  }
}

/*
 * Whether `r` asking for `op` may change a file's attributes or a directory's names (a listing
 * taken before it is stale). Reads, and the opens and closes of handles opened for reading, do not.
 */
static bool changes_something(const req_t *r, int op) {
  switch (op) {
    case OP_OPEN:
      return (r->fi.flags & O_ACCMODE) != O_RDONLY || (r->fi.flags & O_TRUNC);
    case OP_FSYNC: case OP_RELEASE:
      return !r->has_fi || (r->fi.flags & O_ACCMODE) != O_RDONLY;
    case OP_CREATE: case OP_WRITE: case OP_TRUNCATE: case OP_FTRUNCATE: case OP_UNLINK: case OP_RENAME:
    case OP_LINK: case OP_MKNOD: case OP_SYMLINK: case OP_MKDIR: case OP_RMDIR: case OP_CHMOD:
    case OP_CHOWN: case OP_UTIMENS: case OP_COPY_FILE_RANGE: case OP_FALLOCATE:
      return true;
    default:
      return false; /* a flush's flags are not passed on: its handle's writes and release count */
  }
}

/*
 * A path in the mount's read-only history tree (/.versions, transports/fuse/versions.ts). A name
 * missing there is not kept as a negative entry: every write, by any face and by this mount too,
 * adds a version (and a file's history) there, and nothing tells the kernel, so a lookup made
 * before the write (`stat /.versions/f/2`, then `echo two > f`) hid the new version for the entry
 * timeout while `ls` of the history listed it. A plain ENOENT leaves the kernel nothing to keep.
 */
static bool in_versions(const char *path) {
  return path && strncmp(path, "/.versions", 10) == 0 && (path[10] == '\0' || path[10] == '/');
}

/*
 * Ask JS for operation `op`; its answer (reply()) leads to `then`. JS gets
 * dispatch(req, op, path, path2, n0, n1, buffer, length, n2, n3); for the operations that make an
 * entry (which have no n2 or n3), n2 and n3 are the caller's uid and gid. The request may be
 * answered, and freed, before this returns: callers touch it no more.
 */
static void ask(req_t *r, int op, int then) {
  mount_t *m = r->m;
  napi_env env = m->env;
  r->op = op;
  r->then = then;
  r->js_pending = true;
  unsigned step = ++r->step;
  napi_handle_scope scope;
  /* env_gone is written on this thread: no lock needed to read it here. */
  if (m->env_gone || napi_open_handle_scope(env, &scope) != napi_ok) {
    r->js_pending = false;
    advance(r, -EIO);
    return;
  }
  napi_value undefined, fn, result;
  napi_get_undefined(env, &undefined);
  bool makes = op == OP_CREATE || op == OP_MKDIR || op == OP_SYMLINK || op == OP_MKNOD;
  if (changes_something(r, op)) m->edits++;
  napi_value argv[10];
  bool ok = napi_get_reference_value(env, m->dispatch, &fn) == napi_ok && fn &&
            napi_create_external(env, r, NULL, NULL, &argv[0]) == napi_ok;
  if (ok) {
    argv[1] = num(env, op);
    argv[2] = str(env, r->path ? r->path : "");
    argv[3] = r->path2 ? str(env, r->path2) : undefined;
    argv[4] = num(env, r->n[0]);
    argv[5] = num(env, r->n[1]);
    argv[6] = undefined;
    argv[7] = num(env, (double)r->len);
    argv[8] = num(env, makes ? (double)r->uid : r->n[2]);
    argv[9] = num(env, makes ? (double)r->gid : r->n[3]);
    if (op == OP_READ || op == OP_WRITE) {
      /* A slot's whole Buffer (JS reads or fills `length` bytes of it), or one over this request's bytes. */
      ok = r->slot ? napi_get_reference_value(env, r->slot->ref, &argv[6]) == napi_ok
                   : napi_create_external_buffer(env, r->len, r->data, NULL, NULL, &argv[6]) == napi_ok;
    }
  }
  r->busy++;
  if (ok) ok = napi_call_function(env, undefined, fn, 10, argv, &result) == napi_ok;
  r->busy--;
  if (!ok) clear_exception(env);
  napi_close_handle_scope(env, scope);
  if (!ok && !r->dead && r->step == step && r->js_pending) {
    /* JS could not be called, or threw outside its handler: EIO. */
    r->js_pending = false;
    advance(r, -EIO);
    return;
  }
  if (r->dead && r->busy == 0) req_free(r);
}

/* ------------------------------------------------------------------ answers */

static void fill_entry(mount_t *m, struct fuse_entry_param *e, node_t *n, const struct stat *st) {
  memset(e, 0, sizeof *e);
  e->ino = n->ino;
  e->attr = *st;
  e->attr.st_ino = n->ino;
  e->entry_timeout = m->cache_seconds;
  e->attr_timeout = m->cache_seconds;
}

/* Answer an entry for `r->name` in `r->ino` with JS's attributes (a lookup, or a new entry). */
static void answer_entry(req_t *r) {
  mount_t *m = r->m;
  node_t *parent = by_ino(m, r->ino);
  if (!r->fr) { finish(r); return; }
  node_t *n = parent ? node_get(m, parent, r->name) : NULL;
  if (!n) { answer(r, parent ? -ENOMEM : -ENOENT); return; }
  n->nlookup++;
  node_saw(n, &r->st);
  struct fuse_entry_param e;
  fill_entry(m, &e, n, &r->st);
  /* -ENOENT: the caller was interrupted and the kernel never took the entry. */
  if (fuse_reply_entry(r->fr, &e) == -ENOENT) node_forget(m, n->ino, 1);
  replied(r);
}

/*
 * Count `r`, an open, flush, fsync or release, as under way on its node, and below each directory
 * above it (see parked_t). Which directories those are is kept: none of them can move or go
 * meanwhile (their renames and removals wait), but they are uncounted by what was counted.
 */
static void pend(req_t *r) {
  node_t *n = by_ino(r->m, r->ino);
  if (!n || r->pends) return;
  n->pending++;
  r->pends = true;
  uint32_t depth = 0;
  for (node_t *p = n->parent; p; p = p->parent) depth++;
  /* Out of memory: only the file's own renames and unlinks wait. */
  if (depth == 0 || !(r->above = malloc(depth * sizeof *r->above))) return;
  for (node_t *p = n->parent; p; p = p->parent) {
    p->pending_below++;
    r->above[r->above_count++] = p->ino;
  }
}

/* `r`'s open, flush, fsync or release is over for those waiting on it (JS answered, or the kernel stopped waiting). */
static bool settle(req_t *r) {
  if (!r->pends) return false;
  r->pends = false;
  node_t *n = by_ino(r->m, r->ino);
  if (n && n->pending > 0) n->pending--;
  for (uint32_t i = 0; i < r->above_count; i++) {
    node_t *p = by_ino(r->m, r->above[i]);
    if (p && p->pending_below > 0) p->pending_below--;
  }
  free(r->above);
  r->above = NULL;
  r->above_count = 0;
  return true;
}

/* Count `n` as being unlinked or renamed by `r` (see parked_t). */
static void mark_changing(req_t *r, node_t *n) {
  if (!n) return;
  for (int i = 0; i < 2; i++) {
    if (r->changes[i] == 0) {
      r->changes[i] = n->ino;
      n->changing++;
      r->m->changes++;
      return;
    }
  }
}

/* `r`'s unlink or rename is over: its nodes are no longer changing. */
static bool unchange(req_t *r) {
  bool any = false;
  for (int i = 0; i < 2; i++) {
    if (r->changes[i] == 0) continue;
    node_t *n = by_ino(r->m, r->changes[i]);
    if (n && n->changing > 0) n->changing--;
    r->m->changes--;
    r->changes[i] = 0;
    any = true;
  }
  return any;
}

/* Release a handle the kernel never got (its open was interrupted or timed out). */
static void release_unseen(req_t *r) {
  let_go(r);
  r->n[0] = (double)r->fi.fh;
  pend(r);
  ask(r, OP_RELEASE, K_RELEASE);
}

/* An open's answer to the kernel, keeping the file's pages when auto_cache says they are current. */
static void answer_open(req_t *r) {
  mount_t *m = r->m;
  node_t *n = by_ino(m, r->ino);
  if (n) {
    n->open_count++;
    r->fi.keep_cache = n->cache_valid;
    n->cache_valid = true;
    n->own_change = false;
  }
  if (!r->fr || fuse_reply_open(r->fr, &r->fi) == -ENOENT) {
    release_unseen(r);
    return;
  }
  replied(r); /* an unlink or rename waiting for it now finds the file open, and hides it */
}

static void answer_create(req_t *r) {
  mount_t *m = r->m;
  node_t *parent = by_ino(m, r->ino);
  node_t *n = parent && r->fr ? node_get(m, parent, r->name) : NULL;
  if (!n) {
    /* The kernel is gone (timed out), or the node cannot be had: release the handle made. */
    if (r->fr) fuse_reply_err(r->fr, parent ? ENOMEM : ENOENT);
    r->ino = 0;
    release_unseen(r);
    return;
  }
  n->nlookup++;
  n->open_count++;
  node_saw(n, &r->st);
  /* A new file's pages are only what is written through this mount. */
  n->cache_valid = true;
  n->own_change = true;
  struct fuse_entry_param e;
  fill_entry(m, &e, n, &r->st);
  if (fuse_reply_create(r->fr, &e, &r->fi) == -ENOENT) {
    node_forget(m, n->ino, 1);
    r->ino = n->ino;
    release_unseen(r);
    return;
  }
  replied(r);
}

/* A listing's entries from `off` into one buffer of `size` bytes; READDIRPLUS entries count as lookups. */
static void answer_listing(mount_t *m, fuse_req_t fr, fuse_ino_t ino, dir_t *d, size_t size, off_t off, bool plus) {
  char *buf = malloc(size ? size : 1);
  if (!buf) { fuse_reply_err(fr, ENOMEM); return; }
  node_t *dir = by_ino(m, ino);
  /*
   * A change since the listing was asked for (through the mount or by another face) may have
   * made its attributes stale: READDIRPLUS would push them into the kernel over the file's
   * current ones (a rewritten file read short, to its old size). Its entries then go without
   * attributes, and the kernel looks them up when a program asks.
   */
  bool fresh = d->edits == m->edits;
  size_t used = 0;
  for (uint32_t i = (uint32_t)(off < 0 ? 0 : off); i < d->count; i++) {
    const char *name = d->names[i];
    struct stat st;
    if (d->stats) st = d->stats[i]; else memset(&st, 0, sizeof st);
    st.st_ino = UNKNOWN_INO;
    size_t need;
    if (plus) {
      struct fuse_entry_param e;
      memset(&e, 0, sizeof e);
      e.attr = st;
      bool dots = name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
      /* "." and "..", and entries without attributes: no node (the kernel looks them up itself). */
      node_t *n = d->stats && fresh && !dots && dir ? node_get(m, dir, name) : NULL;
      if (n) fill_entry(m, &e, n, &st);
      need = fuse_add_direntry_plus(fr, buf + used, size - used, name, &e, (off_t)i + 1);
      if (need > size - used) {
        if (n) node_release(m, n);
        break;
      }
      if (n) {
        n->nlookup++;
        node_saw(n, &st);
      }
    } else {
      need = fuse_add_direntry(fr, buf + used, size - used, name, &st, (off_t)i + 1);
      if (need > size - used) break;
    }
    used += need;
  }
  fuse_reply_buf(fr, buf, used);
  free(buf);
}

/* setattr's next step: mode, owner, size, times, then the attributes to answer. */
static void setattr_next(req_t *r) {
  int s = r->to_set;
  if (s & FUSE_SET_ATTR_MODE) {
    r->to_set &= ~FUSE_SET_ATTR_MODE;
    r->n[0] = r->attr.st_mode;
    ask(r, OP_CHMOD, K_SETATTR);
    return;
  }
  if (s & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
    r->to_set &= ~(FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);
    /* (uid_t)-1 / (gid_t)-1 (4294967295) mean "unchanged", as for chown(2). */
    r->n[0] = (double)(s & FUSE_SET_ATTR_UID ? r->attr.st_uid : (uid_t)-1);
    r->n[1] = (double)(s & FUSE_SET_ATTR_GID ? r->attr.st_gid : (gid_t)-1);
    ask(r, OP_CHOWN, K_SETATTR);
    return;
  }
  if (s & FUSE_SET_ATTR_SIZE) {
    r->to_set &= ~FUSE_SET_ATTR_SIZE;
    r->n[0] = r->has_fi ? (double)r->fi.fh : 0;
    r->n[1] = (double)r->attr.st_size;
    ask(r, r->has_fi ? OP_FTRUNCATE : OP_TRUNCATE, K_SETATTR);
    return;
  }
  int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW;
  if (s & times) {
    r->to_set &= ~times;
    /* Only the modification time is stored: nothing to do when it is to be left as it is. */
    if (s & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) {
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      double now_ms_ = (double)now.tv_sec * 1000 + (double)(now.tv_nsec / 1000000);
      const struct timespec *a = &r->attr.st_atim, *mt = &r->attr.st_mtim;
      r->n[0] = s & FUSE_SET_ATTR_ATIME_NOW ? now_ms_ : s & FUSE_SET_ATTR_ATIME ? (double)a->tv_sec * 1000 + (double)(a->tv_nsec / 1000000) : -1;
      r->n[1] = s & FUSE_SET_ATTR_MTIME_NOW ? now_ms_ : (double)mt->tv_sec * 1000 + (double)(mt->tv_nsec / 1000000);
      ask(r, OP_UTIMENS, K_SETATTR);
      return;
    }
  }
  ask(r, OP_GETATTR, K_ATTR);
}

/* An open file's hidden name in the same directory (libfuse's pattern, which JS recognises). */
static char *hidden_name(mount_t *m, fuse_ino_t ino) {
  char *s;
  if (asprintf(&s, ".fuse_hidden%08llx%08llx", (unsigned long long)ino & 0xffffffffull,
               (unsigned long long)(++m->hidden_seq) & 0xffffffffull) < 0) return NULL;
  return s;
}

/*
 * `n` is about to be hidden for `r` (an unlink or a rename over it while it is open): the request
 * keeps it by id, and its count keeps it in the table (even once the kernel forgets it, should the
 * hide outlast the request timeout and its last close come meanwhile) until the hide, and for a
 * rename the rename too, has settled.
 */
static void keep_for_hide(req_t *r, node_t *n) {
  n->hiding++;
  r->hidden_ino = n->ino;
}

/* JS renamed node `n` in `parent` to `hidden`: the node follows, marked to go at its last close. */
static void hide(mount_t *m, fuse_ino_t parent, node_t *n, const char *hidden) {
  node_t *p = by_ino(m, parent);
  if (!n || !p) return;
  node_move(m, n, p, hidden);
  n->hidden = true;
}


/* JS answered `code` for the operation `r` asked: what follows. */
static void advance(req_t *r, int code) {
  mount_t *m = r->m;
  switch (r->then) {
    case K_ERR:
      answer(r, code);
      return;
    case K_ATTR: {
      if (code < 0 || !r->fr) { answer(r, code); return; }
      node_t *n = by_ino(m, r->ino);
      node_saw(n, &r->st);
      r->st.st_ino = r->ino;
      fuse_reply_attr(r->fr, &r->st, m->cache_seconds);
      replied(r);
      return;
    }
    case K_LOOKUP:
      if (code == -ENOENT && r->fr && m->cache_seconds > 0 && !in_versions(r->path)) {
        /* A negative entry: the kernel remembers the name is missing for as long as it caches names.
           Not below /.versions (in_versions). */
        struct fuse_entry_param e;
        memset(&e, 0, sizeof e);
        e.entry_timeout = m->cache_seconds;
        fuse_reply_entry(r->fr, &e);
        replied(r);
        return;
      }
      /* fall through */
    case K_NEW_ENTRY:
      if (code < 0) { answer(r, code); return; }
      answer_entry(r);
      return;
    case K_MADE:
      if (code < 0) { answer(r, code); return; }
      if (r->op == OP_SYMLINK || r->op == OP_LINK) {
        /* Their new entry is the second path. */
        free(r->path);
        r->path = r->path2;
        r->path2 = NULL;
      }
      ask(r, OP_GETATTR, K_NEW_ENTRY);
      return;
    case K_MKNOD_CREATED:
      if (code < 0) { answer(r, code); return; }
      r->n[0] = (double)r->fh;
      ask(r, OP_RELEASE, K_MKNOD_RELEASED);
      return;
    case K_MKNOD_RELEASED:
      if (code < 0) { answer(r, code); return; }
      ask(r, OP_GETATTR, K_NEW_ENTRY);
      return;
    case K_OPEN: {
      if (code < 0) { answer(r, code); return; }
      r->fi.fh = r->fh;
      /* A read-only close sends no FLUSH, whose only work is committing what a handle wrote. */
      if ((r->fi.flags & O_ACCMODE) == O_RDONLY) r->fi.noflush = 1;
      node_t *n = by_ino(m, r->ino);
      if (r->fr && n && n->cache_valid && now_seconds() - n->stat_updated > m->cache_seconds) {
        /* Pages cached, attributes not fresh: ask whether the file changed (auto_cache). */
        ask(r, OP_GETATTR, K_OPEN_ATTR);
        return;
      }
      answer_open(r);
      return;
    }
    case K_OPEN_ATTR: {
      node_t *n = by_ino(m, r->ino);
      if (n) {
        if (code == 0) node_saw(n, &r->st); else n->cache_valid = false;
      }
      answer_open(r);
      return;
    }
    case K_CREATE:
      if (code < 0) { answer(r, code); return; }
      r->fi.fh = r->fh;
      if (!r->has_st) {
        ask(r, OP_GETATTR, K_CREATE_ATTR);
        return;
      }
      answer_create(r);
      return;
    case K_CREATE_ATTR:
      if (code < 0) {
        if (r->fr) fuse_reply_err(r->fr, -code);
        r->ino = 0;
        release_unseen(r);
        return;
      }
      answer_create(r);
      return;
    case K_READ:
      if (code < 0 || !r->fr) { answer(r, code); return; }
      fuse_reply_buf(r->fr, r->slot ? r->slot->mem : r->data, (size_t)code > r->len ? r->len : (size_t)code);
      replied(r);
      return;
    case K_WRITE:
      if (code > 0 && r->op == OP_WRITE) {
        /* Written through: the kernel's pages hold it (copy_file_range's target is dropped by the kernel). */
        node_t *n = by_ino(m, r->ino);
        if (n) n->own_change = true;
      }
      if (code < 0 || !r->fr) { answer(r, code); return; }
      fuse_reply_write(r->fr, (size_t)code);
      replied(r);
      return;
    case K_FALLOCATE:
      if (code == 0) {
        /* The kernel set the size and dropped the zeroed range's pages itself: its pages are current. */
        node_t *n = by_ino(m, r->ino);
        if (n) n->own_change = true;
      }
      answer(r, code);
      return;
    case K_LSEEK:
      if (code < 0 || !r->fr) { answer(r, code); return; }
      fuse_reply_lseek(r->fr, (off_t)r->fh);
      replied(r);
      return;
    case K_READLINK:
      if (code < 0 || !r->fr) { answer(r, code); return; }
      fuse_reply_readlink(r->fr, r->text ? r->text : "");
      replied(r);
      return;
    case K_STATFS:
      if (code < 0 || !r->fr) { answer(r, code); return; }
      fuse_reply_statfs(r->fr, &r->sv);
      replied(r);
      return;
    case K_READDIR: {
      if (code < 0 || !r->fr) { answer(r, code); return; }
      dir_t *d = (dir_t *)(uintptr_t)r->fi.fh;
      free_listing(d->names, d->stats, d->count);
      d->names = r->names;
      d->stats = r->stats;
      d->count = r->count;
      d->loaded = true;
      d->edits = r->edits;
      r->names = NULL;
      r->stats = NULL;
      r->count = 0;
      answer_listing(m, r->fr, r->ino, d, r->size, r->off, r->plus);
      replied(r);
      return;
    }
    case K_SETATTR: {
      if (code < 0) { answer(r, code); return; }
      /* A size or times set here: the kernel truncated or kept its pages itself. */
      node_t *n = by_ino(m, r->ino);
      if (n) n->own_change = true;
      setattr_next(r);
      return;
    }
    case K_RELEASE: {
      node_t *n = by_ino(m, r->ino);
      if (n && n->open_count > 0) n->open_count--;
      if (n && n->hidden && n->open_count == 0 && n->hiding == 0) {
        /*
         * The last handle of a file unlinked while open: its hidden name goes now. Hidden for a
         * rename still under way, the rename decides (K_RENAME): failing, it gives the file its
         * name back, and the kernel, which still names the file there, must find it.
         */
        n->hidden = false;
        char *path = path_of(m, n, NULL);
        if (path) {
          free(r->path);
          r->path = path;
          r->saved = code;
          ask(r, OP_UNLINK, K_RELEASE_HIDDEN);
          return;
        }
      }
      /* The node first: answering runs what was parked behind this release (an unlink of the file). */
      node_release(m, n);
      answer(r, code);
      return;
    }
    case K_RELEASE_HIDDEN: {
      node_t *n = by_ino(m, r->ino);
      if (code == 0 && n) node_unlink(m, n);
      else node_release(m, n);
      answer(r, r->saved);
      return;
    }
    case K_UNLINK: {
      node_t *parent = by_ino(m, r->ino);
      node_t *n = code == 0 && parent ? by_name(m, parent, r->name) : NULL;
      if (n) node_unlink(m, n);
      answer(r, code);
      return;
    }
    case K_HIDE_UNLINK: {
      node_t *n = by_ino(m, r->hidden_ino);
      r->hidden_ino = 0;
      if (n && n->hiding > 0) n->hiding--;
      if (code < 0) {
        node_release(m, n);
        answer(r, code);
        return;
      }
      hide(m, r->ino, n, r->hidden);
      if (n && n->open_count == 0 && n->hiding == 0) {
        /* Closed meanwhile: the hidden name goes at once. */
        n->hidden = false;
        free(r->name);
        r->name = r->hidden;
        r->hidden = NULL;
        free(r->path);
        r->path = r->path2;
        r->path2 = NULL;
        ask(r, OP_UNLINK, K_UNLINK);
        return;
      }
      answer(r, 0);
      return;
    }
    case K_HIDE_TARGET: {
      node_t *h = by_ino(m, r->hidden_ino);
      if (code < 0) {
        r->hidden_ino = 0;
        if (h && h->hiding > 0) h->hiding--;
        node_release(m, h);
        answer(r, code);
        return;
      }
      hide(m, r->ino2, h, r->hidden); /* kept (keep_for_hide) until K_RENAME */
      /* Now the rename itself: path and path2 were kept aside in text and data. */
      free(r->path);
      free(r->path2);
      r->path = r->text;
      r->path2 = r->data;
      r->text = NULL;
      r->data = NULL;
      r->n[0] = HIDE_NONE;
      ask(r, OP_RENAME, K_RENAME);
      return;
    }
    case K_RENAME: {
      /*
       * The open target hidden for this rename (K_HIDE_TARGET), if any: found by its node id, as
       * it may have been hidden again, moved to the root with its directory's removal, or
       * forgotten by the kernel since (hiding keeps it). Its count drops only once the
       * names below have moved: a move may unlink it (renamed back to the target name meanwhile),
       * and the count keeps it from being freed while it is still used here.
       */
      node_t *h = r->hidden_ino ? by_ino(m, r->hidden_ino) : NULL;
      r->hidden_ino = 0;
      node_t *to_dir = by_ino(m, r->ino2);
      if (code == 0) {
        node_t *from = by_ino(m, r->ino);
        node_t *n = from ? by_name(m, from, r->name) : NULL;
        if (to_dir) {
          if (n) {
            node_move(m, n, to_dir, r->name2);
            n->hidden = false; /* a hidden file a program renamed is hidden no more: its close keeps the name */
          } else {
            node_t *there = by_name(m, to_dir, r->name2);
            if (there) node_unlink(m, there);
          }
        }
      }
      if (h && h->hiding > 0) h->hiding--;
      if (code == 0) {
        if (h && h->hidden && h->name && h->open_count == 0 && h->hiding == 0) {
          /* Replaced, and its last handle closed while the rename was under way: its hidden name goes now. */
          char *path = path_of(m, h, NULL);
          if (path) {
            h->hidden = false;
            free(r->path);
            r->path = path;
            r->saved = code;
            r->hidden_ino = h->ino;
            ask(r, OP_UNLINK, K_RENAME_HIDDEN);
            return;
          }
        }
      } else if (h && h->hidden && h->hiding == 0) {
        /*
         * The rename over an open file failed after the file was hidden (K_HIDE_TARGET): it takes
         * its name back, as the operations give it back its path (transports/fuse/operations),
         * also when its last handle closed meanwhile. Where its directory is gone, the operations
         * stored it at its path all the same; here it is simply no longer hidden (nothing of its
         * hidden name is left to unlink).
         */
        h->hidden = false;
        if (to_dir && (to_dir == m->root || to_dir->name)) node_move(m, h, to_dir, r->name2);
      }
      node_release(m, h);
      answer(r, code);
      return;
    }
    case K_RENAME_HIDDEN: {
      node_t *h = by_ino(m, r->hidden_ino);
      if (code == 0 && h) node_unlink(m, h);
      else node_release(m, h);
      answer(r, r->saved);
      return;
    }
    case K_QUIET:
    default:
      finish(r);
      return;
  }
}

/* ------------------------------------------------------------------ operations */

#define MOUNT_OF(fr) ((mount_t *)fuse_req_userdata(fr))

/* A request about node `ino` with its path; NULL (and the kernel answered) when it has none. */
/*
 * Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
 * svc's paths are strings: a name that is not UTF-8 would reach JS with U+FFFD in place of its bad
 * bytes, and so name another file (`caf\xe8` and `caf\xe9` both as `caf\uFFFD`). Such names are
 * refused with EILSEQ, as file systems that keep names in UTF-8 do.
 */
static bool valid_utf8(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned char c = *p;
    int extra;
    uint32_t cp;
    if (c < 0x80) { p++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { extra = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { extra = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { extra = 3; cp = c & 0x07; }
    else return false;
    for (int i = 1; i <= extra; i++) {
      if ((p[i] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((extra == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (extra == 3 && (cp < 0x10000 || cp > 0x10ffff))) return false;
    p += extra + 1;
  }
  return true;
}

static req_t *about(fuse_req_t fr, fuse_ino_t ino, const char *child) {
  mount_t *m = MOUNT_OF(fr);
  if (child && !valid_utf8(child)) {
    fuse_reply_err(fr, EILSEQ);
    return NULL;
  }
  node_t *n = by_ino(m, ino);
  char *path = n ? path_of(m, n, child) : NULL;
  if (!path) {
    fuse_reply_err(fr, n ? path_errno(m, n) : ENOENT);
    return NULL;
  }
  req_t *r = req_new(m, fr);
  if (!r) {
    free(path);
    fuse_reply_err(fr, ENOMEM);
    return NULL;
  }
  r->ino = ino;
  r->path = path;
  if (child && !(r->name = strdup(child))) {
    answer(r, -ENOMEM);
    return NULL;
  }
  return r;
}

/* A request about an open file: its path when it still has one, "" otherwise. */
static req_t *about_open(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  mount_t *m = MOUNT_OF(fr);
  req_t *r = req_new(m, fr);
  if (!r) {
    fuse_reply_err(fr, ENOMEM);
    return NULL;
  }
  node_t *n = by_ino(m, ino);
  r->ino = ino;
  r->path = n ? path_of(m, n, NULL) : NULL;
  if (fi) {
    r->fi = *fi;
    r->has_fi = true;
    r->n[0] = (double)fi->fh;
  }
  return r;
}

static void ll_lookup(fuse_req_t fr, fuse_ino_t parent, const char *name) {
  req_t *r = about(fr, parent, name);
  if (r) ask(r, OP_GETATTR, K_LOOKUP);
}

static void ll_forget(fuse_req_t fr, fuse_ino_t ino, uint64_t nlookup) {
  node_forget(MOUNT_OF(fr), ino, nlookup);
  fuse_reply_none(fr);
}

static void ll_forget_multi(fuse_req_t fr, size_t count, struct fuse_forget_data *forgets) {
  mount_t *m = MOUNT_OF(fr);
  for (size_t i = 0; i < count; i++) node_forget(m, forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(fr);
}

static void ll_getattr(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)fi;
  req_t *r = about(fr, ino, NULL);
  if (r) ask(r, OP_GETATTR, K_ATTR);
}

static void ll_setattr(fuse_req_t fr, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
  req_t *r = about(fr, ino, NULL);
  if (!r) return;
  r->attr = *attr;
  r->to_set = to_set;
  if (fi) {
    r->fi = *fi;
    r->has_fi = true;
  }
  setattr_next(r);
}

static void ll_readlink(fuse_req_t fr, fuse_ino_t ino) {
  req_t *r = about(fr, ino, NULL);
  if (r) ask(r, OP_READLINK, K_READLINK);
}

static void ll_mknod(fuse_req_t fr, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
  req_t *r = about(fr, parent, name);
  if (!r) return;
  r->n[0] = mode;
  if (S_ISREG(mode)) {
    /* A regular file: created and closed, as libfuse's high-level layer does (JS's mknod is for special files). */
    ask(r, OP_CREATE, K_MKNOD_CREATED);
    return;
  }
  r->n[1] = (double)rdev;
  ask(r, OP_MKNOD, K_MADE);
}

static void ll_mkdir(fuse_req_t fr, fuse_ino_t parent, const char *name, mode_t mode) {
  req_t *r = about(fr, parent, name);
  if (!r) return;
  r->n[0] = mode;
  ask(r, OP_MKDIR, K_MADE);
}

/* Whether `name` in `parent`, or a file below it, is being opened, flushed, synced or released. */
static bool busy_name(mount_t *m, fuse_ino_t parent, const char *name) {
  node_t *p = by_ino(m, parent);
  node_t *n = p ? by_name(m, p, name) : NULL;
  return n && (n->pending > 0 || n->pending_below > 0);
}

static void queue_parked(mount_t *m, parked_t *p) {
  if (m->parked_last) m->parked_last->next = p; else m->parked_first = p;
  m->parked_last = p;
}

/* Keep a request until the opens and releases it waits for are over (parked_t); false when out of memory. */
static bool park(mount_t *m, int op, fuse_req_t fr, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname) {
  parked_t *p = calloc(1, sizeof *p);
  if (p) {
    p->name = strdup(name);
    p->newname = newname ? strdup(newname) : NULL;
  }
  if (!p || !p->name || (newname && !p->newname)) {
    if (p) { free(p->name); free(p->newname); }
    free(p);
    return false;
  }
  p->op = op;
  p->fr = fr;
  p->parent = parent;
  p->newparent = newparent;
  node_t *dirs[2] = { by_ino(m, parent), newname ? by_ino(m, newparent) : NULL };
  const char *names[2] = { name, newname };
  for (int i = 0; i < 2; i++) {
    node_t *n = dirs[i] ? by_name(m, dirs[i], names[i]) : NULL;
    if (!n || (i == 1 && n->ino == p->waits_on[0])) continue;
    n->waiting++;
    m->changes++;
    p->waits_on[i] = n->ino;
  }
  queue_parked(m, p);
  return true;
}

static void remove_entry(fuse_req_t fr, fuse_ino_t parent, const char *name, int op);
static void ll_rename(fuse_req_t fr, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
                      unsigned int flags);
static void take(mount_t *m, held_t *h, const struct fuse_buf *buf);

/*
 * Run the parked requests again, in order (each parks again if it still has to wait), then the held
 * ones (each is held again if it still has to wait: behind a parked request that is now under way).
 */
static void run_parked(mount_t *m) {
  parked_t *p = m->parked_first;
  m->parked_first = m->parked_last = NULL;
  while (p) {
    parked_t *next = p->next;
    for (int i = 0; i < 2; i++) {
      if (!p->waits_on[i]) continue;
      node_t *n = by_ino(m, p->waits_on[i]);
      if (n && n->waiting > 0) n->waiting--;
      m->changes--;
    }
    if (m->ended) fuse_reply_err(p->fr, EIO);
    else if (p->op == OP_RENAME) ll_rename(p->fr, p->parent, p->name, p->newparent, p->newname, 0);
    else remove_entry(p->fr, p->parent, p->name, p->op);
    free(p->name);
    free(p->newname);
    free(p);
    p = next;
  }
  held_t *h = m->held_first;
  m->held_first = m->held_last = NULL;
  while (h) {
    held_t *next = h->next;
    /* A connection that ended answers nothing more (the kernel gave up its requests). */
    if (m->ended) free(h);
    else take(m, h, NULL);
    h = next;
  }
}

/* unlink and rmdir. An open file is renamed to a hidden name instead, and unlinked at its last close. */
static void remove_entry(fuse_req_t fr, fuse_ino_t parent, const char *name, int op) {
  mount_t *m0 = MOUNT_OF(fr);
  if (busy_name(m0, parent, name) && park(m0, op, fr, parent, name, 0, NULL)) return;
  req_t *r = about(fr, parent, name);
  if (!r) return;
  mount_t *m = r->m;
  node_t *p = by_ino(m, parent);
  node_t *n = p ? by_name(m, p, name) : NULL;
  mark_changing(r, n);
  if (op == OP_UNLINK && n && n->open_count > 0) {
    r->hidden = hidden_name(m, n->ino);
    r->path2 = r->hidden ? path_of(m, p, r->hidden) : NULL;
    if (!r->path2) { answer(r, r->hidden ? -path_errno(m, p) : -ENOMEM); return; }
    r->n[0] = HIDE_FOR_UNLINK;
    keep_for_hide(r, n);
    ask(r, OP_RENAME, K_HIDE_UNLINK);
    return;
  }
  ask(r, op, K_UNLINK);
}

static void ll_unlink(fuse_req_t fr, fuse_ino_t parent, const char *name) { remove_entry(fr, parent, name, OP_UNLINK); }
static void ll_rmdir(fuse_req_t fr, fuse_ino_t parent, const char *name) { remove_entry(fr, parent, name, OP_RMDIR); }

/* symlink(target, linkpath): JS gets (target, path) in that order, as fuse-native passed them. */
static void ll_symlink(fuse_req_t fr, const char *target, fuse_ino_t parent, const char *name) {
  req_t *r = about(fr, parent, name);
  if (!r) return;
  if (!valid_utf8(target)) { answer(r, -EILSEQ); return; }
  r->path2 = r->path;
  r->path = strdup(target);
  if (!r->path) { answer(r, -ENOMEM); return; }
  ask(r, OP_SYMLINK, K_MADE);
}

static void ll_link(fuse_req_t fr, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
  req_t *r = about(fr, newparent, newname);
  if (!r) return;
  node_t *n = by_ino(r->m, ino);
  r->path2 = r->path;
  r->path = n ? path_of(r->m, n, NULL) : NULL;
  if (!r->path) { answer(r, n ? -path_errno(r->m, n) : -ENOENT); return; }
  ask(r, OP_LINK, K_MADE);
}

static void ll_rename(fuse_req_t fr, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
                      unsigned int flags) {
  /* RENAME_NOREPLACE / RENAME_EXCHANGE are not offered: callers fall back to rename(2). */
  if (flags) { fuse_reply_err(fr, EINVAL); return; }
  mount_t *m0 = MOUNT_OF(fr);
  if ((busy_name(m0, parent, name) || busy_name(m0, newparent, newname)) &&
      park(m0, OP_RENAME, fr, parent, name, newparent, newname)) return;
  req_t *r = about(fr, parent, name);
  if (!r) return;
  mount_t *m = r->m;
  node_t *np = by_ino(m, newparent);
  if (!valid_utf8(newname)) { answer(r, -EILSEQ); return; }
  r->ino2 = newparent;
  r->name2 = strdup(newname);
  r->path2 = np ? path_of(m, np, newname) : NULL;
  if (!r->name2) { answer(r, -ENOMEM); return; }
  if (!r->path2) { answer(r, np ? -path_errno(m, np) : -ENOENT); return; }
  node_t *target = by_name(m, np, newname);
  node_t *source = by_ino(m, parent) ? by_name(m, by_ino(m, parent), name) : NULL;
  mark_changing(r, source);
  if (target != source) mark_changing(r, target);
  if (target && target != source && target->open_count > 0) {
    /* An open target is hidden first (renamed aside), then the rename replaces nothing. */
    r->hidden = hidden_name(m, target->ino);
    char *hidden_path = r->hidden ? path_of(m, np, r->hidden) : NULL;
    if (!hidden_path) { answer(r, r->hidden ? -path_errno(m, np) : -ENOMEM); return; }
    /* The rename's own paths wait in text and data (see K_HIDE_TARGET). */
    r->text = r->path;
    r->data = r->path2;
    r->path = strdup(r->data);
    r->path2 = hidden_path;
    if (!r->path) { answer(r, -ENOMEM); return; }
    r->n[0] = HIDE_FOR_RENAME;
    keep_for_hide(r, target);
    ask(r, OP_RENAME, K_HIDE_TARGET);
    return;
  }
  ask(r, OP_RENAME, K_RENAME);
}

static void ll_open(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  req_t *r = about(fr, ino, NULL);
  if (!r) return;
  r->fi = *fi;
  r->n[0] = fi->flags;
  pend(r);
  ask(r, OP_OPEN, K_OPEN);
}

/* create: JS answers the handle and, optionally, the new file's attributes (else a getattr follows). */
static void ll_create(fuse_req_t fr, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
  req_t *r = about(fr, parent, name);
  if (!r) return;
  r->fi = *fi;
  r->n[0] = mode;
  ask(r, OP_CREATE, K_CREATE);
}

/* A free pooled buffer (the lowest, so few slots are ever touched), or NULL when all are busy. */
static slot_t *take_slot(mount_t *m) {
  for (int i = 0; i < SLOTS; i++) {
    if (m->slots[i].mem && !m->slots[i].busy) {
      m->slots[i].busy = true;
      return &m->slots[i];
    }
  }
  return NULL;
}

/* Give `r` a buffer of `size` bytes: a pooled one when free, else its own. */
static bool buffer_for(req_t *r, size_t size) {
  r->len = size;
  if (size <= SLOT_SIZE && (r->slot = take_slot(r->m))) return true;
  r->data = malloc(size ? size : 1);
  return r->data != NULL;
}

static void ll_read(fuse_req_t fr, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  req_t *r = about_open(fr, ino, fi);
  if (!r) return;
  if (!buffer_for(r, size)) { answer(r, -ENOMEM); return; }
  r->n[1] = (double)off;
  ask(r, OP_READ, K_READ);
}

static void ll_write(fuse_req_t fr, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  req_t *r = about_open(fr, ino, fi);
  if (!r) return;
  /* libfuse's buffer takes the next request as soon as this returns: the bytes are copied. */
  if (!buffer_for(r, size)) { answer(r, -ENOMEM); return; }
  memcpy(r->slot ? r->slot->mem : r->data, buf, size);
  r->n[1] = (double)off;
  /* 1: the kernel writing back its page cache (a shared memory map), through whichever handle it picked. */
  r->n[2] = fi->writepage ? 1 : 0;
  ask(r, OP_WRITE, K_WRITE);
}

/* A flush, fsync or release of an open file: it counts as under way on it meanwhile (parked_t). NULL when answered. */
static req_t *closing(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  req_t *r = about_open(fr, ino, fi);
  if (r) pend(r);
  return r;
}

static void ll_flush(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  req_t *r = closing(fr, ino, fi);
  if (r) ask(r, OP_FLUSH, K_ERR);
}

static void ll_release(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  req_t *r = closing(fr, ino, fi);
  if (r) ask(r, OP_RELEASE, K_RELEASE);
}

static void ll_fsync(fuse_req_t fr, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  req_t *r = closing(fr, ino, fi);
  if (!r) return;
  r->n[1] = datasync;
  ask(r, OP_FSYNC, K_ERR);
}

static void ll_opendir(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)ino;
  dir_t *d = calloc(1, sizeof *d);
  if (!d) { fuse_reply_err(fr, ENOMEM); return; }
  fi->fh = (uint64_t)(uintptr_t)d;
  if (fuse_reply_open(fr, fi) == -ENOENT) free(d);
}

/*
 * A listing: JS lists the directory at offset 0 (a new listing, or rewinddir), and the kernel's
 * following requests, each one buffer's worth from an offset (entry i is at offset i + 1), are
 * answered from that listing, so a large directory is not listed once per buffer. With READDIRPLUS
 * each entry carries the attributes JS gave, as a lookup would: `ls -l`, `find` and file managers
 * then stat from the kernel's cache instead of asking once per entry.
 */
static void list_dir(fuse_req_t fr, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi, bool plus) {
  dir_t *d = (dir_t *)(uintptr_t)fi->fh;
  if (off != 0 && d->loaded) {
    answer_listing(MOUNT_OF(fr), fr, ino, d, size, off, plus);
    return;
  }
  req_t *r = about(fr, ino, NULL);
  if (!r) return;
  r->fi = *fi;
  r->size = size;
  r->off = off;
  r->plus = plus;
  r->edits = MOUNT_OF(fr)->edits;
  ask(r, OP_READDIR, K_READDIR);
}

static void ll_readdir(fuse_req_t fr, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  list_dir(fr, ino, size, off, fi, false);
}

static void ll_readdirplus(fuse_req_t fr, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  list_dir(fr, ino, size, off, fi, true);
}

static void ll_releasedir(fuse_req_t fr, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)ino;
  dir_t *d = (dir_t *)(uintptr_t)fi->fh;
  if (d) {
    free_listing(d->names, d->stats, d->count);
    free(d);
  }
  fuse_reply_err(fr, 0);
}

/* A directory's fsync (editors after renaming over a file) makes its entries' changes durable. */
static void ll_fsyncdir(fuse_req_t fr, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  (void)fi;
  req_t *r = about(fr, ino, NULL);
  if (!r) return;
  r->n[1] = datasync;
  ask(r, OP_FSYNCDIR, K_ERR);
}

static void ll_statfs(fuse_req_t fr, fuse_ino_t ino) {
  req_t *r = about(fr, ino, NULL);
  if (r) ask(r, OP_STATFS, K_STATFS);
}

/*
 * copy_file_range(2) between two files of the mount (`cp` uses it): JS copies inside the daemon,
 * so the bytes never travel to the program and back. JS may copy less than asked (the caller
 * repeats); 0 at the end of the source.
 */
static void ll_copy_file_range(fuse_req_t fr, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
                               fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len, int flags) {
  if (flags) { fuse_reply_err(fr, EINVAL); return; }
  req_t *r = about_open(fr, ino_in, fi_in);
  if (!r) return;
  node_t *out = by_ino(r->m, ino_out);
  r->path2 = out ? path_of(r->m, out, NULL) : NULL;
  r->n[1] = (double)off_in;
  r->n[2] = (double)fi_out->fh;
  r->n[3] = (double)off_out;
  r->len = len > ((size_t)1 << 50) ? ((size_t)1 << 50) : len; /* exact as a double */
  ask(r, OP_COPY_FILE_RANGE, K_WRITE);
}

/* SEEK_DATA and SEEK_HOLE (the kernel answers the other kinds itself): JS answers the offset. */
static void ll_lseek(fuse_req_t fr, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi) {
  req_t *r = about_open(fr, ino, fi);
  if (!r) return;
  r->n[1] = (double)off;
  r->n[2] = whence;
  ask(r, OP_LSEEK, K_LSEEK);
}

/* fallocate(2) on an open file: JS gets the handle, offset, length and mode (FALLOC_FL_*). */
static void ll_fallocate(fuse_req_t fr, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi) {
  req_t *r = about_open(fr, ino, fi);
  if (!r) return;
  r->n[1] = (double)off;
  r->n[2] = (double)len;
  r->n[3] = mode;
  ask(r, OP_FALLOCATE, K_FALLOCATE);
}

static void call_event(mount_t *m, int ev);

static void ll_init(void *userdata, struct fuse_conn_info *conn) {
  mount_t *m = userdata;
  conn->max_write = 1 << 20;
  /*
   * Behave as libfuse 2 did where the file system relies on it: O_TRUNC comes as a truncate after
   * open, directory operations are serialised by the kernel, and the page cache is kept or dropped
   * by auto_cache alone. READDIRPLUS on every readdir request, not only the first of a listing
   * (the kernel's adaptive mode): `find` reads a whole directory before it stats its entries.
   */
  conn->want &= ~(FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_AUTO_INVAL_DATA |
                  FUSE_CAP_READDIRPLUS_AUTO);
  call_event(m, EV_INIT);
}

static const struct fuse_lowlevel_ops ll_ops = {
  .init = ll_init,
  .lookup = ll_lookup,
  .forget = ll_forget,
  .forget_multi = ll_forget_multi,
  .getattr = ll_getattr,
  .setattr = ll_setattr,
  .readlink = ll_readlink,
  .mknod = ll_mknod,
  .mkdir = ll_mkdir,
  .unlink = ll_unlink,
  .rmdir = ll_rmdir,
  .symlink = ll_symlink,
  .rename = ll_rename,
  .link = ll_link,
  .open = ll_open,
  .read = ll_read,
  .write = ll_write,
  .flush = ll_flush,
  .release = ll_release,
  .fsync = ll_fsync,
  .opendir = ll_opendir,
  .readdir = ll_readdir,
  .readdirplus = ll_readdirplus,
  .releasedir = ll_releasedir,
  .fsyncdir = ll_fsyncdir,
  .statfs = ll_statfs,
  .create = ll_create,
  .copy_file_range = ll_copy_file_range,
  .lseek = ll_lseek,
  .fallocate = ll_fallocate,
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

/* events(ev), on the JS thread (inside a callback scope: the caller's, or one opened here). */
static void call_event(mount_t *m, int ev) {
  napi_env env = m->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value fn, undefined;
  napi_get_undefined(env, &undefined);
  if (napi_get_reference_value(env, m->events, &fn) == napi_ok && fn) {
    napi_value argv[1] = { num(env, ev) };
    if (napi_call_function(env, undefined, fn, 1, argv, NULL) != napi_ok) clear_exception(env);
  }
  napi_close_handle_scope(env, scope);
}

/* Run `fn(m)` inside a callback scope, so promise jobs and nextTicks run once it is through. */
static void in_scope(mount_t *m, void (*fn)(mount_t *m)) {
  napi_env env = m->env;
  napi_handle_scope scope;
  napi_callback_scope cb_scope;
  napi_value resource;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  bool opened = napi_get_reference_value(env, m->resource, &resource) == napi_ok &&
                napi_open_callback_scope(env, resource, m->actx, &cb_scope) == napi_ok;
  fn(m);
  if (opened) napi_close_callback_scope(env, cb_scope);
  napi_close_handle_scope(env, scope);
}

static void on_closed(uv_handle_t *handle);
static void env_cleanup(void *arg);

static void close_handle(mount_t *m, uv_handle_t *h, bool *open) {
  if (!*open) return;
  *open = false;
  uv_close(h, on_closed);
}

/* The connection is over: answer what waits, close the session, tell JS (events(2)), close the handles. */
static void end_session(mount_t *m) {
  if (m->ended) return;
  m->ended = true;
  close_handle(m, (uv_handle_t *)&m->poll, &m->poll_open);
  close_handle(m, (uv_handle_t *)&m->timer, &m->timer_open);
  close_handle(m, (uv_handle_t *)&m->check, &m->check_open);
  for (req_t *r = m->first, *next; r; r = next) {
    next = r->next;
    fuse_reply_err(r->fr, EIO); /* into a closed connection: frees libfuse's request */
    let_go(r);
  }
  run_parked(m); /* m->ended: each answered EIO */
  fuse_session_unmount(m->se);
  fuse_session_destroy(m->se);
  m->se = NULL;
  free(m->buf.mem);
  m->buf.mem = NULL;
  call_event(m, EV_EXIT);
  pthread_mutex_lock(&m->lock);
  m->closed = 1;
  pthread_mutex_unlock(&m->lock);
  close_handle(m, (uv_handle_t *)&m->async, &m->async_open);
}

/*
 * What held_t needs of the kernel's protocol (<linux/fuse.h>, whose layout does not change): the
 * header every request starts with, and the codes of the requests that name nodes by path.
 */
struct in_header {
  uint32_t len, opcode;
  uint64_t unique, nodeid;
  uint32_t uid, gid, pid;
  uint16_t total_extlen, padding;
};
enum {
  FUSE_LOOKUP_ = 1, FUSE_GETATTR_ = 3, FUSE_SETATTR_ = 4, FUSE_READLINK_ = 5, FUSE_SYMLINK_ = 6,
  FUSE_MKNOD_ = 8, FUSE_MKDIR_ = 9, FUSE_UNLINK_ = 10, FUSE_RMDIR_ = 11, FUSE_RENAME_ = 12, FUSE_LINK_ = 13,
  FUSE_OPEN_ = 14, FUSE_RELEASE_ = 18, FUSE_FSYNC_ = 20, FUSE_FLUSH_ = 25, FUSE_READDIR_ = 28,
  FUSE_CREATE_ = 35, FUSE_READDIRPLUS_ = 44, FUSE_RENAME2_ = 45,
};

/* Whether node `ino`, or a directory above it, is being unlinked or renamed, or such a request waits for it. */
static bool changing_at(mount_t *m, fuse_ino_t ino) {
  for (node_t *n = by_ino(m, ino); n; n = n->parent) {
    if (n->changing > 0 || n->waiting > 0) return true;
  }
  return false;
}

/* Whether the request in `mem` must wait for an unlink or rename (held_t). */
static bool must_wait(mount_t *m, const char *mem, size_t size) {
  if (m->changes == 0 || size < sizeof(struct in_header)) return false;
  const struct in_header *in = (const struct in_header *)mem;
  /* The second node a rename (its new directory) or a link (the file linked) names: the first field after the header. */
  uint64_t other = 0;
  switch (in->opcode) {
    case FUSE_RENAME_: case FUSE_RENAME2_: case FUSE_LINK_:
      if (size >= sizeof *in + sizeof other) memcpy(&other, mem + sizeof *in, sizeof other);
      break;
    case FUSE_LOOKUP_: case FUSE_GETATTR_: case FUSE_SETATTR_: case FUSE_READLINK_: case FUSE_SYMLINK_:
    case FUSE_MKNOD_: case FUSE_MKDIR_: case FUSE_UNLINK_: case FUSE_RMDIR_: case FUSE_OPEN_: case FUSE_RELEASE_:
    case FUSE_FSYNC_: case FUSE_FLUSH_: case FUSE_READDIR_: case FUSE_CREATE_: case FUSE_READDIRPLUS_:
      break;
    default:
      return false; /* reads, writes, forgets, ... */
  }
  return changing_at(m, in->nodeid) || (other && changing_at(m, other));
}

/*
 * Process a request: `buf`, just read into libfuse's buffer, or `h`, held. It is held (again) while
 * it must wait; when it is processed, `h` is freed (libfuse keeps nothing of a request's memory).
 */
static void take(mount_t *m, held_t *h, const struct fuse_buf *buf) {
  const char *mem = h ? h->mem : buf->mem;
  size_t size = h ? h->size : buf->size;
  if (must_wait(m, mem, size)) {
    if (!h && (h = malloc(sizeof *h + size))) {
      h->size = size;
      memcpy(h->mem, mem, size);
    }
    if (h) {
      h->next = NULL;
      if (m->held_last) m->held_last->next = h; else m->held_first = h;
      m->held_last = h;
      return;
    }
    /* Out of memory: served now, as before there was waiting. */
  }
  if (h) {
    struct fuse_buf copy = { .size = h->size, .mem = h->mem };
    fuse_session_process_buf(m->se, &copy);
    free(h);
  } else {
    fuse_session_process_buf(m->se, buf);
  }
}

/* Read and process what the kernel sent, up to BATCH requests. */
static void serve(mount_t *m) {
  for (int i = 0; i < BATCH && !m->ended; i++) {
    int res = fuse_session_receive_buf(m->se, &m->buf);
    if (res == -EAGAIN) return;
    if (res == -EINTR) continue;
    if (res <= 0) {
      /* 0: unmounted (ENODEV); below: the connection failed. */
      end_session(m);
      return;
    }
    struct fuse_buf got = m->buf;
    got.size = (size_t)res;
    take(m, NULL, &got);
    m->served = true;
    if (fuse_session_exited(m->se)) end_session(m);
  }
}

static void on_readable(uv_poll_t *handle, int status, int events) {
  (void)events;
  mount_t *m = handle->data;
  if (status < 0) {
    in_scope(m, end_session);
    return;
  }
  in_scope(m, serve);
}

/* Requests JS has not answered within the mount's timeout: ETIMEDOUT (JS's late answer is dropped). */
static void on_timer(uv_timer_t *handle) {
  mount_t *m = handle->data;
  uint64_t now = now_ms();
  bool released = false;
  while (m->first && m->first->deadline <= now) {
    req_t *r = m->first;
    fuse_reply_err(r->fr, ETIMEDOUT);
    let_go(r);
    /* An open or release the kernel gave up on keeps nothing waiting any more, and neither does
     * an unlink or rename: the requests held behind it run now instead of waiting, past their own
     * timeout and beyond SIGKILL's reach, for JS's late answer to it. */
    released |= settle(r);
    released |= unchange(r);
  }
  if (released && (m->parked_first || m->held_first)) in_scope(m, run_parked);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * Once the loop's turn has served requests (their answers are out: the callback scope closed and
 * ran the promise jobs), keep watching /dev/fuse for up to spin_ns before the loop goes to sleep,
 * and serve what comes. A program working through many files sends its next request within
 * microseconds of an answer; caught here, it costs no wake-up of a sleeping thread, which on this
 * VM is most of a small request's round trip (a tree of 2,480 files read in 154–165 ms instead of
 * 315–318). The wait restarts after each request served, up to SPIN_TURN_MAX_NS in all, so timers
 * and other I/O wait no longer than that; an idle mount does not spin at all.
 */
static void on_check(uv_check_t *handle) {
  mount_t *m = handle->data;
  if (!m->served || m->ended || m->spin_ns == 0) return;
  m->served = false;
  struct pollfd pfd = { .fd = fuse_session_fd(m->se), .events = POLLIN };
  uint64_t start = now_ns(), now = start, until = start + m->spin_ns;
  while (now < until && now - start < SPIN_TURN_MAX_NS) {
    if (poll(&pfd, 1, 0) == 1) {
      in_scope(m, serve);
      if (m->ended) return;
      m->served = false;
      now = now_ns();
      until = now + m->spin_ns;
      continue;
    }
    now = now_ns();
  }
}

static void tell_detached(mount_t *m) { call_event(m, EV_DETACHED); }

/* The detach thread is done. */
static void on_async(uv_async_t *handle) {
  mount_t *m = handle->data;
  pthread_mutex_lock(&m->lock);
  bool detached = m->detached;
  m->detached = 0;
  pthread_mutex_unlock(&m->lock);
  if (!detached) return;
  /* What is still open in the mount must not keep the process alive. */
  if (m->poll_open) uv_unref((uv_handle_t *)&m->poll);
  if (m->async_open) uv_unref((uv_handle_t *)&m->async);
  in_scope(m, tell_detached);
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

/* JS's answer's values, by the operation asked; the code it leads to (-EIO for a malformed answer). */
static int take_answer(napi_env env, req_t *r, int c, size_t argc, napi_value *argv) {
  napi_valuetype t = napi_undefined;
  if (argc > 2) napi_typeof(env, argv[2], &t);
  if (c < 0) return c;
  switch (r->op) {
    case OP_GETATTR: {
      const double *v = t == napi_object ? packed_stats(env, argv[2], 1) : NULL;
      if (!v) return -EIO;
      fill_stat(v, &r->st);
      return c;
    }
    case OP_STATFS: {
      if (t != napi_object) return -EIO;
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
      return c;
    }
    case OP_OPEN:
    case OP_CREATE:
    case OP_LSEEK: {
      /* A handle's number, or lseek's offset. */
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
      return c;
    }
    case OP_READLINK:
      if (t != napi_string) return -EIO;
      free(r->text);
      r->text = dup_string(env, argv[2]);
      return r->text ? c : -ENOMEM;
    case OP_READDIR: {
      bool is_array = false;
      if (t == napi_object) napi_is_array(env, argv[2], &is_array);
      if (!is_array) return -EIO;
      uint32_t n;
      napi_get_array_length(env, argv[2], &n);
      /* The entries' attributes, packed (all of them or none). */
      const double *stats = argc > 3 ? packed_stats(env, argv[3], n) : NULL;
      r->names = calloc(n ? n : 1, sizeof *r->names);
      if (stats) r->stats = calloc(n ? n : 1, sizeof *r->stats);
      if (!r->names || (stats && !r->stats)) return -ENOMEM;
      for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        napi_get_element(env, argv[2], i, &v);
        r->names[i] = dup_string(env, v);
        if (!r->names[i]) return -EIO;
        r->count = i + 1;
        if (stats) fill_stat(stats + (size_t)i * STAT_FIELDS, &r->stats[i]);
      }
      return c;
    }
    default:
      return c;
  }
}

/* reply(req, code, value?, extra?): JS's answer to the operation last asked; what follows runs now. */
static napi_value js_reply(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  req_t *r;
  if (argc < 2 || napi_get_value_external(env, argv[0], (void **)&r) != napi_ok) {
    napi_throw_type_error(env, NULL, "reply(req, code, value?)");
    return NULL;
  }
  if (!r->js_pending) return NULL; /* answered twice: the first answer stands */
  r->js_pending = false;
  double code;
  /* Not a number, or not an int (NaN and infinities included): a JS bug, answered as EIO. */
  if (napi_get_value_double(env, argv[1], &code) != napi_ok || !(code >= -2147483647.0 && code <= 2147483647.0)) code = -EIO;
  int c = take_answer(env, r, (int)code, argc, argv);
  r->busy++;
  advance(r, c);
  r->busy--;
  if (r->dead && r->busy == 0) req_free(r);
  return NULL;
}

static void mount_unref(mount_t *m) {
  if (atomic_fetch_sub(&m->refs, 1) != 1) return;
  for (int i = 0; i < SLOTS; i++) free(m->slots[i].mem);
  if (m->by_ino.buckets) {
    for (size_t i = 0; i < m->by_ino.size; i++) {
      for (node_t *n = m->by_ino.buckets[i], *next; n; n = next) {
        next = n->ino_next;
        free(n->name);
        free(n);
      }
    }
  }
  free(m->by_ino.buckets);
  free(m->by_name.buckets);
  pthread_mutex_destroy(&m->lock);
  free(m->dir);
  free(m);
}

/* A handle is closed; with the last, let go of what JS held for the mount. */
static void on_closed(uv_handle_t *handle) {
  mount_t *m = handle->data;
  if (--m->open_handles > 0) return;
  if (m->env_gone) {
    /* The environment is going (its references go with it), or the mount was never made. */
    mount_unref(m);
    return;
  }
  napi_env env = m->env;
  napi_remove_env_cleanup_hook(env, env_cleanup, m);
  for (int i = 0; i < SLOTS; i++) {
    if (m->slots[i].ref) napi_delete_reference(env, m->slots[i].ref);
    m->slots[i].ref = NULL;
  }
  napi_delete_reference(env, m->dispatch);
  napi_delete_reference(env, m->events);
  napi_delete_reference(env, m->resource);
  napi_async_destroy(env, m->actx);
  mount_unref(m);
}

/* The JS handle was collected. */
static void mount_finalize(napi_env env, void *data, void *hint) {
  (void)env; (void)hint;
  mount_unref(data);
}

/*
 * Node is tearing the environment down (the process exits, perhaps with the mount alive): nothing
 * may call JS or signal the handles any more; the mount stays allocated (a reference never given
 * back), the kernel ends the connection when the process is gone.
 */
static void env_cleanup(void *arg) {
  mount_t *m = arg;
  pthread_mutex_lock(&m->lock);
  m->env_gone = 1;
  m->closed = 1;
  pthread_mutex_unlock(&m->lock);
  atomic_fetch_add(&m->refs, 1);
  close_handle(m, (uv_handle_t *)&m->poll, &m->poll_open);
  close_handle(m, (uv_handle_t *)&m->timer, &m->timer_open);
  close_handle(m, (uv_handle_t *)&m->check, &m->check_open);
  close_handle(m, (uv_handle_t *)&m->async, &m->async_open);
}

/* Whether handle `h` was made (`rc`: its init's answer); if so it belongs to `m` and is closed with it. */
static bool made(mount_t *m, uv_handle_t *h, bool *open, int rc) {
  if (rc != 0) return false;
  *open = true;
  h->data = m;
  return true;
}

/*
 * mount(dir, args: string[], cacheSeconds, timeoutMs, dispatch, events, spinMicros?) → handle.
 * Mounts synchronously and serves on this (the JS) thread from then on; `events(1)` once the
 * kernel's INIT is answered, `events(2)` once the connection has ended. `spinMicros`: how long the
 * thread watches for the next request after serving one (on_check; 0 or missing: not at all).
 */
static napi_value js_mount(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  uint32_t nargs = 0;
  double cache_seconds, timeout, spin_us = 0;
  napi_valuetype fn1, fn2;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6 || napi_get_array_length(env, argv[1], &nargs) != napi_ok ||
      napi_get_value_double(env, argv[2], &cache_seconds) != napi_ok ||
      napi_get_value_double(env, argv[3], &timeout) != napi_ok ||
      napi_typeof(env, argv[4], &fn1) != napi_ok || fn1 != napi_function ||
      napi_typeof(env, argv[5], &fn2) != napi_ok || fn2 != napi_function) {
    napi_throw_type_error(env, NULL, "mount(dir, args, cacheSeconds, timeoutMs, dispatch, events, spinMicros?)");
    return NULL;
  }
  if (argc > 6 && napi_get_value_double(env, argv[6], &spin_us) != napi_ok) spin_us = 0;
  mount_t *m = calloc(1, sizeof *m);
  char **args = calloc(nargs + 2, sizeof *args);
  node_t *root = calloc(1, sizeof *root);
  if (m) m->dir = dup_string(env, argv[0]);
  if (!m || !args || !root || !m->dir || !table_init(&m->by_ino) || !table_init(&m->by_name)) {
    if (m) {
      free(m->dir);
      free(m->by_ino.buckets);
      free(m->by_name.buckets);
    }
    free(m);
    free(args);
    free(root);
    napi_throw_error(env, "ENOMEM", "out of memory");
    return NULL;
  }
  m->cache_seconds = cache_seconds;
  m->timeout_ms = (int)timeout;
  m->spin_ns = spin_us > 0 ? (uint64_t)(spin_us * 1000) : 0;
  m->env = env;
  pthread_mutex_init(&m->lock, NULL);
  root->ino = FUSE_ROOT_ID;
  root->nlookup = 1;
  m->root = root;
  ino_insert(m, root);
  m->next_ino = FUSE_ROOT_ID + 1;
  atomic_init(&m->refs, 1); /* the JS handle, once made; freed through mount_unref from here on */
  args[0] = strdup("svc");
  for (uint32_t i = 0; i < nargs; i++) {
    napi_value v;
    if (napi_get_element(env, argv[1], i, &v) == napi_ok) args[i + 1] = dup_string(env, v);
  }
  struct fuse_args fargs = FUSE_ARGS_INIT((int)nargs + 1, args);
  m->se = fuse_session_new(&fargs, &ll_ops, sizeof ll_ops, m);
  fuse_opt_free_args(&fargs);
  for (uint32_t i = 0; i <= nargs; i++) free(args[i]);
  free(args);
  if (!m->se) {
    mount_unref(m);
    napi_throw_error(env, "EINVAL", "libfuse refused the mount options");
    return NULL;
  }
  if (fuse_session_mount(m->se, m->dir) != 0) {
    fuse_session_destroy(m->se);
    mount_unref(m);
    napi_throw_error(env, "EMOUNT", "libfuse could not mount (is /dev/fuse usable and fusermount3 installed?)");
    return NULL;
  }
  int fd = fuse_session_fd(m->se);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  for (int i = 0; i < SLOTS; i++) {
    napi_value buf;
    char *mem = malloc(SLOT_SIZE); /* untouched pages cost no memory until a request uses them */
    /* A slot that cannot be made is left out: its requests get buffers of their own. */
    if (!mem) break;
    if (napi_create_external_buffer(env, SLOT_SIZE, mem, NULL, NULL, &buf) != napi_ok ||
        napi_create_reference(env, buf, 1, &m->slots[i].ref) != napi_ok) {
      free(mem);
      break;
    }
    m->slots[i].mem = mem;
  }
  uv_loop_t *loop = NULL;
  napi_value resource, name = str(env, "svc-fuse3");
  bool ready = napi_create_reference(env, argv[4], 1, &m->dispatch) == napi_ok &&
               napi_create_reference(env, argv[5], 1, &m->events) == napi_ok &&
               napi_create_object(env, &resource) == napi_ok &&
               napi_create_reference(env, resource, 1, &m->resource) == napi_ok &&
               napi_async_init(env, resource, name, &m->actx) == napi_ok &&
               napi_get_uv_event_loop(env, &loop) == napi_ok &&
               made(m, (uv_handle_t *)&m->poll, &m->poll_open, uv_poll_init(loop, &m->poll, fd)) &&
               made(m, (uv_handle_t *)&m->timer, &m->timer_open, uv_timer_init(loop, &m->timer)) &&
               made(m, (uv_handle_t *)&m->async, &m->async_open, uv_async_init(loop, &m->async, on_async)) &&
               made(m, (uv_handle_t *)&m->check, &m->check_open, uv_check_init(loop, &m->check));
  napi_value handle;
  if (ready) ready = napi_create_external(env, m, mount_finalize, NULL, &handle) == napi_ok;
  if (!ready) {
    fuse_session_unmount(m->se);
    fuse_session_destroy(m->se);
    m->se = NULL;
    for (int i = 0; i < SLOTS; i++) if (m->slots[i].ref) napi_delete_reference(env, m->slots[i].ref);
    if (m->dispatch) napi_delete_reference(env, m->dispatch);
    if (m->events) napi_delete_reference(env, m->events);
    if (m->resource) napi_delete_reference(env, m->resource);
    if (m->actx) napi_async_destroy(env, m->actx);
    /* The handles made are closed, holding a reference until then (env_gone: no JS side left). */
    m->env_gone = 1;
    m->open_handles = (int)m->poll_open + (int)m->timer_open + (int)m->async_open + (int)m->check_open;
    if (m->open_handles > 0) atomic_fetch_add(&m->refs, 1);
    close_handle(m, (uv_handle_t *)&m->poll, &m->poll_open);
    close_handle(m, (uv_handle_t *)&m->timer, &m->timer_open);
    close_handle(m, (uv_handle_t *)&m->check, &m->check_open);
    close_handle(m, (uv_handle_t *)&m->async, &m->async_open);
    mount_unref(m);
    napi_throw_error(env, "EAGAIN", "cannot set up the mount on the JS thread");
    return NULL;
  }
  /* The JS handle (already counted) and the handles until closed. */
  atomic_fetch_add(&m->refs, 1);
  m->open_handles = 4;
  uv_poll_start(&m->poll, UV_READABLE, on_readable);
  uv_check_start(&m->check, on_check);
  uv_unref((uv_handle_t *)&m->check);
  uv_unref((uv_handle_t *)&m->timer); /* timeouts alone keep nothing alive */
  if (m->timeout_ms > 0) {
    uint64_t every = (uint64_t)m->timeout_ms / 4;
    if (every < 10) every = 10;
    if (every > 1000) every = 1000;
    uv_timer_start(&m->timer, on_timer, every, every);
  }
  uv_unref((uv_handle_t *)&m->async); /* the poll handle keeps the process alive while mounted */
  /* Without the hook a process exiting with the mount alive could crash on the way out. */
  napi_add_env_cleanup_hook(env, env_cleanup, m);
  return handle;
}

/*
 * The mount handle a call gets as its first argument (its arguments, up to `n`, into `argv`; those
 * not passed are undefined); NULL, with a TypeError thrown, without one.
 */
static mount_t *mount_arg(napi_env env, napi_callback_info info, size_t n, napi_value *argv) {
  size_t argc = n;
  mount_t *m = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_external(env, argv[0], (void **)&m) != napi_ok || !m) {
    napi_throw_type_error(env, NULL, "the first argument must be a mount handle");
    return NULL;
  }
  return m;
}

/* fd(handle): the connection's /dev/fuse descriptor, for kernel notifications; -1 once closed. */
static napi_value js_fd(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  mount_t *m = mount_arg(env, info, 1, argv);
  if (!m) return NULL;
  int fd = m->se && !m->ended ? fuse_session_fd(m->se) : -1;
  return num(env, fd);
}

/* nodes(handle): how many inodes the node table holds (the root, the kernel's, their parents). */
static napi_value js_nodes(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  mount_t *m = mount_arg(env, info, 1, argv);
  if (!m) return NULL;
  return num(env, (double)m->by_ino.count);
}

/*
 * The arguments of a (handle, path) call: its mount, and the node the table holds at the path
 * (NULL for none). False, with a JS TypeError naming `usage` thrown, when they are not those.
 */
static bool node_args(napi_env env, napi_callback_info info, const char *usage, mount_t **m, node_t **n) {
  napi_value argv[2];
  *m = mount_arg(env, info, 2, argv);
  if (!*m) return false;
  char *path = dup_string(env, argv[1]);
  if (!path) {
    napi_throw_type_error(env, NULL, usage);
    return false;
  }
  *n = node_at(*m, path);
  free(path);
  return true;
}

/*
 * nodeOf(handle, path) → the node id the kernel knows `path` by, from the node table, or 0 when it
 * holds nothing there (so a notification for it would have nothing to drop).
 */
static napi_value js_node_of(napi_env env, napi_callback_info info) {
  mount_t *m;
  node_t *n;
  if (!node_args(env, info, "nodeOf(handle, path)", &m, &n)) return NULL;
  /* Asked for each path another face changed: listings taken before it are stale. */
  m->edits++;
  return num(env, n ? (double)n->ino : 0);
}

/* Another face removed or replaced open node `n`: hidden at the root (its last close unlinks it); its hidden name, or NULL when not open. */
static char *hide_open(mount_t *m, node_t *n) {
  if (n->open_count == 0 || n->hidden) return NULL;
  char *hidden = hidden_name(m, n->ino);
  if (!hidden) return NULL;
  node_move(m, n, m->root, hidden);
  n->hidden = true;
  return hidden;
}

/* "/<hidden>" as a JS string ("" for none); frees `hidden`. */
static napi_value hidden_path(napi_env env, char *hidden) {
  napi_value out = str(env, "");
  if (hidden) {
    char *path = NULL;
    if (asprintf(&path, "/%s", hidden) >= 0) {
      out = str(env, path);
      free(path);
    }
    free(hidden);
  }
  return out;
}

/*
 * renamed(handle, from, to): another face renamed `from` to `to` (a file or a directory, replacing
 * what was at `to`), and the table follows as for a rename through the mount, so that what the
 * kernel holds below `from` (open files, their descriptors) keeps working under the new path:
 * - the node at `to`, if the kernel holds one, no longer names it (a lookup of `to` makes a new
 *   inode, whose pages are the renamed file's). Open, it is hidden as an unlink through the mount
 *   hides it: renamed to a hidden name in the root, kept for its descriptors, unlinked at its last
 *   close. Otherwise it is unlinked from the table.
 * - the node at `from`, if any, moves to `to`; the directories leading to `to` that the kernel
 *   holds nothing of are made in the table (kept by their children, as for any held node).
 * Returns the open file's hidden path ("/.fuse_hidden…") when one was hidden, else "".
 */
static napi_value js_renamed(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  mount_t *m = mount_arg(env, info, 3, argv);
  if (!m) return NULL;
  char *from = dup_string(env, argv[1]);
  char *to = dup_string(env, argv[2]);
  char *last = to ? strrchr(to, '/') : NULL;
  if (!from || !last || last[1] == '\0') {
    free(from);
    free(to);
    napi_throw_type_error(env, NULL, "renamed(handle, from, to)");
    return NULL;
  }
  node_t *src = node_at(m, from);
  free(from);
  char *names = strdup(to);
  node_t *dst = names ? node_at(m, names) : NULL;
  free(names);
  char *hidden = NULL;
  if (dst && dst != src && dst != m->root && !(hidden = hide_open(m, dst))) node_unlink(m, dst);
  if (src && src != m->root) {
    /* The directories leading to `to`; a name made here with nothing below it is let go again. */
    *last = '\0';
    node_t *p = m->root;
    char *save = NULL;
    for (char *part = strtok_r(to, "/", &save); part && p; part = strtok_r(NULL, "/", &save)) {
      node_t *next = node_get(m, p, part);
      if (!next) node_release(m, p);
      p = next;
    }
    if (p) node_move(m, src, p, last + 1);
  }
  free(to);
  return hidden_path(env, hidden);
}

/*
 * removed(handle, path): another face removed the file at `path` (JS knows it is open here). An
 * open node is hidden, as an unlink through the mount hides it: its descriptors go on under the
 * hidden path it returns, and its last close unlinks that name. "" when nothing is open there.
 */
static napi_value js_removed(napi_env env, napi_callback_info info) {
  mount_t *m;
  node_t *n;
  if (!node_args(env, info, "removed(handle, path)", &m, &n)) return NULL;
  return hidden_path(env, n && n != m->root ? hide_open(m, n) : NULL);
}

/* Signals are Node's to take, on its own thread: none on the detach thread (nor its children). */
static void block_signals(void) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
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
   * Detach lazily, without closing the connection: the kernel ends it (ENODEV on the next read)
   * once nothing in the mount is open any more, and end_session closes what is left. Open files
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
  mount_t *m = d->m;
  pthread_mutex_lock(&m->lock);
  if (!m->closed && !m->env_gone) {
    m->detached = 1;
    uv_async_send(&m->async);
  }
  pthread_mutex_unlock(&m->lock);
  mount_unref(m); /* this thread's reference */
  free(d->dir);
  free(d);
  return NULL;
}

/*
 * unmount(handle) → true when a detach was started (events(3) follows once done, unless the
 * connection's end, events(2), comes first), false when the mount has ended already. The detach
 * runs on a thread of its own: it may need this mount answered.
 */
static napi_value js_unmount(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  napi_value result;
  mount_t *m = mount_arg(env, info, 1, argv);
  if (!m) return NULL;
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

/*
 * dropCached(fd, offset, length) → a promise of 0 or an errno: posix_fadvise(POSIX_FADV_DONTNEED)
 * on libuv's thread pool (dropping a few hundred MiB of pages takes the kernel about 10 ms). Not
 * FUSE's: the store's drop-behind (src/store/lmdb) uses it for the part of its data file that bulk
 * writes appended, whose pages nobody reads back soon and which cost fresh memory to keep.
 */
typedef struct drop_s {
  napi_async_work work;
  napi_deferred deferred;
  int fd;
  off_t offset, length;
  int result;
} drop_t;

static void drop_execute(napi_env env, void *data) {
  drop_t *d = data;
  d->result = posix_fadvise(d->fd, d->offset, d->length, POSIX_FADV_DONTNEED);
}

static void drop_complete(napi_env env, napi_status status, void *data) {
  drop_t *d = data;
  napi_value v;
  napi_create_int32(env, status == napi_ok ? d->result : ECANCELED, &v);
  napi_resolve_deferred(env, d->deferred, v);
  napi_delete_async_work(env, d->work);
  free(d);
}

static napi_value js_drop_cached(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  double v[3];
  for (size_t i = 0; i < 3; i++) {
    if (i >= argc || napi_get_value_double(env, argv[i], &v[i]) != napi_ok || v[i] < 0) {
      napi_throw_type_error(env, NULL, "dropCached(fd, offset, length): three numbers, none negative");
      return NULL;
    }
  }
  drop_t *d = calloc(1, sizeof *d);
  if (!d) {
    napi_throw_error(env, "ENOMEM", "out of memory");
    return NULL;
  }
  d->fd = (int)v[0];
  d->offset = (off_t)v[1];
  d->length = (off_t)v[2];
  napi_value promise, name;
  napi_create_promise(env, &d->deferred, &promise);
  napi_create_string_utf8(env, "svc:dropCached", NAPI_AUTO_LENGTH, &name);
  napi_status st = napi_create_async_work(env, NULL, name, drop_execute, drop_complete, d, &d->work);
  if (st == napi_ok) st = napi_queue_async_work(env, d->work);
  if (st != napi_ok) {
    if (d->work) napi_delete_async_work(env, d->work);
    napi_value err;
    napi_create_int32(env, EAGAIN, &err);
    napi_resolve_deferred(env, d->deferred, err);
    free(d);
  }
  return promise;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    { "mount", NULL, js_mount, NULL, NULL, NULL, napi_default, NULL },
    { "reply", NULL, js_reply, NULL, NULL, NULL, napi_default, NULL },
    { "fd", NULL, js_fd, NULL, NULL, NULL, napi_default, NULL },
    { "unmount", NULL, js_unmount, NULL, NULL, NULL, napi_default, NULL },
    { "nodes", NULL, js_nodes, NULL, NULL, NULL, napi_default, NULL },
    { "nodeOf", NULL, js_node_of, NULL, NULL, NULL, napi_default, NULL },
    { "renamed", NULL, js_renamed, NULL, NULL, NULL, napi_default, NULL },
    { "removed", NULL, js_removed, NULL, NULL, NULL, napi_default, NULL },
    { "dropCached", NULL, js_drop_cached, NULL, NULL, NULL, napi_default, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
