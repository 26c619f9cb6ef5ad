/*
 * bench/folios.c: how a file's bytes sit in the page cache, as folios (the kernel's unit of cached
 * memory: one 4 KiB page, or a large folio of 2^n pages). bench/fuse.ts prints it for the plain
 * disk's file and the mount's after their warm reads: a warm read copies folio by folio, so a file
 * cached in 4 KiB folios reads at about half the speed of the same file in 1 MiB folios here, and
 * FUSE on this kernel caches in 4 KiB folios only (docs/performance.md, "Warm reads and folios").
 *
 *   cc -O2 -o folios bench/folios.c
 *   ./folios FILE     prints "pages P cached C folios F largest L" (L in pages), or exits 2 with the reason
 *
 * Maps FILE, asks mincore which pages are cached, touches only those (mapping a cached page takes
 * its folio as it is; nothing is read in) and looks each one's frame up in /proc/self/pagemap and
 * its flags in /proc/kpageflags (needs CAP_SYS_ADMIN: root). A folio is a compound head followed by
 * its tails; a page that is neither is a folio of one page.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16

static int fail(const char *what) {
  fprintf(stderr, "folios: %s: %s\n", what, strerror(errno));
  return 2;
}

int main(int argc, char *argv[]) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  long page = sysconf(_SC_PAGESIZE);
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return fail(argv[1]);
  struct stat st;
  if (fstat(fd, &st) != 0) return fail(argv[1]);
  size_t pages = (size_t)(st.st_size / page);
  if (pages == 0) {
    printf("pages 0 cached 0 folios 0 largest 0\n");
    return 0;
  }
  volatile unsigned char *map = mmap(NULL, pages * page, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return fail("mmap");
  unsigned char *cached = malloc(pages);
  if (!cached) return fail("malloc");
  if (mincore((void *)map, pages * page, cached) != 0) return fail("mincore");
  int pagemap = open("/proc/self/pagemap", O_RDONLY);
  if (pagemap < 0) return fail("/proc/self/pagemap");
  int kpageflags = open("/proc/kpageflags", O_RDONLY);
  if (kpageflags < 0) return fail("/proc/kpageflags");
  size_t resident = 0, folios = 0, largest = 0, run = 0;
  for (size_t i = 0; i < pages; i++) {
    if (!(cached[i] & 1)) {
      run = 0;
      continue;
    }
    resident++;
    (void)map[i * page];
    uint64_t entry, flags;
    off_t at = (off_t)(((uintptr_t)map / page + i) * sizeof entry);
    if (pread(pagemap, &entry, sizeof entry, at) != sizeof entry) return fail("pagemap");
    uint64_t pfn = entry & ((1ULL << 55) - 1);
    if (!(entry >> 63) || pfn == 0) {
      errno = EPERM;
      return fail("no page frame numbers in pagemap (needs CAP_SYS_ADMIN)");
    }
    if (pread(kpageflags, &flags, sizeof flags, (off_t)(pfn * sizeof flags)) != sizeof flags) return fail("kpageflags");
    if ((flags & (1ULL << KPF_COMPOUND_TAIL)) && run > 0) {
      run++;
    } else {
      folios++;
      run = 1;
    }
    if (run > largest) largest = run;
  }
  printf("pages %zu cached %zu folios %zu largest %zu\n", pages, resident, folios, largest);
  return 0;
}
