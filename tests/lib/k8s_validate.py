#!/usr/bin/env python3
"""Check Kubernetes YAML against the API's JSON schemas, the ones the
kubernetes-validate package ships, strictly (an unknown field is an
error), and report every error, not only the first.

  k8s_validate.py [--version V]... [--as-patch] FILE...

One line per object and version: "ok KIND/NAME vV", or "error KIND/NAME
vV: PATH: MESSAGE" for each error.  Exits 1 if any object failed.

--as-patch: the objects are fragments to merge into existing workloads
(causeway place --format k8s): each is laid over the smallest valid
object of its kind before the check, so what is checked is every field
the fragment sets, and nothing it leaves to the workload it merges into.
"""
import argparse
import copy
import sys

import jsonschema
import referencing
import yaml
from kubernetes_validate import utils


def merge(base, over):
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


# The smallest valid objects of the kinds place writes.
POD_SPEC = {"containers": [{"name": "app", "image": "app"}]}
BASES = {
    "Pod": {"spec": POD_SPEC},
    "Deployment": {"spec": {"selector": {"matchLabels": {"app": "app"}},
                            "template": {"metadata": {"labels": {"app": "app"}},
                                         "spec": POD_SPEC}}},
}
BASES["StatefulSet"] = merge(BASES["Deployment"], {"spec": {"serviceName": "app"}})
BASES["DaemonSet"] = BASES["Deployment"]


def validator(kind, api_version, version):
    want = utils.major_minor(version)
    known = [v for v in utils.all_versions() if utils.major_minor(v) <= want]
    if not known:
        sys.exit("no schemas for Kubernetes %s" % version)
    folder = "kubernetes-json-schema/v%s-local-strict" % known[-1]
    group = api_version.split("/")[0].split(".")[0] + "-" \
        if "/" in api_version else ""
    name = "%s/%s-%s%s.json" % (folder, kind.lower(), group,
                                api_version.split("/")[-1])
    schema = utils.schema_contents(name, version)
    defs = utils.schema_contents(folder + "/_definitions.json", version)
    registry = referencing.Resource.from_contents(defs) @ (
        referencing.Resource.from_contents(schema) @ referencing.Registry())
    return jsonschema.validators.Draft202012Validator(schema,
                                                      registry=registry)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", action="append")
    ap.add_argument("--as-patch", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    bad = 0
    for path in args.files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        if not docs:
            print("error %s: no object" % path)
            bad += 1
        for doc in docs:
            what = "%s/%s" % (doc.get("kind"),
                              doc.get("metadata", {}).get("name"))
            if args.as_patch:
                doc = merge(BASES.get(doc.get("kind"), {}), doc)
            for version in args.version or ["1.34.0"]:
                try:
                    v = validator(doc["kind"], doc["apiVersion"], version)
                except (KeyError, FileNotFoundError) as e:
                    print("error %s v%s: no schema (%s)" % (what, version, e))
                    bad += 1
                    continue
                errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
                for e in errors:
                    print("error %s v%s: %s: %s" % (
                        what, version,
                        ".".join(str(p) for p in e.path) or "(top)",
                        e.message))
                if errors:
                    bad += 1
                else:
                    print("ok %s v%s" % (what, version))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
