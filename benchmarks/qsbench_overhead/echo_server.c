/* The cheapest possible query server, for measuring the harness: it reads lines and answers each with
 * a fixed line without parsing it: map_doc gets one fixed row, every other command (reset, add_fun) "true". */
#include <string.h>
#include <unistd.h>

static char buf[1 << 16];

static void answer(const char *s, size_t n) {
    while (n) {
        ssize_t w = write(1, s, n);
        if (w <= 0) _exit(1);
        s += w;
        n -= (size_t)w;
    }
}

int main(void) {
    static const char row[] = "[[[\"k\",1]]]\n";
    size_t pos = 0; /* bytes of the current line seen so far */
    int is_map = 0;
    for (;;) {
        ssize_t r = read(0, buf, sizeof buf);
        if (r <= 0) return 0;
        char *p = buf, *end = buf + r;
        while (p < end) {
            if (pos <= 2 && p + (2 - pos) < end) is_map = p[2 - pos] == 'm'; /* ["m…: map_doc */
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) { pos += (size_t)(end - p); break; }
            if (is_map) answer(row, sizeof row - 1);
            else answer("true\n", 5);
            pos = 0;
            is_map = 0;
            p = nl + 1;
        }
    }
}
