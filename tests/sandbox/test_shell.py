"""The persistent shell on docker and bwrap: state, exit codes, and every fault in the issue."""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import time
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from termgym.sandbox import Sandbox, SandboxConfig, make_sandbox
from tests.sandbox.conftest import wait_until_running


def _sentinel_free(box: Sandbox, text: str | bytes) -> bool:
    shell = box.shell  # type: ignore[attr-defined]
    whole = shell._left + shell._right
    needle = whole.encode() if isinstance(text, bytes) else whole
    return needle not in text


def test_every_backend_satisfies_the_sandbox_protocol(box: Sandbox) -> None:
    assert isinstance(box, Sandbox)


def test_cwd_variables_and_functions_persist_between_runs(box: Sandbox) -> None:
    box.run("mkdir -p /tmp/w && cd /tmp/w")
    box.run('export COLOR=teal; LOCAL=1; greet() { echo "hi $1 in $PWD"; }')
    result = box.run('greet you; echo "$COLOR $LOCAL"')
    assert result.output == "hi you in /tmp/w\nteal 1\n"
    assert result.exit_code == 0 and not result.restarted


def test_exit_codes_are_reported_and_dollar_question_behaves_as_at_a_prompt(box: Sandbox) -> None:
    assert box.run("false").exit_code == 1
    assert box.run("echo $?").output == "1\n"
    assert box.run("(exit 42)").exit_code == 42
    assert box.run("true; echo $?").output == "0\n"
    syntax = box.run("echo 'unterminated")
    assert syntax.exit_code == 2 and "unexpected EOF" in syntax.output


def test_multiline_commands_and_heredocs_never_show_the_sentinel(box: Sandbox) -> None:
    command = "for i in 1 2; do\n  echo line $i\ndone\ncat <<'EOF'\n$HOME stays 'raw' \\n\nEOF\n"
    result = box.run(command)
    assert result.output == "line 1\nline 2\n$HOME stays 'raw' \\n\n"
    assert _sentinel_free(box, result.output) and _sentinel_free(box, result.raw)
    traced = box.run("set -x; echo traced; set +x")
    assert "traced" in traced.output and _sentinel_free(box, traced.output)


def test_a_sentinel_printed_with_another_token_is_output_not_the_commands_end(
    box: Sandbox,
) -> None:
    """The agent's program prints what a sentinel looks like, for this command's number and
    the next, with a token not the shell's: it is output like any other, and the command
    ends where it ends, with its own status."""
    shell = box.shell  # type: ignore[attr-defined]
    seq = shell._seq
    fake = "".join(f"\\n__TG{'0' * 20}:{n}:0\\n" for n in range(seq, seq + 3))
    result = box.run(f"printf '{fake}'; sleep 0.2; echo after; (exit 3)")
    assert result.exit_code == 3
    assert result.output.count(f"__TG{'0' * 20}:") == 3 and result.output.endswith("after\n")
    assert _sentinel_free(box, result.output)


def test_a_long_command_is_split_over_lines_and_arrives_whole(box: Sandbox) -> None:
    payload = "é" * 3000 + "x" * 9000
    result = box.run(f"printf '%s' '{payload}' | wc -c")
    assert result.output.strip() == str(len(payload.encode()))


def test_never_ending_command_times_out_and_the_shell_keeps_its_state(box: Sandbox) -> None:
    box.run("cd /tmp && KEEP=yes")
    began = time.monotonic()
    result = box.run("sleep 1000", timeout=1)
    assert result.timed_out and result.exit_code is None and not result.restarted
    assert time.monotonic() - began < 60  # stopped at its timeout, not after its 1000 s
    assert "timed out after 1 s" in result.output
    assert box.run("echo $KEEP $PWD").output == "yes /tmp\n"


def test_command_that_ignores_ctrl_c_gets_the_shell_restarted(box: Sandbox) -> None:
    box.run("cd /tmp")
    result = box.run("trap '' INT; sleep 1000", timeout=1)
    assert result.timed_out and result.restarted
    assert "fresh shell" in result.output
    after = box.run("pwd")
    assert after.output == "/app\n" and after.exit_code == 0


def test_output_flood_is_capped_behind_a_marker_with_bounded_memory(
    make_box: Callable[..., Sandbox],
) -> None:
    box = make_box(output_limit=100_000)
    tracemalloc.start()
    result = box.run("head -c 30000000 /dev/zero | tr '\\0' a; echo; echo END", timeout=200)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.truncated and result.exit_code == 0
    assert "bytes truncated by termgym" in result.output
    assert result.output.rstrip().endswith("END")
    assert len(result.output) < 101_000
    assert peak < 5_000_000, f"host memory grew by {peak} bytes for a 30 MB flood"
    assert box.run("echo still here").output == "still here\n"


def test_endless_flood_is_interrupted_at_the_timeout(make_box: Callable[..., Sandbox]) -> None:
    box = make_box(output_limit=50_000)
    result = box.run("yes flood", timeout=1.5)
    assert result.timed_out and result.truncated
    assert len(result.output) < 51_000
    assert box.run("echo ok").output == "ok\n"


def test_binary_and_invalid_utf8_output_decodes_with_replacement(box: Sandbox) -> None:
    result = box.run("printf 'ok \\xff\\xfe \\xc3\\xa9 \\x01\\n'")
    assert result.output == "ok \ufffd\ufffd é \x01\n"
    assert b"\xff\xfe" in result.raw
    blob = box.run("head -c 4096 /dev/urandom")
    assert blob.exit_code == 0 and box.run("echo fine").output == "fine\n"


def test_exit_typed_by_the_agent_restarts_the_shell_and_says_so(box: Sandbox) -> None:
    box.run("cd /tmp")
    result = box.run("exit 7")
    assert result.restarted and result.exit_code == 7 and not result.timed_out
    assert "the shell exited (status 7)" in result.output
    assert box.run("pwd").output == "/app\n"


def test_exec_typed_by_the_agent_restarts_the_shell(box: Sandbox) -> None:
    result = box.run("exec true")
    assert result.restarted and result.exit_code == 0
    stuck = box.run("exec sleep 1000", timeout=1)
    assert stuck.restarted and stuck.timed_out
    assert box.run("echo back").output == "back\n"


def test_exec_of_another_shell_leaves_a_clean_protocol(box: Sandbox) -> None:
    box.run("export KEEP=1; cd /tmp")
    swapped = box.run("exec bash", timeout=1)
    assert swapped.timed_out and not swapped.restarted
    assert box.run("echo $KEEP $PWD").raw == b"1 /tmp\r\n"
    assert box.run("false").exit_code == 1 and box.run("echo $?").output == "1\n"


def test_command_waiting_on_stdin_times_out_cleanly(box: Sandbox) -> None:
    for command in ("cat", "read -r line; echo got $line", "python3 -c 'input()'"):
        result = box.run(command, timeout=1)
        assert result.timed_out and not result.restarted, command
        assert box.run("echo alive").output == "alive\n"


def _type_until(box: Sandbox, keys: str, expected: str, patience: float = 60.0) -> str:
    """Type `keys`, then keep reading until `expected` shows (a slow machine starts late)."""
    seen = box.send_keys(keys, settle=0.3).output
    deadline = time.monotonic() + patience
    while expected not in seen and time.monotonic() < deadline:
        seen += box.send_keys(b"", settle=0.3).output
    return seen


def test_send_keys_drives_an_interactive_program(box: Sandbox) -> None:
    prompt = _type_until(
        box, 'python3 -c \'name = input("name? "); print("hello", name)\'\n', "name? "
    )
    assert prompt.endswith("name? ")
    assert "hello ada" in _type_until(box, "ada\n", "hello ada")
    assert box.run("echo $((6 * 7))").output == "42\n"


def test_send_keys_control_c_stops_a_foreground_program(box: Sandbox) -> None:
    box.send_keys("sleep 1000.217\n", settle=0.2)
    wait_until_running(box, "sleep 1000.217")  # Ctrl-C sooner would only cancel the line
    box.send_keys(b"\x03", settle=0.3)
    result = box.run("echo free", timeout=60)  # the sleep still running would time it out
    assert result.output.endswith("free\n") and not result.timed_out


def test_fork_bomb_is_held_by_the_pids_limit(make_box: Callable[..., Sandbox]) -> None:
    box = make_box(pids=64, output_limit=20_000)
    if box.backend == "bwrap" and "pids" not in box.limits:  # type: ignore[attr-defined]
        pytest.skip("no cgroup pids limit here; RLIMIT_NPROC alone is too coarse to test on")
    began = time.monotonic()
    box.run(":(){ :|:& };:", timeout=3)
    box.run("sleep 1", timeout=4)
    assert time.monotonic() - began < 120  # two timeouts (3 s, 4 s) and their Ctrl-C: no hang
    box.freeze()
    assert _agent_processes(box) == 0


def test_copy_a_folder_in_and_out_round_trips(box: Sandbox, tmp_path) -> None:  # noqa: ANN001
    src = tmp_path / "src"
    (src / "nested").mkdir(parents=True)
    (src / "a.txt").write_text("alpha\n")
    (src / "nested" / "b.bin").write_bytes(bytes(range(256)))
    box.copy_in(src, "/app/data")
    assert box.run("cat /app/data/a.txt; wc -c < /app/data/nested/b.bin").output == "alpha\n256\n"
    box.run("echo changed >> /app/data/a.txt")
    box.copy_out("/app/data", tmp_path / "back")
    assert (tmp_path / "back" / "a.txt").read_text() == "alpha\nchanged\n"
    assert (tmp_path / "back" / "nested" / "b.bin").read_bytes() == bytes(range(256))
    box.copy_in(src / "a.txt", "/tmp/single.txt")
    assert box.run("cat /tmp/single.txt").output == "alpha\n"


def test_large_copies_and_copies_after_freeze_arrive_whole(box: Sandbox, tmp_path) -> None:  # noqa: ANN001
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * 4096)  # 1 MiB: past the shell-copy limit on docker
    small = tmp_path / "small.txt"
    small.write_text("héllo\n" * 10)
    box.copy_in(big, "/app/big.bin")
    box.copy_in(small, "/app/small.txt")
    assert box.run("wc -c < /app/big.bin; md5sum < /app/small.txt | cut -c1-8").exit_code == 0
    box.freeze()  # nothing runs any more: copies go through the engine (or the host, for bwrap)
    box.copy_in(small, "/app/after.txt")
    box.copy_out("/app/after.txt", tmp_path / "after.txt")
    assert (tmp_path / "after.txt").read_text() == "héllo\n" * 10
    box.copy_out("/app/big.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == big.read_bytes()


def _agent_processes(box: Sandbox) -> int:
    """Processes left in the sandbox, seen from the host (docker: the container's state)."""
    if box.backend == "docker":
        box.container.reload()  # type: ignore[attr-defined]
        return 0 if box.container.attrs["State"]["Status"] != "running" else -1  # type: ignore[attr-defined]
    return len(box.cgroup.pids())  # type: ignore[attr-defined]


def test_freeze_kills_every_agent_process_and_keeps_files(box: Sandbox, tmp_path) -> None:  # noqa: ANN001
    box.run("echo kept > /app/out.txt; sleep 1000 & nohup sleep 1001 >/dev/null 2>&1 &")
    box.run("setsid sleep 1002 &")
    box.freeze()
    assert _agent_processes(box) == 0
    box.copy_out("/app/out.txt", tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text() == "kept\n"


def test_freeze_runs_nothing_inside_the_sandbox(box: Sandbox, tmp_path) -> None:  # noqa: ANN001
    """Wrappers of sh, kill and timeout first on PATH change nothing: freeze is the engine's."""
    wrapper = "#!/bin/sh\necho done\nexit 0\n"
    for name in ("sh", "kill", "timeout", "ps", "pkill"):
        box.run(f"printf '{wrapper}' > /usr/local/bin/{name}; chmod +x /usr/local/bin/{name}")
    box.run("nohup sleep 1000 >/dev/null 2>&1 &")
    box.freeze()
    assert _agent_processes(box) == 0


def test_exec_runs_outside_the_shell_with_its_env_workdir_and_timeout(box: Sandbox) -> None:
    box.run("cd /tmp; export ONLY_IN_SHELL=1")
    result = box.exec(["sh", "-c", 'pwd; echo "[$ONLY_IN_SHELL] $EXTRA"'], env={"EXTRA": "x"})
    assert result.output == "/app\n[] x\n" and result.exit_code == 0
    assert box.exec(["sh", "-c", "exit 3"]).exit_code == 3
    slow = box.exec(["sleep", "1000"], timeout=1)
    assert slow.timed_out and slow.exit_code is None and slow.duration < 60  # not its 1000 s
    trickle = box.exec(["sh", "-c", "while true; do printf .; sleep 0.1; done"], timeout=5)
    assert trickle.timed_out and trickle.duration < 60 and trickle.output.startswith("..")


def _assert_default_signals(box: Sandbox) -> None:
    ignored = box.run("grep SigIgn /proc/self/status").output.split()
    assert ignored == ["SigIgn:", "0000000000000000"]
    assert box.run("yes | head -1; echo ${PIPESTATUS[0]}").output == "y\n141\n"
    assert "0000000000000000" in box.exec(["grep", "SigIgn", "/proc/self/status"]).output


def _set_reserved_disposition(number: int, handler: int) -> None:
    """glibc's sigaction refuses signals 32 and 33, so set them as a CI runner can: raw."""
    action = ctypes.create_string_buffer(32)
    ctypes.memmove(action, ctypes.byref(ctypes.c_ulong(handler)), 8)
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(13, number, action, None, 8) == 0, os.strerror(ctypes.get_errno())


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """This process ignores SIGINT, as one started from a script in the background does, and
    signal 32, which glibc reserves and which a CI runner was seen to hand down ignored."""
    raw = platform.machine() == "x86_64"  # the system call's number below is x86_64's
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    if raw:
        _set_reserved_disposition(32, 1)  # SIG_IGN
    yield
    if raw:
        _set_reserved_disposition(32, 0)  # SIG_DFL
    signal.signal(signal.SIGINT, previous)


def test_the_agents_programs_get_default_signal_dispositions(
    sigint_ignored: None, make_box: Callable[..., Sandbox]
) -> None:
    """Ctrl-C and broken pipes work in the agent's terminal whatever this process ignores
    (SIGINT here, and SIGPIPE, which Python ignores)."""
    _assert_default_signals(make_box())


def test_the_local_backend_gives_default_signal_dispositions_too(
    sigint_ignored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERMGYM_ALLOW_LOCAL", "1")
    with pytest.warns(RuntimeWarning):
        box = make_sandbox("local", SandboxConfig())
    with box:
        _assert_default_signals(box)
