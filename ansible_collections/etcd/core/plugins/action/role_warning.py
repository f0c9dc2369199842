# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of etcd.core.role_warning: a role's warning, shown as Ansible shows module warnings."""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    """Returns ``msg`` as a warning of the task (``[WARNING]: ...``, and in Automation Platform's job summary)."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(("msg",))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec={"msg": {"type": "str", "required": True}})[1]
        result.update(changed=False, msg=args["msg"], warnings=[args["msg"]])
        return result
