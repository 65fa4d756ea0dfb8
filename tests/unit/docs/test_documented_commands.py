"""Every command line that README.md and docs/**/*.md tell a reader to type works as typed.

Each ``ansible-playbook``, ``ansible-vault``, ``ansible-galaxy`` and ``make`` command of the pages (in a
fenced block, with its ``\\`` continuation lines, or in an inline code span) runs in a bash whose PATH has
no Ansible on it, after the set-up the README documents (``source .venv/bin/activate``, read from the
README itself), from the repository root, in parallel:

- ``ansible-playbook``: with ``--list-tasks --list-tags`` added, so the playbook path, the inventory, every
  option and variable file are resolved and each play is loaded, and no host is contacted; each tag of
  ``--tags``/``--skip-tags`` must be one that some task carries.
- ``ansible-vault``: as typed, with the test password and a plain text on stdin.
- ``ansible-galaxy``: as typed, writing into a temporary directory.
- ``make``: ``make -n`` (the target exists, its recipe expands), nothing is run.

The pages' placeholders are replaced first: an inventory that is not in ``inventories/`` (``myserver``,
``myfleet``, ``INVENTORY``) by ``inventories/sim``, a vault password file (``~/.volta-vault-pass``,
``FILE``) by a test one, ``[-e x=<value>]`` by ``-e x=value``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
COMMANDS = ("ansible-playbook", "ansible-vault", "ansible-galaxy", "make")
ACTIVATE = "source .venv/bin/activate"
# The values of the pages' placeholders <install> and <host>.
PLACEHOLDERS = {"<install>": "vllm-0.21.0-torch2.11.0-cu126", "<host>": "sxm2"}
WORKERS = 4


def pages():
    """The pages a reader follows: the README and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _is_command(text):
    return text.split(" ", 1)[0] in COMMANDS


def _fenced(lines):
    """(line number, command) of each command line in the fenced blocks, with its continuation lines."""
    out, inside, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside and _is_command(line.strip().removeprefix("$ ")):
            start, text = i + 1, line.strip().removeprefix("$ ")
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1].rstrip() + " " + lines[i].strip()
            out.append((start, text))
        i += 1
    return out


def _inline(lines):
    """(line number, command) of each inline code span outside the fenced blocks that is a command."""
    out, inside = [], False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            # A command with its arguments; a bare `ansible-playbook` in prose names the tool.
            out.extend((number, span) for span in re.findall(r"`([^`]+)`", line) if " " in span and _is_command(span))
    return out


def documented_commands(page):
    """(where, command) of each command of one page, in page order, each once."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found = sorted(_fenced(lines) + _inline(lines))
    seen, out = set(), []
    for number, typed in found:
        command = re.sub(r"\s+#\s.*$", "", typed).strip()  # a shell comment after the command
        if command not in seen:
            seen.add(command)
            out.append((f"{page.relative_to(ROOT)}:{number}", command))
    return out


def _placeholders(command, password_file):
    """The command with the pages' placeholders replaced by the lab's inventory and the test password."""
    command = re.sub(r"\[(-e [^]]+)\]", r"\1", command)
    for name, value in PLACEHOLDERS.items():
        command = command.replace(name, value)
    words = shlex.split(command)
    for i, word in enumerate(words[1:], 1):
        before = words[i - 1]
        if before in ("-i", "--inventory") and not (ROOT / word).exists():
            words[i] = "inventories/sim"
        elif before == "--vault-password-file":
            words[i] = str(password_file)
    return words


def runnable(command, password_file, tmp):
    """(shell line, tags that must exist) that checks one documented command without changing a host."""
    words = _placeholders(command, password_file)
    tags = [t for i, w in enumerate(words[1:], 1) if words[i - 1] in ("--tags", "-t", "--skip-tags")
            for t in w.split(",")]
    if words[0] == "ansible-playbook":
        words += ["--list-tasks", "--list-tags"]
    elif words[0] == "make":
        words.insert(1, "-n")
    elif words[0] == "ansible-galaxy" and words[1:3] == ["collection", "build"]:
        words += ["--output-path", str(tmp), "--force"]
    # $(...) of the page stays a command substitution of the shell, as when typed.
    line = " ".join(w if w.startswith('"$(') else shlex.quote(w) for w in _requote(words, command))
    return line, tags


def _requote(words, command):
    """The words, with a "$(...)" the page wrote kept as the shell's own substitution."""
    subst = re.findall(r'"\$\([^)]*\)"', command)
    return [subst.pop(0) if subst and w.startswith("$(") else w for w in words]


def _path_without_ansible():
    """PATH with every directory that holds an ansible-playbook left out: the shell of a fresh clone."""
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "ansible-playbook").exists())


def run_documented(line, password_file):
    """Run one shell line after the documented set-up; (rc, output)."""
    # A reader's shell: no venv active yet, no make of an outer make test.
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "ANSIBLE_CONFIG", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(PATH=_path_without_ansible(), ANSIBLE_NOCOLOR="1")
    if "--vault-password-file" not in line:
        # What a reader types at the vault password prompt (ansible-vault encrypt_string --name NAME).
        env["ANSIBLE_VAULT_PASSWORD_FILE"] = str(password_file)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", f"{ACTIVATE} && {line}"], cwd=ROOT, env=env,
                          input="a-plain-text-for-encrypt-string\n", capture_output=True, text=True, timeout=300,
                          check=False)
    return done.returncode, done.stdout + done.stderr


def problems(entries, password_file, tmp):
    """'where: command: why' for each documented command that does not work as typed, run in parallel."""
    jobs = [(where, command, *runnable(command, password_file, tmp)) for where, command in entries]
    lines = list(dict.fromkeys(job[2] for job in jobs))  # a command of several pages runs once
    with ThreadPoolExecutor(WORKERS) as pool:
        results = dict(zip(lines, pool.map(lambda line: run_documented(line, password_file), lines), strict=True))
    out = []
    for where, command, line, tags in jobs:
        rc, output = results[line]
        listed = {t.strip() for group in re.findall(r"TASK TAGS: \[([^]]*)\]", output) for t in group.split(",")}
        missing = [t for t in tags if t not in listed]
        if rc != 0:
            said = [x for x in output.splitlines() if re.search(r"error|could not|no rule", x, re.IGNORECASE)]
            out.append(f"{where}: {command}: exit {rc}: {' / '.join(said) or output.strip()[-1500:]}")
        elif missing:
            out.append(f"{where}: {command}: no task has the tag(s) {', '.join(missing)}")
    return out


@pytest.fixture(name="password_file")
def fixture_password_file(tmp_path):
    path = tmp_path / "vault-pass"
    path.write_text("volta-lab-example\n", encoding="utf-8")
    return path


def test_the_readme_documents_the_venv_before_its_first_ansible_command():
    for page in (ROOT / "README.md", ROOT / "docs" / "first-server.md"):
        text = page.read_text(encoding="utf-8")
        assert ACTIVATE in text, f"{page.name} does not say {ACTIVATE}"
        assert text.index(ACTIVATE) < text.index("ansible-playbook "), \
            f"{page.name} names ansible-playbook before it says {ACTIVATE}"


def test_the_pages_document_commands():
    entries = [e for page in pages() for e in documented_commands(page)]
    kinds = {entry[1].split(" ", 1)[0] for entry in entries}
    assert set(COMMANDS) <= kinds, kinds
    assert len(entries) >= 30, entries


def test_every_documented_command_works_as_typed(password_file, tmp_path):
    entries = [e for page in pages() for e in documented_commands(page)]
    found = problems(entries, password_file, tmp_path)
    assert not found, "documented commands that fail as typed:\n" + "\n".join(found)


def test_a_typo_in_a_documented_command_is_caught(password_file, tmp_path):
    page = tmp_path / "typos.md"
    page.write_text("\n".join([
        "```sh",
        "ansible-playbook playbooks/statu.yml -i inventories/myserver",
        "ansible-playbook playbooks/status.yml -i INVENTORY --vault-pasword-file FILE",
        "ansible-playbook playbooks/site.yml -i INVENTORY --tags firewal",
        "```",
        "Then `make sanityy`.",
        "",
    ]), encoding="utf-8")
    lines = page.read_text(encoding="utf-8").splitlines()
    entries = [(f"typos.md:{n}", c) for n, c in sorted(_fenced(lines) + _inline(lines))]
    found = problems(entries, password_file, tmp_path)
    assert [f.split(":", 2)[1] for f in found] == ["2", "3", "4", "6"], found
    assert "playbooks/statu.yml could not be found" in found[0]
    assert "unrecognized arguments: --vault-pasword-file" in found[1]
    assert "no task has the tag(s) firewal" in found[2]
    assert "No rule to make target 'sanityy'" in found[3]
