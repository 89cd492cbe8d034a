#!/usr/bin/env python3
"""Run the commands of README.md and docs/*.md as a user would copy them.

    scripts/check_doc_commands.py [BUILD]      (quickstart.sh test runs it)

A command is a line of a fenced code block, or an inline `code` span, that starts
with scripts/ or ./quickstart.sh (optionally after VAR=value assignments); a
trailing '# comment' is dropped. What happens to it:
  * short app runs (scripts/mpirun.sh ... build/apps/X ...) run for real, under a
    time limit, and must exit 0;
  * long app runs (large --scale, --updates, --reps, --laps, ...) run with --help
    appended: the program exists, the rank count starts, and every flag before
    --help parses (a bad flag fails before --help is reached);
  * benchmark scripts, loops and builds by hand (blocks with meson setup, which
    scripts/check_install.sh runs) must exist and pass bash -n;
  * ./quickstart.sh demo/test/build lines are what CI itself runs, so they are only
    checked to name a command quickstart.sh knows.
  * scripts/trace_timeline.py runs for real when the traces it names were written
    by an earlier command of the same docs.
Commands run in a scratch directory that links scripts/, build/ and tests/, so
the files they write do not land in the checkout. Ends with 'N passed, M failed'
and a non-zero exit if anything failed."""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
TIME_LIMIT = 300

# A run is long when one of these flags asks for more than its limit.
LONG = {"--scale": 16, "--updates": 2 << 20, "--reps": 10, "--laps": 500,
        "--tokens": 1000, "--roots": 16, "--stall": 0, "--depth": 6}
SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def number(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    return int(m.group(1)) * SUFFIX.get(m.group(2), 1) if m else None


def commands(path):
    """(line number, command, kind) for every command in a markdown file."""
    out, fence, block, para, para_start = [], None, [], [], 0

    def spans():
        # inline code may wrap onto the next line: look at a paragraph at a time
        text = " ".join(para)
        for span in re.findall(r"`([^`]+)`", text):
            if is_command(span):
                out.append((para_start, re.sub(r"\s+", " ", span.strip()), "line"))

    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            if fence is None:
                spans()
                para = []
                fence, block = no, []
            else:
                out.extend(from_block(fence, block))
                fence = None
            continue
        if fence is not None:
            block.append(line.rstrip("\n"))
            continue
        if not line.strip():
            spans()
            para = []
            continue
        if not para:
            para_start = no
        para.append(line.strip())
    spans()
    return out


def strip_assignments(words):
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]
    return words


def is_command(text):
    try:
        words = strip_assignments(shlex.split(text.strip()))
    except ValueError:
        return False
    return bool(words) and (words[0].startswith("scripts/") or words[0] == "./quickstart.sh"
                            or (words[0].startswith("/usr/bin/time") and "scripts/mpirun.sh" in text))


def from_block(start, lines):
    body = [l for l in lines if l.strip()]
    if not body or not any(is_command(l) or "scripts/" in l for l in body):
        return []
    # loops, and builds by hand (scripts/check_install.sh runs those), are only
    # checked for syntax
    if any(re.match(r"\s*(for|while|if|meson setup)\b", l) for l in body):
        return [(start, "\n".join(lines), "block")]
    found = []
    for i, l in enumerate(lines):
        cmd = re.sub(r"\s+#\s.*$", "", l).strip()
        if is_command(cmd):
            found.append((start + 1 + i, cmd, "line"))
    return found


def is_long(words):
    for i, w in enumerate(words[:-1]):
        limit = LONG.get(w)
        if limit is not None:
            n = number(words[i + 1])
            if n is None or n > limit:
                return True
    return False


WORK = tempfile.mkdtemp(prefix="courier-doc-commands-")
for name, target in (("scripts", "scripts"), ("build", BUILD), ("tests", "tests")):
    os.symlink(os.path.join(ROOT, target), os.path.join(WORK, name))
os.makedirs(os.path.join(WORK, "docs", "img"))  # what the docs' commands write lands here
# the text the docs' word counts read
os.symlink(os.path.join(ROOT, "README.md"), os.path.join(WORK, "README.md"))
for md in glob.glob(os.path.join(ROOT, "docs", "*.md")):
    os.symlink(md, os.path.join(WORK, "docs", os.path.basename(md)))


def run(cmd, timeout=TIME_LIMIT):
    env = dict(os.environ, BUILD=BUILD)
    p = subprocess.run(["bash", "-c", cmd], cwd=WORK, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout, text=True, errors="replace")
    return p.returncode, p.stdout



def quickstart_commands():
    """The commands quickstart.sh's case statement knows (its labels: 'test)',
    'help | -h | --help)')."""
    with open(os.path.join(ROOT, "quickstart.sh")) as f:
        text = f.read()
    body = text.split('case "$cmd" in', 1)[1].split("\nesac", 1)[0]
    return {w.strip() for line in re.findall(r"^([a-z][a-z| -]*)\)$", body, re.M)
            for w in line.split("|") if w.strip()}

def check(cmd, kind):
    """Returns (what was done, error or None)."""
    if kind == "block":
        rc, out = run("bash -n <<'EOF'\n" + cmd + "\nEOF")
        return "syntax-checked block", None if rc == 0 else out
    words = strip_assignments(shlex.split(cmd))
    if words[0] == "./quickstart.sh":
        known = quickstart_commands()
        sub = words[1] if len(words) > 1 else "help"
        return "quickstart command known", None if sub in known else f"unknown command {sub}"
    other = [w for w in words if re.match(r"build-[^/]*/", w)]
    if other and kind == "line" and "scripts/mpirun.sh" in words:
        # only build/ exists where CI runs the docs: say so rather than fail in mpirun
        return "ran", f"{other[0]} names a build directory other than build/, which CI does not make"
    if "scripts/mpirun.sh" in words and len(words) - words.index("scripts/mpirun.sh") > 3:
        if is_long(words):
            rc, out = run(cmd + " --help")
            return "flags checked (--help)", None if rc == 0 else out[-2000:]
        rc, out = run(cmd)
        return "ran", None if rc == 0 else out[-2000:]
    if words[0] == "scripts/trace_timeline.py":
        traces = [w for w in words[1:] if w.endswith(".json")]
        if traces and all(os.path.exists(os.path.join(WORK, t)) for t in traces):
            rc, out = run(cmd)
            return "ran", None if rc == 0 else out[-2000:]
    script = os.path.join(ROOT, words[0])
    if not os.access(script, os.X_OK):
        return "script", f"{words[0]} is missing or not executable"
    checker = "python3 -m py_compile" if words[0].endswith(".py") else "bash -n"
    rc, out = run(f"{checker} {shlex.quote(words[0])}")
    return "script syntax-checked", None if rc == 0 else out


def main():
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    passed = failed = 0
    seen = set()
    for path in files:
        for no, cmd, kind in commands(path):
            if cmd in seen:
                continue
            seen.add(cmd)
            rel = os.path.relpath(path, ROOT)
            try:
                what, err = check(cmd, kind)
            except subprocess.TimeoutExpired:
                what, err = "ran", f"still running after {TIME_LIMIT} s"
            shown = cmd if kind == "line" else cmd.splitlines()[0] + " ..."
            if err is None:
                passed += 1
                print(f"ok    {rel}:{no}: {what}: {shown}")
            else:
                failed += 1
                print(f"FAIL  {rel}:{no}: {what}: {shown}\n{err}")
    print(f"doc commands: {passed} passed, {failed} failed")
    shutil.rmtree(WORK, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
