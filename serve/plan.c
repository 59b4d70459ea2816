// SPDX-License-Identifier: MIT
/*
 * The placement plan for the page: the JSON `causeway place --format json`
 * writes (--plan FILE), read again at each request so a new plan shows at
 * once.  serve only reads the plan: the solver stays in place/, which
 * serve's layer does not include (a request would otherwise run an
 * integer program).  The chosen plan is checked field by field and
 * written again as units per host before and after, the cross-host bytes
 * before and after, and the moves with their gains.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/util.h"
#include "serve/serve_int.h"

/* A member of the expected type, or NULL. */
static struct json_object *member(struct json_object *o, const char *key,
				  json_type type)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* The plan `chosen` names, else the first. */
static struct json_object *chosen_plan(struct json_object *root)
{
	struct json_object *plans = member(root, "plans", json_type_array);
	struct json_object *chosen = member(root, "chosen", json_type_string);
	struct json_object *p, *m;
	size_t i, n = plans ? json_object_array_length(plans) : 0;

	for (i = 0; chosen && i < n; i++) {
		p = json_object_array_get_idx(plans, i);
		m = member(p, "method", json_type_string);
		if (m && !strcmp(json_object_get_string(m),
				 json_object_get_string(chosen)))
			return p;
	}
	p = n ? json_object_array_get_idx(plans, 0) : NULL;
	return p && json_object_is_type(p, json_type_object) ? p : NULL;
}

/* Every unit and move has its names, every move a gain; else false. */
static bool plan_ok(struct json_object *p, const char **why)
{
	static const char *const nums[] = {"hosts_used", "hosts_used_now",
					   "cross_bytes", "cross_bytes_now"};
	struct json_object *arr[2] = {member(p, "units", json_type_array),
				      member(p, "moves", json_type_array)};
	struct json_object *e;
	size_t i, k;

	for (k = 0; k < CW_ARRAY_SIZE(nums); k++)
		if (!member(p, nums[k], json_type_int) ||
		    json_object_get_int64(member(p, nums[k], json_type_int)) <
			    0)
			return *why = nums[k], false;
	for (k = 0; k < 2; k++) {
		if (!arr[k])
			return *why = k ? "moves" : "units", false;
		for (i = 0; i < json_object_array_length(arr[k]); i++) {
			e = json_object_array_get_idx(arr[k], i);
			if (!member(e, "unit", json_type_string) ||
			    !member(e, "from", json_type_string) ||
			    !member(e, "to", json_type_string) ||
			    (k && !member(e, "gain", json_type_int)))
				return *why = k ? "a move" : "a unit", false;
		}
	}
	return true;
}

static const char *str(struct json_object *o, const char *key)
{
	return json_object_get_string(member(o, key, json_type_string));
}

/* Units per host, before (from) and after (to), hosts in the plan's order
 * of first mention. */
static void json_hosts(struct cw_jsonw *w, struct json_object *units)
{
	size_t n = json_object_array_length(units), i, j, k;
	const char *h, *seen;
	bool dup;

	cw_jsonw_arr_open(w, "hosts");
	for (i = 0; i < 2 * n; i++) {
		h = str(json_object_array_get_idx(units, i % n),
			i < n ? "from" : "to");
		for (dup = false, j = 0; j < i && !dup; j++) {
			seen = str(json_object_array_get_idx(units, j % n),
				   j < n ? "from" : "to");
			dup = !strcmp(seen, h);
		}
		if (dup)
			continue;
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "host", h);
		for (k = 0; k < 2; k++) {
			cw_jsonw_arr_open(w, k ? "after" : "before");
			for (j = 0; j < n; j++) {
				struct json_object *u =
					json_object_array_get_idx(units, j);

				if (!strcmp(str(u, k ? "to" : "from"), h))
					cw_jsonw_str(w, NULL, str(u, "unit"));
			}
			cw_jsonw_arr_close(w);
		}
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
}

static void json_plan(struct cw_jsonw *w, struct json_object *p)
{
	struct json_object *moves = member(p, "moves", json_type_array), *m;
	size_t i;

	cw_jsonw_str(w, "method", str(p, "method") ? str(p, "method") : "");
#define NUM(k)                                                                 \
	cw_jsonw_u64(                                                          \
		w, k,                                                          \
		(uint64_t)json_object_get_int64(member(p, k, json_type_int)))
	NUM("hosts_used_now");
	NUM("hosts_used");
	NUM("cross_bytes_now");
	NUM("cross_bytes");
#undef NUM
	cw_jsonw_bool(
		w, "fits",
		json_object_get_boolean(member(p, "fits", json_type_boolean)));
	json_hosts(w, member(p, "units", json_type_array));
	cw_jsonw_arr_open(w, "moves");
	for (i = 0; i < json_object_array_length(moves); i++) {
		m = json_object_array_get_idx(moves, i);
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "unit", str(m, "unit"));
		cw_jsonw_str(w, "from", str(m, "from"));
		cw_jsonw_str(w, "to", str(m, "to"));
		cw_jsonw_i64(w, "gain",
			     json_object_get_int64(
				     member(m, "gain", json_type_int)));
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
}

void serve_plan(const struct serve_ctx *c, struct serve_reply *r)
{
	struct json_object *root = NULL, *p = NULL;
	const char *why = "plans";
	struct cw_jsonw w;

	if (c->plan) {
		root = json_object_from_file(c->plan);
		if (!root)
			return serve_reply_error(
				r, 500, "unable to read '%s' as JSON", c->plan);
		p = chosen_plan(root);
		if (!p || !plan_ok(p, &why)) {
			serve_reply_error(r, 500,
					  "'%s': not a placement plan (%s)",
					  c->plan, why);
			goto out;
		}
	}
	if (serve_reply_open(r, 200, "application/json"))
		goto out;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	if (c->plan)
		cw_jsonw_str(&w, "source", c->plan);
	else
		cw_jsonw_null(&w, "source");
	if (p)
		json_plan(&w, p);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
out:
	json_object_put(root);
}
