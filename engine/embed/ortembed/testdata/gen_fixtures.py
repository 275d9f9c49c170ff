#!/usr/bin/python3
"""Generates the tiny ONNX models and tokenizer.json that the ortembed tests
load. Run with Debian's python3-onnx and python3-numpy:

    apt-get install -y python3-onnx python3-numpy
    cd engine/embed/ortembed/testdata && /usr/bin/python3 gen_fixtures.py

All four models share a BERT-like body:
    x = E[input_ids] + P[0:T] + S[token_type_ids]
    h = tanh(x @ W1 + b1)                       last_hidden_state [B,T,H]
and add a head:
    encoder.onnx  outputs last_hidden_state             (dense, mean-pooled in Go)
    cross.onnx    outputs logits = h[:,0,:] @ wc + bc   [B,1]
    colbert.onnx  outputs token_embeddings = h @ Wm     [B,T,8]
    splade.onnx   outputs logits = h @ Wv + bv          [B,T,V]
The weights are written to weights.json so the Go tests recompute every
output independently and compare with ONNX Runtime.
"""
import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261130)

special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
words = ["the", "a", "of", "wing", "lift", "drag", "flow", "air", "foil", "mach",
         "boundary", "layer", "shock", "wave", "protein", "cell", "gene", "mouse",
         "how", "does", "what", "is", "stall", "speed", "high", "low", "un", "##s",
         "##ing", "##ed", "##er", "##foil", "##ly", "##able", "play", "run", "cafe",
         ".", ",", "?", "!", "-", "'", "(", ")", "1", "2", "##1", "##2"]
vocab = {t: i for i, t in enumerate(special + words)}
V, H, T, M = len(vocab), 16, 32, 8

E = rng.normal(0, 0.5, (V, H)).astype(np.float32)
P = rng.normal(0, 0.1, (T, H)).astype(np.float32)
S = rng.normal(0, 0.1, (2, H)).astype(np.float32)
W1 = rng.normal(0, 0.4, (H, H)).astype(np.float32)
b1 = rng.normal(0, 0.1, (H,)).astype(np.float32)
wc = rng.normal(0, 0.5, (H, 1)).astype(np.float32)
bc = np.array([0.25], dtype=np.float32)
Wm = rng.normal(0, 0.5, (H, M)).astype(np.float32)
Wv = rng.normal(0, 0.5, (H, V)).astype(np.float32)
bv = rng.normal(-0.5, 0.2, (V,)).astype(np.float32)


def body(nodes, inits):
    inits += [numpy_helper.from_array(a, n) for a, n in
              [(E, "E"), (P, "P"), (S, "S"), (W1, "W1"), (b1, "b1")]]
    inits += [numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
              numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
              numpy_helper.from_array(np.array(1, dtype=np.int64), "idx1")]
    nodes += [
        helper.make_node("Gather", ["E", "input_ids"], ["we"], axis=0),
        helper.make_node("Gather", ["S", "token_type_ids"], ["te"], axis=0),
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        helper.make_node("Gather", ["shape", "idx1"], ["seqlen"], axis=0),
        helper.make_node("Range", ["zero", "seqlen", "one"], ["pos"]),
        helper.make_node("Gather", ["P", "pos"], ["pe"], axis=0),
        helper.make_node("Add", ["we", "te"], ["x0"]),
        helper.make_node("Add", ["x0", "pe"], ["x"]),
        helper.make_node("MatMul", ["x", "W1"], ["xw"]),
        helper.make_node("Add", ["xw", "b1"], ["xb"]),
        helper.make_node("Tanh", ["xb"], ["last_hidden_state"]),
    ]


def inputs():
    return [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ["input_ids", "attention_mask", "token_type_ids"]]


def save(name, nodes, inits, outputs):
    g = helper.make_graph(nodes, name, inputs(), outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="rcpgo-gen")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, name + ".onnx")


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# encoder
nodes, inits = [], []
body(nodes, inits)
# attention_mask must be consumed: Identity into an unused output is not
# allowed, so the models simply ignore it (ORT accepts unused inputs).
save("encoder", nodes, inits, [f32("last_hidden_state", ["batch", "seq", H])])

# cross-encoder
nodes, inits = [], []
body(nodes, inits)
inits += [numpy_helper.from_array(wc, "wc"), numpy_helper.from_array(bc, "bc"),
          numpy_helper.from_array(np.array(0, dtype=np.int64), "idx0")]
nodes += [helper.make_node("Gather", ["last_hidden_state", "idx0"], ["cls"], axis=1),
          helper.make_node("MatMul", ["cls", "wc"], ["cw"]),
          helper.make_node("Add", ["cw", "bc"], ["logits"])]
save("cross", nodes, inits, [f32("logits", ["batch", 1])])

# colbert
nodes, inits = [], []
body(nodes, inits)
inits += [numpy_helper.from_array(Wm, "Wm")]
nodes += [helper.make_node("MatMul", ["last_hidden_state", "Wm"], ["token_embeddings"])]
save("colbert", nodes, inits, [f32("token_embeddings", ["batch", "seq", M])])

# splade
nodes, inits = [], []
body(nodes, inits)
inits += [numpy_helper.from_array(Wv, "Wv"), numpy_helper.from_array(bv, "bv")]
nodes += [helper.make_node("MatMul", ["last_hidden_state", "Wv"], ["hv"]),
          helper.make_node("Add", ["hv", "bv"], ["logits"])]
save("splade", nodes, inits, [f32("logits", ["batch", "seq", V])])

tok = {
    "version": "1.0",
    "truncation": {"direction": "Right", "max_length": T, "strategy": "LongestFirst", "stride": 0},
    "padding": None,
    "added_tokens": [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True} for t in special],
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in ["[CLS]", "[SEP]"]},
    },
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": vocab},
}
with open("tokenizer.json", "w") as f:
    json.dump(tok, f, indent=1, sort_keys=True)

with open("weights.json", "w") as f:
    json.dump({k: v.tolist() for k, v in
               dict(E=E, P=P, S=S, W1=W1, b1=b1, wc=wc, bc=bc, Wm=Wm, Wv=Wv, bv=bv).items()}, f)
print("vocab", V, "hidden", H)
