"""How dragnet builds its image (docker/Dockerfile), and why a build failed, in one line.

The choice: the build's RUN steps use the host's network unless DRAGNET_DOCKER_BUILD_NETWORK names another
(e.g. `bridge`, the engine's default). An engine without NAT for its bridge (dockerd --iptables=false
--ip-masq=false) leaves a bridged build without DNS and routes, and the Dockerfile is dragnet's own, so
giving its package managers the host's network is safe and spares a failed attempt (about a minute of apt
timeouts) before a retry. Likewise pip and npm get the certificates of the host's CA bundle that the public
(certifi) one lacks, e.g. a TLS-intercepting proxy's CA, as a build argument of the build stages only
(docker/Dockerfile; never a layer of the image); DRAGNET_DOCKER_CA_BUNDLE names another bundle, `none` none.

When a build still fails, classify() reads its log: the step that failed and whether its output shows no
network, an untrusted certificate, or neither (a genuine error of the Dockerfile or a package). All of this
is pure but for finding the host's bundle; dragnet.couchdb.docker runs the build.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

CA_ENV = "DRAGNET_DOCKER_CA_BUNDLE"
NETWORK_ENV = "DRAGNET_DOCKER_BUILD_NETWORK"
DEFAULT_NETWORK = "host"
ENGINE_NETWORKS = ("host", "bridge", "none")   # the engine's own; anything else names a network it holds
NO_CA = "none"
# Where distributions keep the system's CA bundle (Debian/Ubuntu, Fedora/RHEL, openSUSE, Alpine/macOS).
HOST_CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                   "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem")


@dataclass(frozen=True)
class Settings:
    """What a build ran with, as the failure message needs it."""
    network: str            # the network of the RUN steps ("host", "bridge", a network's name)
    ca_bundle: str | None   # the bundle the extra certificates came from, None: none
    ca_auto: bool = False   # the bundle was found on the host, not named by CA_ENV
    ca_certificates: int = 0


def build_network(env: dict) -> str:
    return env.get(NETWORK_ENV) or DEFAULT_NETWORK


def ca_bundle(env: dict, candidates: tuple[str, ...] = HOST_CA_BUNDLES) -> tuple[str | None, bool]:
    """(the CA bundle to take extra certificates from, whether it was found rather than named)."""
    named = env.get(CA_ENV)
    if named:
        return (None, False) if named == NO_CA else (named, False)
    found = env.get("SSL_CERT_FILE") or next((p for p in candidates if os.path.isfile(p)), None)
    return found, found is not None


# --- build failures --------------------------------------------------------------------------------

STEP = re.compile(r"^Step (\d+/\d+) : (.*)$", re.M)
ERROR_PREFIX = "# error: "   # the engine's error, as the log file notes it (pip's own lines start "ERROR: ")
ANSI = re.compile(r"\x1b\[[0-9;]*m")   # the engine colours a RUN step's stderr
# the builder's own lines and `set -x` traces: not what a step said about its failure
NOISE = (" ---> ", "Removing intermediate container", "+ ")
# the output of a RUN step that could not reach the network: apt, pip (urllib3), npm (Node)
NETWORK = re.compile(r"Temporary failure resolving|Temporary failure in name resolution|Could not resolve"
                     r"|Name or service not known|Could not connect to|Failed to establish a new connection"
                     r"|Network is unreachable|No route to host|Connection timed out|ConnectTimeoutError"
                     r"|\b(EAI_AGAIN|ENOTFOUND|ETIMEDOUT|ENETUNREACH|ECONNREFUSED|ECONNRESET)\b", re.I)
# a TLS peer signed by a CA the step does not know: OpenSSL (pip), Node's codes (npm), GnuTLS (apt https)
CERTIFICATE = re.compile(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|SELF_SIGNED_CERT_IN_CHAIN"
                         r"|UNABLE_TO_GET_ISSUER_CERT|unable to get local issuer certificate"
                         r"|self[- ]signed certificate in certificate chain|UNABLE_TO_VERIFY_LEAF_SIGNATURE"
                         r"|Certificate verification failed", re.I)


@dataclass(frozen=True)
class Failure:
    step: str | None   # "6/34" as the engine numbered the steps; None when it failed before the first
    instruction: str   # the step's instruction ("RUN set -eux; ..."), "" without a step
    cause: str         # "network", "certificate" or "build"
    evidence: str      # the line of the step's output that shows the cause, else the engine's error


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def classify(log: str) -> Failure:
    """Why the build whose log (log_line() of each chunk the engine sent) failed."""
    log = ANSI.sub("", log)
    steps = list(STEP.finditer(log))
    last = steps[-1] if steps else None
    tail = log[last.end():] if last else log
    error = next((ln[len(ERROR_PREFIX):] for ln in reversed(tail.splitlines()) if ln.startswith(ERROR_PREFIX)),
                 "")
    step, instruction = (last.group(1), last.group(2).strip()) if last else (None, "")
    output = [ln for ln in tail.splitlines() if ln.strip() and not ln.startswith((ERROR_PREFIX, *NOISE))]
    # certificates first: pip reports an untrusted proxy as a connection error ("Max retries exceeded")
    for cause, pattern in (("certificate", CERTIFICATE), ("network", NETWORK)):
        hit = next((m for m in map(pattern.search, [*output, error]) if m), None)
        if hit is not None:
            line = hit.string.strip()
            if len(line) > 160:   # pip's retry warnings: from what matched on
                line = hit.string[hit.start():].strip()
            return Failure(step, instruction, cause, line)
    # what the step said last (apt's "E: ...", pip's "ERROR: ..."), else the engine's error (COPY failed)
    return Failure(step, instruction, "build", output[-1].strip() if output else error.strip() or "no output")


def fix(failure: Failure, settings: Settings) -> str:
    """The likely cause and the setting that fixes it."""
    if failure.cause == "network":
        if settings.network != "host":
            return (f"the build's containers cannot reach the network on {settings.network!r} (an engine "
                    f"without NAT for it?): unset {NETWORK_ENV} or set it to host")
        return ("the host's network did not reach the package mirrors either: check the host's DNS and route "
                f"(or give {NETWORK_ENV} a network that does)")
    if failure.cause == "certificate":
        if settings.ca_bundle is None:
            return (f"a certificate the build does not trust (a TLS-intercepting proxy?): set {CA_ENV} to a "
                    "PEM bundle holding the proxy's CA")
        where = "the host's CA bundle " if settings.ca_auto else ""
        return (f"a certificate the build does not trust, not in {where}{settings.ca_bundle} "
                f"({settings.ca_certificates} certificates beyond the public ones): set {CA_ENV} to a PEM "
                "bundle holding the proxy's CA")
    return "neither the network nor a certificate: an error of the Dockerfile or of a package"


def message(image: str, failure: Failure, settings: Settings, log_path: Path | str) -> str:
    """One line: the step that failed, what its output says, the likely cause and its fix, the log's path."""
    at = f" at step {failure.step} ({_shorten(failure.instruction, 60)})" if failure.step else ""
    return (f"building {image} failed{at}: {_shorten(failure.evidence, 160)}; {fix(failure, settings)} "
            f"(full log: {log_path})")


def log_line(chunk: dict) -> str:
    """The text of one decoded chunk of the engine's build stream, as the log file keeps it."""
    if "error" in chunk:
        return f"{ERROR_PREFIX}{chunk['error'].strip()}\n"
    if chunk.get("stream"):
        return ANSI.sub("", chunk["stream"])
    if chunk.get("status"):  # a base image being pulled (its progress bars left out)
        return " ".join(str(chunk[k]) for k in ("status", "id") if chunk.get(k)) + "\n"
    return ""


def log_path(state_dir: Path, image: str) -> Path:
    """Where the build log of `image` goes: the state directory, one file per tag (the last build's)."""
    return Path(state_dir) / ("build-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", image) + ".log")
