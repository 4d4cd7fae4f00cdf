/*
 * dragnet-chakra: a CouchDB query server on ChakraCore.
 *
 * The native part is deliberately small: it starts one ChakraCore runtime, exposes
 * readline/print/quit/compile to JavaScript and runs the embedded protocol implementation
 * (dragnet.js), which owns the read-eval-answer loop.
 *
 * libChakraCore.so comes from the PyChakra wheel, which ships no headers, so the
 * few JSRT entry points used here are declared below (see ChakraCommon.h upstream).
 *
 * pages.c (linked in) keeps ChakraCore's GC pages mapped between documents.
 *
 * I/O: stdin and stdout are fully buffered with large buffers; print() only appends
 * to stdout's buffer and readline() flushes it before blocking, so every answer
 * (log lines included) leaves in one write(2) and documents arrive in few read(2)s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *JsRuntimeHandle;
typedef void *JsContextRef;
typedef void *JsValueRef;
typedef void *JsPropertyIdRef;
typedef unsigned int JsErrorCode;
typedef unsigned long JsSourceContext;
typedef JsValueRef (*JsNativeFunction)(JsValueRef callee, bool isConstructCall, JsValueRef *arguments,
                                       unsigned short argumentCount, void *callbackState);

enum { JsNoError = 0, JsErrorScriptException = 0x30001, JsErrorScriptCompile = 0x30002 };
enum { JsRuntimeAttributeDisableBackgroundWork = 0x1 };
enum { JsParseScriptAttributeNone = 0x0 };

/* Linux builds of ChakraCore need their DllMain called by hand (attach process, attach thread). */
extern int DllMain(void *instance, unsigned int reason, void *reserved);
extern JsErrorCode JsCreateRuntime(unsigned int attributes, void *threadService, JsRuntimeHandle *runtime);
extern JsErrorCode JsCreateContext(JsRuntimeHandle runtime, JsContextRef *context);
extern JsErrorCode JsSetCurrentContext(JsContextRef context);
extern JsErrorCode JsDisposeRuntime(JsRuntimeHandle runtime);
extern JsErrorCode JsGetGlobalObject(JsValueRef *global);
extern JsErrorCode JsCreatePropertyId(const char *name, size_t length, JsPropertyIdRef *id);
extern JsErrorCode JsSetProperty(JsValueRef object, JsPropertyIdRef id, JsValueRef value, bool strict);
extern JsErrorCode JsCreateFunction(JsNativeFunction fn, void *state, JsValueRef *function);
extern JsErrorCode JsCreateString(const char *content, size_t length, JsValueRef *value);
extern JsErrorCode JsCreateStringUtf16(const uint16_t *content, size_t length, JsValueRef *value);
extern JsErrorCode JsGetStringLength(JsValueRef value, int *length);
extern JsErrorCode JsCopyString(JsValueRef value, char *buffer, size_t size, size_t *written);
extern JsErrorCode JsConvertValueToString(JsValueRef value, JsValueRef *result);
extern JsErrorCode JsIntToNumber(int value, JsValueRef *result);
extern JsErrorCode JsNumberToInt(JsValueRef value, int *result);
extern JsErrorCode JsGetNullValue(JsValueRef *value);
extern JsErrorCode JsGetUndefinedValue(JsValueRef *value);
extern JsErrorCode JsGetAndClearException(JsValueRef *exception);
extern JsErrorCode JsCreateExternalArrayBuffer(void *data, unsigned int length, void *finalize, void *state,
                                               JsValueRef *result);
extern JsErrorCode JsRun(JsValueRef script, JsSourceContext context, JsValueRef sourceUrl,
                         unsigned int attributes, JsValueRef *result);
extern JsErrorCode JsCallFunction(JsValueRef function, JsValueRef *args, unsigned short argc, JsValueRef *result);
extern JsErrorCode JsAddRef(void *ref, unsigned int *count);
extern JsErrorCode JsGetAndClearExceptionWithMetadata(JsValueRef *metadata);
extern JsErrorCode JsSetException(JsValueRef exception);
extern JsErrorCode JsGetProperty(JsValueRef object, JsPropertyIdRef id, JsValueRef *value);

/* dragnet.js, linked in by embed.S */
extern const char dragnet_js_start[];
extern const char dragnet_js_end[];

static char *out_buf;     /* UTF-8 conversion buffer for print() */
static size_t out_cap;
static char *line_buf;    /* getline() buffer */
static size_t line_cap;

static void die(const char *what, JsErrorCode code) {
    fprintf(stderr, "dragnet-chakra: %s failed (JsErrorCode 0x%x)\n", what, code);
    fflush(stdout);
    _exit(2);
}

#define CHECK(call) do { JsErrorCode _e = (call); if (_e != JsNoError) die(#call, _e); } while (0)

static void flush_or_exit(void) {
    if (fflush(stdout) != 0) _exit(errno == EPIPE ? 0 : 3);
}

/* Write a JS value as UTF-8 into out_buf; returns the byte count. */
static size_t to_utf8(JsValueRef value) {
    JsValueRef str;
    int units = 0;
    size_t written = 0;
    CHECK(JsConvertValueToString(value, &str));
    CHECK(JsGetStringLength(str, &units));
    /* one UTF-16 unit never takes more than 3 UTF-8 bytes (a pair takes 4 for 2 units) */
    size_t need = (size_t)units * 3 + 1;
    if (need > out_cap) {
        free(out_buf);
        out_cap = need < 65536 ? 65536 : need * 2;
        out_buf = malloc(out_cap);
        if (!out_buf) die("malloc", 0);
    }
    CHECK(JsCopyString(str, out_buf, out_cap, &written));
    return written;
}

/*
 * A JS string from UTF-8 input. ChakraCore's own decoder (JsCreateString) takes a slow path
 * for every non-ASCII character and was a sixth of the map_doc time on Cyrillic documents;
 * strictly valid UTF-8 is decoded here instead, and anything else (invalid or overlong
 * sequences, encoded surrogates) is left to ChakraCore so its replacement rules still apply.
 */
static uint16_t *u16_buf;
static size_t u16_cap;

static size_t decode_utf8(const unsigned char *s, size_t n, uint16_t *out) {
    size_t i = 0, o = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                for (int k = 0; k < 8; k++) out[o++] = s[i + k];
                i += 8;
                continue;
            }
        }
        unsigned c = s[i];
        if (c < 0x80) {
            out[o++] = (uint16_t)c;
            i++;
        } else if (c >= 0xc2 && c <= 0xdf) {
            if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80) return (size_t)-1;
            out[o++] = (uint16_t)((c & 0x1f) << 6 | (s[i + 1] & 0x3f));
            i += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (i + 2 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80) return (size_t)-1;
            unsigned cp = (c & 0x0f) << 12 | (s[i + 1] & 0x3fu) << 6 | (s[i + 2] & 0x3fu);
            if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return (size_t)-1;
            out[o++] = (uint16_t)cp;
            i += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (i + 3 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80 ||
                (s[i + 3] & 0xc0) != 0x80) return (size_t)-1;
            unsigned cp = (c & 0x07) << 18 | (s[i + 1] & 0x3fu) << 12 | (s[i + 2] & 0x3fu) << 6 | (s[i + 3] & 0x3fu);
            if (cp < 0x10000 || cp > 0x10ffff) return (size_t)-1;
            cp -= 0x10000;
            out[o++] = (uint16_t)(0xd800 | cp >> 10);
            out[o++] = (uint16_t)(0xdc00 | (cp & 0x3ff));
            i += 4;
        } else {
            return (size_t)-1;
        }
    }
    return o;
}

static JsValueRef string_from_utf8(const char *s, size_t n) {
    JsValueRef result;
    if (n + 1 > u16_cap) { /* UTF-8 never takes fewer units in UTF-16 than bytes */
        free(u16_buf);
        u16_cap = n < 65536 ? 65536 : n * 2;
        u16_buf = malloc(u16_cap * sizeof *u16_buf);
        if (!u16_buf) die("malloc", 0);
    }
    size_t units = decode_utf8((const unsigned char *)s, n, u16_buf);
    if (units != (size_t)-1) CHECK(JsCreateStringUtf16(u16_buf, units, &result));
    else CHECK(JsCreateString(s, n, &result));
    return result;
}

static JsValueRef undefined_value(void) {
    JsValueRef u;
    JsGetUndefinedValue(&u);
    return u;
}

/* print(text): append text and a newline to stdout's buffer. */
static JsValueRef native_print(JsValueRef callee, bool ctor, JsValueRef *args, unsigned short argc, void *st) {
    (void)callee; (void)ctor; (void)st;
    if (argc > 1) {
        size_t n = to_utf8(args[1]);
        out_buf[n] = '\n';
        fwrite(out_buf, 1, n + 1, stdout);
    } else {
        fputc('\n', stdout);
    }
    return undefined_value();
}

/* readline(): flush pending answers, then the next input line without its newline, or null at EOF. */
static JsValueRef native_readline(JsValueRef callee, bool ctor, JsValueRef *args, unsigned short argc, void *st) {
    (void)callee; (void)ctor; (void)args; (void)argc; (void)st;
    JsValueRef result;
    flush_or_exit();
    ssize_t n = getline(&line_buf, &line_cap, stdin);
    if (n < 0) {
        JsGetNullValue(&result);
        return result;
    }
    if (n > 0 && line_buf[n - 1] == '\n') n--;
    if (n > 0 && line_buf[n - 1] == '\r') n--;
    return string_from_utf8(line_buf, (size_t)n);
}

/* quit(code): flush and leave at once (no runtime teardown needed). */
static JsValueRef native_quit(JsValueRef callee, bool ctor, JsValueRef *args, unsigned short argc, void *st) {
    (void)callee; (void)ctor; (void)st;
    int code = 0;
    if (argc > 1) JsNumberToInt(args[1], &code);
    flush_or_exit();
    _exit(code & 0xff);
}

/* stderr(text): diagnostics that must not reach CouchDB's stdout. */
static JsValueRef native_stderr(JsValueRef callee, bool ctor, JsValueRef *args, unsigned short argc, void *st) {
    (void)callee; (void)ctor; (void)st;
    if (argc > 1) {
        size_t n = to_utf8(args[1]);
        fwrite(out_buf, 1, n, stderr);
        fputc('\n', stderr);
    }
    return undefined_value();
}

static JsValueRef get_prop(JsValueRef object, const char *name) {
    JsPropertyIdRef id;
    JsValueRef value = NULL;
    CHECK(JsCreatePropertyId(name, strlen(name), &id));
    CHECK(JsGetProperty(object, id, &value));
    return value;
}

/*
 * compile(source, name): run source as a script named name and return its completion value.
 * Unlike eval, a syntax error keeps its position: the thrown error gets the 1-based
 * line of the fault as `line` (ChakraCore only reports it in the exception metadata).
 */
static JsSourceContext next_source_context = 2;
static JsValueRef native_compile(JsValueRef callee, bool ctor, JsValueRef *args, unsigned short argc, void *st) {
    (void)callee; (void)ctor; (void)st;
    JsValueRef source, url, result = NULL;
    if (argc < 2) return undefined_value();
    CHECK(JsConvertValueToString(args[1], &source));
    if (argc > 2) CHECK(JsConvertValueToString(args[2], &url));
    else CHECK(JsCreateString("<unknown>", 9, &url));
    JsErrorCode err = JsRun(source, next_source_context++, url, JsParseScriptAttributeNone, &result);
    if (err == JsErrorScriptException || err == JsErrorScriptCompile) {
        JsValueRef meta, exc, line, one;
        CHECK(JsGetAndClearExceptionWithMetadata(&meta));
        exc = get_prop(meta, "exception");
        line = get_prop(meta, "line");
        int n = 0;
        if (JsNumberToInt(line, &n) == JsNoError) {
            JsPropertyIdRef id;
            CHECK(JsIntToNumber(n + 1, &one));
            CHECK(JsCreatePropertyId("line", 4, &id));
            JsSetProperty(exc, id, one, false); /* primitives thrown: nothing to annotate */
        }
        JsSetException(exc);
        return NULL;
    }
    if (err != JsNoError) die("JsRun(compile)", err);
    return result;
}

/* An exception escaping dragnet.js is a bug in it: report on stderr and exit like couchjs. */
static void report_exception(JsErrorCode err, const char *when) {
    if (err == JsNoError) return;
    if (err == JsErrorScriptException || err == JsErrorScriptCompile) {
        JsValueRef exc;
        JsGetAndClearException(&exc);
        size_t n = to_utf8(exc);
        flush_or_exit();
        fprintf(stderr, "dragnet-chakra: uncaught exception %s: %.*s\n", when, (int)n, out_buf);
        _exit(1);
    }
    die(when, err);
}

static void define(JsValueRef object, const char *name, JsNativeFunction fn) {
    JsPropertyIdRef id;
    JsValueRef f;
    CHECK(JsCreatePropertyId(name, strlen(name), &id));
    CHECK(JsCreateFunction(fn, NULL, &f));
    CHECK(JsSetProperty(object, id, f, true));
}

int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: dragnet-chakra  (speaks the CouchDB query-server protocol on stdin/stdout)\n");
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdin, NULL, _IOFBF, 1 << 20);
    setvbuf(stdout, NULL, _IOFBF, 1 << 20);

    JsRuntimeHandle runtime;
    JsContextRef context;
    JsValueRef global, script, url;

    DllMain(NULL, 1, NULL);
    DllMain(NULL, 2, NULL);
    /* background work (GC/JIT threads) aborts on futex errors in this build; the JIT still runs inline */
    CHECK(JsCreateRuntime(JsRuntimeAttributeDisableBackgroundWork, NULL, &runtime));
    CHECK(JsCreateContext(runtime, &context));
    CHECK(JsSetCurrentContext(context));

    CHECK(JsGetGlobalObject(&global));
    define(global, "print", native_print);
    define(global, "readline", native_readline);
    define(global, "quit", native_quit);
    define(global, "stderr", native_stderr);
    define(global, "compile", native_compile);

    CHECK(JsCreateExternalArrayBuffer((void *)dragnet_js_start, (unsigned int)(dragnet_js_end - dragnet_js_start),
                                      NULL, NULL, &script));
    CHECK(JsCreateString("dragnet.js", 10, &url));
    /* dragnet.js evaluates to its command handler: handle(line) answers one input line. The loop
     * stays in C (not in a JS while/readline loop) because ChakraCore only reclaims garbage well
     * between script calls: a loop inside one JsRun settles at ~250 MB RSS instead of ~28 MB. */
    JsValueRef handler = NULL;
    report_exception(JsRun(script, 1, url, JsParseScriptAttributeNone, &handler), "loading dragnet.js");
    CHECK(JsAddRef(handler, NULL));

    JsValueRef call_args[2];
    JsGetUndefinedValue(&call_args[0]);
    for (;;) {
        flush_or_exit();
        ssize_t n = getline(&line_buf, &line_cap, stdin);
        if (n < 0) break;
        if (n > 0 && line_buf[n - 1] == '\n') n--;
        if (n > 0 && line_buf[n - 1] == '\r') n--;
        if (n == 0) continue;
        call_args[1] = string_from_utf8(line_buf, (size_t)n);
        report_exception(JsCallFunction(handler, call_args, 2, NULL), "handling a command");
    }
    flush_or_exit();
    JsSetCurrentContext(NULL);
    JsDisposeRuntime(runtime);
    return 0;
}
