"""Chinese for the English strings the course's code cells show: hints of checks, plot titles, labels, legends.

Code cells are the same in both editions (`bertlib.course.i18n`), so their strings are translated when shown,
by `bertlib.course.messages.translate`. A key with `{fields}` matches any text in their place (an f-string of a
notebook, as `bertlib.course.i18n.runtime_strings` writes it). `bertlib course-i18n check --report` counts the
strings of the notebooks not listed here; they are shown in English.
"""

STRINGS = {
    # ------------------------------------------------------------------ figures: titles, axis labels, legends
    # 00
    "masked LM": "掩码语言模型",
    "next sentence": "下一句预测",
    "uniform guess over 30,522 pieces": "在 30,522 个词元上均匀瞎猜",
    "Pretraining losses": "预训练损失",
    "optimizer step": "优化步",
    "cross-entropy (nats)": "交叉熵（nats）",
    "Pretraining accuracies": "预训练准确率",
    "accuracy (fraction)": "准确率（比例）",
    # 01
    "Who may attend to whom (dark/coloured = allowed)": "谁能看见谁（深色/彩色 = 允许）",
    "key position j (attended to)": "键位置 j（被关注）",
    "query position i": "查询位置 i",
    "chance": "随机水平",
    "Labelling the name from a verb on its right": "凭右侧的动词给人名打标签",
    "epoch": "轮次",
    "training accuracy (fraction)": "训练准确率（比例）",
    "Block 1 attention from '{labels}' (position {NAME_POSITION})": "第 1 层中 '{labels}'（位置 {NAME_POSITION}）的注意力",
    "key token (attended to)": "键词元（被关注）",
    "Training loss: the naive objective collapses": "训练损失：天真的目标一路塌到零",
    "masked-LM cross-entropy (nats, log scale)": "掩码语言模型交叉熵（nats，对数刻度）",
    # 02
    "block {layer}, head {head}: attends to the {pattern}": "第 {layer} 层第 {head} 个注意力头：关注{pattern}",
    "key (attended to)": "键（被关注）",
    "query": "查询",
    "share of all parameters (%)": "占全部参数的比例（%）",
    "Where BERT's parameters are": "BERT 的参数都在哪里",
    "WordPieces per word": "每个词切成的 WordPiece 数",
    "Smaller vocabularies cut words into more pieces": "词表越小，词被切得越碎",
    "vocabulary": "词表",
    # 03
    "paper §3.1": "论文 §3.1",
    "measured ({slots} tokens)": "实测（{slots} 个词元）",
    "share of selected tokens (%)": "占被选中词元的比例（%）",
    "What happens to the 15% selected tokens": "被选中的 15% 词元各自的去向",
    "[MASK] tokens per 512-token sequence": "每条 512 词元序列中的 [MASK] 数",
    "sequences": "序列数",
    "[MASK] count per sequence (binomial around 61.6)": "每条序列的 [MASK] 数（围绕 61.6 的二项分布）",
    "Own pretraining task: accuracy as % of the final value": "各自的预训练任务：准确率占最终值的百分比",
    "% of final pretraining accuracy": "占最终预训练准确率的 %",
    "best possible from the left only (1/3)": "只看左侧的理论上限（1/3）",
    "Downstream probe (frozen): name the next word": "下游探针（冻结）：说出下一个词",
    "probe accuracy (%)": "探针准确率（%）",
    "pretraining step": "预训练步数",
    # 04
    "pair length (tokens, with [CLS] and two [SEP])": "句对长度（词元数，含 [CLS] 和两个 [SEP]）",
    "pairs": "句对数",
    "Pair lengths: mostly full, 10% deliberately short (short_seq_prob)": "句对长度：大多装满，10% 故意取短（short_seq_prob）",
    "NSP (train batches)": "NSP（训练批）",
    "MLM (train batches)": "MLM（训练批）",
    "NSP on fresh pairs (end)": "NSP：新句对上（训练结束时）",
    "NSP chance": "NSP 随机水平",
    "accuracy (%)": "准确率（%）",
    "Tiny BERT, MLM + NSP on the Python docs (seed 0)": "微型 BERT 在 Python 文档上做 MLM + NSP（种子 0）",
    # 05
    "Pretraining: 10k warmup, linear decay over 1M steps": "预训练：预热 1 万步，在 100 万步内线性衰减",
    "step (thousands)": "步数（千）",
    "learning rate (x 1e-4)": "学习率（× 1e-4）",
    "end of warmup": "预热结束",
    "Zoom on the first 20k steps": "放大前 2 万步",
    "measured CPU time": "实测 CPU 时间",
    "counted FLOPs": "计数的 FLOPs",
    "n² scaling: 16x": "按 n² 增长：16 倍",
    "linear scaling: 4x": "线性增长：4 倍",
    "Cost of 512 tokens relative to 128": "512 词元相对 128 词元的开销",
    "cost at 512 / cost at 128": "512 的开销 / 128 的开销",
    "SST-2 dev, fine-tuned on {len} sentences": "SST-2 开发集，用 {len} 个句子微调",
    # 06
    "bertlib masker (77 selected)": "bertlib 掩码器（选中 77 个）",
    "independent 15% / 80% coins": "各自独立的 15% / 80% 抛硬币",
    "paper: 512 × 0.15 × 0.8 = 61.44": "论文：512 × 0.15 × 0.8 = 61.44",
    "[MASK] tokens in a 512-token sequence": "一条 512 词元序列中的 [MASK]",
    "[MASK] tokens per sequence": "每条序列的 [MASK] 数",
    "selection rate": "掩码率",
    "key position (may be seen)": "键位置（可被看见）",
    "query position (looks)": "查询位置（去看的一方）",
    "bound for left + right read-out": "左右两侧读出的上限",
    "Learning XOR of the left and right neighbours": "学习左右邻居的异或",
    "training accuracy": "训练准确率",
    # 07
    "Time to generate one token (faint: each token; line: running median)": "生成一个词元的耗时（浅色：逐个词元；折线：滑动中位数）",
    "tokens already in the sequence": "序列中已有的词元数",
    "milliseconds per token": "每个词元的毫秒数",
    "SST-2 dev errors of the fine-tuned MiniLM by sentence length": "微调后 MiniLM 在 SST-2 开发集上的错误率（按句长）",
    "sentence length (words)": "句长（词数）",
    "error rate (%)": "错误率（%）",
    # 08
    "share of 1,000 test sentences (%)": "占 1,000 个测试句的比例（%）",
    "Removing one branch of 80/10/10 ({STEPS} steps, toy language; median and range over {len} seed(s))":
        "去掉 80/10/10 的一个分支（{STEPS} 步，玩具语言；{len} 个种子的中位数与范围）",
    "Each branch removed, against 80/10/10 ({len} seed(s))": "逐个去掉分支，与完整 80/10/10 对比（{len} 个种子）",
    "expected effect (points)": "预期效应（分）",
    "Doubling the hidden size: cloze accuracy gained ({len} seed(s))": "隐藏维度翻倍：完形填空准确率的提升（{len} 个种子）",
    "cloze accuracy gained (points)": "完形填空准确率提升（分）",
    "trained on Python docs": "在 Python 文档上训练",
    "real BERT vocabulary (30,522)": "真实 BERT 词表（30,522）",
    "words per sentence": "每句词数",
    "learned vocabulary size (pieces, log scale)": "学得的词表大小（WordPiece 数，对数刻度）",
    "pieces per SST-2 sentence": "每个 SST-2 句子的 WordPiece 数",
    "Bigger vocabulary, shorter sequences": "词表越大，序列越短",
    # ------------------------------------------------------------------------------------ hints of the checks
    # 01
    "start from padding_mask[:, None, None, :]; for causal, AND with np.tril(np.ones((seq, seq)))":
        "从 padding_mask[:, None, None, :] 出发；因果掩码再与 np.tril(np.ones((seq, seq))) 做逻辑与",
    "a causal model's position i only sees j <= i, in every layer; a bidirectional one sees all":
        "因果模型的位置 i 在每一层都只能看到 j <= i；双向模型处处都能看到",
    "i -> j -> i: count the hops a token needs to come back; with one position there is nobody else":
        "i -> j -> i：数一数一个词元要跳几次才能回到自己；只有一个位置时没有别的词元可借道",
    "one no-self layer mixes only the other positions": "一层“不看自己”的注意力只混合其他位置",
    "with one position there is nobody else to route through": "只有一个位置时，没有别的词元可以借道",
    "i -> j -> i: two hops bring a token back to its own position": "i -> j -> i：两跳就能让词元回到自己的位置",
    "two independent LSTMs, concatenated; frozen vectors fed to a task model":
        "两个独立训练的 LSTM 拼接而成；冻结的向量交给任务模型使用",
    "a left-to-right Transformer, fine-tuned end to end": "从左到右的 Transformer，端到端微调",
    "every layer attends both ways; fine-tuned end to end": "每一层都同时看两侧；端到端微调",
    "§5.1's ablation table (Table 5): the BERT_BASE row, then the LTR & No NSP row (dev F1)":
        "§5.1 的消融表（表 5）：先看 BERT_BASE 一行，再看 LTR & No NSP 一行（开发集 F1）",
    "§5.1, the BERT_BASE row": "§5.1，BERT_BASE 一行",
    "§5.1, the LTR & No NSP row": "§5.1，LTR & No NSP 一行",
    # 06
    "512 x 15% selected x 80% of those become [MASK]": "512 × 15% 被选中 × 其中 80% 换成 [MASK]",
    "use the rates passed in, not the paper's": "用传进来的比例，不要写死论文的数",
    "np.rint(num_eligible * rate), then clip to [1, max_predictions]": "先 np.rint(num_eligible * rate)，再截到 [1, max_predictions]",
    "a packed 512-token sequence has 510 eligible tokens ([CLS] and [SEP] are never chosen); "
    "np.rint rounds a half to the even neighbour":
        "装满的 512 词元序列只有 510 个可选词元（[CLS] 和 [SEP] 从不被选）；np.rint 遇到 .5 取最近的偶数",
    "count the targets the masker picks on a 128-token row at each rate": "在每个掩码率下，数一数掩码器在一行 128 个词元里选出多少个目标",
    "80% of the selected tokens become [MASK]": "被选中的词元有 80% 换成 [MASK]",
    "each neighbour is intact with probability 1 - rate": "每个邻居保持原样的概率是 1 - rate",
    "np.tril: row i sees columns 0..i": "np.tril：第 i 行能看到第 0..i 列",
    "the mirror image: row i sees columns i..n-1": "镜像：第 i 行能看到第 i..n-1 列",
    "check both directions in sees_both_sides": "在 sees_both_sides 里两个方向都要检查",
    "try all s(0), s(1), t(0), t(1) from `values`; predict 1 when s(a) + t(b) > 0; count the 4 cases":
        "从 `values` 里遍历 s(0)、s(1)、t(0)、t(1) 的所有取值；s(a) + t(b) > 0 时预测 1；数一数 4 种情况",
    "the previous score is score - gain; its remaining error is 100 minus that": "原来的分数是 score - gain；它剩下的误差是 100 减去它",
    "compare the three shares; the one nearest 100 has the least room": "比较三个比例；最接近 100 的那个提升空间最小",
    "previous = score - gain": "原来的分数 = score - gain",
    # 02
    "every Dense has a bias; there are 2L + 1 LayerNorms, each with 2H weights; don't forget the pooler":
        "每个全连接层都有偏置；共有 2L + 1 个 LayerNorm，每个有 2H 个权重；别忘了池化层",
    "the exact BASE count, as BertConfig counts it": "按 BertConfig 的算法得到的 BASE 精确参数量",
    "continuation pieces carry '##'; an unmatched remainder makes the WHOLE word [UNK]":
        "非词首的片段带 '##'；只要剩下一段匹配不上，整个词就是 [UNK]",
    "segment 0 covers [CLS], A and the first [SEP]; padding has segment 0 and mask 0":
        "分段 0 覆盖 [CLS]、A 和第一个 [SEP]；填充处分段为 0，掩码为 0",
    "split the 3H columns into Q|K|V first, then each into heads; mask padded KEYS, not queries":
        "先把 3H 列拆成 Q|K|V，再把每个拆成多个头；要屏蔽的是填充的键，不是查询",
    "4H with H = 768": "4H，其中 H = 768",
    "WordPiece id, learned position, and A/B segment; three in all": "WordPiece id、学出来的位置、A/B 分段，一共三种",
    "§3 (Model Architecture) states both sizes in its text; table 1 is the GLUE results, not the sizes":
        "§3（Model Architecture）的正文给出了两种规模；表 1 是 GLUE 结果，不是模型规模",
    "WordPiece id, learned position, and A/B segment": "WordPiece id、学出来的位置、A/B 分段",
    "x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); the tanh formula is off by up to 1e-3":
        "x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))；tanh 近似公式最多差 1e-3",
    "the first position only, a dense layer, then tanh (the pooler's activation)":
        "只取第一个位置，过一个全连接层，再接 tanh（池化层的激活函数）",
    "dense, exact GELU, LayerNorm, then the token embedding table transposed (the tied decoder)":
        "全连接层、精确 GELU、LayerNorm，再乘以转置的词元嵌入表（共享权重的解码器）",
    "§3's text (table 1 is the GLUE results)": "§3 的正文（表 1 是 GLUE 结果）",
    # 03
    "every selected token takes exactly one of the three branches, and every one is in the loss":
        "每个被选中的词元恰好走三个分支之一，而且每一个都计入损失",
    "15% of 512 are selected; 80/10/10 of those": "512 的 15% 被选中；其中再按 80/10/10 分",
    "every selected token is in the loss": "每个被选中的词元都计入损失",
    "15% are selected, and 10% of those become random": "15% 被选中，其中 10% 换成随机词元",
    "draw keys, then branches, then random tokens, each for the whole (batch, seq) shape":
        "先抽 key，再抽分支，最后抽随机词元，每次都按整个 (batch, seq) 形状抽",
    "selected slots / tokens that may be chosen ([CLS] and [SEP] may not)": "被选中的槽数 / 可选词元数（[CLS] 和 [SEP] 不可选）",
    "measure it: the masker's rates vary": "去实测：掩码器的比例是有波动的",
    "changed tokens other than [MASK]": "被改动、但不是改成 [MASK] 的词元",
    "slot i predicts from position i": "第 i 个槽从位置 i 出发做预测",
    "the token at i + 1": "位置 i + 1 上的词元",
    "no target where the next position is padding": "下一个位置是填充时没有预测目标",
    "one slot per position but the last": "除最后一个位置外，每个位置一个槽",
    "at least one is wrong; reread §3.1, appendices A.1 and C.2, and the guide's chapter 3 note on C.2":
        "至少有一个不对；重读 §3.1、附录 A.1 和 C.2，以及导读第 3 章里关于 C.2 的对账",
    "reread §3.1, appendices A.1 and C.2, and the guide's chapter 3 note on C.2":
        "重读 §3.1、附录 A.1 和 C.2，以及导读第 3 章里关于 C.2 的对账",
    # 04
    "the first [SEP] belongs to segment A (0), the last one to segment B (1)": "第一个 [SEP] 属于分段 A（0），最后一个属于分段 B（1）",
    "one rng.random() draw per removed token": "每删一个词元抽一次 rng.random()",
    "one pair per two consecutive sentences of a document": "一个文档中每两句相邻的句子构成一个句对",
    "0 = IsNext": "0 = IsNext",
    "1 = NotNext, as bertlib's is_random_next": "1 = NotNext，与 bertlib 的 is_random_next 一致",
    "draw the random document among the OTHER documents": "随机文档要从*其他*文档里抽",
    "is_random_next True is class 1 (NotNext)": "is_random_next 为 True 对应类别 1（NotNext）",
    "§5.1's table (Table 5): the BERT_BASE row, then the No NSP row; the scores, not only their differences":
        "§5.1 的表（表 5）：先看 BERT_BASE 一行，再看 No NSP 一行；要的是分数本身，不只是差值",
    "the task whose score drops the most without NSP": "去掉 NSP 后分数掉得最多的任务",
    "the guide's chapter 4, 'claim vs fact'": "导读第 4 章的“主张 vs 事实”",
    "§5.1, the No NSP row": "§5.1，No NSP 一行",
    # 05
    "256 sequences x 512 tokens": "256 条序列 × 512 个词元",
    "90% of the steps at 128 tokens, 10% at 512": "90% 的步数用 128 个词元，10% 用 512 个",
    "2N forward + 4N backward per token": "每个词元：前向 2N + 反向 4N",
    "one petaflop/s-day is 1e15 FLOP/s for 86,400 s: the guide's '985' is in teraflop/s-days":
        "1 petaflop/s-day 是 1e15 FLOP/s 持续 86,400 秒：导读的“985”其实是以 teraflop/s-day 计",
    "2N forward + 4N backward": "前向 2N + 反向 4N",
    "warmup: peak * step / warmup_steps; after: peak * (1 - step / total_steps), floored at 0":
        "预热期：peak * step / warmup_steps；之后：peak * (1 - step / total_steps)，最低为 0",
    "warmup covers steps 0 .. warmup_steps - 1; the rate is 0, not negative, from total_steps on":
        "预热覆盖第 0 .. warmup_steps - 1 步；从 total_steps 起学习率是 0，不是负数",
    "linear parts grow with n, attention products with n squared": "线性部分随 n 增长，注意力乘积随 n 的平方增长",
    "global_batch // replicas": "global_batch // replicas",
    "a batch holds whole sequences: use //": "一批装的是整条序列：用 //",
    # 07
    "count each label; take the largest share": "数每个标签出现的次数；取占比最大的",
    "only dev premises seen in train count; a tie (q: one 0, one 1) goes to the smaller label":
        "只统计在训练集中出现过的开发集前提；并列（例如一个 0、一个 1）时取较小的标签",
    "np.bincount(labels).argmax() per premise": "对每个前提做 np.bincount(labels).argmax()",
    "BERT / GPT: BooksCorpus + Wikipedia (3.3B words) vs BooksCorpus (800M); 128,000 vs 32,000 words per step; "
    "both ran 1M steps":
        "BERT / GPT：BooksCorpus + Wikipedia（33 亿词）对 BooksCorpus（8 亿词）；每步 128,000 词对 32,000 词；"
        "两者都跑了 100 万步",
    "BooksCorpus + Wikipedia (3.3B words) vs BooksCorpus (800M)": "BooksCorpus + Wikipedia（33 亿词）对 BooksCorpus（8 亿词）",
    "128,000 vs 32,000 words per step": "每步 128,000 词对 32,000 词",
    "both ran 1M steps": "两者都跑了 100 万步",
    "softmax over the cached positions of q . k / sqrt(d), then the weighted sum of the values":
        "对缓存的各位置求 q · k / sqrt(d) 的 softmax，再对值加权求和",
    "every English word here is in the vocabulary": "这里的每个英文词都在词表里",
    # 08
    "among the VISIBLE words (kept or random), the share that is the true word; None when nothing is visible":
        "在*可见的*词（保持不变的或随机的）中，真实词所占的比例；什么都看不见时为 None",
    "10% kept against 10% random": "10% 保持不变对 10% 随机替换",
    "a visible word is always right: copy it": "可见的词永远是对的：照抄就行",
    "a visible word is always wrong": "可见的词永远是错的",
    "an examined word is never visible": "被考查的词永远不可见",
    "sequences per batch x tokens per sequence": "每批的序列数 × 每条序列的词元数",
    "1M steps of 128,000 words, over 3.3e9 words": "100 万步 × 128,000 词，除以 3.3e9 词",
    "the guide's 108.4M": "导读的 108.4M",
    "the exact count adds biases, LayerNorms, the pooler and 522 more vocabulary rows":
        "精确计数还要加上偏置、LayerNorm、池化层，以及多出来的 522 行词表",
    "the '+7.0' of §4.1 is measured against OpenAI GPT; GLUE averages are in table 1":
        "§4.1 的“+7.0”是相对 OpenAI GPT 而言的；GLUE 平均分在表 1",
    "1.28e11 tokens / 3.3e9 words": "1.28e11 个词元 / 3.3e9 个词",
    "the '+7.0' of §4.1 is measured against OpenAI GPT": "§4.1 的“+7.0”是相对 OpenAI GPT 而言的",
    "the cost of a step is the batch times the cost of one sequence": "一步的开销 = 批大小 × 一条序列的开销",
    "per token: 24 H^2 + 4 n H; times n tokens, times 256 sequences": "每个词元：24 H^2 + 4 n H；乘以 n 个词元，再乘以 256 条序列",
    "relative to every step at 512": "相对于每一步都用 512",
    "a step at 128 has 4x fewer tokens, and each token's attention is 4x cheaper": "128 的一步词元少 4 倍，每个词元的注意力也便宜 4 倍",
    "divide by the number of real tokens, not by the sequence length": "除以真实词元的个数，而不是序列长度",
    "see chapter 04 and the guide's section 7.5": "见第 04 章和导读的 7.5 节",
    "say where the evidence is, e.g. '§5.1: without NSP, QNLI drops 3.5 points'":
        "说明证据在哪里，例如“§5.1：去掉 NSP 后 QNLI 掉 3.5 分”",
}
