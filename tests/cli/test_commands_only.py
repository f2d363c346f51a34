"""okr/cli/ holds the commands only: nothing in it listens, forks, starts a process, handles signals or holds the
server's locks. That is the server's work, in okr/server/; a command calls it. Read from the source, not run."""
import ast
from pathlib import Path

import pytest

import okr.cli

CLI = Path(okr.cli.__file__).parent

# What the server's runtime uses to listen, fork, start programs, catch signals, share memory between its
# workers, raise its limits and hold its locks.
RUNTIME_MODULES = {"socket", "socketserver", "selectors", "asyncio", "http.server", "wsgiref", "waitress",
                   "subprocess", "multiprocessing", "concurrent.futures", "signal", "atexit", "ctypes", "mmap",
                   "resource", "fcntl"}
RUNTIME_OS_CALLS = {"fork", "forkpty", "register_at_fork", "kill", "killpg", "wait", "waitpid", "wait3", "wait4",
                    "waitid", "system", "popen", "posix_spawn", "posix_spawnp", "sched_setaffinity", "setsid",
                    "pipe", "pipe2"}


def runtime_module(name):
    return any(name == module or name.startswith(module + ".") for module in RUNTIME_MODULES)


def runtime_os_call(name):
    return name in RUNTIME_OS_CALLS or name.startswith(("exec", "spawn"))


def server_work(source):
    """What a module's source does that is the server's: one line each, with its line number."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {alias.name}" for alias in node.names if runtime_module(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if runtime_module(node.module):
                found.append(f"{node.lineno}: from {node.module} import ...")
            elif node.module == "os":
                found += [f"{node.lineno}: from os import {alias.name}" for alias in node.names
                          if runtime_os_call(alias.name)]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
              and runtime_os_call(node.attr)):
            found.append(f"{node.lineno}: os.{node.attr}")
    return found


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda path: path.name)
def test_a_command_module_leaves_serving_to_the_server_package(path):
    assert server_work(path.read_text(encoding="utf-8")) == []


def test_the_check_sees_what_the_server_does():
    source = ("import os, signal\nimport subprocess\nfrom waitress import create_server\nfrom os import fork\n"
              "from socket import socket\nimport http.server\nfrom . import socket as local\n"
              "pid = os.fork()\nos.execv('x', [])\nos.path.join('a')\n")
    assert server_work(source) == ["1: import signal", "2: import subprocess", "3: from waitress import ...",
                                   "4: from os import fork", "5: from socket import ...", "6: import http.server",
                                   "8: os.fork", "9: os.execv"]
