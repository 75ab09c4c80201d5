/*
 * log.h - the daemon's log lines on stderr, text or JSON.
 *
 * One line per event, written with a single write(2) so lines from different
 * threads never interleave. Lines carry a timestamp, a level, an event name
 * and key=value fields; request bodies are never logged. The format is set
 * once at start-up (partd_log_init) before any thread logs.
 */
#ifndef PARTD_DAEMON_LOG_H
#define PARTD_DAEMON_LOG_H

typedef enum partd_log_format {
    PARTD_LOG_TEXT = 0,
    PARTD_LOG_JSON
} partd_log_format;

void partd_log_init(partd_log_format format);

/* A log field. Use the PARTD_LF_* helpers below to build a NULL-terminated
 * array of them. */
typedef struct partd_log_field {
    const char *key;   /* NULL ends the list */
    int is_number;     /* numbers are printed bare in JSON */
    const char *str;
    double num;
} partd_log_field;

#define PARTD_LF_S(k, v) ((partd_log_field){(k), 0, (v), 0})
#define PARTD_LF_N(k, v) ((partd_log_field){(k), 1, NULL, (double)(v)})
#define PARTD_LF_END ((partd_log_field){NULL, 0, NULL, 0})

/* level: "info", "warn", "error". */
void partd_log(const char *level, const char *event, const partd_log_field *fields);

/* Convenience: a message with no fields beyond "msg". */
void partd_log_msg(const char *level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
