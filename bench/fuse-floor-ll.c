/*
 * bench/fuse-floor-ll.c: the kernel's floor for bench/fuse.ts. A bare in-memory file system on
 * libfuse 3's low-level API, in C, single-threaded (one request at a time, as both JS bindings hand
 * every request to the one JS thread; watching for the next request for 30 µs before sleeping, as
 * svc's libfuse 3 binding does), with what libfuse 3 offers and libfuse 2 does not:
 * 1 MiB writes (max_pages), inode numbers instead of paths, create answering with the new entry,
 * keep_cache on every open. Entries and attributes are cached for 0.5 s, as on the daemon's mount;
 * mounted with default_permissions. Whatever an operation costs here is the kernel's FUSE round
 * trips with the least server work any binding could give them: no JS, no hand-over between
 * threads, no store. bench/fuse.ts builds it with `cc` and pkg-config's fuse3 flags (the Debian
 * package libfuse3-dev) and shows it beside the binding floor (bench/fuse-floor.ts).
 *
 *   cc -O2 -o floor-ll bench/fuse-floor-ll.c $(pkg-config --cflags --libs fuse3)
 *   ./floor-ll MOUNTDIR      prints "ready" once mounted; SIGTERM or SIGINT unmounts and exits 0
 *
 * Not a general file system: no hard links, no extended attributes, contents held whole in memory,
 * an unlinked file's bytes are freed at once (open descriptors then read zeros).
 */
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_SECONDS 0.5
#define BUCKETS (1u << 16)

struct node {
  fuse_ino_t ino, parent;
  char *name;             /* NULL once unlinked */
  mode_t mode;
  uid_t uid;
  gid_t gid;
  struct timespec atime, mtime, ctime;
  char *data;             /* file bytes, or a symlink's target */
  size_t size, cap;
  unsigned children;      /* directories: entries in it */
  struct node *next;      /* hash chain by (parent, name) */
};

static struct node **table;   /* by inode number */
static size_t table_cap;
static fuse_ino_t next_ino = FUSE_ROOT_ID;
static struct node *buckets[BUCKETS];

static uint32_t hash(fuse_ino_t parent, const char *name) {
  uint32_t h = 2166136261u ^ (uint32_t)parent;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 16777619u;
  return h & (BUCKETS - 1);
}

static struct node *child(fuse_ino_t parent, const char *name) {
  for (struct node *n = buckets[hash(parent, name)]; n; n = n->next)
    if (n->parent == parent && strcmp(n->name, name) == 0) return n;
  return NULL;
}

static void link_name(struct node *n, fuse_ino_t parent, const char *name) {
  n->parent = parent;
  n->name = strdup(name);
  uint32_t b = hash(parent, name);
  n->next = buckets[b];
  buckets[b] = n;
  table[parent]->children++;
}

static void unlink_name(struct node *n) {
  struct node **p = &buckets[hash(n->parent, n->name)];
  while (*p != n) p = &(*p)->next;
  *p = n->next;
  table[n->parent]->children--;
  free(n->name);
  n->name = NULL;
}

static struct node *make(fuse_ino_t parent, const char *name, mode_t mode, const struct fuse_ctx *ctx) {
  if (next_ino >= table_cap) {
    table_cap = table_cap ? table_cap * 2 : 1024;
    table = realloc(table, table_cap * sizeof *table);
  }
  struct node *n = calloc(1, sizeof *n);
  n->ino = next_ino++;
  n->mode = mode;
  n->uid = ctx ? ctx->uid : getuid();
  n->gid = ctx ? ctx->gid : getgid();
  clock_gettime(CLOCK_REALTIME, &n->mtime);
  n->atime = n->ctime = n->mtime;
  table[n->ino] = n;
  if (name) link_name(n, parent, name);
  return n;
}

static void attr(struct node *n, struct stat *st) {
  memset(st, 0, sizeof *st);
  st->st_ino = n->ino;
  st->st_mode = n->mode;
  st->st_nlink = S_ISDIR(n->mode) ? 2 : 1;
  st->st_uid = n->uid;
  st->st_gid = n->gid;
  st->st_size = S_ISDIR(n->mode) ? 4096 : (off_t)n->size;
  st->st_blksize = 4096;
  st->st_blocks = (st->st_size + 511) / 512;
  st->st_atim = n->atime;
  st->st_mtim = n->mtime;
  st->st_ctim = n->ctime;
}

static void reply_entry(fuse_req_t req, struct node *n) {
  struct fuse_entry_param e;
  memset(&e, 0, sizeof e);
  e.ino = n->ino;
  e.attr_timeout = e.entry_timeout = CACHE_SECONDS;
  attr(n, &e.attr);
  fuse_reply_entry(req, &e);
}

static void touch(struct node *n) {
  clock_gettime(CLOCK_REALTIME, &n->mtime);
  n->ctime = n->mtime;
}

static void resize(struct node *n, size_t size) {
  if (size > n->cap) {
    size_t cap = n->cap ? n->cap : 4096;
    while (cap < size) cap *= 2;
    n->data = realloc(n->data, cap);
    n->cap = cap;
  }
  if (size > n->size) memset(n->data + n->size, 0, size - n->size);
  n->size = size;
}

static void op_init(void *userdata, struct fuse_conn_info *conn) {
  (void)userdata;
  conn->max_write = 1 << 20;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  struct node *n = child(parent, name);
  if (n) reply_entry(req, n);
  else fuse_reply_err(req, ENOENT);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)fi;
  struct stat st;
  attr(table[ino], &st);
  fuse_reply_attr(req, &st, CACHE_SECONDS);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *in, int set, struct fuse_file_info *fi) {
  (void)fi;
  struct node *n = table[ino];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (set & FUSE_SET_ATTR_SIZE) resize(n, (size_t)in->st_size), n->mtime = now;
  if (set & FUSE_SET_ATTR_MODE) n->mode = (n->mode & S_IFMT) | (in->st_mode & 07777);
  if (set & FUSE_SET_ATTR_UID) n->uid = in->st_uid;
  if (set & FUSE_SET_ATTR_GID) n->gid = in->st_gid;
  if (set & FUSE_SET_ATTR_ATIME) n->atime = in->st_atim;
  if (set & FUSE_SET_ATTR_ATIME_NOW) n->atime = now;
  if (set & FUSE_SET_ATTR_MTIME) n->mtime = in->st_mtim;
  if (set & FUSE_SET_ATTR_MTIME_NOW) n->mtime = now;
  n->ctime = now;
  struct stat st;
  attr(n, &st);
  fuse_reply_attr(req, &st, CACHE_SECONDS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  if (child(parent, name)) { fuse_reply_err(req, EEXIST); return; }
  touch(table[parent]);
  reply_entry(req, make(parent, name, S_IFDIR | (mode & 07777), fuse_req_ctx(req)));
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name) {
  if (child(parent, name)) { fuse_reply_err(req, EEXIST); return; }
  struct node *n = make(parent, name, S_IFLNK | 0777, fuse_req_ctx(req));
  n->data = strdup(target);
  n->size = strlen(target);
  touch(table[parent]);
  reply_entry(req, n);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  fuse_reply_readlink(req, table[ino]->data);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int dir) {
  struct node *n = child(parent, name);
  if (!n) { fuse_reply_err(req, ENOENT); return; }
  if (dir && !S_ISDIR(n->mode)) { fuse_reply_err(req, ENOTDIR); return; }
  if (!dir && S_ISDIR(n->mode)) { fuse_reply_err(req, EISDIR); return; }
  if (dir && n->children) { fuse_reply_err(req, ENOTEMPTY); return; }
  unlink_name(n);
  free(n->data);
  n->data = NULL;
  n->size = n->cap = 0;
  touch(table[parent]);
  fuse_reply_err(req, 0);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) { remove_entry(req, parent, name, 0); }
static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) { remove_entry(req, parent, name, 1); }

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
                      unsigned int flags) {
  struct node *n = child(parent, name);
  if (!n) { fuse_reply_err(req, ENOENT); return; }
  if (flags) { fuse_reply_err(req, EINVAL); return; }
  struct node *old = child(newparent, newname);
  if (old == n) { fuse_reply_err(req, 0); return; }
  if (old) {
    if (S_ISDIR(old->mode) && old->children) { fuse_reply_err(req, ENOTEMPTY); return; }
    unlink_name(old);
    free(old->data);
    old->data = NULL;
  }
  unlink_name(n);
  link_name(n, newparent, newname);
  touch(table[parent]);
  touch(table[newparent]);
  fuse_reply_err(req, 0);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
  struct node *n = child(parent, name);
  if (!n) {
    n = make(parent, name, S_IFREG | (mode & 07777), fuse_req_ctx(req));
    touch(table[parent]);
  } else if (fi->flags & O_TRUNC) {
    resize(n, 0);
  }
  struct fuse_entry_param e;
  memset(&e, 0, sizeof e);
  e.ino = n->ino;
  e.attr_timeout = e.entry_timeout = CACHE_SECONDS;
  attr(n, &e.attr);
  fi->keep_cache = 1;
  fuse_reply_create(req, &e, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  if (fi->flags & O_TRUNC) resize(table[ino], 0), touch(table[ino]);
  fi->keep_cache = 1;
  fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)fi;
  struct node *n = table[ino];
  if ((size_t)off >= n->size) { fuse_reply_buf(req, NULL, 0); return; }
  if ((size_t)off + size > n->size) size = n->size - (size_t)off;
  fuse_reply_buf(req, n->data + off, size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)fi;
  struct node *n = table[ino];
  if ((size_t)off + size > n->size) resize(n, (size_t)off + size);
  memcpy(n->data + off, buf, size);
  touch(n);
  fuse_reply_write(req, size);
}

static void op_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)ino, (void)fi;
  fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  (void)datasync;
  op_ok(req, ino, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)fi;
  char *buf = malloc(size);
  size_t used = 0;
  off_t k = 0;
  /* Entries in inode order; the offset is the count of entries before the next one. */
  for (fuse_ino_t i = FUSE_ROOT_ID + 1; i < next_ino; i++) {
    struct node *n = table[i];
    if (!n->name || n->parent != ino) continue;
    if (k++ < off) continue;
    struct stat st;
    attr(n, &st);
    size_t len = fuse_add_direntry(req, buf + used, size - used, n->name, &st, k);
    if (len > size - used) break;
    used += len;
  }
  fuse_reply_buf(req, buf, used);
  free(buf);
}

static const struct fuse_lowlevel_ops ops = {
  .init = op_init, .lookup = op_lookup, .getattr = op_getattr, .setattr = op_setattr, .readlink = op_readlink,
  .mkdir = op_mkdir, .unlink = op_unlink, .rmdir = op_rmdir, .symlink = op_symlink, .rename = op_rename,
  .open = op_open, .read = op_read, .write = op_write, .flush = op_ok, .release = op_ok, .fsync = op_fsync,
  .readdir = op_readdir, .create = op_create,
};

/* How long the loop watches for the next request before sleeping: the daemon's FUSE_SPIN_MICROS. */
#define SPIN_NS 30000ull

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * One request at a time, as the daemon's binding serves them: after each, the descriptor is
 * watched for SPIN_NS before the thread sleeps in poll(2), so this floor saves the same wake-ups
 * the binding saves (src/transports/fuse/mount.ts, FUSE_SPIN_MICROS).
 */
static int serve(struct fuse_session *se) {
  int fd = fuse_session_fd(se);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  struct fuse_buf buf = { .mem = NULL };
  struct pollfd pfd = { .fd = fd, .events = POLLIN };
  uint64_t until = 0;
  int res = 0;
  while (!fuse_session_exited(se)) {
    res = fuse_session_receive_buf(se, &buf);
    if (res == -EINTR) continue;
    if (res == -EAGAIN) {
      res = 0;
      if (now_ns() < until) continue;
      if (poll(&pfd, 1, -1) < 0 && errno != EINTR) { res = -errno; break; }
      continue;
    }
    if (res <= 0) break;
    fuse_session_process_buf(se, &buf);
    until = now_ns() + SPIN_NS;
  }
  free(buf.mem);
  return res < 0 ? res : 0;
}

int main(int argc, char *argv[]) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MOUNTDIR\n", argv[0]);
    return 2;
  }
  char *fuse_argv[] = { argv[0], "-o", "default_permissions,fsname=svc-floor-ll,subtype=svc", NULL };
  struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
  make(0, NULL, S_IFDIR | 0755, NULL); /* the root, FUSE_ROOT_ID */
  struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
  if (!se) return 1;
  if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, argv[1]) != 0) {
    fuse_session_destroy(se);
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  int err = serve(se);
  fuse_remove_signal_handlers(se);
  fuse_session_unmount(se);
  fuse_session_destroy(se);
  return err < 0 ? 1 : 0;
}
