"""The running example, defined once: the two customer-service questions every stage
comes back to, and the word tokens the attention stages cut them into.

The characters are the model's tokens (tinyformer.lessons.corpus holds both questions,
always held out); the attention stages use whole words (运费, 承担) so that a table row
is a word a learner can read. Real tokenizers do neither exactly: they use sub-word
pieces. The app's pages read these through ui.example.
"""

from __future__ import annotations

RUNNING_EXAMPLE = "商品有质量问题，运费谁承担？"  # the merchant pays
TWIN = "无理由退货，运费谁承担？"  # the buyer usually pays
# The twin with as many characters before 运费 as the running example, so that 费 sits at
# the same position in both (a model with position rows then sees the same input row there).
TWIN_SAME_PLACE = "商品无理由退货，运费谁承担？"
RUNNING_WORDS = ("商品", "有", "质量", "问题", "，", "运费", "谁", "承担", "？")
TWIN_WORDS = ("无理由", "退货", "，", "运费", "谁", "承担", "？")
TAIL4 = ("运费", "谁", "承担", "？")  # the shared ending, as four positions
TAIL6 = ("问题", "，", "运费", "谁", "承担", "？")  # six positions, for a wider table
PAYERS = ("商家", "买家", "未知")  # merchant, buyer, unknown: the stage 10 vocabulary
