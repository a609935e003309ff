"""The class overview, for the teacher: every exercise of the lesson with how many of the
class answered, the share right and the most common wrong answer, as a table and a CSV
file; the learners by nickname. A learner gets a message instead (ui/class_session.py)."""

from ui.class_session import overview

overview()
