"""DecoderConfig: the settings of a TinyDecoder, validated, and the two initialisations."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from torch import nn

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.limits import MAX_PARAMETERS, MAX_SIZES, check_classroom
from tinyformer.model import DecoderConfig, TinyDecoder, check_limits


def test_defaults_are_the_articles_settings() -> None:
    config = DecoderConfig()
    assert (config.vocab, config.width, config.heads, config.max_length) == (50, 8, 2, 16)
    assert (config.layers, config.causal, config.init, config.attn_bias) == (
        1,
        True,
        "pytorch",
        False,
    )
    assert config.head_dim == 4 and config.parameter_count == 1784


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DecoderConfig().width = 16  # type: ignore[misc]


def test_config_and_keywords_build_the_same_model() -> None:
    config = DecoderConfig(width=12, heads=3, layers=2)
    assert TinyDecoder(config).config is config
    assert TinyDecoder(width=12, heads=3, layers=2).config == config
    assert TinyDecoder(config, layers=3).config == dataclasses.replace(config, layers=3)
    a = TinyDecoder.seeded(5, config)
    b = TinyDecoder.seeded(5, width=12, heads=3, layers=2)
    for pa, pb in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.equal(pa, pb)
    model = TinyDecoder(config)
    sizes = (model.vocab, model.width, model.heads, model.head_dim, model.max_length)
    assert sizes == (50, 12, 3, 4, 16) and model.layers == 2 and model.causal


@pytest.mark.parametrize(
    "config",
    [
        DecoderConfig(),
        DecoderConfig(layers=3, attn_bias=True),
        DecoderConfig(vocab=7, width=6, heads=3, max_length=5, layers=2),
    ],
)
def test_parameter_count_is_exact(config: DecoderConfig) -> None:
    assert config.parameter_count == sum(p.numel() for p in TinyDecoder(config).parameters())


def test_to_dict_round_trips_through_json() -> None:
    config = DecoderConfig(layers=2, init="scaled", attn_bias=True)
    assert DecoderConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


@pytest.mark.parametrize(
    ("fields", "error", "key"),
    [
        ({"vocab": 0}, ParameterError, "size_not_positive"),
        ({"width": -8}, ParameterError, "size_not_positive"),
        ({"heads": 0}, ParameterError, "size_not_positive"),
        ({"max_length": 0}, ParameterError, "size_not_positive"),
        ({"layers": 0}, ParameterError, "size_not_positive"),
        ({"width": 8.0}, ParameterError, "size_not_integer"),
        ({"layers": True}, ParameterError, "size_not_integer"),
        ({"width": 8, "heads": 3}, ShapeError, "width_not_divisible"),
        ({"causal": "no"}, ParameterError, "flag_not_bool"),
        ({"attn_bias": 1}, ParameterError, "flag_not_bool"),
        ({"init": "xavier"}, ParameterError, "unknown_init"),
    ],
)
def test_bad_settings_raise_with_a_key(fields: dict, error: type, key: str) -> None:
    with pytest.raises(error) as err:
        DecoderConfig(**fields)
    assert err.value.key == key
    with pytest.raises(error):
        TinyDecoder(**fields)  # the same check guards the model


def test_size_errors_name_the_setting() -> None:
    with pytest.raises(ParameterError) as err:
        DecoderConfig(max_length=0)
    assert err.value.values == {"name": "max_length", "value": 0}
    with pytest.raises(ParameterError) as err:
        check_classroom(DecoderConfig(vocab=65_536, width=1_024))
    assert err.value.values["count"] > MAX_PARAMETERS


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        ({"vocab": MAX_SIZES["vocab"] + 1}, "size_too_large"),
        ({"layers": MAX_SIZES["layers"] + 1}, "size_too_large"),
        ({"width": 10**6, "heads": 1}, "size_too_large"),
        ({"vocab": 65_536, "width": 1_024}, "model_too_large"),
    ],
)
def test_the_classroom_refuses_models_beyond_its_limits(fields: dict, key: str) -> None:
    """The model only checks that a config is well formed (building one this large is
    the caller's choice); the classroom's limits (lessons.limits) refuse it."""
    config = DecoderConfig(**fields)  # well formed: no error, and no weights drawn
    with pytest.raises(ParameterError) as err:
        check_classroom(config)
    assert err.value.key == key


def test_the_classroom_accepts_models_within_its_limits() -> None:
    largest = DecoderConfig(**{**MAX_SIZES, "vocab": 1_000, "width": 256, "layers": 4})
    assert check_classroom(largest) is largest
    assert check_classroom(DecoderConfig()) == DecoderConfig()


def test_check_limits_takes_the_callers_limits() -> None:
    config = DecoderConfig(width=16, layers=3)
    assert check_limits(config, {"width": 16, "layers": 3}, config.parameter_count) is config
    with pytest.raises(ParameterError) as err:
        check_limits(config, {"layers": 2})
    assert err.value.key == "size_too_large"
    assert err.value.values == {"name": "layers", "value": 3, "limit": 2}
    with pytest.raises(ParameterError) as err:
        check_limits(config, {}, config.parameter_count - 1)
    assert err.value.key == "model_too_large"
    with pytest.raises(ParameterError) as err:
        check_limits(config, {"dropout": 1})
    assert err.value.key == "config_unknown_field"


def test_unknown_fields_and_wrong_config_types_are_errors() -> None:
    with pytest.raises(ParameterError) as err:
        DecoderConfig.from_dict({"width": 8, "dropout": 0.1})
    assert err.value.key == "config_unknown_field" and err.value.values["names"] == ["dropout"]
    with pytest.raises(ParameterError) as err:
        TinyDecoder(dropout=0.1)
    assert err.value.key == "config_unknown_field"
    with pytest.raises(ParameterError) as err:
        TinyDecoder({"width": 8})  # type: ignore[arg-type]
    assert err.value.key == "config_not_decoder_config"


def test_scaled_init_draws_the_documented_distributions() -> None:
    model = TinyDecoder.seeded(3, vocab=2_000, width=64, heads=4, init="scaled", attn_bias=True)
    model.requires_grad_(False)
    assert abs(float(model.token.weight.std()) - 1.0) < 0.02  # 128,000 draws of N(0, 1)
    for module in model.modules():
        if isinstance(module, nn.Linear):
            std = module.in_features**-0.5
            assert abs(float(module.weight.std()) / std - 1.0) < 0.1
            assert module.bias is None or not module.bias.any()
        elif isinstance(module, nn.LayerNorm):
            assert (module.weight == 1).all() and not module.bias.any()


def test_pytorch_init_differs_from_scaled() -> None:
    pytorch = TinyDecoder.seeded(7)
    scaled = TinyDecoder.seeded(7, init="scaled")
    # PyTorch's Linear draws uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)); scaled is Gaussian.
    bound = 8**-0.5
    assert pytorch.blocks[0].qkv.weight.abs().max() <= bound
    assert scaled.blocks[0].qkv.weight.abs().max() > bound


def test_reset_parameters_redraws_from_the_global_state() -> None:
    model = TinyDecoder.seeded(1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        model.reset_parameters()
    for a, b in zip(model.parameters(), TinyDecoder.seeded(7).parameters(), strict=True):
        assert torch.equal(a, b)
