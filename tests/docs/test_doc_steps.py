"""The runner of a page's steps (tests/doc_steps.py), on small pages of its own.

Its parsing and matching are pure; following a page runs real bash in a temporary
directory, so a step that breaks is seen to fail the page, with where and why.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.doc_steps import Page, StepFailed, blocks, mismatch, saved_name

FENCE = "```"


def page(tmp_path: Path, text: str) -> Page:
    doc = tmp_path / "page"
    doc.write_text(text.replace("'''", FENCE))
    work = tmp_path / "work"
    work.mkdir()
    return Page(doc, work, dict(os.environ), log=False)


def test_blocks_take_their_info_strings_apart() -> None:
    text = (
        "# A page\n\n'''sh background timeout=5\nrun\n'''\n\nwords\n"
        "'''python save-as=\"my echo.py\"\nx = 1\n'''\n'''text\nout\n'''\n"
    ).replace("'''", FENCE)
    found = blocks(text)
    assert [(b.kind, b.markers, dict(b.options), b.line) for b in found] == [
        ("sh", ("background",), {"timeout": "5"}, 3),
        ("python", (), {"save-as": "my echo.py"}, 8),
        ("text", (), {}, 11),
    ]
    assert found[0].body == "run\n"


def test_expected_lines_are_whole_lines_in_order_with_wildcards() -> None:
    printed = "noise\nsaid in Scout (seq 7)\nScout: You said: Hi\n"
    assert mismatch("said in Scout (seq …)\nScout: You said: Hi", printed) is None
    assert mismatch("Scout: You said: Hi\nsaid in Scout (seq …)", printed) == (
        "said in Scout (seq …)"
    )
    assert mismatch("said in Scout", printed) == "said in Scout"  # a whole line, not a part
    assert mismatch("…(seq 8)", printed) == "…(seq 8)"
    assert mismatch("", printed) is None


def test_a_python_block_names_its_file() -> None:
    (named,) = blocks(f"{FENCE}python\n# echo.py\nprint(1)\n{FENCE}\n")
    assert saved_name(named) == "echo.py"
    (unnamed,) = blocks(f"{FENCE}python\nprint(1)\n{FENCE}\n")
    with pytest.raises(StepFailed, match=r"line 1 .*says which file"):
        saved_name(unnamed)


def test_a_page_is_followed_as_in_one_terminal(tmp_path: Path) -> None:
    steps = page(
        tmp_path,
        "'''python\n# hello.py\nimport os\nprint('hello', os.environ['WHO'])\n'''\n"
        "'''sh\nexport WHO=Maya\nmkdir sub && cd sub\nplain=lost\n'''\n"
        "'''sh\npython3 ../hello.py; pwd; echo \"plain=${plain:-}\"\n'''\n"
        "'''text\nhello Maya\n…/sub\nplain=\n'''\n"
        "'''json\n{\"a\": 1}\n'''\n"
        "'''sh illustration\nexit 1\n'''\n",
    )
    env = steps.follow()
    assert env["WHO"] == "Maya"
    assert steps.ran == {"python": 1, "sh": 2, "text": 1, "json": 1, "illustration": 1}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("'''sh\necho one\nfalse\necho two\n'''\n", r"line 1 \(sh\): exited 1"),
        ("'''sh\necho one | false | cat\n'''\n", r"exited 1"),
        ("'''sh\necho 'said 7'\n'''\n'''text\nsaid 8\n'''\n", r"line 4 .*shows 'said 8'"),
        ("'''sh timeout=0.5\nsleep 5\n'''\n", r"still running after 0.5 s"),
        ("'''json\n{\"a\": …}\n'''\n", r"not JSON"),
        ("'''yaml\na: 1\n'''\n", r"not a block this runner follows"),
        ("'''sh your-values\nexport NOT_SET_ANYWHERE=x\n'''\n", r"supplies no NOT_SET"),
        ("'''text\nout\n'''\n", r"no step comes before it"),
    ],
)
def test_a_step_that_does_not_work_fails_the_page(tmp_path: Path, text: str, why: str) -> None:
    with pytest.raises(StepFailed, match=why):
        page(tmp_path, text).follow()


def test_a_background_block_is_a_terminal_of_its_own_waited_for_and_stopped(tmp_path: Path) -> None:
    steps = page(
        tmp_path,
        "'''sh\nexport SAID=earlier\n'''\n"
        "'''sh background\n"
        "(sleep 0.3; echo \"ready ${SAID:-}\"; echo $BASHPID > pid; exec sleep 60) &\n'''\n"
        "'''text\nready\n'''\n"
        "'''sh\ntest -s pid\n'''\n",
    )
    steps.follow()
    pid = int((steps.workdir / "pid").read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the background block was left running"


def test_a_background_block_that_never_says_it_is_ready_fails(tmp_path: Path) -> None:
    steps = page(
        tmp_path,
        "'''sh background\necho starting; echo oops >&2; exit 3\n'''\n'''text\nready\n'''\n",
    )
    with pytest.raises(StepFailed, match=r"(?s)shows 'ready'.*starting\noops") as failed:
        steps.follow()
    assert any("printed:\nstarting\noops" in n for n in failed.value.__notes__)
