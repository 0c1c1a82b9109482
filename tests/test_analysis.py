"""Repeat statistics, gate probabilities and the noisy-judge simulator, against hand-computed values."""

from __future__ import annotations

import itertools
import math
from typing import Any
from xml.dom import minidom

import numpy as np
import pytest

from assay import JudgeCall, Score, UnscoredReason, Verdict
from assay.analysis import (
    GatePolicy,
    analyze_repeats,
    binomial_pass_probability,
    bootstrap_mean_ci,
    classify,
    evaluate_gate,
    flake_probability,
    flip_rate,
    min_passing,
    paired_bootstrap_ci,
    poisson_binomial_pmf,
    recommend_statements,
    recommend_threshold,
    score_pass_probability,
    simulate_gate,
    simulate_gates,
    simulation_svg,
    wilson_interval,
)

# --- helpers -----------------------------------------------------------------------------


CALL = JudgeCall(model="m", purpose="verdicts", messages=(), raw_output="{}")


def faith(*verdicts: tuple[str, int], reason: str = "r", judged: bool = True) -> Score:
    """A faithfulness score; ``judged``: it carries the judge call that made it (as a real one does)."""
    vs = [Verdict(subject=s, value=v, reason=f"{reason}: {s}") for s, v in verdicts]
    value = sum(v for _, v in verdicts) / len(verdicts)
    return Score.scored("faithfulness", value, verdicts=vs, calls=[CALL] if judged else [])


def record(line: int, repeat: int, score: Score, sample_id: str | None = None) -> dict[str, Any]:
    return {
        "id": sample_id or f"s{line}",
        "line": line,
        "repeat": repeat,
        "sample": {},
        "scores": {"faithfulness": score.model_dump(mode="json")},
    }


def unscored() -> Score:
    return Score.unscored("faithfulness", UnscoredReason.PARSE_FAILURE, "bad json")


# --- flip rate and per-sample spread ------------------------------------------------------


def test_flip_rate_is_the_share_disagreeing_with_the_modal_verdict() -> None:
    assert flip_rate([1, 1, 0]) == pytest.approx(1 / 3)  # 1 of 3 differs from the mode 1
    assert flip_rate([1, 0]) == 0.5  # a tie: either verdict is "modal", one of two differs
    assert flip_rate([0, 0, 0, 0]) == 0.0
    assert flip_rate(["PASS", "FAIL", "PASS", "PASS"]) == pytest.approx(1 / 4)
    assert math.isnan(flip_rate([]))


def test_sample_spread_and_statement_flips_hand_computed() -> None:
    # Sample 1: A always 1; B is 1, 0, 1 -> scores 1, 0.5, 1.
    # Sample 2: statement sets {A, B}, {A, B}, {A, C} -> one repeat of three differs; only A is matched.
    records = [
        record(1, 0, faith(("A", 1), ("B", 1))),
        record(1, 1, faith(("A", 1), ("B", 0))),
        record(1, 2, faith(("A", 1), ("B", 1))),
        record(2, 0, faith(("A", 1), ("B", 0))),
        record(2, 1, faith(("A", 1), ("B", 0))),
        record(2, 2, faith(("a ", 1), ("C", 1))),  # "a " matches "A": case-folded, whitespace collapsed
    ]
    report = analyze_repeats(records, "faithfulness", n_boot=200)
    one, two = report.samples
    assert one.mean == pytest.approx(5 / 6)  # (1 + 0.5 + 1) / 3
    # std (ddof=1): deviations 1/6, -1/3, 1/6 -> (1/36 + 4/36 + 1/36) / 2 = 1/12
    assert one.std == pytest.approx(math.sqrt(1 / 12))
    assert (one.min, one.max) == (0.5, 1.0)
    assert one.flip_rates == {"A": 0.0, "B": pytest.approx(1 / 3)}
    assert one.unstable and not two.unstable
    assert two.set_change_share == pytest.approx(1 / 3)
    assert [s.subject for s in two.statements] == ["A"]
    assert two.mean == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    # Run: mean of per-sample means; pooled flip rate = minority verdicts / verdicts = (0 + 1 + 0) / 9
    assert report.mean == pytest.approx((5 / 6 + 2 / 3) / 2)
    assert report.flip_rate == pytest.approx(1 / 9)
    assert report.unstable_share == 0.5
    assert report.set_change_share == pytest.approx((0 * 3 + 1) / 6)
    assert report.n_repeats == 3 and report.n_records == 6 and report.n_unscored == 0


def test_unscored_repeats_are_counted_and_left_out_of_the_spread() -> None:
    records = [record(1, 0, faith(("A", 1))), record(1, 1, unscored()), record(1, 2, faith(("A", 0)))]
    report = analyze_repeats(records, "faithfulness", n_boot=100)
    (sample,) = report.samples
    assert sample.n_scored == 2 and sample.n_unscored == 1
    assert sample.mean == 0.5 and sample.unscored_reasons == ("parse_failure: bad json",)
    assert report.unscored_share == pytest.approx(1 / 3)
    with pytest.raises(KeyError):
        analyze_repeats(records, "no_such_metric")


# --- bootstrap and Wilson ----------------------------------------------------------------


def test_bootstrap_is_seeded_reproducible_and_matches_a_replica() -> None:
    values = [0.2, 0.9, 0.4, 1.0, 0.7, 0.55, 0.3]
    a = bootstrap_mean_ci(values, n_boot=2000, seed=7)
    assert a == bootstrap_mean_ci(values, n_boot=2000, seed=7)
    assert a != bootstrap_mean_ci(values, n_boot=2000, seed=8)
    # The documented procedure, written out: one generator, (n_boot, n) indices, percentile quantiles.
    rng = np.random.default_rng(7)
    data = np.array(values)
    means = data[rng.integers(0, len(values), size=(2000, len(values)))].mean(axis=1)
    assert a == (pytest.approx(np.quantile(means, 0.025)), pytest.approx(np.quantile(means, 0.975)))
    assert a[0] < float(np.mean(values)) < a[1]


def test_bootstrap_of_two_values_hand_computed() -> None:
    # Resamples of [0, 1] have mean 0 (1/4), 0.5 (1/2) or 1 (1/4): the 2.5% and 97.5% quantiles are 0 and 1.
    assert bootstrap_mean_ci([0.0, 1.0], n_boot=4000, seed=0) == (0.0, 1.0)
    # One sample says nothing about sampling variation: no interval rather than a zero-width one.
    assert all(math.isnan(x) for x in bootstrap_mean_ci([0.5], seed=0))
    assert all(math.isnan(x) for x in bootstrap_mean_ci([], seed=0))
    assert all(math.isnan(x) for x in bootstrap_mean_ci([math.nan, 0.5], seed=0))  # NaN dropped first


def test_bootstrap_chunking_keeps_the_stream() -> None:
    # Large inputs are resampled in row chunks; the result must equal the one-shot draw.
    values = np.random.default_rng(2).random(5000)
    rng = np.random.default_rng(11)
    means = values[rng.integers(0, 5000, size=(1200, 5000))].mean(axis=1)
    expected = (float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975)))
    assert bootstrap_mean_ci(values, n_boot=1200, seed=11) == expected  # 1200 x 5000 > one 4M-index chunk


def test_paired_bootstrap_is_the_bootstrap_of_the_differences() -> None:
    base, other = [1.0, 0.5, 1.0, 0.5], [0.5, 0.5, 0.5, 0.5]
    assert paired_bootstrap_ci(base, other, seed=3) == bootstrap_mean_ci([0.5, 0.0, 0.5, 0.0], seed=3)
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap_ci([1.0], [])


def test_bootstrap_agrees_with_the_normal_interval_on_a_large_sample() -> None:
    values = np.random.default_rng(1).random(400)
    low, high = bootstrap_mean_ci(values, seed=3)
    half = 1.96 * values.std(ddof=1) / math.sqrt(400)
    assert low == pytest.approx(values.mean() - half, abs=0.006)
    assert high == pytest.approx(values.mean() + half, abs=0.006)


def test_wilson_interval_hand_computed() -> None:
    # 3 of 3, z = 1.959964: center = (1 + z²/6) / (1 + z²/3) = 1.64026 / 2.28051 = 0.71925
    # half = z·sqrt(0 + z²/36) / (1 + z²/3) = z²/6 / 2.28051 = 0.64026 / 2.28051 = 0.28075
    low, high = wilson_interval(3, 3)
    assert low == pytest.approx(0.71925 - 0.28075, abs=1e-4) and high == 1.0
    # 5 of 10: center 0.5, half = z·sqrt(0.025 + z²/400) / (1 + z²/10) = 1.96·0.18602 / 1.38415 = 0.26341
    low, high = wilson_interval(5, 10)
    assert (low, high) == (pytest.approx(0.5 - 0.26341, abs=1e-4), pytest.approx(0.5 + 0.26341, abs=1e-4))


# --- binomial model -----------------------------------------------------------------------


def test_poisson_binomial_is_exact_on_three_statements_by_enumeration() -> None:
    probs = [0.9, 0.9, 0.1]  # observed 1, 1, 0 with flip rate 0.1
    pmf = poisson_binomial_pmf(probs)
    expected = [0.0] * 4
    for bits in itertools.product([0, 1], repeat=3):
        expected[sum(bits)] += math.prod(p if b else 1 - p for p, b in zip(probs, bits, strict=True))
    assert pmf.tolist() == pytest.approx(expected)
    # By hand: P(3) = .9·.9·.1 = .081; P(2) = .9·.9·.9 + 2·(.9·.1·.1) = .729 + .018 = .747
    assert pmf[3] == pytest.approx(0.081) and pmf[2] == pytest.approx(0.747)
    assert score_pass_probability([1, 1, 0], 2 / 3, 0.1) == pytest.approx(0.081 + 0.747)
    assert pmf.sum() == pytest.approx(1.0)


def test_min_passing_handles_thresholds_on_the_grid() -> None:
    assert min_passing(10, 0.8) == 8  # 0.8·10 is 8.000000000000002 in floating point
    assert min_passing(3, 0.8) == 3 and min_passing(5, 0.0) == 0 and min_passing(3, 2 / 3) == 2


def test_binomial_pass_probability_hand_computed() -> None:
    # q = .9·.9 + .1·.1 = .82; 3 statements at 0.8 need all 3: .82³ = .551368
    assert binomial_pass_probability(3, 0.9, 0.1, 0.8) == pytest.approx(0.551368)
    # 5 statements, p = 1, ε = .05, need 4: .95⁵ + 5·.05·.95⁴ = .77378 + .20363 = .97741
    assert binomial_pass_probability(5, 1.0, 0.05, 0.8) == pytest.approx(0.95**5 + 5 * 0.05 * 0.95**4)
    assert flake_probability(0.97741) == pytest.approx(0.02259)
    assert classify(0.995) == "stable_pass" and classify(0.005) == "stable_fail" and classify(0.5) == "flaky"


def test_recommendations_hand_computed() -> None:
    # p = 1, ε = .1, threshold 1: P(pass) = .9ⁿ, stable fail once .9ⁿ <= .01: n >= ln .01 / ln .9 = 43.7 -> 44
    (row,) = recommend_statements(1.0, 0.1, (1.0,))
    assert row.n_statements == 44 and row.stability == "stable_fail"
    assert row.p_pass == pytest.approx(0.9**44)
    # p = 1, ε = .01, threshold .5: q = .99 so one statement already passes with .99, and more only help.
    (row,) = recommend_statements(1.0, 0.01, (0.5,))
    assert row.n_statements == 1 and row.stability == "stable_pass"
    # q = .82 right at a .8 threshold: never stable up to 200 statements.
    (row,) = recommend_statements(0.9, 0.1, (0.8,))
    assert row.n_statements is None
    # n = 10, p = 1, ε = .05: P(≥10) = .5987, P(≥9) = .9139, P(≥8) = .9885, P(≥7) = .9990 -> 0.7
    assert recommend_threshold(10, 1.0, 0.05) == pytest.approx(0.7)


# --- simulator ----------------------------------------------------------------------------


def test_simulation_matches_the_binomial_closed_form() -> None:
    sim = simulate_gate(10, flip_rate=0.1, threshold=0.8, true_rate=0.9, runs=20_000, seed=1)
    q = 0.9 * 0.9 + 0.1 * 0.1
    exact = sum(math.comb(10, k) * q**k * (1 - q) ** (10 - k) for k in (8, 9, 10))
    assert sim.p_pass_exact == pytest.approx(exact)
    assert abs(sim.p_pass_simulated - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000)
    assert sum(sim.counts) == 20_000
    for k in range(11):
        assert sim.counts[k] / 20_000 == pytest.approx(sim.exact[k], abs=0.012)
    again = simulate_gate(10, flip_rate=0.1, threshold=0.8, true_rate=0.9, runs=20_000, seed=1)
    assert again.counts == sim.counts  # seeded


def test_simulation_svg_is_well_formed_with_one_panel_per_count() -> None:
    sims = simulate_gates([3, 10, 20], flip_rate=0.1, threshold=0.8, runs=500, seed=0)
    assert [s.seed for s in sims] == [0, 1, 2]
    svg = simulation_svg(sims)
    doc = minidom.parseString(svg)
    panels = [g for g in doc.getElementsByTagName("g") if g.getAttribute("id").startswith("panel-")]
    assert [g.getAttribute("id") for g in panels] == ["panel-3", "panel-10", "panel-20"]
    assert "P(pass) =" in svg and "threshold 0.8" in svg


# --- gates --------------------------------------------------------------------------------


def test_per_sample_gate_from_repeats_is_flaky_when_a_statement_flips() -> None:
    records = [
        record(1, r, faith(("sky is blue", 1), ("grass is green", v), reason="why")) for r, v in enumerate([1, 0, 1])
    ] + [record(2, r, faith(("A", 1))) for r in range(3)]
    result = evaluate_gate(analyze_repeats(records, "faithfulness", n_boot=100), GatePolicy(per_sample=True))
    assert result.method == "repeats"
    first, second = result.samples
    assert first.p_pass == pytest.approx(2 / 3) and first.passed and first.stability == "flaky"
    assert second.p_pass == 1.0
    assert result.p_pass == pytest.approx(2 / 3) and result.outcome == "flaky"
    (sinker,) = first.sinkers
    assert sinker.subject == "grass is green" and sinker.reason == "why: grass is green"
    assert (sinker.failed, sinker.repeats) == (1, 3)
    assert result.flip_rate == pytest.approx(1 / 9)  # measured: 1 minority verdict among 9


def test_single_run_gate_uses_the_exact_poisson_binomial() -> None:
    # Verdicts 1,1,1,1,0 (score .8), ε = .1, gate .8 needs 4 of 5:
    # K = Bin(4, .9) + Bern(.1); P(K >= 4) = .9⁴ + P(Bin = 3)·.1 = .6561 + 4·.729·.1·.1 = .68526
    records = [record(1, 0, faith(("a", 1), ("b", 1), ("c", 1), ("d", 1), ("e", 0)))]
    policy = GatePolicy(per_sample=True, flip_rate=0.1)
    result = evaluate_gate(analyze_repeats(records, "faithfulness", n_boot=100), policy)
    assert result.method == "binomial" and result.flip_rate_source == "given"
    assert result.p_pass == pytest.approx(0.68526)
    # A single run decides on what it observed; the model's P(pass) is an estimate beside it.
    assert result.observed_pass and result.outcome == "pass"
    assert result.reversal_probability == pytest.approx(1 - 0.68526)
    default = evaluate_gate(analyze_repeats(records, "faithfulness", n_boot=100), GatePolicy(per_sample=True))
    assert default.flip_rate == 0.05 and default.flip_rate_source == "default"
    assert any("assumed" in note for note in default.notes)


def test_strict_and_minimum_statements_defend_against_padding() -> None:
    padded = faith(*[(f"trivially true {i}", 1) for i in range(9)], ("the drug cures cancer", 0), reason="not stated")
    short = faith(("one claim", 1), ("another", 1))
    records = [record(1, 0, padded), record(2, 0, short)]
    report = analyze_repeats(records, "faithfulness", n_boot=100)
    # Padding gets the padded answer through a plain 0.8 gate...
    plain = evaluate_gate(report, GatePolicy(per_sample=True, flip_rate=0.0))
    assert plain.outcome == "pass"
    # ...but not through strict mode, which names the statement and the judge's reason.
    strict = evaluate_gate(report, GatePolicy(strict=True, flip_rate=0.0))
    assert strict.outcome == "fail"
    (failed,) = strict.failing
    assert failed.id == "s1" and failed.why == "an unsupported statement (strict)"
    assert [(s.subject, s.reason) for s in failed.sinkers] == [
        ("the drug cures cancer", "not stated: the drug cures cancer")
    ]
    # Fewer than K statements fails (it is not unscored).
    few = evaluate_gate(report, GatePolicy(per_sample=True, min_statements=3, flip_rate=0.0))
    assert few.outcome == "fail" and [s.id for s in few.failing] == ["s2"]
    assert few.failing[0].why == "2 statements, fewer than the minimum 3"
    run_mean = evaluate_gate(report, GatePolicy(min_statements=3, flip_rate=0.0))
    assert run_mean.outcome == "fail" and not run_mean.observed_pass


def test_unscored_above_the_limit_is_its_own_outcome() -> None:
    records = [record(i, 0, faith(("A", 1))) for i in range(1, 4)] + [record(4, 0, unscored())]
    report = analyze_repeats(records, "faithfulness", n_boot=100)
    result = evaluate_gate(report, GatePolicy(flip_rate=0.0))
    assert result.unscored_share == 0.25 and result.outcome == "unscored"
    assert [s.unscored for s in result.unscored_samples] == [("parse_failure: bad json",)]
    assert evaluate_gate(report, GatePolicy(flip_rate=0.0, max_unscored=0.3)).outcome == "pass"


def test_run_mean_gate_simulates_one_repeat_per_sample() -> None:
    # A scores 1 in every repeat; B scores .5, .5, 1. A simulated run passes (.8) only when B draws its 1: P = 1/3.
    records = [record(1, r, faith(("A", 1))) for r in range(3)] + [
        record(2, r, faith(("B", v), ("C", 1))) for r, v in enumerate([0, 0, 1])
    ]
    policy = GatePolicy(simulations=20_000, seed=4)
    result = evaluate_gate(analyze_repeats(records, "faithfulness", n_boot=100), policy)
    assert result.observed_pass  # mean of means: (1 + 2/3) / 2 = .833
    assert result.p_pass == pytest.approx(1 / 3, abs=4 * math.sqrt(2 / 9 / 20_000))
    assert result.outcome == "flaky"
    assert evaluate_gate(analyze_repeats(records, "faithfulness", n_boot=100), policy).p_pass == result.p_pass


def test_run_mean_gate_single_run_binomial_model() -> None:
    # Two samples of two supported statements, ε = .05: the mean reaches .8 only if all 4 stay 1: .95⁴ = .81451
    records = [record(i, 0, faith(("A", 1), ("B", 1))) for i in (1, 2)]
    policy = GatePolicy(flip_rate=0.05, simulations=40_000)
    result = evaluate_gate(analyze_repeats(records, "faithfulness", n_boot=100), policy)
    assert result.p_pass == pytest.approx(0.95**4, abs=4 * math.sqrt(0.8145 * 0.1855 / 40_000))
    assert result.outcome == "pass"  # observed; the estimate does not make a single run flaky
    assert evaluate_gate(analyze_repeats(records, "faithfulness"), GatePolicy(flip_rate=0.0)).outcome == "pass"


def test_a_metric_no_judge_spoke_for_is_gated_on_what_it_computed_with_no_assumed_noise() -> None:
    # A state match or a tool-call accuracy makes no judge call: the default 5% flip rate gave a
    # deterministic 0.8 a 19% chance to fail "on a rerun", and told the user to measure judge noise.
    records = [record(i, 0, faith(("A", 1), ("B", 1), ("C", 1), ("D", 1), ("E", 0), judged=False)) for i in (1, 2)]
    report = analyze_repeats(records, "faithfulness", n_boot=100)
    for policy in (GatePolicy(per_sample=True), GatePolicy(), GatePolicy(per_sample=True, flip_rate=0.2)):
        result = evaluate_gate(report, policy)
        assert (result.flip_rate, result.flip_rate_source) == (0.0, "no judge call")
        assert result.p_pass == 1.0 and result.outcome == "pass"
        assert [s.p_pass for s in result.samples] == [1.0, 1.0]
        assert not any("assumed" in n or "--repeats" in n or "flipped" in n for n in result.notes)
        assert any("no scored result of faithfulness came from a judge call" in n for n in result.notes)
    failing = evaluate_gate(report, GatePolicy(threshold=0.9))
    assert failing.p_pass == 0.0 and failing.outcome == "fail"


def test_a_judged_run_models_noise_only_on_the_samples_a_judge_scored() -> None:
    # Sample 1 was judged (its 4 verdicts can flip); sample 2's verdicts were computed (no call).
    records = [
        record(1, 0, faith(("A", 1), ("B", 1), ("C", 1), ("D", 1))),
        record(2, 0, faith(("E", 1), ("F", 1), ("G", 1), ("H", 1), judged=False)),
    ]
    result = evaluate_gate(analyze_repeats(records, "faithfulness", n_boot=100), GatePolicy(per_sample=True))
    assert result.flip_rate_source == "default"
    first, second = result.samples
    assert first.p_pass == pytest.approx(0.95**4)  # 0.8 of 4 statements needs all 4 to stay supported
    assert second.p_pass == 1.0
    assert result.p_pass == pytest.approx(first.p_pass)


def test_a_combined_score_whose_calls_are_in_its_parts_counts_as_judged() -> None:
    part = faith(("A", 1), ("B", 0))
    combined = Score.scored("faithfulness", 0.5, verdicts=part.verdicts, parts=[part])
    assert not combined.calls and combined.all_calls
    result = evaluate_gate(analyze_repeats([record(1, 0, combined)], "faithfulness", n_boot=100), GatePolicy())
    assert result.flip_rate_source == "default" and 0.0 < result.p_pass < 1.0
