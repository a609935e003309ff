"""Shared test set-up: the repository root on sys.path, so `import tinyformer` and
`import ui` work from any test folder."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.chdir(ROOT)  # Streamlit resolves pages/ and .streamlit/ from the working directory
