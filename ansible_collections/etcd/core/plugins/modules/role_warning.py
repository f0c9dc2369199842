# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of etcd.core.role_warning; the work is done by its action plugin on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: role_warning
short_description: Show a role's warning as an Ansible warning
version_added: 0.6.0
description:
  - Shows O(msg) as Ansible shows a module's warnings (C([WARNING]) in the output, in the job's
    warnings in Automation Platform), where a C(debug) message would scroll by unnoticed. The
    etcd.core roles use it, for example when a cluster shrinks to a size that tolerates no failure.
  - Runs on the controller; changes nothing.
options:
  msg:
    description: The warning.
    type: str
    required: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    support: full
    platforms: all
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
author:
  - etcdops contributors (@etcdops)
"""

EXAMPLES = r"""
- name: Say that two members tolerate no failure
  etcd.core.role_warning:
    msg: "etcd.core.cluster: 2 members remain; the cluster now tolerates no failure (3 tolerate one)"
  when: members | length < 3
"""

RETURN = r"""
msg:
  description: The warning.
  returned: always
  type: str
  sample: "etcd.core.cluster: 2 members remain; the cluster now tolerates no failure (3 tolerate one)"
"""
