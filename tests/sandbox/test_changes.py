"""Listing what an agent changed against its image, on docker and bwrap, from outside."""

from __future__ import annotations

import os

from termgym.sandbox import Change, Changes, Sandbox, list_changes


def _run(box: Sandbox, command: str) -> None:
    result = box.run(command, timeout=60)
    assert result.exit_code == 0, result.output


def test_added_changed_and_deleted_entries_are_listed_with_their_types(box: Sandbox) -> None:
    _run(
        box,
        "echo x > /etc/added.conf && mkdir -p /opt/tool/bin && echo y > /opt/tool/bin/run "
        "&& echo '# more' >> /etc/bash.bashrc && rm /etc/issue.net && ln -s /etc /srv/etc-link "
        "&& echo work > /app/out.txt",
    )
    box.freeze()
    changes = list_changes(box, exclude=["/app"])
    assert changes is not None and changes.exact
    found = {c.path: (c.kind, c.type) for c in changes.entries}
    assert found["/etc/added.conf"] == ("added", "file")
    assert found["/opt/tool"] == ("added", "dir")
    assert found["/opt/tool/bin/run"] == ("added", "file")
    assert found["/etc/bash.bashrc"] == ("changed", "file")
    assert found["/etc/issue.net"] == ("deleted", "file")
    assert found["/srv/etc-link"] == ("added", "symlink")
    # the declared work is left out, and so are folders listed only for what is below them
    assert not any(p == "/app" or p.startswith("/app/") for p in found)
    assert "/etc" not in found and "/opt" not in found and "/srv" not in found
    assert changes.total == len(changes.entries)


def test_a_fresh_sandbox_lists_nothing_and_the_engine_s_own_files_are_not_the_agent_s(
    box: Sandbox,
) -> None:
    _run(box, "true")
    box.freeze()
    assert list_changes(box, exclude=["/app"]) == Changes((), 0, True)


def test_the_listing_never_follows_the_agent_s_links(box: Sandbox, tmp_path) -> None:
    """A link planted towards a host folder is listed as a link; nothing below the host
    folder is read (it holds a file the listing would name if it were walked)."""
    (tmp_path / "host-secret.txt").write_text("host")
    os.chmod(tmp_path, 0o755)
    _run(box, f"mkdir -p /var/lib/planted && ln -s {tmp_path} /var/lib/planted/host")
    box.freeze()
    changes = list_changes(box)
    assert changes is not None
    assert Change("/var/lib/planted/host", "added", "symlink") in changes.entries
    assert not any("host-secret" in c.path for c in changes.entries)


def test_the_listing_is_bounded_and_counts_what_it_leaves_out(box: Sandbox) -> None:
    _run(box, "mkdir -p /srv/many && cd /srv/many && touch $(seq -f 'f%g' 1 300)")
    box.freeze()
    changes = list_changes(box, limit=50)
    assert changes is not None
    assert len(changes.entries) == 50 and changes.total == 301 and changes.truncated
    scanned = list_changes(box, scan=100)
    assert scanned is not None and not scanned.exact and scanned.total <= 100


def test_a_deep_tree_is_read_to_a_bounded_depth(box: Sandbox) -> None:
    _run(box, "mkdir -p /srv/$(printf 'd/%.0s' $(seq 1 80))end")
    box.freeze()
    changes = list_changes(box)
    assert changes is not None and not changes.exact
    assert any(c.path.startswith("/srv/d/d/d") for c in changes.entries)
    assert not any(c.path.endswith("/end") for c in changes.entries)


def test_a_listing_round_trips_through_its_dict_form() -> None:
    changes = Changes((Change("/etc/x", "added", "file"), Change("/bin/y", "deleted")), 7, False)
    assert Changes.from_dict(changes.to_dict()) == changes
    assert Changes.from_dict({"nonsense": 1}) is None
