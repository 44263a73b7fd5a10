/*
 * json.c - checked member access and UTF-8-safe printing.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"

static const cJSON *
member(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

int
json_get_str(const cJSON *o, const char *key, const char **out)
{
	const cJSON *v = member(o, key);

	if (!v)
		return -ENOENT;
	if (!cJSON_IsString(v) || !v->valuestring)
		return -EINVAL;
	*out = v->valuestring;
	return 0;
}

int
json_get_num(const cJSON *o, const char *key, double min, double max, double *out)
{
	const cJSON *v = member(o, key);

	if (!v)
		return -ENOENT;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min ||
	    v->valuedouble > max)
		return -EINVAL;
	*out = v->valuedouble;
	return 0;
}

int
json_get_int(const cJSON *o, const char *key, long long min, long long max, long long *out)
{
	double d;
	int rc = json_get_num(o, key, (double)min, (double)max, &d);

	if (rc < 0)
		return rc;
	/* The range check above keeps the cast defined. */
	if (d != floor(d))
		return -EINVAL;
	*out = (long long)d;
	return 0;
}

int
json_get_bool(const cJSON *o, const char *key, bool *out)
{
	const cJSON *v = member(o, key);

	if (!v)
		return -ENOENT;
	if (!cJSON_IsBool(v))
		return -EINVAL;
	*out = cJSON_IsTrue(v);
	return 0;
}

const char *
json_str(const cJSON *o, const char *key, const char *dflt)
{
	const char *s;

	return json_get_str(o, key, &s) == 0 ? s : dflt;
}

double
json_num(const cJSON *o, const char *key, double min, double max, double dflt)
{
	double d;

	return json_get_num(o, key, min, max, &d) == 0 ? d : dflt;
}

long long
json_int(const cJSON *o, const char *key, long long min, long long max, long long dflt)
{
	long long v;

	return json_get_int(o, key, min, max, &v) == 0 ? v : dflt;
}

bool
json_bool(const cJSON *o, const char *key, bool dflt)
{
	bool b;

	return json_get_bool(o, key, &b) == 0 ? b : dflt;
}

char *
json_print(const cJSON *o, bool pretty)
{
	char *text = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
	size_t len;
	char *fixed;

	if (!text)
		return NULL;
	/* cJSON escapes control characters but copies other bytes as they
	 * are; JSON's own syntax is ASCII, so repairing the printed text
	 * touches only the bytes inside strings. */
	len = strlen(text);
	if (util_utf8_valid(text, len))
		return text;
	fixed = util_utf8_repair(text, len);
	free(text);
	return fixed;
}

size_t
json_too_deep(const char *buf, size_t len)
{
	size_t depth = 0;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_string) {
			if (c == '\\')
				i++;  /* the escaped character, which may be a quote */
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '[' || c == '{') {
			if (++depth > JSON_NESTING_LIMIT)
				return i;
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return len;
}
