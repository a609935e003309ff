"""Step-by-step reveal: a teacher shows a worked example one step at a time.

    steps = Stepper("hand", ["scores", "scaled", "weights", "output"])
    if steps.step(1, "`[1.000, 0.000]`"): ...step 1, under its heading "1 · scores — ..."
    if steps.shows(2): ...step 2, laid out by the page...

By default every step is shown (a learner reading alone). "Step by step" starts at
step 1; "next" / "back" (or the keys N and B) move one step; "all" shows everything
again. After a move the page scrolls to the step (ui/presenter.py). The step is part
of the URL ("softmax.hand.step=2"), so a shared link opens at the same step.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from ui import handout, state
from ui.fold import fold_key
from ui.i18n import t

ALL = 0  # the URL value meaning "every step shown"


class Stepper:
    def __init__(self, name: str, labels: Sequence[str], *, fold_at: int | None = None) -> None:
        """fold_at: the first step that lies below the page's fold (ui/fold.py); moving
        to it, or to "all", opens the rest of the page."""
        self.labels = list(labels)  # translated names of the steps, in order
        self.fold_at = fold_at
        self.key = f"{state.current_stage()}.{name}.step"
        total = len(self.labels)
        codec = state.step_codec(total)
        stale = st.session_state.get(self.key)
        if isinstance(stale, int) and not isinstance(stale, bool) and stale > total:
            st.session_state[self.key] = total  # fewer steps than before: the last one
        self.current = state.initial(self.key, ALL, codec, t("kit.step_label"))
        self._draw_controls()
        state.write_url(self.key, st.session_state[self.key], ALL, codec)
        self.current = st.session_state[self.key]

    def shows(self, step: int) -> bool:
        """Is step `step` (1-based) on screen?"""
        return self.current == ALL or step <= self.current

    def step(self, step: int, result: str = "") -> bool:
        """Like shows(), and when the step is on screen, its heading first: "**2 · label**",
        followed by " — result" (Markdown, e.g. the step's vector) when one is given."""
        if not self.shows(step):
            return False
        tail = f" — {result}" if result else ""
        st.markdown(f"**{step} · {self.labels[step - 1]}**{tail}")
        handout.add("step", (step, self.labels[step - 1], result))
        return True

    def _draw_controls(self) -> None:
        total, now = len(self.labels), self.current
        # Keyed, so the browser code (ui/presenter.py) finds the walk a key moved.
        with st.container(horizontal=True, vertical_alignment="center",
                          key=f"_{self.key}{state.PRIVATE}controls"):
            if now == ALL:
                st.button(t("kit.step_start"), key=f"_{self.key}~start",
                          icon=":material/slideshow:", on_click=self._go, args=(1,))
                return
            st.button(t("kit.step_back"), key=f"_{self.key}~back", icon=":material/chevron_left:",
                      on_click=self._go, args=(max(1, now - 1),), disabled=now <= 1)
            st.markdown(t("kit.step_of", k=now, n=total, label=self.labels[now - 1]))
            st.button(t("kit.step_next"), key=f"_{self.key}~next", icon=":material/chevron_right:",
                      on_click=self._go, args=(now + 1,), disabled=now >= total,
                      type="primary")
            st.button(t("kit.step_all"), key=f"_{self.key}~all", on_click=self._go,
                      args=(ALL,))

    def _go(self, step: int) -> None:
        st.session_state[self.key] = step
        if self.fold_at is not None and (step == ALL or step >= self.fold_at):
            st.session_state[fold_key()] = True
