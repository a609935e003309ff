"""The classroom server's limits on the models a learner's request may build.

A page that builds a TinyDecoder from what a learner chose (the forward-pass page's
random model) or from a file (the shipped model's config) checks it here first, so a
typo such as width 10**6 is a translated message, not a server out of memory. The
model itself (tinyformer.model) only checks that a config is well formed; these sizes
belong to the shared server, not to the maths.
"""

from __future__ import annotations

from tinyformer.model import DecoderConfig, check_limits

MAX_SIZES: dict[str, int] = {
    "vocab": 65_536, "width": 1_024, "heads": 64, "max_length": 4_096, "layers": 32,
}  # fmt: skip
MAX_PARAMETERS = 20_000_000  # 80 MB of float32


def check_classroom(config: DecoderConfig) -> DecoderConfig:
    """``config`` if a classroom may build it; else size_too_large or model_too_large."""
    return check_limits(config, MAX_SIZES, MAX_PARAMETERS)
