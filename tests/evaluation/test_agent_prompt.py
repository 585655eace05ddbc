"""What the agent is told: only what a participant sees, pictures only for models that take
them, and the parsing of its replies."""

from __future__ import annotations

import base64

import pytest

from evaluation.instances import get_instance
from evaluation.llm.actions import ActionError, AgentWorkspace, parse_code_reply, parse_tool_call
from evaluation.llm.prompts import task_message

DIAGRAM_TEMPLATE = "ds-tariff-bills"


def test_a_model_without_vision_gets_neither_the_diagram_nor_its_source() -> None:
    instance = get_instance(DIAGRAM_TEMPLATE, 1)
    assert instance.diagrams  # the template draws one
    message = task_message(instance, instance.starter_files(), tools=True, vision=False)
    text = message["content"]
    assert isinstance(text, str)
    for svg, source in instance.diagrams.items():
        assert f"{svg} (image)" in text
        assert instance.participant_files[svg] not in text  # the SVG's text is a picture
        assert source not in text
    assert "cannot be shown to you" in text
    for case in instance.hidden_cases:
        assert case.name not in text


def test_a_vision_model_gets_each_diagram_as_a_png_data_url() -> None:
    instance = get_instance(DIAGRAM_TEMPLATE, 1)
    message = task_message(instance, instance.starter_files(), tools=True, vision=True)
    parts = message["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == len(instance.diagrams)
    header, data = images[0].split(",", 1)
    assert header == "data:image/png;base64"
    assert base64.b64decode(data).startswith(b"\x89PNG")
    assert all("x-path" not in p for p in parts)


def test_the_workspace_lets_the_agent_change_only_editable_files() -> None:
    instance = get_instance(DIAGRAM_TEMPLATE, 1)
    workspace = AgentWorkspace(instance)
    read_only = next(p for p in instance.participant_files if p not in instance.editable)
    with pytest.raises(ActionError, match="read-only"):
        workspace.write_files({read_only: "x = 1\n"})
    with pytest.raises(ActionError, match="image"):
        workspace.read_file(next(iter(instance.diagrams)))
    with pytest.raises(ActionError, match="no file"):
        workspace.read_file("missing.py")
    main = instance.editable[0]
    assert workspace.write_files({main: "x = 2\n"}).startswith(f"Wrote {main}")
    assert workspace.read_file(main) == "x = 2\n"


def test_tool_calls_are_parsed_strictly() -> None:
    assert parse_tool_call("write_file", '{"path": "a.py"}').problem == "write_file needs content."
    assert "not valid JSON" in parse_tool_call("read_file", "{oops").problem
    assert "no tool shell" in parse_tool_call("shell", "{}").problem
    assert parse_tool_call("read_file", '{"path": "a.py", "offset": "3"}').problem
    assert parse_tool_call("submit", "").arguments == {}


def test_plain_replies_become_files_by_their_blocks() -> None:
    one = parse_code_reply("Try this:\n```python\nx = 1\n```\n", "solution.py")
    assert one.files == {"solution.py": "x = 1\n"}
    assert not one.submit
    many = parse_code_reply(
        "```python\n# file: pkg/a.py\na = 1\n```\n```\n# file: b.py\nb = 2\n```\nSUBMIT\n", "m.py"
    )
    assert many.files == {"pkg/a.py": "a = 1\n", "b.py": "b = 2\n"}
    assert many.submit
    assert "several code blocks" in parse_code_reply("```py\na\n```\n```py\nb\n```", "m.py").problem
    assert "no shell" in parse_code_reply("```bash\npip install x\n```", "m.py").problem
    assert parse_code_reply("```json\n{}\n```", "m.py").files == {}
