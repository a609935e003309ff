"""tinyformer.lessons: the models behind the classroom's pages, built on the core.

The core (tinyformer's other modules) is the reusable maths; each module here exists to
feed one page (or one stage's few pages) of the app with the worked example it shows:
seeded teaching data, the customer-service corpus and the small model trained on it,
and the classroom server's limits. Still no Streamlit, Plotly or UI code: a notebook
can import any of them.

Modules:
- answering: the trained model's greedy answers, the payer they name, held-out accuracy
- backbones: encoder-only, decoder-only and encoder-decoder, and cross-attention
- bpe_corpus: the byte-level BPE trained on the corpus, and a text cut both ways
- cache_work: a greedy answer with and without the K/V cache, and the work each way
- chain: the running example's hand model, the 2-dim chain that stages 1.1-10.1 read
- checkpoint: the trained model on disk (safetensors and JSON), loaded with checks
- context: one word in two sentences, through random weights and the trained model
- corpus: the customer-service questions, their answers and the held-out split
- decoding: the LM head (tied or not) and ``generate``, the token-by-token loop
- example: the running example's sentences and word tokens, defined once
- ffn_width: why a SwiGLU FFN is about 8/3 · d wide
- forward_pass: a TinyDecoder run as an ordered walk of its intermediates
- gqa: grouped-query attention on one example
- gradient_step: one training step by hand on stage 10.1's example, and teacher forcing
- interventions: ablation and activation patching on the trained model, and its untrained start
- kv_cache: the K/V cache's size, and what GQA and MQA save
- limits: the classroom server's limits on the models a request may build
- norm_placement: Pre-Norm against Post-Norm at initialisation: the gradient per block
- probe: looking inside the trained model: its attention, its answer, where it looked
- projection: Q, K and V as three projections of the same rows
- rule_limits: where the trained model's rule stops: its misses and questions outside the corpus
- scaling: why scores are divided by sqrt(d_k), by hand and by experiment
- shipped_run: the shipped model's training curve, stored beside it (curve.json)
- text_loop: the generation loop's prompt as text, and IDs named through a vocabulary
- trace: any number of a forward pass traced back, step by step, to the token IDs
- train: the training run behind the shipped model (``python -m tinyformer.lessons.train``)
- train_data: the corpus as next-token training pairs
- train_settings: what a learner may change about a training run, and its bounds
- word_order: why attention needs positions

Package data: data/model/ holds the shipped model (config.json, model.safetensors),
found next to this package wherever it is installed (checkpoint.MODEL_DIR), and the
shipped run's training curve (curve.json, shipped_run).
"""
