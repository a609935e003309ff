"""The classroom server's infrastructure, apart from the lesson kit in ui/: what
several learners share on one machine. No Streamlit widgets here (and no Plotly):
plain Python that the kit calls and that tests drive from plain processes.

Modules:
- training_slot: one training at a time across every server process, first come first served
- results: finished trainings, kept per learner and shared for reuse while held
- fast_runtime: two of Streamlit's per-element costs removed in the server process
"""
