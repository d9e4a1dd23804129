"""What both hidden test files share: the repository, the previous release, git run with a
throwaway config (the repository is another user's), and every tag read in one go."""

import os
import subprocess
import tempfile

REPO = "/app/repo"
PREVIOUS = "1.4.2"


def git(*args, check=True):
    with tempfile.NamedTemporaryFile("w", suffix=".gitconfig", delete=False) as config:
        config.write("[safe]\n\tdirectory = *\n")
    env = dict(os.environ, GIT_CONFIG_GLOBAL=config.name, GIT_CONFIG_NOSYSTEM="1")
    try:
        proc = subprocess.run(["git", *args], cwd=REPO, env=env, capture_output=True, text=True)
    finally:
        os.unlink(config.name)
    if check:
        assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr.strip()}"
    return proc.stdout.strip()


def tags():
    """Every tag, read in one go with the same command whatever the rules (the tag the rules
    name is looked up here, never on git's command line): name -> (object type, commit,
    subject)."""
    out = git("for-each-ref", "--format=%(refname:short)%00%(objecttype)%00%(*objectname)"
              "%00%(objectname)%00%(contents:subject)", "refs/tags")
    found = {}
    for line in out.splitlines():
        name, kind, peeled, target, subject = line.split("\0")
        found[name] = (kind, peeled or target, subject)
    return found


def new_version(bump):
    """The version after PREVIOUS for a bump of "major", "minor" or "patch"."""
    major, minor, patch = (int(p) for p in PREVIOUS.split("."))
    if bump == "major":
        return f"{major + 1}.0.0"
    if bump == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"
