/*
 * log.c - formatting of log lines. See log.h.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "time.h"

/* Written once at start-up, before threads exist; read-only afterwards. */
static partd_log_format log_format = PARTD_LOG_TEXT;

void partd_log_init(partd_log_format format)
{
    log_format = format;
}

typedef struct line {
    char buf[4096];
    size_t n;
} line;

static void put(line *l, const char *s, size_t len)
{
    size_t room = sizeof l->buf - 2 - l->n; /* keep space for "\n" */
    if (len > room)
        len = room;
    memcpy(l->buf + l->n, s, len);
    l->n += len;
}

static void puts_(line *l, const char *s)
{
    put(l, s, strlen(s));
}

/* JSON string body escaping; also used for text values that need quoting. */
static void put_escaped(line *l, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(l, esc, 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            puts_(l, esc);
        } else {
            put(l, (const char *)p, 1);
        }
    }
}

static int needs_quotes(const char *s)
{
    if (*s == '\0')
        return 1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p == 0x7f)
            return 1;
    return 0;
}

static void put_number(line *l, double v)
{
    char num[48];
    if (v == (double)(long long)v && v < 1e15 && v > -1e15)
        snprintf(num, sizeof num, "%lld", (long long)v);
    else
        snprintf(num, sizeof num, "%.3f", v);
    puts_(l, num);
}

void partd_log(const char *level, const char *event, const partd_log_field *fields)
{
    char ts[32];
    partd_time_rfc3339(partd_time_now_ms(), ts);
    line l;
    l.n = 0;
    if (log_format == PARTD_LOG_JSON) {
        puts_(&l, "{\"ts\":\"");
        puts_(&l, ts);
        puts_(&l, "\",\"level\":\"");
        puts_(&l, level);
        puts_(&l, "\",\"event\":\"");
        put_escaped(&l, event);
        puts_(&l, "\"");
        for (const partd_log_field *f = fields; f && f->key; f++) {
            puts_(&l, ",\"");
            puts_(&l, f->key);
            puts_(&l, "\":");
            if (f->is_number) {
                put_number(&l, f->num);
            } else if (f->str) {
                puts_(&l, "\"");
                put_escaped(&l, f->str);
                puts_(&l, "\"");
            } else {
                puts_(&l, "null");
            }
        }
        puts_(&l, "}");
    } else {
        puts_(&l, ts);
        puts_(&l, " ");
        puts_(&l, level);
        puts_(&l, " ");
        puts_(&l, event);
        for (const partd_log_field *f = fields; f && f->key; f++) {
            puts_(&l, " ");
            puts_(&l, f->key);
            puts_(&l, "=");
            if (f->is_number) {
                put_number(&l, f->num);
            } else if (!f->str) {
                puts_(&l, "-");
            } else if (needs_quotes(f->str)) {
                puts_(&l, "\"");
                put_escaped(&l, f->str);
                puts_(&l, "\"");
            } else {
                puts_(&l, f->str);
            }
        }
    }
    l.buf[l.n++] = '\n';
    /* One write: lines from different threads stay whole. */
    ssize_t rc = write(STDERR_FILENO, l.buf, l.n);
    (void)rc;
}

void partd_log_msg(const char *level, const char *event, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    partd_log_field fields[] = {PARTD_LF_S("msg", msg), PARTD_LF_END};
    partd_log(level, event, fields);
}
