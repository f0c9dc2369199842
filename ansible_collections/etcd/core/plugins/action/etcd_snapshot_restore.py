# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of etcd.core.etcd_snapshot_restore: the shared dispatcher to the shim binary.

A restore talks to no cluster, so the controller's ``ETCDCTL_*`` connection is not sent,
except with ``skip_in_service``: then the module asks the cluster whether it already runs from
this very restore, over the same connection every other module of the play uses (an Automation
Platform credential included).
"""

from __future__ import annotations

import os

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.etcd.core.plugins.plugin_utils.shim_action import (
    ActionModule as ShimActionModule,
    controller_connection,
)


class ActionModule(ShimActionModule):
    """etcd_snapshot_restore: the controller's connection settings for ``skip_in_service``."""

    def module_args(self, module, args):
        args = super(ActionModule, self).module_args(module, args)
        if boolean(args.get("skip_in_service") or False, strict=False):
            args = controller_connection(args, os.environ)
        return args
