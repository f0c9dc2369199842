# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of etcd.core.etcd_snapshot_restore: the shared dispatcher to the shim binary.

A restore talks to no cluster, so the controller's ``ETCDCTL_*`` connection is not sent,
except with ``skip_in_service``: then the module asks the cluster whether it already runs from
this very restore, over the same connection every other module of the play uses (an Automation
Platform credential included).

With ``remote_src: false``, ``snapshot`` is a path on the controller (a backup file, or a
directory laid out as a file store, as ``etcd_snapshot_copy`` writes it): it is uploaded into
this task's remote tmp dir (a file with its manifest, a directory with its layout), the option
is rewritten to the uploaded path and the restore runs on the target, which never reads the
store. The tmp dir is removed when the task ends.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.etcd.core.plugins.plugin_utils.shim_action import (
    ActionModule as ShimActionModule,
    controller_connection,
)

# A backup's manifest is the object's name with this suffix.
MANIFEST_SUFFIX = ".manifest.json"


def controller_source(snapshot):
    """The controller path ``snapshot`` names with ``remote_src: false``, or a failure."""
    path = snapshot[len("file://"):] if snapshot.startswith("file://") else snapshot
    if "://" in path:
        raise AnsibleActionFail(
            "remote_src: false needs snapshot to be a path on the controller (a backup file or "
            "a directory etcd_snapshot_copy wrote), not the store URL %s; copy it there first "
            "with etcd.core.etcd_snapshot_copy" % snapshot
        )
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        raise AnsibleActionFail(
            "remote_src: false needs snapshot to be an absolute path on the controller, not %r"
            % snapshot
        )
    if not os.path.exists(path):
        raise AnsibleActionFail(
            "remote_src: false: the controller has no %s (snapshot names a controller path)"
            % path
        )
    return path


class ActionModule(ShimActionModule):
    """etcd_snapshot_restore: the controller's connection settings for ``skip_in_service``,
    and the upload of a controller-side backup for ``remote_src: false``."""

    def connection_args(self, module, args):
        if boolean(args.get("skip_in_service") or False, strict=False):
            return controller_connection(args, os.environ)
        return args

    def run(self, tmp=None, task_vars=None):
        args = dict(self._task.args)
        if boolean(args.get("remote_src", True), strict=False):
            return super(ActionModule, self).run(tmp, task_vars)
        result = super(ShimActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        if args.get("from_data_dir") not in (None, ""):
            raise AnsibleActionFail(
                "remote_src: false uploads a backup from the controller; from_data_dir is a "
                "member's data dir on the target: drop remote_src or from_data_dir"
            )
        if args.get("snapshot") in (None, ""):
            raise AnsibleActionFail("remote_src: false needs snapshot (a path on the controller)")
        local = controller_source(str(args["snapshot"]))
        if os.path.isdir(local):
            args["snapshot"] = self.upload_tree(local, task_vars)
        else:
            remote = self.upload(local, task_vars)
            if os.path.isfile(local + MANIFEST_SUFFIX):
                self.upload(local + MANIFEST_SUFFIX, task_vars)
            args["snapshot"] = remote
        args["remote_src"] = True
        result.update(self.run_shim("etcd_snapshot_restore", args, task_vars))
        return result
