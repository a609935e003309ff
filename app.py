"""tinyformer's entry: the frame around every page (docs/architecture.md, "The frame").

The frame (ui/frame.py) draws what every page shares: language, navigation, presenter
view, the stage's title, previous / next, sharing and downloads. Each file in pages/
holds one stage's lesson and nothing else.
"""

from ui import frame

page = frame.navigation()
with frame.around(page):
    page.run()
