/*
 * Keeps ChakraCore's garbage-collector pages mapped between documents.
 *
 * ChakraCore's PAL implements VirtualAlloc(MEM_COMMIT) and VirtualFree(MEM_DECOMMIT) as
 * mmap(MAP_FIXED) of fresh read-write pages and of PROT_NONE pages. Its recycler commits and
 * decommits a few dozen pages around every map_doc, so a third of the server's time went to
 * those system calls and the page faults and kernel zeroing behind them.
 *
 * The executable defines mmap/mmap64/munmap/mprotect, which the dynamic linker binds the
 * library's calls to. A decommit of pages known to be read-write only marks them free here
 * (they stay mapped, contents and all); committing exactly such pages again zeroes them with
 * memset, which is what a fresh mapping would hold. Everything else goes to the kernel
 * unchanged. A page is tracked only while its state is known for certain (read-write since
 * a commit that went through here); anything that could change that (munmap, mprotect, any
 * other MAP_FIXED mapping) forgets it first, so an untracked page always takes the real path.
 * At most MAX_FREE_PAGES stay mapped while free, which bounds the extra resident memory.
 *
 * Segments go the same way: the recycler reserves and releases 128 KB segments every other
 * document, so a released segment (64 KB aligned, as the PAL wants) is kept reserved here and
 * handed back for the next reservation of the same size, its read-write pages marked free.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE_SHIFT 12
#define PAGE_SIZE_ (1UL << PAGE_SHIFT)
#define SLOTS (1UL << 17)               /* open-addressing table; kept at most half full */
#define MAX_TRACKED (SLOTS / 2)
#define MAX_FREE_PAGES 8192             /* 32 MB of decommitted pages kept mapped */

enum { LIVE = 1, FREE = 2 };            /* read-write and in use / read-write but decommitted */

/* slot = page number << 2 | state; 0 = empty */
static uintptr_t table[SLOTS];
static size_t tracked, free_pages;
static volatile int lock_word;

static void lock(void) { while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) { } }
static void unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static size_t slot_of(uintptr_t page) { return (size_t)((page * 0x9E3779B97F4A7C15ULL) >> (64 - 17)); }

/* index of page's slot, or of the empty slot where it would go */
static size_t find(uintptr_t page) {
    size_t i = slot_of(page);
    while (table[i] && (table[i] >> 2) != page) i = (i + 1) & (SLOTS - 1);
    return i;
}

static int state_of(uintptr_t page) {
    uintptr_t v = table[find(page)];
    return v ? (int)(v & 3) : 0;
}

/* removes the entry at slot i, shifting later entries of its probe run back (no tombstones) */
static void remove_at(size_t i) {
    if ((table[i] & 3) == FREE) free_pages--;
    tracked--;
    table[i] = 0;
    size_t j = i;
    for (;;) {
        j = (j + 1) & (SLOTS - 1);
        if (!table[j]) return;
        size_t home = slot_of(table[j] >> 2);
        /* move table[j] into the hole if its home is not cyclically within (i, j] */
        if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
            table[i] = table[j];
            table[j] = 0;
            i = j;
        }
    }
}

static void set_state(uintptr_t page, int state) {
    size_t i = find(page);
    if (table[i]) {
        if ((table[i] & 3) == FREE) free_pages--;
    } else {
        if (tracked >= MAX_TRACKED) return; /* untracked: the page keeps taking the real path */
        tracked++;
    }
    table[i] = page << 2 | (uintptr_t)state;
    if (state == FREE) free_pages++;
}

/* forget every page in [first, first + n) */
static void forget(uintptr_t first, size_t n) {
    if (!tracked) return;
    if (n > SLOTS) { /* huge range (a reservation being released): scan the table instead */
        for (size_t i = 0; i < SLOTS;) {
            uintptr_t p = table[i] >> 2;
            if (table[i] && p >= first && p - first < n) remove_at(i); /* slot i refilled: look again */
            else i++;
        }
        return;
    }
    for (size_t k = 0; k < n; k++) {
        size_t i = find(first + k);
        if (table[i]) remove_at(i);
    }
}

#define SEG_ALIGN (1UL << 16)
#define MAX_SEGMENTS 32
static struct { void *addr; size_t len; } segments[MAX_SEGMENTS];
static size_t n_segments;

/* keeps a released segment if it fits; its live pages become free pages */
static int keep_segment(void *addr, size_t len) {
    uintptr_t first = (uintptr_t)addr >> PAGE_SHIFT;
    size_t n = len >> PAGE_SHIFT, live = 0;
    if (n_segments == MAX_SEGMENTS || len < SEG_ALIGN || len > 16 * SEG_ALIGN ||
        ((uintptr_t)addr | len) & (SEG_ALIGN - 1)) return 0;
    for (size_t k = 0; k < n; k++) live += state_of(first + k) == LIVE;
    if (free_pages + live > MAX_FREE_PAGES) return 0;
    for (size_t k = 0; k < n; k++) if (state_of(first + k) == LIVE) set_state(first + k, FREE);
    segments[n_segments].addr = addr;
    segments[n_segments].len = len;
    n_segments++;
    return 1;
}

static void *reuse_segment(size_t len) {
    for (size_t i = n_segments; i-- > 0;) {
        if (segments[i].len == len) {
            void *addr = segments[i].addr;
            segments[i] = segments[--n_segments];
            return addr;
        }
    }
    return NULL;
}

static void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    const int anon_fixed = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
    if (!(flags & MAP_FIXED)) {
        if (!addr && prot == PROT_NONE && flags == (MAP_PRIVATE | MAP_ANONYMOUS) && n_segments) {
            lock();
            void *seg = reuse_segment(len);
            unlock();
            if (seg) return seg;
        }
        if (!addr && prot == PROT_NONE && flags == (MAP_PRIVATE | MAP_ANONYMOUS) && len >= SEG_ALIGN &&
            !(len & (SEG_ALIGN - 1))) {
            /* The PAL wants reservations 64 KB aligned; when the kernel's address is not, it unmaps
             * it and reserves again with room to trim. Reserving aligned here saves those calls. */
            char *r = real_mmap(NULL, len + SEG_ALIGN, prot, flags, -1, 0);
            if (r == MAP_FAILED) return r;
            size_t head = (SEG_ALIGN - ((uintptr_t)r & (SEG_ALIGN - 1))) & (SEG_ALIGN - 1);
            if (head) syscall(SYS_munmap, r, head);
            syscall(SYS_munmap, r + head + len, SEG_ALIGN - head);
            return r + head;
        }
        return real_mmap(addr, len, prot, flags, fd, off);
    }
    uintptr_t first = (uintptr_t)addr >> PAGE_SHIFT;
    size_t n = (len + PAGE_SIZE_ - 1) >> PAGE_SHIFT;
    if (flags == anon_fixed && ((uintptr_t)addr & (PAGE_SIZE_ - 1)) == 0 && n && n <= 4096) {
        lock();
        if (prot == PROT_NONE) { /* decommit */
            size_t k = 0;
            while (k < n && state_of(first + k)) k++;
            if (k == n && free_pages + n <= MAX_FREE_PAGES) {
                for (k = 0; k < n; k++) set_state(first + k, FREE);
                unlock();
                return addr;
            }
        } else if (prot == (PROT_READ | PROT_WRITE)) { /* commit */
            size_t k = 0;
            while (k < n && state_of(first + k) == FREE) k++;
            if (k == n) {
                for (k = 0; k < n; k++) set_state(first + k, LIVE);
                unlock();
                memset(addr, 0, len);
                return addr;
            }
            forget(first, n);
            void *r = real_mmap(addr, len, prot, flags, fd, off);
            if (r == addr) for (k = 0; k < n; k++) set_state(first + k, LIVE);
            unlock();
            return r;
        }
        forget(first, n);
        void *r = real_mmap(addr, len, prot, flags, fd, off);
        unlock();
        return r;
    }
    lock();
    forget(first, n);
    void *r = real_mmap(addr, len, prot, flags, fd, off);
    unlock();
    return r;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len) {
    lock();
    if (keep_segment(addr, len)) {
        unlock();
        return 0;
    }
    forget((uintptr_t)addr >> PAGE_SHIFT, (len + PAGE_SIZE_ - 1) >> PAGE_SHIFT);
    int r = (int)syscall(SYS_munmap, addr, len);
    unlock();
    return r;
}

int mprotect(void *addr, size_t len, int prot) {
    lock();
    forget((uintptr_t)addr >> PAGE_SHIFT, (len + PAGE_SIZE_ - 1) >> PAGE_SHIFT);
    int r = (int)syscall(SYS_mprotect, addr, len, prot);
    unlock();
    return r;
}
