"""The images ``Dockerfile`` and ``docker-compose.yml`` name, built here from Debian packages.

No container registry is reachable from CI, so the deploy test (``test_compose_real.py``) builds
stand-ins once and tags them with the very names the files use; an image already tagged is
kept, so a second run builds nothing. ``standins/README.md`` says what each one is.

Run alone: ``.venv/bin/python -m tests.deploy.standins`` (as root, with Podman installed by
``scripts/ensure_podman.sh``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "standins"
BASE = "localhost/chips-standin/debian:bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# Where the base keeps this machine's bundle: apart from Debian's, which the ca-certificates
# package rewrites when an image installs it.
IMAGE_CA_BUNDLE = "/etc/ssl/host-ca-bundle.crt"

# Podman's settings for every podman the deploy test runs (CONTAINERS_CONF): runc, and limits
# a sandboxed machine lets a container set (Podman's defaults for root are above them).
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=16384:16384"]
[engine]
runtime = "runc"
"""


def podman_env(workdir: Path) -> dict[str, str]:
    conf = workdir / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    return {**os.environ, "CONTAINERS_CONF": str(conf)}


def say(message: str) -> None:
    print(f"standins: {message}", file=sys.stderr, flush=True)


def run(args: list[str], env: dict[str, str], timeout: float = 900, **kw: object) -> None:
    done = subprocess.run(args, env=env, timeout=timeout, check=False, **kw)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])}... exited {done.returncode}")


def qualified(name: str) -> list[str]:
    """The names a short image name is stored under, so that Podman finds it as Docker would."""
    first = name.split("/")[0]
    if "/" in name and ("." in first or ":" in first or first == "localhost"):
        return [name]
    library = name if "/" in name else f"library/{name}"
    return [f"docker.io/{library}", f"localhost/{name}"]


def built_from(name: str, env: dict[str, str]) -> str | None:
    """The digest of what the image under this name was built from, if it is there."""
    done = subprocess.run(
        ["podman", "image", "inspect", "--format", '{{index .Labels "chips.standin"}}', name],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def tag(image_id_or_name: str, name: str, env: dict[str, str]) -> None:
    for n in qualified(name):
        run(["podman", "tag", image_id_or_name, n], env)


# --- the names the files use -------------------------------------------------------------


def dockerfile_images() -> dict[str, str]:
    """``ARG *_IMAGE=`` defaults of the Dockerfile: PYTHON_IMAGE, UV_IMAGE, NODE_IMAGE."""
    text = (ROOT / "Dockerfile").read_text()
    return dict(re.findall(r"^ARG (\w+_IMAGE)=(\S+)", text, flags=re.MULTILINE))


def compose_images() -> dict[str, str]:
    """The infrastructure images of docker-compose.yml, by service."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    return {
        name: service["image"]
        for name, service in services.items()
        if "CHIPS_IMAGE" not in service.get("image", "")
    }


def version_of(image: str) -> str:
    found = re.search(r":v?(\d+\.\d+\.\d+)", image)
    assert found, f"{image} names no x.y.z version"
    return found[1]


# --- building ---------------------------------------------------------------------------


def build(name: str, containerfile: str, env: dict[str, str], files: dict[str, Path]) -> None:
    """Build and tag the image, unless it is there already, built from the same inputs."""
    digest = hashlib.sha256(containerfile.encode())
    for target, source in sorted(files.items()):
        digest.update(target.encode())
        if source.is_file():
            digest.update(source.read_bytes())
    label = digest.hexdigest()[:16]
    if all(built_from(n, env) == label for n in qualified(name)):
        return
    ensure_base(env)
    say(f"building {name}")
    containerfile += f"LABEL chips.standin={label}\n"
    with tempfile.TemporaryDirectory(prefix="chips-standin-") as tmp:
        context = Path(tmp)
        for target, source in files.items():
            if source.is_dir():
                shutil.copytree(source, context / target, symlinks=True)
            else:
                shutil.copy2(source, context / target)
        (context / "Containerfile").write_text(containerfile)
        iidfile = context / "image-id"
        run(
            ["podman", "build", "--pull=never", "--network=host", "-q",
             "--iidfile", str(iidfile), "-f", str(context / "Containerfile"), str(context)],
            env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        tag(iidfile.read_text().strip(), name, env)


APT = (
    "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
    "--no-install-recommends {} >/dev/null && rm -rf /var/lib/apt/lists/*"
)


def ensure_base(env: dict[str, str]) -> None:
    """A minimal Debian bookworm from debootstrap, with this machine's CA bundle."""
    if subprocess.run(["podman", "image", "exists", BASE], env=env, check=False).returncode == 0:
        return
    with tempfile.TemporaryDirectory(prefix="chips-standin-base-") as tmp:
        build_base(env, Path(tmp))


def build_base(env: dict[str, str], workdir: Path) -> None:
    rootfs = workdir / "rootfs"
    say("debootstrap a minimal Debian bookworm (about a minute)")
    run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR], env,
        stdout=subprocess.DEVNULL)  # fmt: skip
    (rootfs / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
    shutil.copy(CA_BUNDLE, rootfs / "etc/ssl/certs/ca-certificates.crt")
    shutil.copy(CA_BUNDLE, rootfs / IMAGE_CA_BUNDLE.lstrip("/"))
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for f in (rootfs / cache).glob("*"):
            if f.is_file():
                f.unlink()
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        run(
            ["podman", "import",
             "--change", f"ENV SSL_CERT_FILE={IMAGE_CA_BUNDLE}",
             "--change", f"ENV NODE_EXTRA_CA_CERTS={IMAGE_CA_BUNDLE}",
             "--change", 'CMD ["/bin/bash"]', "-", BASE],
            env, stdin=tar.stdout, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        tar.wait()
    shutil.rmtree(rootfs)


def build_python(name: str, env: dict[str, str], workdir: Path) -> None:
    build(name, f"FROM {BASE}\n{APT.format('python3')}\n", env, {})


def build_uv(name: str, env: dict[str, str], workdir: Path) -> None:
    """The uv binary alone at /uv, as in the official image, from the wheel of its version."""
    containerfile = f"""FROM {BASE} AS fetch
{APT.format("python3-pip")}
RUN PIP_CERT=$SSL_CERT_FILE pip download -q --no-deps --only-binary :all: -d /w \\
      uv=={version_of(name)} \\
 && python3 -m zipfile -e /w/uv-*.whl /w/x && install -m 755 /w/x/uv-*.data/scripts/uv /uv
FROM scratch
COPY --from=fetch /uv /uv
"""
    build(name, containerfile, env, {})


def build_node(name: str, env: dict[str, str], workdir: Path) -> None:
    node = Path(shutil.which("node") or "/usr/bin/node")
    major = name.split(":")[1].split("-")[0].split(".")[0]
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True).stdout
    assert version.startswith(f"v{major}."), (
        f"{name} wants Node {major}; this machine has {version}"
    )
    npm = Path(node).resolve().parent.parent / "lib/node_modules/npm"
    containerfile = f"""FROM {BASE}
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
"""
    build(name, containerfile, env, {"node": node.resolve(), "npm": npm})


def build_postgres(name: str, env: dict[str, str], workdir: Path) -> None:
    containerfile = f"""FROM {BASE}
{APT.format("postgresql")}
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
"""
    build(name, containerfile, env, {"postgres-entrypoint.sh": HERE / "postgres-entrypoint.sh"})


def build_redis(name: str, env: dict[str, str], workdir: Path) -> None:
    containerfile = f"""FROM {BASE}
{APT.format("redis-server")}
COPY redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
"""
    build(name, containerfile, env, {"redis-entrypoint.sh": HERE / "redis-entrypoint.sh"})


def build_nats(name: str, env: dict[str, str], workdir: Path) -> None:
    binary = Path(sys.executable).parent / "nats-server"
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout
    assert version_of(name) in version, f"{name}, but the dev dependency is {version}"
    containerfile = f"""FROM {BASE}
{APT.format("wget")}
COPY nats-server /usr/local/bin/nats-server
CMD ["nats-server"]
"""
    build(name, containerfile, env, {"nats-server": binary.resolve()})


def build_nginx(name: str, env: dict[str, str], workdir: Path) -> None:
    containerfile = f"""FROM {BASE}
{APT.format("nginx gettext-base wget")}
COPY nginx-entrypoint.sh /docker-entrypoint.sh
RUN mkdir -p /etc/nginx/templates
ENTRYPOINT ["/docker-entrypoint.sh"]
CMD ["nginx", "-g", "daemon off;"]
"""
    build(name, containerfile, env, {"nginx-entrypoint.sh": HERE / "nginx-entrypoint.sh"})


def build_s3(names: list[str], env: dict[str, str], workdir: Path, python: str, uv: str) -> None:
    lock = (ROOT / "uv.lock").read_text()
    found = re.search(r'^name = "moto"\nversion = "([^"]+)"', lock, flags=re.MULTILINE)
    assert found, "moto is not in uv.lock"
    moto = found[1]
    containerfile = f"""FROM {python}
COPY --from={uv} /uv /usr/local/bin/uv
RUN uv venv -q --python /usr/bin/python3 /opt/moto \\
 && uv pip install -q --python /opt/moto/bin/python "moto[server]=={moto}"
COPY minio mc /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/minio"]
"""
    build(names[0], containerfile, env, {"minio": HERE / "minio", "mc": HERE / "mc"})
    for other in names[1:]:
        tag(qualified(names[0])[0], other, env)


def build_jaeger(name: str, env: dict[str, str], workdir: Path, python: str) -> None:
    containerfile = f"""FROM {python}
COPY jaeger /usr/local/bin/jaeger
ENTRYPOINT ["/usr/local/bin/jaeger"]
"""
    build(name, containerfile, env, {"jaeger": HERE / "jaeger"})


def ensure(env: dict[str, str], workdir: Path) -> None:
    """Build every stand-in that is missing, or was built from other inputs than now's."""
    docker = dockerfile_images()
    images = compose_images()
    python, uv = docker["PYTHON_IMAGE"], docker["UV_IMAGE"]
    build_python(python, env, workdir)
    build_uv(uv, env, workdir)
    build_node(docker["NODE_IMAGE"], env, workdir)
    build_postgres(images["postgres"], env, workdir)
    build_redis(images["redis"], env, workdir)
    build_nats(images["nats"], env, workdir)
    build_nginx(images["lb"], env, workdir)
    build_s3([images["minio"], images["minio-init"]], env, workdir, python, uv)
    build_jaeger(images["jaeger"], env, workdir, python)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="chips-standins-") as tmp:
        ensure(podman_env(Path(tmp)), Path(tmp))
