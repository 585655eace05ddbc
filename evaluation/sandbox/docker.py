"""Docker backend (notes/sandbox.md §5): one throw-away container per batch.

Optional: needs the docker SDK 7.x (``pip install docker``; deliberately not a project
dependency) and a reachable engine. Pair it with userns-remap or rootless Docker.

Inside the container the same ``runner.py`` runs as root with only SETUID/SETGID/KILL
capabilities, writes each spec's files to a ``/sandbox`` tmpfs and starts every spec in a fresh
process dropped to uid 65534 with ``no_new_privs`` and rlimits; between specs it kills every
uid-65534 process and empties ``/tmp``. The batch is bound read-only at ``/batch``; the result
envelope is the last line of the container's stdout. Docker's ``init`` (tini) is PID 1.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import tempfile
from typing import Any

from evaluation.sandbox.base import RunResult, RunSpec, RunStatus, Sandbox, SandboxUnavailable
from evaluation.sandbox.bwrap import (
    RUNNER_DIR,
    decode_envelope,
    encode_batch,
    fingerprint,
    runtime_dir,
    sandbox_errors,
)

logger = logging.getLogger(__name__)

DEFAULT_IMAGE = "python:3.11-slim"
LABEL = "haieval.sandbox"  # a periodic reaper removes stale containers by this label
RUNNER_OVERHEAD_MIB = 64
SLACK_S = 30


def _setting(name: str, default: Any) -> Any:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        return getattr(settings, name, default)
    except ImproperlyConfigured:
        return default


class DockerBackend(Sandbox):
    name = "docker"

    def __init__(self, image: str | None = None, runtime: str | None = None) -> None:
        try:
            self._docker: Any = importlib.import_module("docker")
        except ImportError:
            raise SandboxUnavailable(
                "The docker backend needs the docker SDK (pip install 'docker>=7')."
            ) from None
        try:
            self.client: Any = self._docker.from_env()
            self.client.ping()
        except Exception as exc:  # DockerException, requests errors: no engine
            raise SandboxUnavailable(f"No Docker engine is reachable ({exc}).") from None
        self.image = image or _setting("EVALUATION_DOCKER_IMAGE", DEFAULT_IMAGE)
        self.runtime = runtime or _setting("EVALUATION_DOCKER_RUNTIME", None)  # e.g. "runsc"

    @property
    def safe(self) -> bool:
        return True

    @property
    def host_fingerprint(self) -> str:
        try:
            image_id = str(self.client.images.get(self.image).id)
        except Exception:
            image_id = "unknown-image"
        return fingerprint(self.name, self.image, image_id)

    def fingerprint(self) -> str:
        return self.host_fingerprint

    def _create(self, specs: list[RunSpec], batch_dir: str) -> Any:
        types = self._docker.types
        mem = max(spec.mem_mib for spec in specs) + 128 + RUNNER_OVERHEAD_MIB
        tmpfs = max(spec.tmpfs_mib for spec in specs)
        cpu = int(max(spec.cpu_s for spec in specs)) + 2
        files = sum(len(data) for spec in specs for data in spec.files.values())
        log_mib = 1 + sum(spec.out_cap * 4 // 3 + 16_384 for spec in specs) // (1 << 20) + 1
        return self.client.containers.create(
            self.image,
            command=["python3", "-I", "-S", "-B", "/judge/runner.py", "--batch", "/batch/b.json"],
            user="0:0",
            cap_drop=["ALL"],
            cap_add=["SETUID", "SETGID", "KILL"],
            security_opt=["no-new-privileges:true"],
            network_mode="none",
            network_disabled=True,
            ipc_mode="none",
            read_only=True,
            tmpfs={
                "/tmp": f"rw,size={tmpfs}m,mode=1777,nosuid,nodev",  # noqa: S108 - container's
                "/sandbox": f"rw,size={files // (1 << 20) + 4}m,mode=755,nosuid,nodev",
            },
            volumes={
                str(RUNNER_DIR): {"bind": "/judge", "mode": "ro"},
                batch_dir: {"bind": "/batch", "mode": "ro"},
                # Task runtimes: the host's install from the same lock file, read-only.
                **{
                    runtime_dir(spec): {"bind": f"/runtime/{spec.runtime}", "mode": "ro"}
                    for spec in specs
                    if runtime_dir(spec)
                },
            },
            mem_limit=f"{mem}m",
            memswap_limit=f"{mem}m",
            mem_swappiness=0,
            nano_cpus=1_000_000_000,
            pids_limit=max(spec.processes for spec in specs) + 8,  # runner, tini, harness
            oom_score_adj=1000,
            ulimits=[
                types.Ulimit(name="cpu", soft=cpu, hard=cpu),
                types.Ulimit(name="core", soft=0, hard=0),
                types.Ulimit(name="nofile", soft=256, hard=256),
            ],
            environment={},
            labels={LABEL: "1"},
            init=True,
            runtime=self.runtime,
            log_config=types.LogConfig(
                type="json-file", config={"max-size": f"{log_mib}m", "max-file": "1"}
            ),
            working_dir="/tmp",  # noqa: S108 - the container's own tmpfs
            detach=True,
        )

    def run_batch(self, specs: list[RunSpec]) -> list[RunResult]:
        if not specs:
            return []
        fp = self.host_fingerprint
        timeout = sum(spec.effective_wall_s + 3.0 for spec in specs) + SLACK_S
        with tempfile.TemporaryDirectory(prefix="haieval-batch-") as batch_dir:
            # readable by the container's (remapped) root; the batch holds no secrets
            os.chmod(batch_dir, 0o755)  # noqa: S103
            with open(os.path.join(batch_dir, "b.json"), "wb") as handle:
                handle.write(encode_batch("docker", specs))
            try:
                container = self._create(specs, batch_dir)
            except Exception as exc:
                return sandbox_errors(specs, f"Docker could not create the container ({exc}).",
                                      self.name, fp)  # fmt: skip
            try:
                container.start()
                try:
                    container.wait(timeout=timeout)
                except Exception:  # read timeout: stop it, report what finished
                    container.kill()
                logs = container.logs(stdout=True, stderr=False)
                container.reload()
                oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
            except Exception as exc:
                return sandbox_errors(specs, f"The container failed ({exc}).", self.name, fp)
            finally:
                try:
                    container.remove(force=True)
                except Exception:
                    logger.exception("could not remove sandbox container %s", container.id)
        results = decode_envelope(logs, specs, self.name, fp)
        if oom and all(r.status == RunStatus.SANDBOX_ERROR for r in results):
            detail = "The container was killed by the kernel's OOM killer."
            return sandbox_errors(specs, detail, self.name, fp)
        return results

    def self_test(self) -> tuple[bool, str]:
        code = "import json, os; print(json.dumps({'uid': os.getuid()}))"
        spec = RunSpec(files={}, argv=("python3", "-I", "-S", "-B", "-c", code))
        (result,) = self.run_batch([spec])
        self.accounting = str(result.extra.get("accounting", ""))
        if result.status != RunStatus.OK:
            return False, f"The probe ended {result.status.value}: {result.detail}"
        try:
            uid = json.loads(result.stdout).get("uid")
        except (ValueError, AttributeError):
            uid = None
        if uid != 65534:
            return False, f"The probe did not run as uid 65534 (saw {uid!r})."
        return True, (
            f"docker sandbox works with image {self.image}: uid 65534; "
            f"accounting: {self.accounting}."
        )
