"""File, JSON and regex checks, run inside the verifier by the grading runner (stdlib only).

Injected as the module `termgym_checks`; each function returns (passed, message). The
agent's files are looked at as the agent's own user (`termgym_agentexec.look_as_agent`): a
symlink the agent left cannot make a check read what the agent itself could not.
"""

import json
import os
import re

import termgym_agentexec

_MISSING = object()
READ_LIMIT = 64 << 20


def _resolve(path, workdir):
    return path if os.path.isabs(path) else os.path.join(workdir, path)


def _read(path, workdir):
    """The file's text, or ValueError where it holds more than a check reads (so what lies
    past the limit, which a sparse file puts there at the cost of a few blocks, is never
    taken for absent)."""
    return _whole(path, termgym_agentexec.read_as_agent(_resolve(path, workdir), READ_LIMIT + 1))


def _whole(path, text):
    if text is not None and len(text) > READ_LIMIT:
        raise ValueError(f"{path} holds more than the {READ_LIMIT} characters a check reads")
    return text


def _not_json(constant):
    raise ValueError(f"{constant} is not JSON")


def _finite(number):
    value = float(number)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{number} is past what a JSON number holds here")
    return value


def _as_list(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def file_check(path, workdir, exists=True, contains=None, not_contains=None, equals=None):
    """The file exists (or not) and holds / lacks the given text."""
    full = _resolve(path, workdir)
    wants_text = exists and not (contains is None and not_contains is None and equals is None)
    text = termgym_agentexec.look_as_agent(
        full, wants_text, READ_LIMIT + 1
    )  # one look, as the agent
    try:
        text = _whole(path, text)
    except ValueError as exc:
        return (False, str(exc))
    if text is None:
        return (not exists, f"{path} does not exist")
    if not exists:
        return (False, f"{path} exists but should not")
    if not wants_text:
        return (True, f"{path} exists")
    if equals is not None and text.strip() != str(equals).strip():
        return (False, f"{path}: content differs from the expected text")
    for needle in _as_list(contains):
        if str(needle) not in text:
            return (False, f"{path} lacks {needle!r}")
    for needle in _as_list(not_contains):
        if str(needle) in text:
            return (False, f"{path} holds {needle!r}")
    return (True, f"{path} as expected")


def _dig(data, key):
    if key in (None, ""):
        return data
    for part in str(key).split("."):
        if isinstance(data, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            if not -len(data) <= index < len(data):
                return _MISSING
            data = data[index]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return _MISSING
    return data


def _same(found, expected):
    if isinstance(expected, bool) or isinstance(found, bool):  # true is not 1, nor 1 true
        return isinstance(found, bool) and isinstance(expected, bool) and found is expected
    if isinstance(expected, (int, float)) and isinstance(found, (int, float)):
        return abs(float(found) - float(expected)) <= 1e-9 * max(1.0, abs(float(expected)))
    return found == expected


def json_check(
    path, workdir, key=None, equals=_MISSING, min=None, max=None, contains=None, length=None
):
    """The JSON file parses and the value at dotted `key` meets every given condition."""
    try:
        # NaN and Infinity are no JSON: compared with a bound, NaN passes every one
        data = json.loads(_read(path, workdir), parse_constant=_not_json, parse_float=_finite)
    except FileNotFoundError:
        return (False, f"{path} does not exist")
    except ValueError as exc:
        return (False, f"{path} is not valid JSON: {exc}")
    found = _dig(data, key)
    where = f"{path}[{key}]" if key else path
    if found is _MISSING:
        return (False, f"{where}: no such key")
    if equals is not _MISSING and not _same(found, equals):
        return (False, f"{where}: expected {equals!r}, found {found!r}")
    numeric = isinstance(found, (int, float)) and not isinstance(found, bool)
    if (min is not None or max is not None) and not numeric:
        return (False, f"{where}: expected a number, found {found!r}")
    if min is not None and found < min:
        return (False, f"{where}: expected at least {min!r}, found {found!r}")
    if max is not None and found > max:
        return (False, f"{where}: expected at most {max!r}, found {found!r}")
    for item in _as_list(contains):
        if item not in found:
            return (False, f"{where}: expected it to contain {item!r}")
    if length is not None and (not hasattr(found, "__len__") or len(found) != length):
        return (False, f"{where}: expected length {length!r}")
    return (True, f"{where} as expected")


def regex_check(path, workdir, pattern, expect="match", count=None, ignore_case=False):
    """The file's text matches `pattern` (multiline), `count` times if given, or never."""
    try:
        text = _read(path, workdir)
    except FileNotFoundError:
        return (False, f"{path} does not exist")
    except ValueError as exc:
        return (False, str(exc))
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    found = len(re.findall(pattern, text, flags))
    if expect == "no-match":
        return (found == 0, f"{path}: {found} match(es) of {pattern!r}, expected none")
    if count is not None:
        return (
            found == int(count),
            f"{path}: {found} match(es) of {pattern!r}, expected {count}",
        )
    return (found > 0, f"{path}: {found} match(es) of {pattern!r}")
