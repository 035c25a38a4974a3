"""Weights of one acoustic model moved into another (punct.am.init_from)."""

import torch

from punct.am.config import AmConfig
from punct.am.init_from import transfer_weights
from punct.am.model import AmModelConfig, build_model
from punct.am.tokens import TokenTable


def tiny_config() -> AmConfig:
    return AmConfig(
        model=AmModelConfig(feat_dim=13, dim=32, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=32)
    )


def test_transfer_weights_copies_shared_layers_and_output_rows():
    torch.manual_seed(0)
    src_tokens, dst_tokens = TokenTable(["<blk>", "|", "a", "b", "x"]), TokenTable(["<blk>", "|", "a", "b", "č"])
    source, target = build_model(tiny_config(), 5), build_model(tiny_config(), 5)
    before = target.output.weight.detach().clone()
    counts = transfer_weights(source, src_tokens, target, dst_tokens)
    assert counts["output_rows"] == 4 and counts["kept"] == 0
    for name, value in source.state_dict().items():
        if not name.startswith("output."):
            assert torch.equal(target.state_dict()[name], value), name
    assert torch.equal(target.output.weight[:4], source.output.weight[:4])
    assert torch.equal(target.output.weight[4], before[4])  # 'č' is not in the source table
