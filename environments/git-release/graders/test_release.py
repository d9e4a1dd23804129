"""Hidden tests: the release commit, version files, changelog and tag follow CONTRIBUTING.md."""

import re

from gitlib import git, new_version, tags

OLD_VERSIONS = ["1.2.0", "1.3.0", "1.4.0", "1.4.1", "1.4.2"]
UNRELEASED = [
    "- Lookups are cached (up to 4096 keys); the cache is cleared when nodes change.",
    "- `HashRing.nodes()` lists the nodes on the ring.",
    "- Removing an unknown node raises `KeyError` instead of corrupting the ring.",
]


def test_version_file_and_package_agree_on_the_new_version(rules):
    version = new_version(rules["version_bump"])
    assert git("show", "main:VERSION") == version
    init = git("show", "main:src/hashring/__init__.py")
    assert f'__version__ = "{version}"' in init


def test_release_commit_is_on_main_with_the_release_subject(rules):
    version = new_version(rules["version_bump"])
    assert git("log", "-1", "--format=%s", "main") == f"Release {version}"


def test_release_tag_is_annotated_named_by_the_rules_and_on_the_release_commit(rules):
    version = new_version(rules["version_bump"])
    tag = f"{rules['tag_prefix']}{version}"
    found = tags()
    assert tag in found, f"no tag {tag!r}; tags are {sorted(found)}"
    kind, commit, subject = found[tag]
    assert kind == "tag", f"{tag} is not an annotated tag"
    assert commit == git("rev-parse", "main")
    assert subject == f"Release {version}"


def test_no_other_release_tag_was_created(rules):
    version = new_version(rules["version_bump"])
    expected = f"{rules['tag_prefix']}{version}"
    new = [
        t for t in git("tag", "--list").split()
        if not any(t.endswith(old) and len(t) - len(old) <= len("release-") for old in OLD_VERSIONS)
    ]
    assert new == [expected]


def test_changelog_opens_a_new_unreleased_section_above_the_release(rules):
    version = new_version(rules["version_bump"])
    text = git("show", "main:CHANGELOG.md")
    sections = re.split(r"(?m)^## ", text)[1:]
    headings = [s.splitlines()[0].strip() for s in sections]
    assert headings[0] == "[Unreleased]", f"first section is {headings[0]!r}"
    assert not [line for line in sections[0].splitlines()[1:] if line.strip()], (
        "the new [Unreleased] section should be empty"
    )
    assert re.fullmatch(rf"\[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}", headings[1]), (
        f"second section heading is {headings[1]!r}, expected '[{version}] - YYYY-MM-DD'"
    )
    entries = [line for line in sections[1].splitlines()[1:] if line.strip()]
    assert entries == UNRELEASED
    assert headings[2:] == [
        "[1.4.2] - 2024-04-30", "[1.4.1] - 2024-04-02", "[1.4.0] - 2024-03-11",
        "[1.3.0] - 2024-01-22", "[1.2.0] - 2023-12-04",
    ]


def test_main_is_checked_out_and_clean():
    assert git("symbolic-ref", "--short", "HEAD") == "main"
    assert git("status", "--porcelain") == ""
