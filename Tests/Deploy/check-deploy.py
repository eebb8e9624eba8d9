"""Checks deploy/ against the schemas of what it configures and against the server's own settings.

Docker and Kubernetes do not run on this machine, so the files are validated with what does:
- Kubernetes manifests: kubernetes-validate (PyPI), the Kubernetes OpenAPI schemas of one
  release, strict (an unknown field is an error).
- compose.yaml: the Compose specification's JSON schema (as shipped in docker-compose 1.29.2 on
  PyPI, read from the package without running it).
- Every environment variable the server is given (systemd env file, compose, ConfigMap, Secret,
  Dockerfile) must be a setting the README's Configuration table documents, and every file the
  Dockerfile copies must exist.
- nginx: the live view's WebSocket location and the event stream's unbuffered location must
  match routes in the OpenAPI contract.
- systemd: the unit restarts on failure and carries the hardening options.
Usage: check-deploy.py REPOSITORY_ROOT
"""
import importlib.util
import json
import os
import re
import sys

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.31"
root = sys.argv[1]
deploy = os.path.join(root, "deploy")
failures = []


def fail(where, message):
    failures.append(f"{where}: {message}")


def path(*parts):
    return os.path.join(deploy, *parts)


# Settings the server documents (README: | `NAME` | default | meaning |).
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
configuration = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
settings = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", configuration, re.M))
if len(settings) < 20:
    fail("README.md", f"found only {len(settings)} settings in the Configuration table")


def check_settings(where, names):
    for name in names:
        if name not in settings:
            fail(where, f"{name} is not a setting of the server (README, Configuration)")


# Kubernetes.
for name in sorted(os.listdir(path("kubernetes"))):
    if not name.endswith(".yaml"):
        continue
    with open(path("kubernetes", name), encoding="utf-8") as handle:
        documents = [d for d in yaml.safe_load_all(handle) if d]
    if not documents:
        fail(name, "no manifest")
    for document in documents:
        where = f"kubernetes/{name} ({document.get('kind')} {document.get('metadata', {}).get('name')})"
        try:
            kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            fail(where, f"{'.'.join(str(p) for p in error.path)}: {error.message}")
        except Exception as error:  # an unknown kind or version
            fail(where, str(error))
        kind = document.get("kind")
        if kind in ("ConfigMap", "Secret"):
            check_settings(where, list((document.get("data") or {}).keys()) + list((document.get("stringData") or {}).keys()))
        if kind == "Deployment":
            spec = document["spec"]
            container = spec["template"]["spec"]["containers"][0]
            if spec.get("replicas", 1) < 2:
                fail(where, "fewer than 2 replicas")
            if container.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/readyz":
                fail(where, "readiness is not on /readyz")
            if container.get("livenessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
                fail(where, "liveness is not on /healthz")
            if not container.get("resources", {}).get("requests"):
                fail(where, "no resource requests")

# Compose.
spec_dir = importlib.util.find_spec("compose").submodule_search_locations[0]
with open(os.path.join(spec_dir, "config", "compose_spec.json"), encoding="utf-8") as handle:
    compose_schema = json.load(handle)
with open(path("compose", "compose.yaml"), encoding="utf-8") as handle:
    compose = yaml.safe_load(handle)
for error in jsonschema.Draft7Validator(compose_schema).iter_errors(compose):
    fail("compose/compose.yaml", f"{'.'.join(str(p) for p in error.path)}: {error.message}")
services = compose.get("services", {})
apps = [name for name, service in services.items() if "build" in service]
if len(apps) < 2:
    fail("compose/compose.yaml", "fewer than two server instances")
for name in apps:
    check_settings(f"compose/compose.yaml ({name})", (services[name].get("environment") or {}).keys())
for name in ("db", "db-replica", "nginx"):
    if name not in services:
        fail("compose/compose.yaml", f"no {name} service")

# Dockerfile: what it copies exists; what it sets is a setting.
dockerfile = open(path("compose", "Dockerfile"), encoding="utf-8").read()
for source in re.findall(r"^COPY (?!--from)(\S+)", dockerfile, re.M):
    if not os.path.exists(os.path.join(root, source)):
        fail("compose/Dockerfile", f"COPY {source}: no such path")
for line in re.findall(r"^ENV (.+)$", dockerfile, re.M):
    check_settings("compose/Dockerfile", [pair.split("=", 1)[0] for pair in line.split()])

# systemd.
unit = open(path("systemd", "data4help.service"), encoding="utf-8").read()
for option in ("ExecStart=", "Restart=on-failure", "NoNewPrivileges=yes", "ProtectSystem=strict", "EnvironmentFile="):
    if option not in unit:
        fail("systemd/data4help.service", f"no {option}")
environment = open(path("systemd", "data4help.env.example"), encoding="utf-8").read()
check_settings("systemd/data4help.env.example", re.findall(r"^([A-Z][A-Z0-9_]*)=", environment, re.M))

# nginx against the contract.
with open(os.path.join(root, "openapi", "data4help.yaml"), encoding="utf-8") as handle:
    contract_paths = set(yaml.safe_load(handle)["paths"].keys())
nginx = open(path("compose", "nginx.conf"), encoding="utf-8").read()
if "/api/runs/{runId}/live" not in contract_paths or r"location ~ ^/api/runs/[^/]+/live$" not in nginx or "proxy_set_header Upgrade" not in nginx:
    fail("compose/nginx.conf", "no WebSocket upgrade for the live view")
stream = re.search(r"location = (\S+) \{[^}]*proxy_buffering off;", nginx)
if not stream or stream.group(1) not in contract_paths:
    fail("compose/nginx.conf", "no unbuffered location for the event stream of the contract")

if failures:
    print("deploy/ check failed:", *failures, sep="\n  ")
    sys.exit(1)
print(f"deploy/ valid: Kubernetes {KUBERNETES_VERSION} schemas (strict), the Compose specification, settings, nginx routes, systemd hardening")
