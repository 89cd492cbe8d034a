#!/usr/bin/env python3
"""Every app takes the common flags and shows them last in --help, in one order.

Usage: check_app_flags.py APP...

For each app: `--help` must end with the same block of the common flags (--csv,
--stats, --progress, --quiet, --validate, --help, in that order), and the common
flags given together before --help (--validate in both of its forms) must be
accepted: the app prints its help and exits 0, never a usage error."""
import concurrent.futures
import subprocess
import sys

ORDER = ["--csv", "--stats", "--progress", "--quiet", "--validate", "--help"]


def common_block(text):
    at = text.find("Output and checks")
    return text[at:] if at >= 0 else None


def check_app(exe):
    """Returns (the app's common block or None, its problems)."""
    name = exe.rsplit("/", 1)[-1]
    run = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    block = common_block(run.stdout)
    if run.returncode != 0 or block is None:
        return None, [f"{name}: --help exits {run.returncode} or shows no common flags"]
    failures = []
    flags = [w.split("[")[0] for w in block.split() if w.startswith("--")]
    listed = [f for f in flags if f in ORDER]
    if listed[: len(ORDER)] != ORDER:
        failures.append(f"{name}: the common flags are listed as {listed}")
    for form in (["--validate=no"], ["--validate", "auto"], ["--validate"]):
        args = [exe, "--csv", "/dev/null", "--stats", "--progress", "--quiet"] + form + ["--help"]
        run = subprocess.run(args, capture_output=True, text=True, timeout=60)
        if run.returncode != 0 or "Output and checks" not in run.stdout:
            failures.append(f"{name}: {' '.join(args[1:])} exits {run.returncode}: "
                            f"{run.stderr.strip()}")
    return block, failures


def main():
    apps = sys.argv[1:]
    # Each run is mostly MPI's start-up, waiting rather than computing: several at once.
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(check_app, apps))
    blocks = {block for block, _ in results if block is not None}
    failures = [f for _, problems in results for f in problems]
    if len(blocks) > 1:
        failures.append("the common block differs between apps")
    for f in failures:
        print(f)
    print(f"{len(apps)} apps, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
