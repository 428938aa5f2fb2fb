import torch

# The models under test are tiny: one thread is as fast as two on a quiet machine and many times
# faster when the two CI cores are shared (oversubscribed torch threads spin against each other).
torch.set_num_threads(1)
