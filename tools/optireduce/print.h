/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One print layer for text and JSON: every value is printed by one call
 * that names both its JSON key and its text format, so the two outputs
 * cannot drift apart.
 *
 *   key NULL   text only (labels, separators, newlines)
 *   fmt NULL   JSON only
 *
 * In JSON mode the calls build one document per top-level object or array;
 * closing it ends the line and flushes stdout. Text formats take the value
 * as their only conversion: %llu for print_uint, %s for print_string.
 */
#ifndef OPTIREDUCE_PRINT_H
#define OPTIREDUCE_PRINT_H

#include <stdbool.h>

void print_init(bool json, bool pretty);
bool print_is_json(void);

void print_open_object(const char *key);
void print_close_object(void);
void print_open_array(const char *key);
void print_close_array(void);

void print_uint(const char *key, const char *fmt, unsigned long long v);
void print_string(const char *key, const char *fmt, const char *s);
/* Text: fmt_true or fmt_false (either may be NULL: nothing). */
void print_bool(const char *key, const char *fmt_true, const char *fmt_false,
		bool v);
/* Text mode only; nothing in JSON mode. */
void print_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* OPTIREDUCE_PRINT_H */
