/* dragnet-qsdriver: qsbench's map loop in C, so the harness costs a few µs per document, not Python's.
 *
 * usage: dragnet-qsdriver TO_FD FROM_FD TIMEOUT_MS < lines > result
 *
 * qsbench spawns the query server itself (reset, add_fun) and hands this program the two pipe ends
 * (inherited descriptors TO_FD, the server's stdin, and FROM_FD, its stdout). Every map_doc line is read
 * from stdin before timing; then each is written and its answer read before the next is sent, as CouchDB
 * does. Lines starting ["log" are counted and skipped. The result on stdout:
 *   ok N LOGS CPU_NS\n  then N latencies in ns (one a line; each from the previous answer to this one)
 *   then the N answer lines, each with its newline, in document order.
 * On a failure, the first line says what and at which document, then what was read of the pending line:
 *   command I\n<the error/fatal line>   died-writing I   died-reading I\n<partial>   timeout I
 * Exit 0 in every case the result describes; 2 for bad usage or no memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "dragnet-qsdriver: %s\n", what);
    exit(2);
}

static void *grow(void *p, size_t *cap, size_t need) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 1 << 16;
    while (c < need) c *= 2;
    p = realloc(p, c);
    if (!p) die("out of memory");
    *cap = c;
    return p;
}

static void put_all(const char *s, size_t n) {
    while (n) {
        ssize_t w = write(1, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("cannot write the result");
        s += w;
        n -= (size_t)w;
    }
}

/* a protocol command rather than an answer: ["log" / ["error" / ["fatal", spaces allowed */
static const char *command_of(const char *s, size_t n) {
    const char *e = s + n;
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
    if (s >= e || *s++ != '[') return NULL;
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
    size_t left = (size_t)(e - s);
    if (left >= 5 && memcmp(s, "\"log\"", 5) == 0) return "log";
    if (left >= 7 && memcmp(s, "\"error\"", 7) == 0) return "error";
    if (left >= 7 && memcmp(s, "\"fatal\"", 7) == 0) return "fatal";
    return NULL;
}

/* Timeouts: a thread that sees no answer (or log line) for TIMEOUT_MS writes the result and ends the
 * process, which unblocks nothing but needs nothing unblocked; the hot path then is one write and one read
 * per document, no poll. Whoever writes a result claims it first, so only one ever does. */
static atomic_ulong progress;
static atomic_size_t current;
static atomic_flag claimed = ATOMIC_FLAG_INIT;

static void claim(void) {
    if (atomic_flag_test_and_set(&claimed)) pause();   /* the other one is writing the result and exits */
}

static void *watchdog(void *arg) {
    long timeout_ms = *(long *)arg, tick_ms = timeout_ms / 10 ? timeout_ms / 10 : 1;
    if (tick_ms > 100) tick_ms = 100;
    unsigned long seen = atomic_load(&progress);
    int64_t since = now_ns(CLOCK_MONOTONIC);
    for (;;) {
        struct timespec ts = {tick_ms / 1000, (tick_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        unsigned long p = atomic_load(&progress);
        int64_t now = now_ns(CLOCK_MONOTONIC);
        if (p != seen) {
            seen = p;
            since = now;
        } else if (now - since >= (int64_t)timeout_ms * 1000000) {
            claim();
            char head[64];
            int m = snprintf(head, sizeof head, "timeout %zu\n", (size_t)atomic_load(&current));
            put_all(head, (size_t)m);
            _exit(0);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) die("usage: dragnet-qsdriver TO_FD FROM_FD TIMEOUT_MS < lines > result");
    int to = atoi(argv[1]), from = atoi(argv[2]), timeout_ms = atoi(argv[3]);
    if (to < 0 || from < 0 || timeout_ms < 1) die("bad TO_FD, FROM_FD or TIMEOUT_MS");
    signal(SIGPIPE, SIG_IGN);   /* a server that died shows as EPIPE on write */

    /* every line to send, read before any timing */
    char *in = NULL;
    size_t in_cap = 0, in_len = 0;
    for (;;) {
        in = grow(in, &in_cap, in_len + (1 << 16));
        ssize_t r = read(0, in + in_len, in_cap - in_len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) die("cannot read the lines");
        if (r == 0) break;
        in_len += (size_t)r;
    }
    size_t n = 0;
    for (size_t i = 0; i < in_len; i++) n += in[i] == '\n';
    size_t *starts = malloc((n + 1) * sizeof *starts);
    int64_t *lat = malloc((n + 1) * sizeof *lat);
    if (!starts || !lat) die("out of memory");
    starts[0] = 0;
    for (size_t i = 0, k = 1; i < in_len; i++)
        if (in[i] == '\n') starts[k++] = i + 1;

    /* answers, one after another; buf holds them and whatever follows the last newline read */
    size_t cap = 0, len = 0, done_len = 0;
    char *buf = grow(NULL, &cap, in_len / 4 + (1 << 16));
    unsigned long logs = 0;
    char head[64];
    pthread_t dog;
    long dog_ms = timeout_ms;
    if (pthread_create(&dog, NULL, watchdog, &dog_ms) != 0) die("cannot start the watchdog");

    int64_t cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    int64_t t0 = now_ns(CLOCK_MONOTONIC);
    size_t i;
    for (i = 0; i < n; i++) {
        const char *line = in + starts[i];
        size_t left = starts[i + 1] - starts[i];
        while (left) {
            ssize_t w = write(to, line, left);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                claim();
                int m = snprintf(head, sizeof head, "died-writing %zu\n", i);
                put_all(head, (size_t)m);
                return 0;
            }
            line += w;
            left -= (size_t)w;
        }
        /* read until a line that is not a log line; done_len is where this answer starts */
        size_t scan = done_len;
        for (;;) {
            char *nl = len > scan ? memchr(buf + scan, '\n', len - scan) : NULL;
            if (nl) {
                size_t end = (size_t)(nl - buf);
                const char *cmd = command_of(buf + done_len, end - done_len);
                if (cmd && cmd[0] == 'l') {     /* a log line: drop it, keep reading */
                    logs++;
                    atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
                    memmove(buf + done_len, nl + 1, len - end - 1);
                    len -= end + 1 - done_len;
                    scan = done_len;
                    continue;
                }
                if (cmd) {
                    claim();
                    int m = snprintf(head, sizeof head, "command %zu\n", i);
                    put_all(head, (size_t)m);
                    put_all(buf + done_len, end - done_len + 1);
                    return 0;
                }
                done_len = end + 1;
                break;
            }
            scan = len;
            buf = grow(buf, &cap, len + (1 << 16));
            ssize_t r = read(from, buf + len, cap - len);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                claim();
                int m = snprintf(head, sizeof head, "died-reading %zu\n", i);
                put_all(head, (size_t)m);
                put_all(buf + done_len, len - done_len);
                return 0;
            }
            len += (size_t)r;
        }
        int64_t t1 = now_ns(CLOCK_MONOTONIC);
        lat[i] = t1 - t0;
        t0 = t1;
        atomic_store_explicit(&current, i + 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    int64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    claim();

    /* the result, after the loop: nothing above waits on our stdout */
    size_t out_cap = 0;
    char *out = grow(NULL, &out_cap, 64 + n * 21);
    size_t o = (size_t)sprintf(out, "ok %zu %lu %lld\n", n, logs, (long long)cpu);
    for (i = 0; i < n; i++) o += (size_t)sprintf(out + o, "%lld\n", (long long)lat[i]);
    put_all(out, o);
    put_all(buf, done_len);
    return 0;
}
