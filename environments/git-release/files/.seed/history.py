"""Setup only (removed before the agent starts): builds the repository's past history."""

import os
import re
import subprocess
from pathlib import Path

REPO = Path("/app/repo")
TAG_PREFIX = None
TAG_PREFIX = "{{ tag_prefix }}"

final = {p.relative_to(REPO).as_posix(): p.read_text() for p in REPO.rglob("*") if p.is_file()}
ring = final["src/hashring/ring.py"]
no_unknown_check = ring.replace(
    "weight = self._weights.pop(node)", "weight = self._weights.pop(node, 1)"
)
no_nodes = no_unknown_check.split("\n    def nodes(")[0] + "\n"
no_cache = (
    no_nodes.replace("from functools import lru_cache\n", "")
    .replace("    @lru_cache(maxsize=4096)\n", "")
    .replace("        self.lookup.cache_clear()\n", "")
    .replace(" and a small lookup cache", "")
)
removal = '):\n            point = _hash(f"{node}#{i}")\n            del'
buggy_remove = no_cache.replace(
    "for i in range(self.replicas * weight" + removal, "for i in range(self.replicas" + removal
)
short_keys = buggy_remove.replace('_hash(f"{node}#{i}")', '_hash(f"{node}{i}")')
md5 = short_keys.replace(
    "hashlib.blake2b(key.encode(), digest_size=8).digest()", "hashlib.md5(key.encode()).digest()[:8]"
)
changelog = final["CHANGELOG.md"]
head, sections = changelog.split("## [Unreleased]")[0], changelog.split("\n## ")[1:]


def changelog_upto(version):
    kept = [s for s in sections if not s.startswith("[Unreleased]")]
    index = next(i for i, s in enumerate(kept) if s.startswith(f"[{version}]"))
    return head + "## [Unreleased]\n\n" + "".join("## " + s + "\n" for s in kept[index:]).rstrip("\n") + "\n"


def unreleased(version, lines):
    text = changelog_upto(version)
    items = "".join(f"- {line}\n" for line in lines)
    return text.replace("## [Unreleased]\n\n", f"## [Unreleased]\n\n{items}\n", 1)


def init_py(version):
    return re.sub(r'__version__ = "[^"]+"', f'__version__ = "{version}"', final["src/hashring/__init__.py"])


def git(*args, date=None):
    env = dict(os.environ)
    if date:
        env.update(GIT_AUTHOR_DATE=f"{date}T10:00:00+00:00", GIT_COMMITTER_DATE=f"{date}T10:00:00+00:00")
    subprocess.run(["git", *args], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)


def commit(subject, date, files):
    for rel, text in files.items():
        (REPO / rel).parent.mkdir(parents=True, exist_ok=True)
        (REPO / rel).write_text(text)
    git("add", "-A")
    git("commit", "-q", "-m", subject, date=date)


def release(version, date):
    commit(f"Release {version}", date, {"VERSION": version + "\n", "CHANGELOG.md": changelog_upto(version),
                                        "src/hashring/__init__.py": init_py(version)})
    if TAG_PREFIX is not None:
        git("tag", "-a", f"{TAG_PREFIX}{version}", "-m", f"Release {version}", date=date)


for path in list(REPO.iterdir()):
    if path.is_file():
        path.unlink()
subprocess.run(["rm", "-rf", str(REPO / "src"), str(REPO / "tests")], check=True)
git("init", "-q", "-b", "main")
git("config", "user.name", "Robin Maintainer")
git("config", "user.email", "robin@hashring.example")
base = {rel: text for rel, text in final.items() if rel not in ("CHANGELOG.md", "VERSION")}
base["README.md"] = final["README.md"].replace('ring.add("cache-b", weight=2)', 'ring.add("cache-b")')
base.update({"src/hashring/ring.py": md5, "src/hashring/__init__.py": init_py("1.1.0"), "VERSION": "1.1.0\n",
             "CHANGELOG.md": head + "## [Unreleased]\n\n- First public version.\n"})
commit("Import hashring from the cache service", "2023-11-20", base)
release("1.2.0", "2023-12-04")
commit("Switch the point hash to BLAKE2b", "2024-01-15",
       {"src/hashring/ring.py": short_keys,
        "CHANGELOG.md": unreleased("1.2.0", ["Switch the point hash to BLAKE2b."])})
release("1.3.0", "2024-01-22")
commit("Document node weights", "2024-03-04",
       {"README.md": final["README.md"],
        "CHANGELOG.md": unreleased("1.3.0", ["Nodes can be given a weight."])})
release("1.4.0", "2024-03-11")
commit("Fix distribution of very short keys", "2024-03-28",
       {"src/hashring/ring.py": buggy_remove,
        "CHANGELOG.md": unreleased("1.4.0", ["Fix distribution of very short keys."])})
release("1.4.1", "2024-04-02")
commit("Fix remove() leaving replica points of weighted nodes behind", "2024-04-26",
       {"src/hashring/ring.py": no_cache,
        "CHANGELOG.md": unreleased(
            "1.4.1", ["Fix `remove()` leaving replica points of weighted nodes behind."]
        )})
release("1.4.2", "2024-04-30")
entries = [line[2:] for line in changelog.split("## [Unreleased]\n\n")[1].split("\n\n")[0].splitlines()]
commit("Cache lookups", "2024-05-08",
       {"src/hashring/ring.py": no_nodes, "CHANGELOG.md": unreleased("1.4.2", entries[:1])})
commit("Add HashRing.nodes()", "2024-05-13",
       {"src/hashring/ring.py": no_unknown_check, "CHANGELOG.md": unreleased("1.4.2", entries[:2])})
commit("Raise KeyError when removing an unknown node", "2024-05-20", final)
