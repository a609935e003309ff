"""Training: settings within bounds, a reproducible loss curve, stopping, saving, loading."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError
from tinyformer.lessons import train as train_module
from tinyformer.lessons.corpus import Corpus, split_corpus, vocabulary
from tinyformer.lessons.train import (
    CONFIG_FILE,
    DEFAULT_SETTINGS,
    IGNORE,
    SETTING_BOUNDS,
    VERIFY_ATOL,
    VERIFY_RTOL,
    WEIGHTS_FILE,
    TrainSettings,
    as_trained,
    build_model,
    check_settings,
    compare_runs,
    encode_examples,
    evaluate,
    greedy_answers,
    load_model,
    main,
    mean_losses,
    payer_named,
    run_metrics,
    save_model,
    starting_loss,
    train,
)
from tinyformer.tokenizer import PAD_ID

ROOT = Path(__file__).resolve().parents[2]
TINY = TrainSettings(layers=2, width=16, heads=2, steps=6, learning_rate=1e-2, batch_size=16)


@pytest.fixture(scope="module")
def small_corpus() -> Corpus:
    """A slice of the real split keeps the held-out evaluation quick."""
    split = split_corpus()
    return Corpus(split.seed, split.heldout_fraction, split.train, split.heldout[:40])


@pytest.fixture(scope="module")
def tiny_result(small_corpus):
    return train(TINY, report_every=1, corpus=small_corpus)


def _curve(result) -> list[tuple[int, float, float, float]]:
    return [(p.step, p.train_loss, p.heldout_loss, p.heldout_answer_loss) for p in result.history]


def test_same_seed_same_loss_curve_and_weights(small_corpus, tiny_result) -> None:
    again = train(TINY, report_every=1, corpus=small_corpus)
    assert _curve(again) == _curve(tiny_result)  # exact floats, not approximately
    a, b = tiny_result.model.state_dict(), again.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_another_seed_gives_another_curve(small_corpus, tiny_result) -> None:
    other = train(replace(TINY, seed=1), report_every=1, corpus=small_corpus)
    assert _curve(other) != _curve(tiny_result)


def test_reports_every_step_asked_and_the_last(small_corpus) -> None:
    seen = []
    result = train(replace(TINY, steps=5), seen.append, report_every=2, corpus=small_corpus)
    assert [p.step for p in seen] == [2, 4, 5] == [p.step for p in result.history]
    assert all(p.steps == 5 and p.seconds >= 0 for p in seen)
    assert not result.stopped and result.steps_done == 5


def test_callback_can_stop_training(small_corpus, tiny_result) -> None:
    result = train(TINY, lambda p: p.step == 3, report_every=1, corpus=small_corpus)
    assert result.stopped and result.steps_done == 3 and len(result.history) == 3
    assert _curve(result) == _curve(tiny_result)[:3]  # the same run, cut short


def test_training_lowers_the_heldout_loss(tiny_result) -> None:
    first, last = tiny_result.history[0], tiny_result.history[-1]
    assert last.heldout_loss < first.heldout_loss
    assert first.heldout_loss < torch.log(torch.tensor(float(len(vocabulary())))) + 1


def test_threads_setting_is_restored(small_corpus) -> None:
    before = torch.get_num_threads()  # 1 under the tests (tests/conftest.py)
    other = 2 if before == 1 else 1  # a setting that differs, so a leak would show
    train(replace(TINY, steps=1), corpus=small_corpus, threads=other)
    assert torch.get_num_threads() == before


def test_the_reported_losses_are_cross_entropies(tiny_result, small_corpus) -> None:
    data = encode_examples(small_corpus.heldout, vocabulary())
    logits, _ = tiny_result.model(data.inputs)  # [B, L-1, V]
    flat = F.cross_entropy(logits.flatten(0, 1), data.targets.flatten(), ignore_index=IGNORE)
    answer_targets = data.targets.masked_fill(~data.answer, IGNORE)
    answer = F.cross_entropy(logits.flatten(0, 1), answer_targets.flatten(), ignore_index=IGNORE)
    total, answer_only = mean_losses(tiny_result.model, data)
    assert total == pytest.approx(float(flat), rel=1e-5)
    assert answer_only == pytest.approx(float(answer), rel=1e-5)
    assert tiny_result.history[-1].heldout_loss == pytest.approx(total, rel=1e-5)


def test_targets_are_the_next_characters_and_the_answer_mask_covers_the_answer() -> None:
    examples = split_corpus().heldout[:3]
    vocab = vocabulary()
    data = encode_examples(examples, vocab)
    for row, ex in enumerate(examples):
        n = len(ex.text)
        assert vocab.decode(data.inputs[row, : n - 1]) == ex.text[:-1]
        assert vocab.decode(data.targets[row, : n - 1]) == ex.text[1:]
        assert (data.targets[row, n - 1 :] == IGNORE).all()
        assert vocab.decode(data.targets[row][data.answer[row]]) == ex.answer


def test_right_padding_changes_nothing_a_real_character_computes(tiny_result) -> None:
    """What stage 13.1 says of its batches: shorter texts are padded on the right, so each
    starts at position 0 and, under the causal mask, its real characters never read the
    padding: their logits are those of the text run alone."""
    examples = sorted(split_corpus().heldout[:6], key=lambda ex: len(ex.text))
    vocab = tiny_result.vocab
    data = encode_examples(examples, vocab)
    short = examples[0]
    n = len(short.text)
    assert n < max(len(ex.text) for ex in examples)  # this row is padded
    assert (data.inputs[0, n:] == PAD_ID).all() and (data.targets[0, n - 1 :] == IGNORE).all()
    with torch.no_grad():
        padded, _ = tiny_result.model(data.inputs)  # [B, L-1, V]
        alone, _ = tiny_result.model(torch.tensor([vocab.encode(short.text).ids[:-1]]))
    torch.testing.assert_close(padded[0, : n - 1], alone[0])


def test_greedy_answers_match_a_step_by_step_argmax(tiny_result) -> None:
    model, vocab = tiny_result.model, tiny_result.vocab
    questions = [ex.question for ex in split_corpus().heldout[:4]]
    batched = greedy_answers(model, vocab, questions, n_new=3)
    for question, answer in zip(questions, batched, strict=True):
        ids = list(vocab.encode(question).ids)
        for _ in range(3):
            logits, _ = model(torch.tensor(ids))
            ids.append(int(logits[0, -1].argmax()))
        assert vocab.decode(ids[len(question) :]) == answer


def test_evaluate_counts_answers_that_name_the_right_payer(tiny_result, small_corpus) -> None:
    examples = small_corpus.heldout
    answers = greedy_answers(tiny_result.model, tiny_result.vocab, [e.question for e in examples])
    ev = evaluate(tiny_result.model, tiny_result.vocab, examples)
    pairs = list(zip(answers, examples, strict=True))
    assert ev.correct == sum(payer_named(a) == e.payer for a, e in pairs)
    assert ev.exact == sum(a == e.answer for a, e in pairs)
    assert ev.n == len(examples) and len(ev.wrong) == ev.n - ev.correct
    assert ev.accuracy == ev.correct / ev.n


@pytest.mark.parametrize("settings", [TINY, replace(TINY, layers=1, width=8, heads=1, seed=3)])
def test_starting_loss_is_the_untrained_models_heldout_cross_entropy(settings, small_corpus):
    start = starting_loss(settings, small_corpus)
    vocab = vocabulary()
    data = encode_examples(small_corpus.heldout, vocab)
    with torch.no_grad():
        logits, _ = build_model(settings, len(vocab)).eval()(data.inputs)  # [B, L-1, V]
    expected = F.cross_entropy(logits.flatten(0, 1), data.targets.flatten(), ignore_index=IGNORE)
    assert start.heldout == pytest.approx(float(expected), rel=1e-5)
    assert start.vocab == len(vocab) and start.even == pytest.approx(math.log(len(vocab)))
    assert abs(start.heldout - start.even) < 0.5  # near an even guess (the page says so)


def test_starting_loss_checks_its_settings() -> None:
    with pytest.raises(ParameterError) as err:
        starting_loss(replace(TINY, width=18, heads=4))
    assert err.value.key == "train_width_heads"


def test_as_trained_wraps_the_result_for_the_probe(tiny_result) -> None:
    trained = as_trained(tiny_result)
    assert trained.model is tiny_result.model and trained.vocab is tiny_result.vocab
    assert trained.settings == TINY and trained.config["steps_done"] == TINY.steps


def test_payer_named() -> None:
    assert payer_named("商家承担。") == "merchant"
    assert payer_named("买家承担。") == "buyer"
    assert payer_named("家承担。") is None and payer_named("") is None


# --- settings -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "bounds"), SETTING_BOUNDS.items())
def test_each_setting_is_bounded(name: str, bounds: tuple[float, float]) -> None:
    low, high = bounds
    is_float = isinstance(getattr(DEFAULT_SETTINGS, name), float)
    for bad in (low - (low * 0.5 if is_float else 1), high * 2 if is_float else high + 1):
        with pytest.raises(ParameterError) as err:
            check_settings(replace(DEFAULT_SETTINGS, **{name: bad}))
        assert err.value.key == "train_setting_range"
        assert err.value.values["name"] == name


@pytest.mark.parametrize(
    ("name", "value"),
    [("layers", 2.0), ("steps", True), ("width", "32"), ("learning_rate", float("nan"))],
)
def test_settings_of_the_wrong_kind_are_keyed_errors(name: str, value: object) -> None:
    with pytest.raises(ParameterError) as err:
        check_settings(replace(DEFAULT_SETTINGS, **{name: value}))
    assert err.value.key == "train_setting_type" and err.value.values["name"] == name


def test_width_must_split_into_heads_and_devices_are_checked() -> None:
    with pytest.raises(ParameterError) as err:
        train(replace(TINY, width=18, heads=4))
    assert err.value.key == "train_width_heads"
    with pytest.raises(ParameterError) as err:
        check_settings(replace(TINY, device="tpu"))
    assert err.value.key == "train_device_unknown"
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError) as err:
            check_settings(replace(TINY, device="cuda"))
        assert err.value.key == "train_device_unavailable"


def test_bad_report_interval_and_threads_are_keyed_errors() -> None:
    with pytest.raises(ParameterError) as err:
        train(TINY, report_every=0)
    assert err.value.key == "train_report_every"
    with pytest.raises(ParameterError) as err:
        train(TINY, threads=0)
    assert err.value.key == "train_threads"


def test_defaults_are_valid_and_hashable() -> None:
    assert check_settings(DEFAULT_SETTINGS) is DEFAULT_SETTINGS
    assert {DEFAULT_SETTINGS: 1}[TrainSettings()] == 1  # equal settings can reuse a result


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_training_on_cuda_starts_like_the_cpu_and_returns_a_cpu_model(
    small_corpus, tiny_result
) -> None:
    """Same initial weights (drawn on the CPU) and same batches: the same first loss."""
    result = train(replace(TINY, device="cuda"), report_every=1, corpus=small_corpus)
    assert result.model.device.type == "cpu"
    first_cpu, first_cuda = tiny_result.history[0], result.history[0]
    assert first_cuda.train_loss == pytest.approx(first_cpu.train_loss, rel=1e-4)
    assert result.steps_done == TINY.steps


# --- saving and loading ----------------------------------------------------------------


def test_save_then_load_gives_the_same_model(tiny_result, tmp_path: Path) -> None:
    weights, config_path = save_model(tiny_result, tmp_path)
    assert weights.read_bytes()[8:9] == b"{"  # safetensors: a length, then a JSON header
    loaded = load_model(tmp_path)
    assert loaded.settings == TINY and loaded.vocab == tiny_result.vocab
    ids = torch.tensor(tiny_result.vocab.encode("商品有质量问题，运费谁承担？").ids)
    assert torch.equal(loaded.model(ids)[0], tiny_result.model(ids)[0])
    config = json.loads(config_path.read_text("utf-8"))
    assert config["heldout"]["correct"] == tiny_result.heldout.correct
    assert config["corpus"]["heldout"] == 40  # the slice trained against, not the default


def test_loading_checks_the_files(tiny_result, tmp_path: Path) -> None:
    with pytest.raises(ParameterError) as err:
        load_model(tmp_path)
    assert err.value.key == "trained_model_missing"
    weights, config_path = save_model(tiny_result, tmp_path)
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one flipped bit in the last weight
    weights.write_bytes(bytes(data))
    with pytest.raises(ParameterError) as err:
        load_model(tmp_path)
    assert err.value.key == "trained_model_invalid"
    save_model(tiny_result, tmp_path)
    config = json.loads(config_path.read_text("utf-8"))
    config["model"]["width"] = 10**6
    config_path.write_text(json.dumps(config), "utf-8")
    with pytest.raises(ParameterError) as err:
        load_model(tmp_path)
    assert err.value.key == "trained_model_invalid"


def test_loading_refuses_weights_that_do_not_fit_the_config(tiny_result, tmp_path) -> None:
    save_model(tiny_result, tmp_path)
    other = train(replace(TINY, steps=1, width=8), corpus=split_corpus())
    save_model(other, tmp_path / "other")
    (tmp_path / WEIGHTS_FILE).write_bytes((tmp_path / "other" / WEIGHTS_FILE).read_bytes())
    config_path = tmp_path / CONFIG_FILE
    config = json.loads(config_path.read_text("utf-8"))
    config["weights_sha256"] = json.loads((tmp_path / "other" / CONFIG_FILE).read_text("utf-8"))[
        "weights_sha256"
    ]
    config_path.write_text(json.dumps(config), "utf-8")
    with pytest.raises(ParameterError) as err:
        load_model(tmp_path)
    assert err.value.key == "trained_model_invalid"


# --- --verify: a retrained run against the shipped one ----------------------------------


def test_verify_tolerance_is_assert_close_like() -> None:
    assert VERIFY_ATOL == 1e-4 and VERIFY_RTOL == 1e-4


def test_compare_runs_accepts_float_rounding_with_the_same_counts(tiny_result) -> None:
    weights = tiny_result.model.state_dict()
    metrics = run_metrics(tiny_result.heldout)
    ev = tiny_result.heldout
    assert metrics == {"n": ev.n, "correct": ev.correct, "exact": ev.exact}
    same = compare_runs(weights, weights, metrics, {**metrics, "accuracy": ev.accuracy})
    assert same.ok and same.max_abs_diff == 0.0
    # 5.9e-6: the difference seen between the shipped weights and a retrain elsewhere
    nudged = {name: w + 5.9e-6 for name, w in weights.items()}
    close = compare_runs(nudged, weights, metrics, metrics)
    assert close.ok and close.weights_close and close.metrics == ()
    assert close.max_abs_diff == pytest.approx(5.9e-6, rel=0.05)
    assert close.summary().startswith("matches the shipped model")


def test_compare_runs_refuses_weights_beyond_the_tolerance(tiny_result) -> None:
    weights = tiny_result.model.state_dict()
    metrics = run_metrics(tiny_result.heldout)
    name = sorted(weights)[0]
    far = {**weights, name: weights[name] + 1e-3}
    result = compare_runs(far, weights, metrics, metrics)
    assert not result.ok and not result.weights_close and result.far == (name,)
    assert result.max_abs_diff == pytest.approx(1e-3, rel=0.01)
    assert result.summary().startswith("DIFFERENT") and name in result.summary()
    # atol + rtol * |saved|: a large weight may move further than a small one
    big = {"w": torch.tensor([1000.0], dtype=torch.float64)}
    assert compare_runs({"w": big["w"] + 0.09}, big, {}, {}).ok  # 0.09 <= 1e-4 + 0.1
    assert not compare_runs({"w": big["w"] + 0.2}, big, {}, {}).ok
    nan = {"w": torch.tensor([float("nan")])}
    assert not compare_runs(nan, nan, {}, {}).ok  # NaN is never close


def test_compare_runs_wants_the_same_names_and_shapes(tiny_result) -> None:
    weights = tiny_result.model.state_dict()
    name = sorted(weights)[0]
    fewer = {k: v for k, v in weights.items() if k != name}
    assert compare_runs(fewer, weights, {}, {}).missing == (name,)
    assert compare_runs(weights, fewer, {}, {}).missing == (name,)
    cut = {**weights, name: weights[name].flatten()[:1]}
    result = compare_runs(cut, weights, {}, {})
    assert result.mismatched == (name,) and not result.ok
    double = {**weights, name: weights[name].double()}
    assert compare_runs(double, weights, {}, {}).mismatched == (name,)


def test_compare_runs_wants_the_reported_counts_exactly(tiny_result) -> None:
    weights = tiny_result.model.state_dict()
    metrics = run_metrics(tiny_result.heldout)
    saved = {**metrics, "correct": metrics["correct"] + 1}
    result = compare_runs(weights, weights, metrics, saved)
    assert result.weights_close and not result.ok
    assert result.metrics == (("correct", metrics["correct"], metrics["correct"] + 1),)
    assert "correct" in result.summary()
    unrecorded = {k: v for k, v in metrics.items() if k != "exact"}
    assert compare_runs(weights, weights, metrics, unrecorded).metrics == (
        ("exact", metrics["exact"], None),
    )


def test_verify_command_compares_with_the_saved_model(tiny_result, tmp_path, monkeypatch,
                                                      capsys) -> None:
    """main --verify without a full retrain: train() returns the tiny run."""
    monkeypatch.setattr(train_module, "train", lambda *args, **kwargs: tiny_result)
    save_model(tiny_result, tmp_path)
    assert main(["--verify", "--out", str(tmp_path)]) == 0
    assert "matches the shipped model" in capsys.readouterr().out
    config_path = tmp_path / CONFIG_FILE
    config = json.loads(config_path.read_text("utf-8"))
    config["heldout"]["exact"] += 1  # the recorded counts no longer match the run
    config_path.write_text(json.dumps(config), "utf-8")
    assert main(["--verify", "--out", str(tmp_path)]) == 1
    assert "DIFFERENT" in capsys.readouterr().out
