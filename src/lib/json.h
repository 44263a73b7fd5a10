/*
 * json.h - reading members of cJSON objects with their types and ranges
 * checked, and printing JSON that is always valid UTF-8.
 *
 * One getter for every place that reads a document vigil did not build
 * itself in this process (messages from other agents, the event log,
 * state files): a member that is absent, of another type or out of range
 * is never taken for a value.
 */
#ifndef VIGIL_JSON_H
#define VIGIL_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

/* The deepest nesting of arrays and objects cJSON parses (1000 unless
 * the library was built otherwise); deeper, it refuses the document. */
#define JSON_NESTING_LIMIT CJSON_NESTING_LIMIT

/*
 * Where the JSON text BUF (LEN bytes) opens an array or object more than
 * JSON_NESTING_LIMIT levels deep (brackets inside strings do not count):
 * its offset, or LEN when it nests no deeper.  For saying why cJSON
 * refused a document ("nested too deeply") rather than "malformed".
 */
size_t json_too_deep(const char *buf, size_t len);

/*
 * Strict forms: 0 with the value in *OUT; -ENOENT when O is not an object
 * or has no member KEY; -EINVAL when the member has another type, a
 * number is not finite or outside [MIN, MAX], or an integer has a
 * fraction.  *OUT is left alone on error.  A string stays owned by O.
 */
int json_get_str(const cJSON *o, const char *key, const char **out);
int json_get_num(const cJSON *o, const char *key, double min, double max, double *out);
int json_get_int(const cJSON *o, const char *key, long long min, long long max,
                 long long *out);
int json_get_bool(const cJSON *o, const char *key, bool *out);

/* Lenient forms: the value, or DFLT whenever the strict form fails. */
const char *json_str(const cJSON *o, const char *key, const char *dflt);
double json_num(const cJSON *o, const char *key, double min, double max, double dflt);
long long json_int(const cJSON *o, const char *key, long long min, long long max,
                   long long dflt);
bool json_bool(const cJSON *o, const char *key, bool dflt);

/*
 * Print O (unformatted, or indented with PRETTY) as a malloc'd string
 * that is valid UTF-8: bytes of strings that are not (a training's
 * stderr, a node name) become U+FFFD.  NULL on allocation failure.
 */
char *json_print(const cJSON *o, bool pretty);

#endif
