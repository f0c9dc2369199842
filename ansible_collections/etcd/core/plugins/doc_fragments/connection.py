# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Options shared by every etcd.core module that talks to a cluster."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """The connection options, documented once (defined once in the shim's Rust code)."""

    DOCUMENTATION = r"""
options:
  endpoints:
    description:
      - Client URLs of the cluster (C(https://10.0.0.1:2379)) or C(host:port) pairs.
      - Falls back to C(ETCDCTL_ENDPOINTS) (the controller's environment first, then the target's),
        then C(127.0.0.1:2379).
    type: list
    elements: str
  cacert:
    description:
      - Path on the target of the PEM CA bundle that signs the servers' certificates.
      - When unset and C(ETCDCTL_CACERT) is set on the controller, the controller reads that file
        and sends its content (nothing is copied to the target).
    type: path
  cert:
    description: Path on the target of the PEM client certificate (C(ETCDCTL_CERT) as for O(cacert)).
    type: path
  key:
    description: Path on the target of the PEM client key (C(ETCDCTL_KEY) as for O(cacert)).
    type: path
  cacert_content:
    description: PEM data of the CA bundle, for material held in a vault or a credential.
    type: str
  cert_content:
    description: PEM data of the client certificate.
    type: str
  key_content:
    description:
      - PEM data of the client key. Never shown in results or messages.
    type: str
  user:
    description: User name, or C(name:password). Falls back to C(ETCDCTL_USER).
    type: str
  password:
    description: Password of O(user). Never shown in results or messages. Falls back to C(ETCDCTL_PASSWORD).
    type: str
  auth_jwt_token:
    description:
      - A JWT etcd issued (a cluster started with C(--auth-token jwt,...)), sent with every request instead
        of O(user) and O(password), as etcdctl 3.7's C(--auth-jwt-token). Not with O(user).
      - Never shown in results or messages. Falls back to C(ETCDCTL_AUTH_JWT_TOKEN).
    type: str
  insecure_skip_tls_verify:
    description: Accept any server certificate. Never the default; a warning is printed when used.
    type: bool
    default: false
  server_name:
    description: Name to verify the servers' certificates against instead of the endpoint's host.
    type: str
  discovery_srv:
    description: Domain whose DNS SRV records (C(_etcd-client-ssl._tcp), then C(_etcd-client._tcp)) list the endpoints.
    type: str
  discovery_srv_name:
    description: Suffix of the SRV service name, as etcdctl's C(--discovery-srv-name).
    type: str
  insecure_discovery:
    description: Accept plain-http C(_etcd-client._tcp) SRV records.
    type: bool
  dns_server:
    description: DNS server (C(IP) or C(IP:PORT)) for SRV lookups instead of the system resolver.
    type: str
  dial_timeout:
    description:
      - Time allowed to connect, as C(2s), C(500ms) or a number of seconds.
      - Falls back to C(ETCDCTL_DIAL_TIMEOUT).
    type: str
    default: 2s
  command_timeout:
    description:
      - Time allowed for one request, as C(5s) or a number of seconds.
      - Falls back to C(ETCDCTL_COMMAND_TIMEOUT).
    type: str
    default: 5s
  platform:
    description:
      - C(auto) fills O(endpoints), O(cacert), O(cert) and O(key), where the task and the
        C(ETCDCTL_*) variables leave them unset, from the etcd found on the host the module
        runs on (a kubeadm or OpenShift static pod, or a package's configuration; see
        M(etcd.core.etcd_platform_info)). No etcd found is an error.
    type: str
    choices: [auto]
  platform_root:
    description:
      - The directory standing for C(/) wherever the module reads the host's own files
        (O(platform=auto), the guards that look for an operator or a running etcd, static pod
        manifests), for a host whose root is mounted elsewhere, as in a container that runs
        the module with the host mounted at C(/host).
    type: path
    default: /
    aliases: [root]
notes:
  - Options left unset fall back to the C(ETCDCTL_*) variables, first of the controller's
    environment (resolved by the action plugin), then of the target's.
  - Set the connection once per play with C(module_defaults) and the group C(group/etcd.core.etcd).
"""

    STORE = r"""
options:
  s3_endpoint:
    description: Endpoint of an S3-compatible service (MinIO, Ceph); C(AWS_ENDPOINT_URL) also works.
    type: str
  s3_region:
    description: S3 region; C(AWS_REGION) / C(AWS_DEFAULT_REGION) also work.
    type: str
  s3_path_style:
    description: Path-style S3 requests (most S3-compatible services need them).
    type: bool
    default: false
  allow_http:
    description: Allow a plain-http store endpoint (test setups only).
    type: bool
    default: false
  azure_emulator:
    description: Use the Azurite emulator's well-known account.
    type: bool
    default: false
  store_endpoint:
    description: Endpoint override for GCS or Azure.
    type: str
  part_size:
    description: Multipart upload part size in bytes.
    type: int
  store_ca_bundle:
    description:
      - Path on the host the module runs on of a PEM bundle of CA certificates trusted for the
        store endpoint besides the system's (MinIO or Ceph behind a private CA).
      - Falls back to C(ETCDOPS_STORE_CA_BUNDLE), then C(AWS_CA_BUNDLE), of that host's environment.
    type: path
    version_added: 0.6.0
notes:
  - Store credentials come only from the environment of the host the module runs on
    (C(AWS_*), C(GOOGLE_APPLICATION_CREDENTIALS), C(AZURE_STORAGE_*)), from credential files, or
    from instance metadata; never from task options, so they never appear in results.
"""
