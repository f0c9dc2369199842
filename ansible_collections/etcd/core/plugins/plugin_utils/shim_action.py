# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Runs every etcd.core module through the one shim binary built for the target.

The modules under plugins/modules are documentation stubs; this action plugin resolves on the
controller what only the controller knows, then runs the binary module
``etcd_shim_<arch>`` for the target's architecture with the resolved module name:

* connection settings left unset in the task come from the controller's ``ETCDCTL_*``
  environment (where Ansible Automation Platform injects credentials);
* PEM files named by that environment are read here and sent as content, so no key file is
  ever copied to, or left on, the target;
* the target's architecture comes from ``uname -m`` (no Python needed there).
"""

from __future__ import annotations

import os
import platform

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

# Task option -> controller environment variable, as etcdctl names them.
ENV_OPTIONS = (
    ("endpoints", "ETCDCTL_ENDPOINTS"),
    ("user", "ETCDCTL_USER"),
    ("password", "ETCDCTL_PASSWORD"),
    ("insecure_skip_tls_verify", "ETCDCTL_INSECURE_SKIP_TLS_VERIFY"),
    ("dial_timeout", "ETCDCTL_DIAL_TIMEOUT"),
    ("command_timeout", "ETCDCTL_COMMAND_TIMEOUT"),
    ("discovery_srv", "ETCDCTL_DISCOVERY_SRV"),
    ("discovery_srv_name", "ETCDCTL_DISCOVERY_SRV_NAME"),
)
# PEM options whose controller-side file is sent as content.
PEM_OPTIONS = (
    ("cacert", "cacert_content", "ETCDCTL_CACERT"),
    ("cert", "cert_content", "ETCDCTL_CERT"),
    ("key", "key_content", "ETCDCTL_KEY"),
)
# Modules that do not talk to a cluster take no connection options.
NO_CONNECTION = ("etcd_snapshot_info", "etcd_snapshot_restore")
ARCH_ALIASES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}


def _unset(args, name):
    return args.get(name) in (None, "")


def controller_connection(args, environ):
    """Fills connection options the task left unset from the controller's environment."""
    args = dict(args)
    for option, variable in ENV_OPTIONS:
        if _unset(args, option) and environ.get(variable):
            args[option] = environ[variable]
    for path_option, content_option, variable in PEM_OPTIONS:
        if _unset(args, path_option) and _unset(args, content_option) and environ.get(variable):
            path = environ[variable]
            try:
                with open(path, "r", encoding="utf-8") as handle:
                    args[content_option] = handle.read()
            except OSError as exc:
                raise AnsibleActionFail(
                    "cannot read %s=%s on the controller: %s" % (variable, path, exc.strerror)
                ) from None
    return args


class ActionModule(ActionBase):
    """Dispatches an etcd.core module to the shim binary for the target's architecture."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _target_arch(self):
        if getattr(self._connection, "transport", "") == "local":
            machine = platform.machine()
        else:
            res = self._low_level_execute_command("uname -m", sudoable=False)
            if res.get("rc") != 0:
                raise AnsibleActionFail(
                    "cannot tell the target's architecture: 'uname -m' failed: %s"
                    % (res.get("stderr") or res.get("stdout") or "no output").strip()
                )
            machine = res.get("stdout", "").strip()
        return ARCH_ALIASES.get(machine, machine)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        module = self._task.action.split(".")[-1]
        args = dict(self._task.args)
        if module not in NO_CONNECTION:
            args = controller_connection(args, os.environ)
        arch = self._target_arch()
        binary = "etcd.core.etcd_shim_%s" % arch
        if not self._shared_loader_obj.module_loader.has_plugin(binary):
            raise AnsibleActionFail(
                "etcd.core has no module binary for the target's architecture '%s'; "
                "build one with scripts/build-collection (see the collection README, "
                "'Architectures')" % arch
            )
        args["_etcd_module"] = module
        result.update(
            self._execute_module(module_name=binary, module_args=args, task_vars=task_vars)
        )
        return result
