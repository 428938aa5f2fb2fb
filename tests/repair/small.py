"""The repair pipeline at test size: few pairs, one site, small prompt sets (every stage runs,
only smaller). Import as `from tests.repair.small import SMALL_TESTBED_REPAIR`."""

from loopfix.repair import RepairConfig

SMALL_TESTBED_REPAIR = RepairConfig(
    train_pairs=40,
    heldout_pairs=24,
    kl_walks=16,
    sites=("attn_out",),
    max_layers=1,
    search_layers=1,
    ks=(8,),
    alphas=(2.0,),
    verify_top=1,
    causal_prompts=50,
    prompts=50,
    gen_batch_size=50,
)
