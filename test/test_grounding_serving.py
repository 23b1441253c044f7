"""The grounding node's configuration and refusals without ROS (personal/grounding/serving.py)."""
from types import SimpleNamespace

import numpy as np

from personal.grounding.methods import make_method, parse_method_list
from personal.grounding.serving import PARAMETERS, llm_options, method_options, refusal, similarity_cells

DEFAULTS = {name: default for name, (default, _) in PARAMETERS.items()}


def test_each_default_method_is_built_from_the_parameters():
    p = {**DEFAULTS, "top_k": 5, "backend": "numpy"}
    assert method_options("rpg-owner", p) == {"n_predictions": 3, "pred_sep_m": 1.0, "top_k": 5, "nhood": 1,
                                              "nms_r": 1, "backend": "numpy"}
    assert method_options("qs", p) == {"n_predictions": 3, "pred_sep_m": 1.0, "backend": "numpy"}
    assert "backend" not in method_options("random", p)
    for name in parse_method_list(DEFAULTS["methods"]):
        assert make_method(name, **method_options(name, DEFAULTS)) is not None


def test_llm_options_pass_only_what_was_given():
    assert llm_options(DEFAULTS) == {}
    assert llm_options({**DEFAULTS, "llm_model": "m"}) == {"model": "m"}


def test_refusals_name_the_first_problem():
    view = SimpleNamespace(encoder="oracle-captions")
    assert refusal(["qs"], [], ["qs"], view, "", "oracle") is None
    assert refusal(["xx"], ["xx"], ["qs"], None, "", "oracle")[0] == "method_not_configured"
    assert refusal(["qs"], [], ["qs"], None, "no feature map for scene 's'", "oracle") == \
        ("no_map", "no feature map for scene 's'")
    code, reason = refusal(["qs"], [], ["qs"], SimpleNamespace(encoder="clip"), "", "oracle")
    assert code == "encoder_mismatch" and "'clip'" in reason
    assert refusal(["qs"], [], ["qs"], SimpleNamespace(encoder=""), "", "oracle") is None  # unknown encoder: allowed


def test_similarity_cells_map_cosine_to_0_100_and_unobserved_to_minus_one():
    cells = similarity_cells(np.array([[-1.0, 0.0, 1.0, np.nan]]))
    assert cells.dtype == np.int8 and cells.tolist() == [[0, 50, 100, -1]]
