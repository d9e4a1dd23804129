"""Hidden tests: the release adds one commit and one tag without rewriting history."""

import os
import subprocess

from gitlib import REPO, git, new_version, tags

SEEDED = [  # newest first, with committer dates: a rebase or amend would change them
    ("Raise KeyError when removing an unknown node", "2024-05-20"),
    ("Add HashRing.nodes()", "2024-05-13"),
    ("Cache lookups", "2024-05-08"),
    ("Release 1.4.2", "2024-04-30"),
    ("Fix remove() leaving replica points of weighted nodes behind", "2024-04-26"),
    ("Release 1.4.1", "2024-04-02"),
    ("Fix distribution of very short keys", "2024-03-28"),
    ("Release 1.4.0", "2024-03-11"),
    ("Document node weights", "2024-03-04"),
    ("Release 1.3.0", "2024-01-22"),
    ("Switch the point hash to BLAKE2b", "2024-01-15"),
    ("Release 1.2.0", "2023-12-04"),
    ("Import hashring from the cache service", "2023-11-20"),
]


def test_exactly_one_release_commit_on_top_of_untouched_history(rules):
    version = new_version(rules["version_bump"])
    log = git("log", "--first-parent", "--format=%s|%cs", "main").splitlines()
    assert log[0].split("|")[0] == f"Release {version}"
    assert [tuple(line.split("|")) for line in log[1:]] == SEEDED


def test_release_commit_changes_only_the_version_files_and_changelog():
    changed = git("diff", "--name-only", "main~1", "main").split()
    assert sorted(changed) == ["CHANGELOG.md", "VERSION", "src/hashring/__init__.py"]


def test_main_is_exactly_at_the_release_tag(rules):
    version = new_version(rules["version_bump"])
    tag = f"{rules['tag_prefix']}{version}"
    at_main = git("tag", "--points-at", "main").split()
    assert at_main == [tag]
    assert tags()[tag][0] == "tag", f"{tag} is not annotated"


def test_existing_release_tags_were_not_moved():
    for subject, _ in SEEDED:
        if not subject.startswith("Release "):
            continue
        old = subject.split()[1]
        for tag in git("tag", "--list", f"*{old}").split():
            target = git("log", "-1", "--format=%s", f"{tag}^{{commit}}")
            assert target == subject, f"tag {tag} now points at {target!r}"


def test_checked_out_package_reports_the_new_version(rules):
    version = new_version(rules["version_bump"])
    assert git("status", "--porcelain") == ""
    proc = subprocess.run(
        ["python3", "-c", "import hashring; print(hashring.__version__)"],
        env=dict(os.environ, PYTHONPATH=f"{REPO}/src"), capture_output=True, text=True, timeout=20,
    )
    assert proc.returncode == 0, proc.stderr[-600:]
    assert proc.stdout.strip() == version
    with open(f"{REPO}/VERSION") as f:
        assert f.read().strip() == version
