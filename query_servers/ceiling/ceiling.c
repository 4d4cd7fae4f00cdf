/* dragnet-ceiling: the cheapest process that speaks CouchDB's query-server protocol, so a view build on it
 * measures everything but the engine (CouchDB's own share of the build: the ceiling of any engine).
 * It reads no document: each line is told apart by its first letters only. reset/add_lib/add_fun answer
 * true; map_doc answers one fixed row per function added since the last reset; anything else (reduce,
 * ddoc) answers an error, as dragnet builds only the maps on it. */
#include <string.h>
#include <unistd.h>

static char in[1 << 16];
static char out[1 << 16];
static size_t out_len;

static void flush_out(void) {
    const char *s = out;
    while (out_len) {
        ssize_t w = write(1, s, out_len);
        if (w <= 0) _exit(1);
        s += w;
        out_len -= (size_t)w;
    }
}

static void put(const char *s, size_t n) {
    if (out_len + n > sizeof out) flush_out();
    memcpy(out + out_len, s, n);
    out_len += n;
}

int main(void) {
    static const char row[] = "[[\"k\",1]]";
    static const char refused[] = "[\"error\",\"ceiling\",\"dragnet-ceiling answers map_doc only\"]\n";
    char head[12];          /* the first bytes of the current line: its command */
    size_t pos = 0;          /* bytes of the current line seen so far */
    unsigned long funs = 0;  /* map functions since the last reset */
    for (;;) {
        ssize_t r = read(0, in, sizeof in);
        if (r <= 0) {
            flush_out();
            return 0;
        }
        char *p = in, *end = in + r;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            char *stop = nl ? nl : end;
            while (pos < sizeof head && p < stop) head[pos++] = *p++;
            if (!nl) break;   /* the rest of a long line comes with the next read */
            p = nl + 1;
            /* head: ["reset" ["add_fun" ["add_lib" ["map_doc" ["reduce" ["rereduce" ["ddoc" */
            if (pos >= 5 && head[2] == 'm') {
                put("[", 1);
                for (unsigned long i = 0; i < funs; i++) {
                    if (i) put(",", 1);
                    put(row, sizeof row - 1);
                }
                put("]\n", 2);
            } else if (pos >= 5 && head[2] == 'r' && head[3] == 'e' && head[4] == 's') {
                funs = 0;
                put("true\n", 5);
            } else if (pos >= 6 && head[2] == 'a' && memcmp(head + 2, "add_f", 5) == 0) {
                funs++;
                put("true\n", 5);
            } else if (pos >= 6 && head[2] == 'a' && memcmp(head + 2, "add_l", 5) == 0) {
                put("true\n", 5);
            } else {
                put(refused, sizeof refused - 1);
            }
            pos = 0;
            flush_out();   /* one answer per line read, as CouchDB waits for each */
        }
    }
}
