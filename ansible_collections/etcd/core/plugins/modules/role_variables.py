# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of etcd.core.role_variables; the work is done by its action plugin on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: role_variables
short_description: Fail a role at its start on a misspelled role variable
version_added: 0.6.0
description:
  - The first task of every etcd.core role. Ansible checks a role's argument spec against its role
    parameters only; a variable set under a play's C(vars:), in group_vars or host_vars, or as an
    extra var is never checked, so a misspelled one was silently ignored and the role ran with the
    default.
  - "This action runs on the controller. It reads the running role's C(meta/argument_specs.yml) (every
    entry point) and fails when a variable that carries one of the role's prefixes is not declared
    there, naming the closest declared variable, for example
    C(etcd.core.restore: unknown variable restore_s3_endpoit; did you mean restore_s3_endpoint?)."
  - The prefixes come from the same file - C(<role>_) and C(etcd_<role>_), each when at least one
    declared variable carries it (C(backup_), C(restore_), C(member_replace_), C(quorum_recover_),
    C(cluster_), and C(etcd_service_) for etcd.core.service). Another role's variables (C(restore_store)
    in group_vars of a play that runs etcd.core.backup) are not this role's concern.
  - The shared C(etcd_*) host variables are not checked - inventories hold unrelated C(etcd_*) variables
    of their own, which a closeness test would flag. Variables set by C(set_fact) or C(register) are not
    checked either (roles keep their own state there).
  - A variable of another tool that shares a prefix (a C(backup_dir) of another backup role in the same
    inventory) is left alone when listed in the host variable C(etcd_core_unchecked_variables).
  - Can be used in your own roles the same way (it checks the role it runs in).
options: {}
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
notes:
  - Runs on the controller only; it never connects to the host.
  - Changes nothing, so C(changed) is always false.
author:
  - etcdops contributors (@etcdops)
"""

EXAMPLES = r"""
- name: Fail on a misspelled variable of this role
  etcd.core.role_variables:

# group_vars/all.yml: backup_dir belongs to another backup role of the inventory.
# etcd_core_unchecked_variables: [backup_dir]
"""

RETURN = r"""
prefixes:
  description: The prefixes of the running role's variables that were checked.
  returned: always
  type: list
  elements: str
  sample: [restore_]
unknown:
  description: The variables with those prefixes that the role does not declare (the task fails when any).
  returned: always
  type: list
  elements: str
  sample: [restore_s3_endpoit]
"""
