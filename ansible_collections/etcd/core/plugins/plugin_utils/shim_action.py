# -*- coding: utf-8 -*-
# Copyright: etcdops contributors
# Apache License 2.0 (see LICENSE)
"""Runs every etcd.core module through the one shim binary built for the target.

The modules under plugins/modules are documentation stubs; this action plugin resolves on the
controller what only the controller knows, then runs the shim binary
``files/etcd_shim_<arch>`` of this collection for the target's architecture:

* connection settings left unset in the task come from the controller's ``ETCDCTL_*``
  environment (where Ansible Automation Platform injects credentials);
* PEM files named by that environment are read here and sent as content, so no key file is
  ever copied to, or left on, the target;
* the task's options are validated here, with ansible-core's own validator, against the
  argument spec the shim's options types generate (``argument_specs.json`` beside this file,
  kept equal to them by the shim's tests): aliases resolved, the usual spellings of booleans,
  integers and lists coerced, unknown options, wrong choices and missing required options
  refused in Ansible's words before anything reaches the target;
* the shim is copied to the target once per version, to a cache directory
  (``etcd_core_shim_cache_dir``, default ``~/.ansible/etcd.core``) under a name that holds its
  SHA-256, so a later task copies only its arguments. One command both reads the target's
  architecture (``uname -m``, no Python needed there) and looks for the cached copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import secrets
import shlex
import subprocess
import tempfile

from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.module_utils.json_utils import _filter_non_json_lines
from ansible.parsing.mod_args import ModuleArgsParser
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

try:  # ansible-core 2.19+: module arguments may hold tagged values only its encoder writes.
    from ansible.module_utils.common.json import Direction, get_module_encoder

    ARGS_ENCODER = get_module_encoder("legacy", Direction.CONTROLLER_TO_MODULE)
except ImportError:  # older releases send plain JSON to binary modules
    ARGS_ENCODER = json.JSONEncoder

display = Display()

# Task option -> controller environment variable, as etcdctl names them.
ENV_OPTIONS = (
    ("endpoints", "ETCDCTL_ENDPOINTS"),
    ("user", "ETCDCTL_USER"),
    ("password", "ETCDCTL_PASSWORD"),
    ("auth_jwt_token", "ETCDCTL_AUTH_JWT_TOKEN"),
    ("insecure_skip_tls_verify", "ETCDCTL_INSECURE_SKIP_TLS_VERIFY"),
    ("dial_timeout", "ETCDCTL_DIAL_TIMEOUT"),
    ("command_timeout", "ETCDCTL_COMMAND_TIMEOUT"),
    ("discovery_srv", "ETCDCTL_DISCOVERY_SRV"),
    ("discovery_srv_name", "ETCDCTL_DISCOVERY_SRV_NAME"),
    # etcdctl has no such variable; the Automation Platform credential type injects it.
    ("server_name", "ETCDOPS_SERVER_NAME"),
)
# PEM options whose controller-side file is sent as content.
PEM_OPTIONS = (
    ("cacert", "cacert_content", "ETCDCTL_CACERT"),
    ("cert", "cert_content", "ETCDCTL_CERT"),
    ("key", "key_content", "ETCDCTL_KEY"),
)
# Every module's argument spec and whether it talks to a cluster, generated from the shim's
# options types (crates/ansible-shim/tests/argument_specs.rs writes and checks it).
ARGUMENT_SPECS_PATH = os.path.join(os.path.dirname(__file__), "argument_specs.json")
_ARGUMENT_SPECS = {}
# How a secret is shown in a refusal.
MASK = "********"
ARCH_ALIASES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
# Where the shims of this collection live: <collection>/files/etcd_shim_<arch>.
SHIM_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "files")
# The host variable naming the target directory that holds the cached shim copies.
CACHE_DIR_VAR = "etcd_core_shim_cache_dir"
DEFAULT_CACHE_DIR = "~/.ansible/etcd.core"
# Older cached versions of a shim are removed once no task has used them for this many days
# (each task touches the copy it runs).
STALE_DAYS = 1


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


def argument_specs():
    """Every module's ``{"argument_spec": ..., "connection": bool}``, read once."""
    if not _ARGUMENT_SPECS:
        with open(ARGUMENT_SPECS_PATH, "r", encoding="utf-8") as handle:
            _ARGUMENT_SPECS.update(json.load(handle))
    return _ARGUMENT_SPECS


def connects(module):
    """Whether ``module`` talks to a cluster (the controller's ETCDCTL_* settings apply)."""
    return argument_specs()[module]["connection"]


def option_names(spec):
    """The names an argument spec answers to: each option's and its aliases."""
    names = set(spec)
    for option in spec.values():
        names.update(option.get("aliases") or ())
    return names


def mapping_text(name, mapping):
    """A mapping option's values as text (it maps names to strings): numbers, booleans and
    dates written in YAML (``release: 2``) are taken as their text, as a string option takes
    them; a null value is refused."""
    out = {}
    for key, value in mapping.items():
        if value is None:
            raise AnsibleActionFail(
                "%s: the value of %s is null; give a string (quote it)" % (name, key)
            )
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, (bool, int, float)):
            out[key] = json.dumps(value)
        else:
            out[key] = str(value)
    return out


def same_option_twice(spec, args):
    """The refusal when an option and one of its aliases are both given, differently."""
    for name, option in spec.items():
        for alias in option.get("aliases") or ():
            if name in args and alias in args and args[name] != args[alias]:
                return "%s and %s name the same option (%s); give only one" % (
                    alias, name, name)
    return None


def validate(module, args, defaults_only):
    """The task's options checked and coerced by ansible-core's validator against the module's
    argument spec, or a failure in Ansible's words (secrets masked).

    An option only module_defaults set that this module has no use for is dropped when
    another module of the collection takes it (a group's defaults reach every module of the
    group: store options set once for group/etcd.core.etcd); one no module takes (a typo) is
    refused as unsupported. One that is only an alias here but another module's own option
    (``dest``, ``prefix``) is dropped too: a group's default means that module's option.
    Unset options (null, ``omit``) are left out, so the shim applies its own defaults (an
    unset connection option still falls back to the target's ETCDCTL_* variable) and a
    required one is reported missing. Returns the options (aliases resolved to
    their option), and the validator's warnings and deprecations (a deprecated alias).
    """
    specs = argument_specs()
    if module not in specs:
        raise AnsibleActionFail("etcd.core has no module %s" % module)
    if not isinstance(args, dict):
        raise AnsibleActionFail("etcd.core.%s: the options must be a mapping" % module)
    spec = specs[module]["argument_spec"]
    names = option_names(spec)
    taken_elsewhere = set()
    own_elsewhere = set()
    for other_name, other in specs.items():
        taken_elsewhere.update(option_names(other["argument_spec"]))
        if other_name != module:
            own_elsewhere.update(other["argument_spec"])
    defaults_only = set(defaults_only or ())

    def not_for_this_module(name):
        if name not in defaults_only:
            return False
        if name not in names:
            return name in taken_elsewhere
        return name not in spec and name in own_elsewhere

    args = dict(
        (str(name), value) for name, value in args.items()
        if value is not None and not not_for_this_module(name)
    )
    twice = same_option_twice(spec, args)
    if twice:
        raise AnsibleActionFail(twice)
    result = ArgumentSpecValidator(spec).validate(args)
    if result.error_messages:
        messages = []
        for error in result.errors.errors:
            if isinstance(error, UnsupportedError):
                messages.append("Unsupported parameters for (etcd.core.%s) module: %s" % (
                    module, error.msg))
            else:
                messages.append(error.msg)
        message = "; ".join(messages)
        for secret in sorted(result._no_log_values, key=len, reverse=True):
            if secret:
                message = message.replace(secret, MASK)
        raise AnsibleActionFail(message)
    aliases = names - set(spec)
    params = dict(
        (name, value) for name, value in result.validated_parameters.items()
        if value is not None and name not in aliases
    )
    for name, option in spec.items():
        value = params.get(name)
        if option["type"] == "dict" and isinstance(value, dict):
            params[name] = mapping_text(name, value)
        elif option["type"] == "list" and isinstance(value, list):
            # `a, b` and `""` as a list: its items trimmed, empty ones dropped.
            params[name] = [
                item.strip() if isinstance(item, str) else item
                for item in value
                if not (isinstance(item, str) and not item.strip())
            ]
    warnings = [
        "Both option %s and its alias %s are set." % (w["option"], w["alias"])
        for w in result._warnings
    ]
    deprecations = [dict((k, v) for k, v in d.items() if v) for d in result._deprecations]
    return params, warnings, deprecations


def own_args(task, templar):
    """The option names the task itself sets (not module_defaults), or None when unknown.

    The task's raw data (``task._ds``) is parsed again as Ansible parses it (``module: {...}``,
    ``action: module k=v``, ``args:``), before module_defaults are merged in.
    """
    data = getattr(task, "_ds", None)
    if not isinstance(data, dict):
        return None
    try:
        _action, args, _delegate = ModuleArgsParser(
            task_ds=data, collection_list=task.collections
        ).parse()
    except Exception:  # pylint: disable=broad-except
        return None
    names = {name for name in args if name != "_variable_params"}
    if "_variable_params" in args:  # `args: "{{ options }}"`
        try:
            templated = templar.template(args["_variable_params"])
        except Exception:  # pylint: disable=broad-except
            return None
        if not isinstance(templated, dict):
            return None
        names.update(templated)
    return names


def module_specific_defaults(task, module):
    """Option names set by module_defaults entries for this very module (not a group): written
    for it as a task's own options are, so they are checked as the task's."""
    names = set()
    for level in getattr(task, "module_defaults", None) or []:
        if not isinstance(level, dict):
            continue
        for key, options in level.items():
            if str(key).startswith("group/") or not isinstance(options, dict):
                continue
            if str(key).rsplit(".", maxsplit=1)[-1] == module:
                names.update(options)
    return names


def from_defaults(args, own):
    """The option names in ``args`` that only module_defaults set (sorted); none when the
    task's own options are unknown, so that every option is then checked as the task's."""
    if own is None:
        return []
    return sorted(name for name in args if name not in own)


def local_shim(arch):
    """Path of this collection's shim for ``arch``, or a failure that says how to get one."""
    path = os.path.join(SHIM_DIR, "etcd_shim_%s" % arch)
    if not os.path.isfile(path):
        raise AnsibleActionFail(
            "etcd.core has no shim binary for the architecture '%s' (looked for %s); install a "
            "release of the collection or build one with scripts/build-collection (see the "
            "collection README, 'Architectures')" % (arch, path)
        )
    return path


def file_sha256(path):
    """Hex SHA-256 of a file: the cached copy's name, so a changed shim is copied again."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def shim_sha256(path):
    """Hex SHA-256 of the local shim, computed once per run: every task needs it, and hashing
    a shim of tens of MB took a tenth of a second of CPU per task and host. The run's private
    local temp dir (shared by the forked workers, removed at the end) keeps it, keyed by the
    file's identity, size and mtime, so a shim rebuilt during the run is hashed again."""
    info = os.stat(path)
    key = "%s:%d:%d:%d:%d" % (
        os.path.realpath(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns
    )
    store = os.path.join(C.DEFAULT_LOCAL_TMP, "etcd_core_shim_sha256.json")
    try:
        with open(store) as handle:
            known = json.load(handle)
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    digest = known.get(key)
    if isinstance(digest, str) and re.match(r"^[0-9a-f]{64}$", digest):
        return digest
    digest = file_sha256(path)
    known[key] = digest
    partial = "%s.%d" % (store, os.getpid())
    try:
        with open(partial, "w") as handle:
            json.dump(known, handle)
        os.replace(partial, store)
    except OSError:
        pass  # No cache this time: the next task hashes again.
    return digest


def shell_dir(path):
    """A directory for the target's shell: a leading ``~`` or ``~user`` stays unquoted so the
    shell expands it."""
    match = re.match(r"^(~[A-Za-z0-9._-]*)(/.*)?$", path)
    if match:
        rest = match.group(2) or ""
        return match.group(1) + ("/" + shlex.quote(rest[1:]) if len(rest) > 1 else rest)
    return shlex.quote(path)


# The probe: one command that prints the target's system and machine, the cache directory
# (expanded) and whether only its user may write in it, then one line per file named like a
# shim in it:
# "ok SIZE NAME" for a regular file of the connecting user that no one else may write, else
# "foreign NAME". `ls -ld` shows the write bits of group (6th character) and others (9th).
PROBE = """uname -s
uname -m
d=%s
printf '%%s\\n' "$d"
if [ -d "$d" ] && [ ! -h "$d" ] && [ -O "$d" ]; then
  case "$(ls -ld -- "$d")" in ?????w*|????????w*) echo unsafe ;; *) echo safe ;; esac
elif [ -e "$d" ] || [ -h "$d" ]; then echo unsafe
else echo missing
fi
for f in "$d"/etcd_shim_*; do
  [ -e "$f" ] || [ -h "$f" ] || continue
  if [ -f "$f" ] && [ ! -h "$f" ] && [ -O "$f" ] && [ -x "$f" ]; then
    case "$(ls -ld -- "$f")" in
      ?????w*|????????w*) echo "foreign ${f##*/}" ;;
      *) echo "ok $(wc -c < "$f") ${f##*/}" ;;
    esac
  else
    echo "foreign ${f##*/}"
  fi
done
true"""


def probe_command(cache_dir):
    """The probe for ``cache_dir`` (see PROBE)."""
    return PROBE % shell_dir(cache_dir)


class Probe:
    """What the probe found: the architecture, the cache dir and its state, the copies."""

    def __init__(self, arch, cache_dir, dir_state, ours, foreign):
        self.arch = arch
        self.cache_dir = cache_dir
        self.dir_state = dir_state
        self.ours = ours
        self.foreign = foreign


def parse_probe(stdout):
    """Reads the probe's output (see PROBE)."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if len(lines) < 4:
        raise AnsibleActionFail(
            "cannot tell the target's system and architecture: 'uname -s; uname -m' printed %r"
            % stdout.strip()
        )
    system, machine = lines[0], lines[1]
    if system != "Linux":
        raise AnsibleActionFail(
            "etcd.core's modules run on Linux hosts; this one runs %s (%s). For a task "
            "delegated to the controller, run the play from a Linux controller or execution "
            "environment" % (system, machine)
        )
    cache_dir, dir_state = lines[2].rstrip("/") or "/", lines[3]
    ours, foreign = {}, set()
    for line in lines[4:]:
        fields = line.split()
        if fields[0] == "ok" and len(fields) == 3 and fields[1].isdigit():
            ours[fields[2]] = int(fields[1])
        else:
            foreign.add(fields[-1])
    return Probe(ARCH_ALIASES.get(machine, machine), cache_dir, dir_state, ours, foreign)


def stale_command(remote_dir, name, arch):
    """Removes this architecture's other cached versions and left-over partial copies that
    no task used for STALE_DAYS: only regular files of the connecting user, by our names."""
    return (
        "find %s -maxdepth 1 -type f -user \"$(id -u)\" \\( -name %s ! -name %s -o -name %s \\) "
        "-mtime +%d -exec rm -f {} + 2>/dev/null; true"
        % (
            shlex.quote(remote_dir),
            shlex.quote("etcd_shim_%s-*" % arch),
            shlex.quote(name),
            shlex.quote(".etcd_shim_%s-*.part" % arch),
            STALE_DAYS,
        )
    )


def parse_result(stdout, stderr, rc):
    """The module's JSON result from the shim's output, or a failure that shows the output."""
    try:
        text, _warnings = _filter_non_json_lines(stdout or "", objects_only=True)
        data = json.loads(text)
        if isinstance(data, dict):
            return data
    except ValueError:
        pass
    return {
        "failed": True,
        "msg": "the etcd.core shim did not return a result (exit code %s); its output is in "
        "module_stdout and module_stderr" % rc,
        "module_stdout": stdout,
        "module_stderr": stderr,
        "rc": rc,
    }


class ActionModule(ActionBase):
    """Dispatches an etcd.core module to the shim binary for the target's architecture.

    Subclasses (a module that needs more than a dispatch) use :meth:`run_shim`,
    :meth:`run_shim_on_controller`, :meth:`upload` and :meth:`upload_tree`.
    """

    TRANSFERS_FILES = True
    _supports_check_mode = True
    _supports_async = False
    # Warnings of the shim's transport for this task's result.
    _warnings = ()

    # Warnings and deprecations of the validation of this task's options.
    _deprecations = ()

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        module = self._task.action.split(".")[-1]
        result.update(self.run_shim(module, dict(self._task.args), task_vars or {}))
        return result

    def defaults_only(self, args):
        """The options of ``args`` that module_defaults set and the task did not."""
        task_args = self._task.args or {}
        own = own_args(self._task, self._templar)
        if own is not None:
            module = self._task.action.split(".")[-1]
            own = own | module_specific_defaults(self._task, module)
        return [name for name in from_defaults(task_args, own) if name in args]

    def connection_args(self, module, args):
        """The task's options with the connection settings only the controller knows (its
        ``ETCDCTL_*`` environment), for a module that talks to a cluster."""
        if connects(module):
            return controller_connection(args, os.environ)
        return args

    def module_args(self, module, args):
        """The task's options plus what only the controller knows, validated, as the shim
        reads them."""
        defaults = self.defaults_only(args)
        args = self.connection_args(module, args)
        args, warnings, deprecations = validate(module, args, defaults)
        self._warnings = list(self._warnings) + warnings
        self._deprecations = list(self._deprecations) + deprecations
        args["_etcd_module"] = module
        return args

    def run_shim(self, module, args, task_vars):
        """Runs ``module`` with ``args`` on the target through the cached shim; its result."""
        self._warnings, self._deprecations = [], []
        args = self.module_args(module, args)
        self._update_module_args(self._task.action, args, task_vars)
        shim, from_cache = self._target_shim(task_vars)
        tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
        args_path = self._connection._shell.join_path(tmpdir, "args")
        self._transfer_data(args_path, json.dumps(args, cls=ARGS_ENCODER))
        if self._is_become_unprivileged():
            self._fixup_perms2([tmpdir, args_path], execute=False)
        cmd = self._connection._shell.build_module_command(
            self._compute_environment_string(), None, shim, arg_path=args_path
        )
        if from_cache:
            # A cached copy's time says when it was last used: another version's copy removes
            # it only after STALE_DAYS without a task.
            cmd = "touch -c %s 2>/dev/null; %s" % (shlex.quote(shim), cmd)
        res = self._low_level_execute_command(cmd, sudoable=True)
        result = parse_result(res.get("stdout", ""), res.get("stderr", ""), res.get("rc"))
        if result.get("module_stdout") is not None and res.get("rc") in (126, 127):
            result["msg"] = (
                "the target cannot execute the shim %s (exit code %s: a noexec mount?); set %s "
                "to a directory where files may be executed" % (shim, res.get("rc"), CACHE_DIR_VAR)
            )
        return self.with_notes(result)

    def with_notes(self, result):
        """``result`` with the warnings and deprecations of this task's transport and
        validation."""
        if self._warnings:
            result["warnings"] = list(result.get("warnings") or []) + self._warnings
        for deprecation in self._deprecations:
            display.deprecated(
                deprecation["msg"],
                version=deprecation.get("version"),
                collection_name=deprecation.get("collection_name"),
            )
        return result

    def run_shim_on_controller(self, module, args, task_vars):
        """Runs ``module`` with ``args`` here, on the controller, with the controller's shim.

        For reads that need credentials only the controller has (object stores): the
        arguments file is private to this process and removed afterwards.
        """
        del task_vars  # the controller's own settings apply
        self._warnings, self._deprecations = [], []
        args = self.module_args(module, args)
        args["_ansible_check_mode"] = bool(self._task.check_mode)
        args["_ansible_diff"] = bool(self._task.diff)
        shim = local_shim(ARCH_ALIASES.get(platform.machine(), platform.machine()))
        with tempfile.TemporaryDirectory(prefix="etcd-core-") as work:
            args_path = os.path.join(work, "args")
            fd = os.open(args_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(args, handle, cls=ARGS_ENCODER)
            proc = subprocess.run(
                [shim, args_path], capture_output=True, text=True, check=False
            )
        return self.with_notes(parse_result(proc.stdout, proc.stderr, proc.returncode))

    def upload(self, local_path, task_vars):
        """Copies a controller file into this task's remote tmp dir; returns its remote path.

        The tmp dir, and the file with it, is removed when the task ends.
        """
        del task_vars
        tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
        remote = self._connection._shell.join_path(tmpdir, os.path.basename(local_path))
        self._transfer_file(local_path, remote)
        if self._is_become_unprivileged():
            self._fixup_perms2([tmpdir, remote], execute=False)
        return remote

    def upload_tree(self, local_dir, task_vars):
        """Copies a controller directory, its layout kept, into this task's remote tmp dir;
        returns its remote path. Removed with the tmp dir when the task ends."""
        del task_vars
        tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
        join = self._connection._shell.join_path
        root = join(tmpdir, os.path.basename(local_dir.rstrip("/")) or "tree")
        dirs, files = [root], []
        for parent, subdirs, names in os.walk(local_dir):
            rel = os.path.relpath(parent, local_dir)
            remote_parent = root if rel == "." else join(root, *rel.split(os.sep))
            dirs.extend(join(remote_parent, d) for d in sorted(subdirs))
            files.extend(
                (os.path.join(parent, n), join(remote_parent, n)) for n in sorted(names)
            )
        res = self._low_level_execute_command(
            "mkdir -p %s" % " ".join(shlex.quote(d) for d in dirs), sudoable=False
        )
        if res.get("rc") != 0:
            raise AnsibleActionFail(
                "cannot create %s on the target: %s" % (root, (res.get("stderr") or "").strip())
            )
        for local, remote in files:
            self._transfer_file(local, remote)
        if self._is_become_unprivileged():
            self._fixup_perms2(
                [tmpdir] + dirs + [remote for _local, remote in files], execute=False
            )
        return root

    def _target_shim(self, task_vars):
        """The target's path of the shim for its architecture, copied there if missing, and
        whether that path is the cached copy.

        The task gets a copy in its own tmp dir instead (made readable for its user as Ansible
        does for every module) when its become user is unprivileged, or when the cache is not
        safe to run from: a directory others may write in, or something that is not our copy
        under our copy's name (it is neither run nor removed).
        """
        cache_dir = task_vars.get(CACHE_DIR_VAR) or DEFAULT_CACHE_DIR
        res = self._low_level_execute_command(probe_command(cache_dir), sudoable=False)
        if res.get("rc") != 0:
            raise AnsibleActionFail(
                "cannot tell the target's architecture: 'uname -m' failed: %s"
                % (res.get("stderr") or res.get("stdout") or "no output").strip()
            )
        probe = parse_probe(res.get("stdout", ""))
        local = local_shim(probe.arch)
        name = "etcd_shim_%s-%s" % (probe.arch, shim_sha256(local)[:32])
        unsafe = None
        if probe.dir_state == "unsafe":
            unsafe = "%s is not a directory of the connecting user that only it may write in" % (
                probe.cache_dir
            )
        elif name in probe.foreign:
            unsafe = "%s/%s is not a copy this collection installed (a symlink, a directory, or " \
                "another user's or a writable file)" % (probe.cache_dir, name)
        if self._is_become_unprivileged() or unsafe:
            if unsafe:
                self._warnings.append(
                    "not running the shim from the cache: %s; copied for this task only (set %s "
                    "to a private directory)" % (unsafe, CACHE_DIR_VAR)
                )
            tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
            remote = self._connection._shell.join_path(tmpdir, "etcd_shim_%s" % probe.arch)
            self._transfer_file(local, remote)
            self._fixup_perms2([tmpdir, remote], execute=True)
            return remote, False
        # A copy of ours whose size is wrong (cut short by a crash) is installed again.
        if probe.ours.get(name) != os.path.getsize(local):
            self._cache_shim(local, probe.cache_dir, name, probe.arch)
        return self._connection._shell.join_path(probe.cache_dir, name), True

    def _cache_shim(self, local, remote_dir, name, arch):
        """Copies the shim into the cache under its checksum name, atomically (a partial copy
        never carries the final name), and removes this architecture's stale versions."""
        join = self._connection._shell.join_path
        partial = join(remote_dir, ".%s.%s.part" % (name, secrets.token_hex(8)))
        res = self._low_level_execute_command(
            "umask 022 && mkdir -p %s" % shlex.quote(remote_dir), sudoable=False
        )
        if res.get("rc") != 0:
            raise AnsibleActionFail(
                "cannot create the shim cache %s on the target (set %s to a writable "
                "directory): %s" % (remote_dir, CACHE_DIR_VAR, (res.get("stderr") or "").strip())
            )
        self._transfer_file(local, partial)
        final = join(remote_dir, name)
        res = self._low_level_execute_command(
            "chmod 0755 %s && mv -f -T %s %s" % (
                shlex.quote(partial), shlex.quote(partial), shlex.quote(final)
            ),
            sudoable=False,
        )
        if res.get("rc") != 0:
            self._low_level_execute_command("rm -f %s" % shlex.quote(partial), sudoable=False)
            raise AnsibleActionFail(
                "cannot install the shim in %s on the target: %s"
                % (remote_dir, (res.get("stderr") or "").strip())
            )
        # Best effort: another host sharing the directory may be removing the same files.
        self._low_level_execute_command(stale_command(remote_dir, name, arch), sudoable=False)
