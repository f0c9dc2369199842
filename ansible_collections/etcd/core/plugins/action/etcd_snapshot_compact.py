# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of etcd.core.etcd_snapshot_compact: the shared dispatcher to the shim binary."""

from __future__ import annotations

from ansible_collections.etcd.core.plugins.plugin_utils.shim_action import ActionModule  # noqa: F401 pylint: disable=unused-import
