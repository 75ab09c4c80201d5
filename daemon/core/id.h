/*
 * id.h - job ids: 128 random bits as 32 lowercase hex digits.
 *
 * Nothing here keeps state. partd_id_new returns PARTD_OK or PARTD_EIO
 * (partd.h) when the kernel refuses random bytes.
 */
#ifndef PARTD_DAEMON_ID_H
#define PARTD_DAEMON_ID_H

#define PARTD_ID_LEN 32 /* 128 bits as lowercase hex */

/* Fills out with 32 random hex digits + NUL from getrandom(2).
 * PARTD_OK or PARTD_EIO when the kernel refuses. */
int partd_id_new(char out[PARTD_ID_LEN + 1]);

/* 1 when s is exactly 32 lowercase hex digits. */
int partd_id_valid(const char *s);

#endif
