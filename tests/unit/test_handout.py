"""The downloads' pure parts (ui/handout.py, ui/classroom.Files): LaTeX to MathML for the
printable handout, the CSV files, the whole version of a part during a step-by-step
walk, and the class's address in every link. The pages' own handouts: tests/app/
test_classroom.py."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

from ui import classroom, handout
from ui.handout import Record, Table, Whole

LABELS = {"made_from": "From", "answers": "ANSWERS", "partial": "PARTIAL"}
# What the pages write: aligned and gathered blocks, matrices, cases, sized delimiters,
# Chinese in \text, a line gap, \tfrac and \textstyle.
FORMULAS = (
    r"\begin{aligned}q_{0} = x_{0} W_q &= \begin{bmatrix}1 & 0 & 1\end{bmatrix}"
    r"\begin{bmatrix}-1 & 0 \\ 0 & 1 \\ 0 & 0\end{bmatrix} \\ &= "
    r"\begin{bmatrix}-1.000 & 0.000\end{bmatrix}\end{aligned}",
    r"\begin{gathered}P(\text{漫} \mid \text{动}) = \frac{6}{10} = 0.600 \\[8pt] "
    r"P(\text{物} \mid \text{动}) = \frac{4}{10} = 0.400\end{gathered}",
    r"M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}",
    r"\begin{gathered}a = \mathrm{softmax}(s) \\ \Big\| \frac{\partial a}{\partial s}"
    r" \Big\|_F = 2\,a_1 a_2\end{gathered}",
    r"\begin{aligned}\mu &= \tfrac{1}{d}\textstyle\sum_i x_i \\ &= \frac{1 + 3}{2} = 2.000"
    r"\end{aligned}",
    r"\operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) \approx 1,\quad "
    r"X \in \mathbb{R}^{14 \times 8}",
)


def latex_left(page: str) -> list[str]:
    """LaTeX commands still readable in an HTML page's text (tags removed)."""
    return re.findall(r"\\[A-Za-z]+|\\[^A-Za-z\s]", re.sub(r"<[^>]+>", " ", page))


def test_formulas_become_mathml_without_latex_source():
    for latex in FORMULAS:
        mathml = handout._math(latex)
        assert mathml.startswith("<math") and latex_left(mathml) == [], latex
    assert handout.formula_lines(FORMULAS[1]) == [
        r"P(\text{漫} \mid \text{动}) = \frac{6}{10} = 0.600 ",
        r" P(\text{物} \mid \text{动}) = \frac{4}{10} = 0.400"]


def test_an_aligned_block_is_one_line_each_and_a_matrix_keeps_its_columns():
    """The old handout dropped every & and split at every \\\\: [1.000, 2.000] printed as
    "1.0002.000" and a 3 x 2 matrix as three lines."""
    lines = handout.formula_lines(r"S = \begin{aligned}&\begin{bmatrix}1.000 & 2.000 \\ "
                                  r"3.000 & 4.000\end{bmatrix} \\ &= 10\end{aligned}")
    assert lines == [r"S = \begin{bmatrix}1.000 & 2.000 \\ 3.000 & 4.000\end{bmatrix} ",
                     " = 10"]
    mathml = handout._math(lines[0])
    assert '<mtable class="bmatrix">' in mathml  # its brackets drawn by CSS, full height
    assert re.findall(r"<mtr>(.*?)</mtr>", mathml)[0] == (
        "<mtd><mn>1.000</mn></mtd><mtd><mn>2.000</mn></mtd>")


def test_markdown_escapes_and_inline_maths():
    html = handout._markdown(r"The bytes \<EF\> and **bold**, $a_{ij}$ and `[1.000, 2.000]`")
    assert "&lt;EF&gt;" in html and "\\" not in html
    assert "<b>bold</b>" in html and '<math xmlns="http://www.w3.org/1998/Math/MathML" ' \
        'display="inline">' in html and "<code>[1.000, 2.000]</code>" in html


def _record() -> Record:
    weights = Table("", ["运费", "谁"], ["运费", "谁"], [["1.000", "0.000"], ["0.330", "0.670"]])
    scores = Table("Scaled scores", ["a", "b"], ["a"], [["0.707", "0.000"]])
    return Record("softmax", "3 · Softmax", "Lead.", items=[
        ("section", "All positions at once"), ("table", scores),
        ("subsection", "Weights A"), ("table", weights), ("table", weights)])


def test_csv_files_are_named_after_their_table_with_a_caption_and_a_byte_order_mark():
    files = zipfile.ZipFile(io.BytesIO(handout.tables_zip(_record())))
    assert files.namelist() == ["Scaled_scores.csv", "Weights_A.csv", "Weights_A_2.csv"]
    raw = files.read("Weights_A.csv")
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8's byte-order mark: Excel reads Chinese
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert rows[0] == ["Weights A"]  # the caption: the table's title, else its heading
    assert rows[1] == ["", "运费", "谁"] and rows[3] == ["谁", "0.330", "0.670"]
    scores = files.read("Scaled_scores.csv").decode("utf-8-sig")
    assert scores.splitlines()[0] == "Scaled scores"


def _walked() -> Record:
    """A page whose worked example (the part "hand") shows step 1 of 2: its whole version
    was recorded with every step shown and the inputs kB = 2, 0."""
    record = Record("softmax", "3 · Softmax", "", items=[("section", "By hand"),
                                                        ("part", "hand")])
    record.parts["hand"] = [("formula", ("s = q k", "s = 1.000"))]
    record.walking = {"": False, "hand": True}
    record.whole = {"hand": Whole(handout.signature({"hand.kB": "2, 0"}), (
        ("formula", ("s = q k", "s = 1.000")), ("formula", ("a = softmax(s)", "a = 0.670"))))}
    return record


def test_a_walk_under_way_still_downloads_every_step():
    record = _walked()
    walk = {"hand.kB": "2, 0", "softmax.hand.step": "1", "present": "true"}
    page = handout.handout_html(record, LABELS, "http://x", walk)
    assert "0.670" in page and "PARTIAL" not in page
    assert "0.670" not in handout.handout_html(record, LABELS, "http://x")  # on screen: step 1
    # An input changed since: the whole version is another page's; say what is missing.
    page = handout.handout_html(record, LABELS, "http://x", {**walk, "hand.kB": "3, 0"})
    assert "0.670" not in page and "PARTIAL" in page


def test_every_link_in_the_downloads_uses_the_class_address():
    params = {"lang": "zh", "hand.kB": "2, 0"}
    files = classroom.Files("softmax", "zh", "http://localhost:8501/softmax",
                            "192.168.1.20:8501", params, _record(), LABELS)
    link = "http://192.168.1.20:8501/softmax?lang=zh&hand.kB=2%2C+0"
    assert files.link() == link
    assert json.loads(files.state())["url"] == link
    page = files.handout()
    assert f'href="{link.replace("&", "&amp;")}"' in page and "localhost" not in page
    assert '<html lang="zh">' in page
    params["hand.kB"] = "3, 0"  # the URL of the moment the file is asked for
    assert files.link().endswith("hand.kB=3%2C+0")
    no_address = classroom.Files("softmax", "en", "http://localhost:8501/softmax", "", {},
                                 _record(), LABELS)
    assert no_address.link() == "http://localhost:8501/softmax"
