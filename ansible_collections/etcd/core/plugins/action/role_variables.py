# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of etcd.core.role_variables: unknown role variables fail the role at its start.

Ansible checks a role's argument spec against its role parameters only; a variable set under a
play's ``vars:``, in group_vars or host_vars, or as an extra var is never checked, so a typo there
(``restore_s3_endpoit``) is silently ignored and the role runs with its default. This plugin runs
on the controller as the first task of a role: it reads the running role's own
``meta/argument_specs.yml`` (the one declaration of its variables) and fails when a variable that
carries one of the role's prefixes is not declared there, naming the closest declared one.

The role's prefixes come from the same spec: ``<role>_`` and ``etcd_<role>_``, each only when at
least one declared variable carries it (``cluster_`` for etcd.core.cluster, ``etcd_service_``
for etcd.core.service). Shared ``etcd_*`` host variables are never flagged: inventories hold
unrelated ``etcd_*`` variables of their own. Variables set by ``set_fact`` or ``register`` are not
checked (roles set their own), nor names listed in ``etcd_core_unchecked_variables`` (a variable
of another tool that happens to share a prefix).
"""

from __future__ import annotations

import difflib
import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

SPEC_FILES = ("argument_specs.yml", "argument_specs.yaml")
UNCHECKED = "etcd_core_unchecked_variables"


def _declared(loader, role_path):
    """Every option of every entry point of the role's argument specs."""
    meta = os.path.join(role_path, "meta")
    specs = None
    for name in SPEC_FILES:
        path = os.path.join(meta, name)
        if os.path.isfile(path):
            specs = (loader.load_from_file(path) or {}).get("argument_specs")
            break
    if specs is None:
        for name in ("main.yml", "main.yaml"):
            path = os.path.join(meta, name)
            if os.path.isfile(path):
                specs = (loader.load_from_file(path) or {}).get("argument_specs")
                break
    if not specs:
        raise AnsibleActionFail(f"no argument specs in {meta}: the role declares no variables to check against")
    names = set()
    for entry_point in specs.values():
        names.update((entry_point or {}).get("options") or {})
    return names


def _set_by_tasks(task, host):
    """Names set on this host by set_fact or register so far (the roles' own state)."""
    manager = task.get_variable_manager()
    names = set()
    for cache in ("_nonpersistent_fact_cache", "_fact_cache"):
        store = getattr(manager, cache, None)
        if store is None:
            continue
        try:
            names.update(store.get(host) or {})
        except Exception:  # pylint: disable=broad-exception-caught
            # A fact cache plugin that cannot answer: check every name rather than fail.
            continue
    return names


def _describe(name, declared):
    close = difflib.get_close_matches(name, sorted(declared), n=1, cutoff=0.75)
    return f"{name}; did you mean {close[0]}?" if close else name


class ActionModule(ActionBase):
    """Fails the running role when a variable with its prefix is not one of its declared ones."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset()

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        role = self._task._role
        if role is None:
            raise AnsibleActionFail("etcd.core.role_variables runs as a task of a role (the first one)")
        role_path = role.get_role_path()
        short = os.path.basename(role_path)
        label = role.get_name()
        declared = _declared(self._loader, role_path)
        prefixes = tuple(p for p in (f"{short}_", f"etcd_{short}_") if any(n.startswith(p) for n in declared))
        unchecked = self._templar.template(task_vars.get(UNCHECKED, [])) or []
        if isinstance(unchecked, str):
            unchecked = [unchecked]
        skip = _set_by_tasks(self._task, task_vars.get("inventory_hostname")) | set(unchecked)
        unknown = sorted(
            name for name in task_vars if name.startswith(prefixes) and name not in declared and name not in skip
        )
        result.update(changed=False, prefixes=list(prefixes), unknown=unknown)
        if unknown:
            what = "variable" if len(unknown) == 1 else "variables"
            result.update(
                failed=True,
                msg=(
                    f"{label}: unknown {what} {', '.join(_describe(n, declared) for n in unknown)} "
                    f"(its variables: ansible-doc -t role {label}; a variable of something else that shares "
                    f"the prefix {'/'.join(prefixes)}: list it in {UNCHECKED})"
                ),
            )
        else:
            result["msg"] = f"{label}: every variable with the prefix {'/'.join(prefixes)} is one of its own"
        return result
