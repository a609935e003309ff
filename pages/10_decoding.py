"""Stage 10.2: drawing the next token with a seed, and the loop that appends it and runs the
model again."""

import streamlit as st

from tinyformer.lessons.decoding import generate, shared_start
from tinyformer.lessons.forward_pass import ARTICLE_IDS, parse_ids
from tinyformer.lessons.text_loop import labels, prompt_ids
from tinyformer.lessons.train_settings import MAX_LENGTH
from tinyformer.model import TinyDecoder
from tinyformer.sampling import draw_counts, next_token_probs
from tinyformer.tokenizer import CharVocab
from ui.charts import bars
from ui.corpus import corpus_text
from ui.example import PAYERS, gloss, question_box
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.fmt import num, short
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import choice, matrix_input, number, text
from ui.models import shipped_model
from ui.notes import random_weights_note, shown_errors
from ui.page import fold, part, section, stage_link
from ui.reveal import ALL, Stepper
from ui.sentence import MAX_CHARS

# TinyDecoder with the article's settings
MODEL_SEED = 7
VOCAB = 50
MAX_LEN = 16
MAX_STEPS = 8
MAX_DRAWS = 1000
SHOWN_DRAWS = 20
FORKS = 3


MODELS = ("trained", "random")


@st.cache_resource(max_entries=64)  # shared by every session: a run is a pure function
def runs(kind: str, prompt: tuple[int, ...], steps: int, temp: float, seed: int) -> tuple:
    model = shipped_model().model if kind == "trained" else TinyDecoder.seeded(MODEL_SEED)
    greedy = generate(model, prompt, steps)
    sampled = generate(model, prompt, steps, temperature=temp, seed=seed)
    forks = [generate(model, (*prompt, greedy.new[0]), steps - 1, temperature=temp,
                      seed=seed + 1 + i) for i in range(FORKS)] if steps > 1 else []
    return greedy, sampled, forks


@st.cache_resource
def tokens_of_1_1() -> tuple[str, ...]:
    """Stage 1.1's character vocabulary ([PAD] = 0, [UNK] = 1, ...), which names the
    random model's IDs."""
    return CharVocab.from_corpus(corpus_text()).tokens


def ids(values, vocab: tuple[str, ...] | None = None) -> str:
    """IDs as the loop shows them: numbers, or the trained model's characters."""
    if vocab is None:
        return " ".join(map(str, values))
    return "".join(vocab[i] for i in values)


def run_lines(run, shown: int, vocab: tuple[str, ...] | None) -> None:
    """One line per step: what the model read, its top candidates, what was appended."""
    for k, step in enumerate(run.steps[:shown], start=1):
        top = t("decoding.sep").join(f"{ids([i], vocab)} ({num(p)})" for i, p in step.top)
        appended = step.context[len(run.prompt):]  # chosen by the earlier steps
        chosen = f"**{ids(appended, vocab)}**" if appended else ""
        st.markdown(t("decoding.step_line", k=k, prompt=ids(run.prompt, vocab), chosen=chosen,
                      top=top, id=ids([step.chosen], vocab), p=num(step.probs[step.chosen])))
    st.markdown(t("decoding.sequence", prompt=ids(run.prompt, vocab),
                  new=ids(run.new[:shown], vocab)))


@part
def sampling() -> None:  # logits, temperature, seed and draws: this section only
    section(t("decoding.draw_title"))
    left, right = st.columns([2, 3])
    with left:
        z = matrix_input("z", t("decoding.logits"), [2, 1, 0], sliders=True,
                         slider_labels=list(PAYERS))
        temp = number("T", t("decoding.temperature"), 0.0, 5.0, 1.0, step=0.05, gesture="both")
        seed_col, n_col = st.columns(2)
        with seed_col:
            seed = number("seed", t("decoding.seed"), 0, 9999, 0)
        with n_col:
            n = number("n", t("decoding.draws"), 1, MAX_DRAWS, 100,
                       help=t("decoding.draws_help", limit=MAX_DRAWS))
    with shown_errors():
        probs = next_token_probs(z, temp).probs
        draws = draw_counts(probs, n, seed)
        with right:
            expected_count = number_exercise(
                "expect", t("decoding.ex2_question", n=n, p=num(probs[0])),
                float(draws.expected[0]),
                t("decoding.ex2_steps", n=n, p=num(probs[0], 4), e=num(draws.expected[0], 2)),
                tolerance=0.5, decimals=1)
            scatter = choice_exercise(  # why beside the arithmetic
                "scatter", t("decoding.why_question", n=n),
                [t(f"decoding.why_{k}") for k in ("chance", "change", "seed")], correct=0,
                explanation=t("decoding.why_explain"))
            if not (expected_count and scatter):  # the chart shows n · p and the counts
                after_answer()
                return
            counts = t("decoding.counts", n=n)
            expected = t("decoding.expected")
            bars(PAYERS, {counts: draws.counts.tolist(), expected: draws.expected.tolist()},
                 key="draws", decimals={counts: 0, expected: 1}, height=280,
                 y_title=t("decoding.how_often"))
        st.markdown("\n".join(t("decoding.count_line", w=w, p=num(probs[j]),
                                e=num(draws.expected[j], 1), s=num(draws.spread[j], 1),
                                c=int(draws.counts[j])) for j, w in enumerate(PAYERS)))
        first = " ".join(PAYERS[i] for i in draws.draws[:SHOWN_DRAWS].tolist())
        st.caption(t("decoding.first_draws", k=min(SHOWN_DRAWS, n), seed=seed, draws=first))
        st.info(t("decoding.noise"), icon=":material/casino:")


@part
def generation_loop() -> None:  # prompt, steps, temperature and seed of the loop
    section(t("decoding.loop_title"))
    if not choice_exercise("reads", t("decoding.ex_question"),
                           [t("decoding.ex_prompt"), t("decoding.ex_all"), t("decoding.ex_last")],
                           correct=1, explanation=t("decoding.ex_explain")):
        after_answer()  # the loop's description and every step line answer it
        return
    st.markdown(t("decoding.loop_lead"))
    kind = choice("loop_model", t("decoding.loop_model"), list(MODELS), "trained",
                  format_func=lambda k: t(f"decoding.loop_model_{k}"))
    trained = shipped_model() if kind == "trained" else None
    vocab = trained.vocab.tokens if trained else None
    if trained:
        st.caption(t("decoding.loop_trained_note"))
    else:
        random_weights_note()
    if trained:  # the teacher's sentence (by default the running example), both questions
        prompt_text = question_box("prompt_text", t("decoding.prompt_text"), MAX_CHARS)
        cols = st.columns(3, vertical_alignment="bottom")
    else:
        cols = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
        with cols.pop(0):
            prompt_text = text("prompt", t("decoding.prompt"), ", ".join(map(str, ARTICLE_IDS)),
                               100, help=t("decoding.prompt_help", v=VOCAB - 1, n=MAX_LEN))
    with cols[0]:
        steps = number("steps", t("decoding.steps"), 1, MAX_STEPS, 5,
                       help=t("decoding.steps_help", n=MAX_LENGTH if trained else MAX_LEN))
    with cols[1]:
        loop_t = number("loop_T", t("decoding.temperature"), 0.0, 5.0, 1.0, step=0.05)
    with cols[2]:
        loop_seed = number("loop_seed", t("decoding.seed"), 0, 9999, 0)
    if trained:
        prompt = None
        with shown_errors():
            prompt = prompt_ids(trained.vocab, prompt_text)
        if prompt is None:
            return
    else:
        prompt = list(ARTICLE_IDS)
        with shown_errors():
            prompt = parse_ids(prompt_text, VOCAB, MAX_LEN)
    with shown_errors():
        greedy, sampled, forks = runs(kind, tuple(prompt), steps, loop_t, loop_seed)
        stepper = Stepper("loop", [t("decoding.step_label", k=k + 1) for k in range(steps)])
        shown = steps if stepper.current == ALL else stepper.current
        names = (t("decoding.greedy"), t("decoding.sampled", T=short(loop_t), seed=loop_seed))
        for col, name, run in zip(st.columns(2), names, (greedy, sampled), strict=True):
            with col:
                subsection(name)
                run_lines(run, shown, vocab)
        same = shared_start(greedy.new, sampled.new)
        st.markdown(t("decoding.agree_none" if same == 0 else "decoding.agree_all"
                      if same == steps else "decoding.agree_some", k=same, n=steps))
        if not trained:
            on_screen = [*prompt, *(i for run in (greedy, sampled) for step in run.steps
                                    for i, _ in step.top), *greedy.new, *sampled.new]
            named = t("decoding.sep").join(f"{i} = {token}" for i, token in
                                          labels(tokens_of_1_1(), sorted(set(on_screen))))
            st.caption(t("decoding.loop_ids_note", v=VOCAB - 1, labels=named))
        if not trained and tuple(prompt) == ARTICLE_IDS:
            st.caption(t("decoding.same_as_forward"))
            stage_link("forward")

        section(t("decoding.fork_title"))
        if not forks:
            st.info(t("decoding.fork_needs_two"))
        else:
            first = ids([greedy.new[0]], vocab)
            st.markdown(t("decoding.fork_lead", first=first, T=short(loop_t)))
            st.markdown("\n".join(t("decoding.fork_line", seed=loop_seed + 1 + i,
                                    prompt=ids(prompt, vocab), first=first,
                                    rest=ids(f.new, vocab)) for i, f in enumerate(forks)))
            st.info(t("decoding.not_fixed"), icon=":material/alt_route:")


st.caption(t("decoding.tokens", v=VOCAB - 1))
gloss(PAYERS)
sampling()
fold(t("decoding.loop_title"))
generation_loop()
