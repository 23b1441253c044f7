"""JSON out of model replies: fences, chatter around it, several objects, brackets in strings."""
import pytest

from personal.llm_reply import json_in_reply, strip_fences


@pytest.mark.parametrize("reply, expected", [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
    ('Sure! Here it is:\n```\n[{"p": "Tom"}]\n```\nAnything else?', [{"p": "Tom"}]),
    ('The answer is {"answer": "oven"} and {"note": 2}.', {"answer": "oven"}),  # first object wins
    ('{"text": "a } inside a string", "n": 3} trailing', {"text": "a } inside a string", "n": 3}),
    ('no json here', None),
    ('{"broken": ', None),
])
def test_json_in_reply(reply, expected):
    assert json_in_reply(reply) == expected


def test_strip_fences():
    assert strip_fences("```json\n{\"a\": 1}\n```") == '{"a": 1}'
    assert strip_fences("plain") == "plain"
