"""The parameter counts of stage 8's table (punct.results.facts.parameter_breakdown): the acoustic model up to
layer 12 from its checkpoint, BERT's encoder and head from the saved files."""

from __future__ import annotations


def test_acoustic_model_counted_up_to_layer_12(tmp_path):
    from punct.am.checkpoint import AmTrainState, save_checkpoint
    from punct.am.config import AmConfig
    from punct.am.model import AmModelConfig, build_model
    from punct.am.tokens import TokenTable
    from punct.results.facts import parameter_breakdown

    tokens = TokenTable(["<blk>", "|", "a", "b", "c", "d", "e"])
    config = AmConfig(
        model=AmModelConfig(feat_dim=4, dim=8, bottleneck_dim=3, prefinal_small_dim=5, prefinal_big_dim=6)
    )
    am = build_model(config, len(tokens))
    (tmp_path / "am").mkdir()
    save_checkpoint(
        tmp_path / "am" / "epoch-3.pt", model=am, optimizer=None, state=AmTrainState(), config=config, tokens=tokens
    )
    expected = sum(p.numel() for m in [am.splice, am.tdnn1, *am.tdnnf[:11]] for p in m.parameters())
    assert expected < sum(p.numel() for p in am.parameters())  # tdnnf13, prefinal and output are left out
    params = parameter_breakdown(tmp_path / "am", None, None)
    assert params["embedding"]["acoustic model up to layer 12"] == expected


def test_bert_counted_from_the_saved_files_as_by_the_model(tmp_path):
    """The encoder and head counts read from the safetensors headers equal the loaded model's parameters."""
    from punct.models.text.model import HeadSpec, PunctBert
    from punct.results.facts import bert_parameters, parameter_breakdown
    from tests.helpers.text_model import make_encoder, make_tokenizer

    tiny_encoder = make_encoder()
    model = PunctBert(tiny_encoder, make_tokenizer(tmp_path), [HeadSpec("punct", ("blank", ",", ".", "?"), hidden=16)])
    model.save_pretrained(tmp_path / "bert")
    loaded = PunctBert.from_pretrained(tmp_path / "bert")
    expected = (sum(p.numel() for p in loaded.encoder.parameters()), sum(p.numel() for p in loaded.heads.parameters()))
    assert expected[0] > 0 and expected[1] == 4 * (16 + 1) + 16 * (tiny_encoder.config.hidden_size + 1)
    assert bert_parameters(tmp_path / "bert") == expected
    params = parameter_breakdown(None, tmp_path / "bert", None)
    assert (params["embedding"]["BERT encoder"], params["inference"]["BERT head"]) == expected
