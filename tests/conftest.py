import os

import torch

# Rich wraps console output at the terminal's width (80 when there is none), so a message that
# holds a temporary path would break at a place that moves with the path's length. Tests read
# CLI output unwrapped; layout at a given width is tested with an explicit width.
os.environ["COLUMNS"] = "1000"

# The models under test are tiny: one thread is as fast as two on a quiet machine and many times
# faster when the two CI cores are shared (oversubscribed torch threads spin against each other).
torch.set_num_threads(1)
