"""Chinese for the English strings the course's code cells show: hints of checks, plot titles, labels, legends.

Code cells are the same in both editions (`bertlib.course.i18n`), so their strings are translated when shown,
by `bertlib.course.messages.translate`. A key with `{fields}` matches any text in their place (an f-string of a
notebook, as `bertlib.course.i18n.runtime_strings` writes it). `bertlib course-i18n check --strict` (run by
`make test`) fails on a string the notebooks show in a figure or a hint that is not listed here: the literals at
the call (`runtime_strings`) and what reaches a plot through loop variables and plotted dicts' keys
(`series_strings`). A name kept in English (IsNext) is listed as itself.
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
    "left-to-right": "从左到右",
    "bidirectional": "双向",
    "naive bidirectional LM": "天真的双向语言模型",
    "Who may attend to whom (dark/coloured = allowed)": "谁能看见谁（深色/彩色 = 允许）",
    "Left-to-right (GPT)": "从左到右（GPT）",
    "ELMo: two separate stacks": "ELMo：两个分开的网络",
    "Bidirectional (BERT)": "双向（BERT）",
    "forward\nstack": "前向\n网络",
    "backward\nstack": "后向\n网络",
    "key position j (attended to)": "键位置 j（被关注）",
    "query position i": "查询位置 i",
    "chance": "随机水平",
    "Labelling the name from a verb on its right": "凭右侧的动词给人名打标签",
    "epoch": "轮次",
    "training accuracy (fraction)": "训练准确率（比例）",
    "Block 1 attention from '{labels}' (position {NAME_POSITION})": "第 1 层中 '{labels}'（位置 {NAME_POSITION}）的注意力",
    "key token (attended to)": "键词元（被关注）",
    "head {h}": "第 {h} 个头",
    "Training loss: the naive objective collapses": "训练损失：天真的目标一路塌到零",
    "masked-LM cross-entropy (nats, log scale)": "掩码语言模型交叉熵（nats，对数刻度）",
    # 02
    "embeddings": "嵌入",
    "attention": "注意力",
    "feed-forward": "前馈网络",
    "LayerNorm": "LayerNorm",
    "pooler": "池化层",
    "ours, {size}": "自训词表，{size}",
    "BERT uncased, 30,522": "BERT uncased，30,522",
    "Python docs (held out)": "Python 文档（留出部分）",
    "SST-2 movie reviews": "SST-2 影评",
    "block {layer}, head {head}: attends to the {pattern}": "第 {layer} 层第 {head} 个注意力头：关注{pattern}",
    "previous token": "前一个词元",  # a pattern that title names ("[CLS]" stays as it is)
    "key (attended to)": "键（被关注）",
    "query": "查询",
    "share of all parameters (%)": "占全部参数的比例（%）",
    "Where BERT's parameters are": "BERT 的参数都在哪里",
    "WordPieces per word": "每个词切成的 WordPiece 数",
    "Smaller vocabularies cut words into more pieces": "词表越小，词被切得越碎",
    "vocabulary": "词表",
    # 03
    "[MASK]": "[MASK]",  # the special token's name stays as it is (glossary)
    "unchanged": "不变",
    "{key}: minus 80/10/10 ({ABLATION_STEPS} steps)": "{key}：与 80/10/10 之差（{ABLATION_STEPS} 步）",
    "feature-based": "基于特征",
    "fine-tuned": "微调",
    "probe accuracy difference (points)": "探针准确率之差（百分点）",
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
    "IsNext": "IsNext",  # the labels' names, kept as the glossary keeps them
    "NotNext": "NotNext",
    "Removing NSP: change per seed (tiny model)": "去掉 NSP：各种子上的变化（微型模型）",
    "points": "百分点",
    "{task}: No NSP minus NSP": "{task}：不带 NSP 减带 NSP",
    "MLM accuracy: No NSP minus NSP": "MLM 准确率：不带 NSP 减带 NSP",
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
    "attention scores": "注意力分数",
    "whole backbone": "整个骨干网络",
    "majority class": "多数类",
    "random init": "随机初始化",
    "pretrained MiniLM": "预训练的 MiniLM",
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
    "Signal: loss terms per 128 tokens": "信号：每 128 个词元的损失项数",
    "targets per sequence": "每条序列的预测目标数",
    "Mismatch: [MASK] in the input": "错配：输入中的 [MASK]",
    "share of input tokens": "占输入词元的比例",
    "Targets whose neighbours are intact": "邻居完好的预测目标",
    "share of targets": "占预测目标的比例",
    "elmo_style": "ELMo 式",
    "bertlib masker (77 selected)": "bertlib 掩码器（选中 77 个）",
    "independent 15% / 80% coins": "各自独立的 15% / 80% 抛硬币",
    "paper: 512 × 0.15 × 0.8 = 61.44": "论文：512 × 0.15 × 0.8 = 61.44",
    "[MASK] tokens in a 512-token sequence": "一条 512 词元序列中的 [MASK]",
    "[MASK] tokens per sequence": "每条序列的 [MASK] 数",
    "selection rate": "掩码率",
    "ELMo: left-to-right network": "ELMo：从左到右的网络",
    "ELMo: right-to-left network": "ELMo：从右到左的网络",
    "BERT: every layer": "BERT：每一层",
    "key position (may be seen)": "键位置（可被看见）",
    "query position (looks)": "查询位置（去看的一方）",
    "bound for left + right read-out": "左右两侧读出的上限",
    "Learning XOR of the left and right neighbours": "学习左右邻居的异或",
    "training accuracy": "训练准确率",
    # 07
    "re-encode the whole prefix (encoder)": "每步重新编码整个前缀（编码器）",
    "key-value cache (decoder)": "键值缓存（解码器）",
    "Time to generate one token (faint: each token; line: running median)": "生成一个词元的耗时（浅色：逐个词元；折线：滑动中位数）",
    "tokens already in the sequence": "序列中已有的词元数",
    "milliseconds per token": "每个词元的毫秒数",
    "SST-2 dev errors of the fine-tuned MiniLM by sentence length": "微调后 MiniLM 在 SST-2 开发集上的错误率（按句长）",
    "sentence length (words)": "句长（词数）",
    "error rate (%)": "错误率（%）",
    # 08
    "cloze accuracy": "完形填空准确率",  # the measures of bertlib.course.toys.branch_probe, 08's bar groups
    "trusts a correct word": "相信正确的词",
    "fooled by a random word": "被随机词骗过",
    "corrects a random word": "纠正随机词",
    "80/10/10 (paper)": "80/10/10（论文）",
    "no [MASK] branch (0/50/50)": "无 [MASK] 分支（0/50/50）",
    "no random branch (80/20/0)": "无随机分支（80/20/0）",
    "no keep branch (80/0/20)": "无保留分支（80/0/20）",
    "no random: fooled more": "无随机分支：更易上当",
    "no keep: trusts less": "无保留分支：更不信正确词",
    "no [MASK]: cloze lower": "无 [MASK] 分支：完形填空更低",
    "share of 1,000 test sentences (%)": "占 1,000 个测试句的比例（%）",
    "MASK/SAME/RND": "MASK/SAME/RND",
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
    # plots.py defaults
    "median and range": "中位数与范围",  # evidence.show_spread's legend
    "count": "计数",
    # ------------------------------------------------- the explorers (bertlib.course.explore): controls, tables
    # attention (02); the caption's {head} is itself translated ("head 3", "mean of all heads")
    "layer {layer}, {head}, {count} tokens: {cls} of the attention goes to [CLS], {sep} to [SEP].":
        "第 {layer} 层，{head}，{count} 个词元：{cls} 的注意力流向 [CLS]，{sep} 流向 [SEP]。",
    "Hover a token to see where it looks.": "把鼠标移到一个词元上，看它关注哪里。",
    "mean of all heads": "所有头的平均",
    "every head": "每一个头",
    "{token} attends to: {keys}": "{token} 关注：{keys}",
    " (first head; the red row marks it in every head)": "（第一个头；红色的行在每个头里标出它）",
    "Layer": "层",
    "Head": "注意力头",
    "all heads: mean": "所有头：平均",
    "all heads: grid": "所有头：网格",
    "heatmap": "热力图",
    "lines": "连线",
    "query rows, key columns": "行是查询，列是键",
    "each token to the tokens it attends to": "每个词元连向它关注的词元",
    "Sentence": "句子",
    "Pair (opt.)": "第二句（可选）",
    "Run": "运行",
    "encode the text and recompute every head": "编码文本，重新计算每一个头",
    "encoded: {count} tokens": "已编码：{count} 个词元",
    "The text to explore must be a non-empty string, got {text}.": "要探索的文本必须是非空字符串，收到的是 {text}。",
    "{text} has no [MASK]: write [MASK] where the model should guess a word.":
        "{text} 里没有 [MASK]：在希望模型猜词的位置写上 [MASK]。",
    "query (attending)": "查询（去关注的一方）",
    "key position": "键位置",
    "query position": "查询位置",
    "attention weight (colour by its square root)": "注意力权重（颜色按平方根）",
    # masking (03)
    "Seed": "随机种子",
    "Select": "掩码率",
    "Random": "随机替换",
    "whole-word masking": "整词掩码",
    "kept = the rest of the selected tokens": "不变 = 被选中词元中余下的部分",
    "WordPieces": "WordPiece 词元",
    "What the model sees": "模型看到的",
    "random": "随机",
    "kept": "不变",
    "this draw": "本次抽样",
    "expected": "期望值",
    "tokens ([CLS], [SEP] too)": "词元（含 [CLS]、[SEP]）",
    "eligible tokens": "可被选中的词元",
    "selected (in the loss)": "被选中（计入损失）",
    "replaced by [MASK]": "换成 [MASK]",
    "randomized": "换成随机词元",
    "kept unchanged": "保持不变",
    "{selected} of {eligible} tokens selected: {mask} [MASK], {random} random, {kept} kept":
        "{eligible} 个词元中选中 {selected} 个：{mask} 个 [MASK]，{random} 个随机，{kept} 个不变",
    # masked-word predictions (03)
    "top k": "前 k 个",
    # schedule and budget (05)
    "Peak LR": "峰值学习率",
    "Warmup": "预热步数",
    "Steps": "总步数",
    "Batch": "批大小",
    "At 512": "512 占比",
    "tokens seen": "读过的词元数",
    "epochs over 3.3B words": "在 33 亿词上的轮数",
    "training FLOPs (6N + 12·L·n·H per token)": "训练浮点运算数（每个词元 6N + 12·L·n·H）",
    "petaflop/s-days": "petaflop/s-day",
    "yours": "你的配方",
    "paper's recipe": "论文的配方",
    "paper (A.2)": "论文（A.2）",
    "{length}-token phase": "{length} 词元阶段",
    "learning rate": "学习率",
    "Warmup, then linear decay (bertlib.training.WarmupLinearDecay)": "先预热，再线性衰减（bertlib.training.WarmupLinearDecay）",
    "{tokens} tokens, {flops} FLOPs": "{tokens} 个词元，{flops} 次浮点运算",
    # generic: a template is tried after exact strings and the templates above it
    "layer {i}": "第 {i} 层",
    # ------------------------------------------------------------------------------------ hints of the checks
    # 01
    "start from padding_mask[:, None, None, :]; for causal, AND with np.tril(np.ones((seq, seq)))":
        "从 padding_mask[:, None, None, :] 出发；因果掩码再与 np.tril(np.ones((seq, seq))) 做逻辑与",
    "a causal model's position i only sees j <= i, in every layer; a bidirectional one sees all":
        "因果模型的位置 i 在每一层都只能看到 j <= i；双向模型处处都能看到",
    "i -> j -> i: count the hops a token needs to come back to i; with causal=True every hop goes left":
        "i -> j -> i：数一数一个词元要跳几次才能回到 i；causal=True 时每一跳都向左",
    "one no-self layer mixes only the other positions": "一层“不看自己”的注意力只混合其他位置",
    "with one position there is nobody else to route through": "只有一个位置时，没有别的词元可以借道",
    "i -> j -> i: two hops bring a token back to its own position": "i -> j -> i：两跳就能让词元回到自己的位置",
    "every causal no-self hop goes strictly left: it never comes back":
        "因果掩码下，每一跳（不看自己）都严格向左：永远回不到原位",
    "reread the chapter's table 'Two ways to use a pretrained model' and the ELMo panel of the mask figure":
        "重读本章“使用预训练模型的两种方式”一节的表格，以及掩码图中 ELMo 那一幅",
    "§5.1's ablation table (Table 5): the BERT_BASE row, then the LTR & No NSP row (dev F1)":
        "§5.1 的消融表（表 5）：先看 BERT_BASE 一行，再看 LTR & No NSP 一行（开发集 F1）",
    "§5.1, the BERT_BASE row": "§5.1，BERT_BASE 一行",
    "§5.1, the LTR & No NSP row": "§5.1，LTR & No NSP 一行",
    # 06
    "512 x 15% selected x 80% of those become [MASK]": "512 × 15% 被选中 × 其中 80% 换成 [MASK]",
    "use the rates passed in, not the paper's": "用传进来的比例，不要写死论文的数",
    "np.rint(num_tokens * rate), [CLS] and [SEP] counted, then clip to [1, max_predictions]":
        "先算 np.rint(num_tokens * rate)（[CLS] 和 [SEP] 也计入词元数），再截到 [1, max_predictions]",
    "a packed 512-token pair counts its [CLS] and two [SEP]s in the budget; np.rint rounds a half to the even neighbour":
        "装满的 512 词元句对把它的 [CLS] 和两个 [SEP] 都计入预算；np.rint 遇到 .5 取最近的偶数",
    "a count of successes in n independent trials of probability p has variance n p (1 - p); "
    "here n is the fixed number of selected tokens":
        "n 次成功概率为 p 的独立试验中，成功次数的方差是 n p (1 - p)；这里 n 是固定的被选中词元数",
    "every token is one trial: selected and then [MASK]": "每个词元是一次试验，“成功”是它既被选中、又被换成 [MASK]",
    "count the targets the masker picks on a 128-token row at each rate": "在每个掩码率下，数一数掩码器在一行 128 个词元里选出多少个目标",
    "80% of the selected tokens become [MASK]": "被选中的词元有 80% 换成 [MASK]",
    "each neighbour is intact with probability 1 - rate": "每个邻居保持原样的概率是 1 - rate",
    "targets per sequence times the chance that both neighbours of one are intact":
        "每条序列的目标数，乘以一个目标的左右两个邻居都保持原样的概率",
    "set the derivative of r (1 - r)^2 to zero, or search a fine grid": "令 r (1 - r)^2 的导数为零，或在细网格上搜索",
    "every position within the window": "窗口内的每个位置",
    "row i is True at i - window ... i + window (both ends included)": "第 i 行在 i - window ... i + window 处为 True（含两端）",
    "a position sees itself before any layer": "还没经过任何层，一个位置就已经看得到自己",
    "each layer extends a position's reach by `window` on each side": "每经过一层，一个位置能看到的范围向两侧各扩展 `window` 个位置",
    "try all s(0), s(1), t(0), t(1) from `values`; predict 1 when s(a) + t(b) > 0; count the 4 cases":
        "从 `values` 里遍历 s(0)、s(1)、t(0)、t(1) 的所有取值；s(a) + t(b) > 0 时预测 1；数一数 4 种情况",
    "the previous score is score - gain; its remaining error is 100 minus that": "原来的分数是 score - gain；它剩下的误差是 100 减去它",
    "all four numbers of the abstract, each once": "摘要里的四项成绩都要有，每项一次",
    "compute the four shares; the one nearest 100 has the least room": "算出四个比例；最接近 100 的那个提升空间最小",
    "previous = score - gain": "原来的分数 = score - gain",
    # 02
    "every Dense has a bias; 2L + 1 LayerNorms in the backbone and one in the masked-LM head; the pooler; "
    "the tied decoder adds only its bias (V); the NSP head is 2H + 2":
        "每个全连接层都有偏置；骨干网络里有 2L + 1 个 LayerNorm，掩码语言模型头里还有一个；别忘了池化层；"
        "共享权重的解码器只多出它的偏置（V 个）；NSP 头有 2H + 2 个参数",
    "untied, the decoder is a V×H matrix of its own; tied, it adds nothing but its bias":
        "不共享权重时，解码器是一个独立的 V×H 矩阵；共享时，它只多出自己的偏置",
    "pretrainer_params(24, 1024, 4096, 30_000) to two significant figures, in millions, as an int":
        "pretrainer_params(24, 1024, 4096, 30_000) 保留两位有效数字，以百万为单位，写成 int",
    "round LARGE with the heads for both vocabularies and compare": "两种词表各算一次带预训练头的 LARGE，取整后比较",
    "continuation pieces carry '##'; an unmatched remainder makes the WHOLE word [UNK]":
        "非词首的片段带 '##'；只要剩下一段匹配不上，整个词就是 [UNK]",
    "segment 0 covers [CLS], A and the first [SEP]; padding has segment 0 and mask 0; too long: pop the last token "
    "of the longer list (B on a tie) until len(A) + len(B) + 3 fits":
        "分段 0 覆盖 [CLS]、A 和第一个 [SEP]；填充处分段为 0，掩码为 0；太长时：反复删掉较长列表的最后一个词元"
        "（一样长时删 B 的），直到 len(A) + len(B) + 3 放得下",
    "split the 3H columns into Q|K|V first, then each into heads; mask padded KEYS, not queries; "
    "causal hides keys j > i, before the softmax":
        "先把 3H 列拆成 Q|K|V，再把每个拆成多个头；要屏蔽的是填充的键，不是查询；因果掩码在 softmax 之前遮住 j > i 的键",
    "the chapter's encoder-block section quotes §3 on the feed-forward size": "本章“编码器块”一节引用了 §3 对前馈网络宽度的说法",
    "the same rule as for BASE, with LARGE's hidden size (§3)": "与 BASE 同一条规则，换成 LARGE 的隐藏维度（§3）",
    "reread the chapter's section 'Embeddings: three lookups and a sum'": "重读本章“嵌入：三次查表，一次求和”一节",
    "4H with H = 768": "4H，其中 H = 768",
    "4H with H = 1024": "4H，其中 H = 1024",
    "§3 (Model Architecture) states both sizes in its text; table 1 is the GLUE results, not the sizes":
        "§3（Model Architecture）的正文给出了两种规模；表 1 是 GLUE 结果，不是模型规模",
    "WordPiece id, learned position, and A/B segment": "WordPiece id、学出来的位置、A/B 分段",
    "x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); the tanh formula is off by up to 1e-3":
        "x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))；tanh 近似公式最多差 1e-3",
    "the first position only, a dense layer, then tanh (the pooler's activation)":
        "只取第一个位置，过一个全连接层，再接 tanh（池化层的激活函数）",
    "gather each row's own positions first, then dense, exact GELU, LayerNorm, the token table transposed + bias":
        "先按每一行自己的位置取出向量，再依次过全连接层、精确 GELU、LayerNorm，最后乘以转置的词元嵌入表并加上偏置",
    "one row of logits per masked position: (batch, P, vocabulary)": "每个被掩码的位置一行 logits：(batch, P, vocabulary)",
    "§3's text (table 1 is the GLUE results)": "§3 的正文（表 1 是 GLUE 结果）",
    # 03
    "every selected token takes exactly one of the three branches, and every one is in the loss":
        "每个被选中的词元恰好走三个分支之一，而且每一个都计入损失",
    "15% of 512 are selected; 80/10/10 of those": "512 的 15% 被选中；其中再按 80/10/10 分",
    "every selected token is in the loss": "每个被选中的词元都计入损失",
    "15% are selected, and 10% of those become random": "15% 被选中，其中 10% 换成随机词元",
    "draw keys, then branches, then random tokens, each for the whole (batch, seq) shape; a word takes its key from "
    "its first piece and is taken whole or skipped; 80/10/10 stays per token":
        "先抽 key，再抽分支，最后抽随机词元，每次都按整个 (batch, seq) 形状抽；一个词的 key 取它第一个片段的 key，"
        "这个词要么整个选中，要么整个跳过；80/10/10 仍按词元逐个决定",
    "selected slots / tokens that are not padding ([CLS] and [SEP] count)": "被选中的槽数 / 非填充词元数（[CLS] 和 [SEP] 也算在内）",
    "measure it: the masker's rates vary": "去实测：掩码器的比例是有波动的",
    "changed tokens other than [MASK]": "被改动、但不是改成 [MASK] 的词元",
    "a whole-word masker selects every piece of each word it touches: group the pieces as in 3.2 (a '##' piece right "
    "after a special token starts a word)":
        "整词掩码器只要碰到一个词，就选中它的每一个片段：按 3.2 的规则把片段归到词里（紧跟在特殊词元后的 '##' 片段"
        "自成一个词的开头）",
    "per WORD: among the words with a selected piece, the share with all pieces selected (a one-piece word is whole); "
    "words are grouped as in 3.2":
        "按词计：在至少有一个片段被选中的词里，所有片段都被选中的词所占的比例（只有一个片段的词算完整）；词按 3.2 的规则划分",
    "among the words with a selected piece, the share with all pieces selected":
        "在至少有一个片段被选中的词里，所有片段都被选中的词所占的比例",
    "slot i sits at position i, for i = 1 ... seq - 1": "第 i 个槽就在位置 i 上，i = 1 ... seq - 1",
    "the token at i - 1": "位置 i - 1 上的词元",
    "the token at position - 1": "位置 position - 1 上的词元",
    "no slot on a padding position": "填充位置上没有槽",
    "1.0 where the slot's position is a real token": "槽所在的位置是真实词元时为 1.0",
    "one slot per position but the first": "除第一个位置外，每个位置一个槽",
    "at least one is wrong; reread §3.1, appendices A.1 and C.2, and the guide's chapter 3 note on C.2":
        "至少有一个不对；重读 §3.1、附录 A.1 和 C.2，以及导读第 3 章里关于 C.2 的对账",
    "reread §3.1, appendices A.1 and C.2, and the guide's chapter 3 note on C.2":
        "重读 §3.1、附录 A.1 和 C.2，以及导读第 3 章里关于 C.2 的对账",
    # 04
    "one dict of two arrays, not the chapter's two lists": "返回一个装着两个数组的 dict，不是本章那样的两个列表",
    "one value per position of token_ids: (batch, seq)": "token_ids 的每个位置一个值：(batch, seq)",
    "the first [SEP] closes segment A, so it is 0": "第一个 [SEP] 是分段 A 的结尾，所以是 0",
    "the last [SEP] closes segment B, so it is 1": "最后一个 [SEP] 是分段 B 的结尾，所以是 1",
    "padding has segment 0, as instances_to_arrays writes it": "填充处的分段为 0，与 instances_to_arrays 写出的一致",
    "1 on every real token, [CLS] and [SEP] included": "每个真实词元都是 1，[CLS] 和 [SEP] 也算",
    "segment 1 runs from the token after the first [SEP] to the last [SEP], both included; padding is 0 in both arrays":
        "分段 1 从第一个 [SEP] 之后的词元一直到最后一个 [SEP]，两端都包含；填充处在两个数组里都是 0",
    "one rng.random() draw per removed token": "每删一个词元抽一次 rng.random()",
    "one pair per two consecutive sentences of a document": "一个文档中每两句相邻的句子构成一个句对",
    "0 = IsNext": "0 = IsNext",
    "1 = NotNext, as bertlib's is_random_next": "1 = NotNext，与 bertlib 的 is_random_next 一致",
    "draw the random document among the OTHER documents": "随机文档只能从其他文档里抽，不能是当前这篇",
    "the chapter's single accuracy is only the 'overall' entry": "本章那一个准确率只是其中的 'overall' 一项",
    "shares, not counts or percentages": "要的是比例，不是个数，也不是百分数",
    "class 1 (NotNext) when the second logit is the larger one, even when both are negative":
        "第二个 logit 较大时就是类别 1（NotNext），两个都是负数时也一样",
    "the share of right answers over all pairs": "在所有句对上答对的比例",
    "IsNext pairs all right, NotNext pairs all wrong: the mean of 1 and 0": "IsNext 句对全对，NotNext 句对全错：1 和 0 的平均",
    "is_random_next True is class 1 (NotNext); count only those pairs": "is_random_next 为 True 对应类别 1（NotNext）；只数这些句对",
    "swapping the logits flips every prediction, so each class's accuracy becomes 1 minus itself":
        "交换两个 logit 会把每个预测都翻过来，所以每个类别的准确率都变成 1 减去它自己",
    "each class's accuracy counts only the pairs of that class; balanced is their plain mean":
        "每个类别的准确率只数该类别的句对；balanced 是两者的简单平均",
    "§5.1's table (Table 5): the BERT_BASE row, then the No NSP row; the scores, not only their differences":
        "§5.1 的表（表 5）：先看 BERT_BASE 一行，再看 No NSP 一行；要的是分数本身，不只是差值",
    "the task whose score drops the most without NSP": "去掉 NSP 后分数掉得最多的任务",
    "the guide's chapter 4, 'claim vs fact'": "导读第 4 章的“主张 vs 事实”",
    "§5.1, the No NSP row": "§5.1，No NSP 一行",
    # 05
    "256 sequences x 512 tokens": "256 条序列 × 512 个词元",
    "90% of the steps at 128 tokens, 10% at 512": "90% 的步数用 128 个词元，10% 用 512 个",
    "the same function for both recipes: RoBERTa's batch and steps over BERT's, sequences of 512 in both":
        "两种配方用同一个函数：RoBERTa 的批大小和步数除以 BERT 的，两者的序列长度都是 512",
    "RoBERTa's batch and steps over BERT's, sequences of 512 in both": "RoBERTa 的批大小和步数除以 BERT 的，两者的序列长度都是 512",
    "2N forward + 4N backward per token": "每个词元：前向 2N + 反向 4N",
    "one petaflop/s-day is 1e15 FLOP/s for 86,400 s: the guide's '985' is in teraflop/s-days":
        "1 petaflop/s-day 是 1e15 FLOP/s 持续 86,400 秒：导读的“985”其实是以 teraflop/s-day 计",
    "2N forward + 4N backward": "前向 2N + 反向 4N",
    "seconds = flops / (chips x peak x utilisation); a day has 86,400 s": "秒数 = flops / (芯片数 × 峰值 × 利用率)；一天有 86,400 秒",
    "every chip adds its peak to the machine's": "每块芯片都把自己的峰值算力加到整台机器上",
    "a chip at 15% of its peak does half the work of one at 30%": "跑在峰值 15% 的芯片，完成的计算量是跑在 30% 的一半",
    "64 chips for 4 days at 29%: what do 16 chips need at the same utilisation?":
        "64 块芯片以 29% 的利用率跑 4 天：利用率不变，16 块芯片要跑几天？",
    "16 chips instead of 64 at the same utilisation": "利用率不变，芯片从 64 块换成 16 块",
    "the rate is 0, not negative, from the last step on": "从最后一步起学习率是 0，不是负数",
    "count the steps first: ceil(1,000 / 32) per epoch (the short last batch is a step), then "
    "warmup = int(0.1 x total), rounded down":
        "先数步数：每轮 ceil(1,000 / 32) 步（最后那个不满的批也算一步），再算 warmup = int(0.1 × total)，向下取整",
    "ceil(67,349 / 32) steps per epoch, 3 epochs; warmup is 10% of that, rounded down":
        "每轮 ceil(67,349 / 32) 步，共 3 轮；预热步数是总步数的 10%，向下取整",
    "step 1 always runs the whole prompt: n = prompt positions, full attention":
        "第 1 步总要把整个提示跑一遍：n = 提示的位置数，完整的注意力",
    "with a cache, a later step runs one position, which attends to n = prompt + i - 1 keys":
        "有缓存时，之后的每一步只算一个位置，它关注 n = prompt + i - 1 个键",
    "without a cache every step re-encodes n positions, with n x n attention": "没有缓存时，每一步都重新编码 n 个位置，注意力是 n × n 的",
    "one pass when the share fits": "每份放得下时，一次就够，不用累积",
    "try 1, 2, 3, ... accumulation steps and keep the first whose share is whole and fits":
        "依次试 1、2、3……个累积步数，取第一个让每份恰为整数且放得下的",
    "the fewest accumulation steps whose share fits": "让每份放得下的最少累积步数",
    # 07
    "count each label; take the largest share": "数每个标签出现的次数；取占比最大的",
    "P(X >= k) adds the binomial probabilities of k, k + 1, ..., n right answers; the first k whose tail is below "
    "alpha; n + 1 when there is none":
        "P(X >= k) 是答对 k、k + 1、...、n 个的二项概率之和；取尾概率低于 alpha 的第一个 k；没有这样的 k 时为 n + 1",
    "47 of 71 still has a tail of 0.059": "71 个答对 47 个时，尾概率仍有 0.059",
    "np.bincount(labels).argmax() per premise": "对每个前提做 np.bincount(labels).argmax()",
    "BERT / GPT: BooksCorpus + Wikipedia (3.3B words) vs BooksCorpus (800M); 128,000 vs 32,000 words per step; "
    "both ran 1M steps; 256 x 512 tokens vs 64 x 512":
        "BERT / GPT：BooksCorpus + Wikipedia（33 亿词）对 BooksCorpus（8 亿词）；每步 128,000 词对 32,000 词；"
        "两者都跑了 100 万步；256 × 512 个词元对 64 × 512 个",
    "A.4 calls BERT's 256 x 512 = 131,072 tokens '128,000 words'; divide tokens by tokens per word":
        "A.4 把 BERT 的 256 × 512 = 131,072 个词元称作“128,000 words”；用词元数除以每个词的词元数",
    "BooksCorpus + Wikipedia (3.3B words) vs BooksCorpus (800M)": "BooksCorpus + Wikipedia（33 亿词）对 BooksCorpus（8 亿词）",
    "128,000 vs 32,000 words per step": "每步 128,000 词对 32,000 词",
    "both ran 1M steps": "两者都跑了 100 万步",
    "256 x 512 against 64 x 512": "256 × 512 对 64 × 512",
    "softmax over the cached positions of q . k / sqrt(d), then the weighted sum of the values":
        "对缓存的各位置求 q · k / sqrt(d) 的 softmax，再对值加权求和",
    "per layer, per position and per sequence: one key and one value, each `hidden` numbers":
        "每层、每个位置、每条序列：一个键和一个值，各 `hidden` 个数",
    "1 MiB = 2**20 bytes; float16 is 2 bytes": "1 MiB = 2**20 字节；float16 占 2 字节",
    "every English word here is in the vocabulary": "这里的每个英文词都在词表里",
    "a set of characters, then sorted(); is_cjk leaves out symbols such as ☃": "先取字符的集合，再 sorted()；is_cjk 不算 ☃ 这样的符号",
    "tokenize each character on its own; [UNK] means missing": "把每个字符单独分词；得到 [UNK] 就是缺失",
    "missing distinct CJK characters over all distinct CJK characters of the five sentences":
        "缺失的不同 CJK 字符数，除以五个句子里所有不同 CJK 字符数",
    "41 of 58 distinct characters": "58 个不同字符中的 41 个",
    # 08
    "among the VISIBLE words (kept or random), the share that is the true word; None when nothing is visible":
        "只看可见的词（保持不变的或随机替换的）：其中真实词所占的比例；什么都看不见时为 None",
    "an examined position that is never visible has no visible word to trust": "被考查的位置如果从不可见，就没有可见的词可信",
    "10% kept against 10% random": "10% 保持不变对 10% 随机替换",
    "a visible word is always right: copy it": "可见的词永远是对的：照抄就行",
    "a visible word is always wrong": "可见的词永远是错的",
    "an examined word is never visible": "被考查的词永远不可见",
    "the three numbers are MASK/SAME/RND: the middle one is the share kept the same, the last one the share "
    "replaced at random":
        "三个数依次是 MASK/SAME/RND：中间那个是保持不变的比例，最后那个是随机替换的比例",
    "check the sum before building the masker": "先检查三个数之和，再构建掩码器",
    "sequences per batch x tokens per sequence": "每批的序列数 × 每条序列的词元数",
    "1M steps of 128,000 words, over 3.3e9 words": "100 万步 × 128,000 词，除以 3.3e9 词",
    "the guide's 108.4M": "导读的 108.4M",
    "the exact count adds biases, LayerNorms, the pooler and 522 more vocabulary rows":
        "精确计数还要加上偏置、LayerNorm、池化层，以及多出来的 522 行词表",
    "the '+7.0' of §4.1 is measured against OpenAI GPT; GLUE averages are in table 1":
        "§4.1 的“+7.0”是相对 OpenAI GPT 而言的；GLUE 平均分在表 1",
    "the '+7.0' of §4.1 is measured against OpenAI GPT": "§4.1 的“+7.0”是相对 OpenAI GPT 而言的",
    "§4.1 gives both leaderboard scores; Table 1's averages are another comparison":
        "§4.1 给出了两个排行榜分数；表 1 的平均分是另一种比较",
    "80.5 against OpenAI GPT's 72.8 (§4.1)": "80.5 对 OpenAI GPT 的 72.8（§4.1）",
    "the cost of a step is the batch times the cost of one sequence": "一步的开销 = 批大小 × 一条序列的开销",
    "per token: 24 H^2 + 4 n H; times n tokens, times 256 sequences": "每个词元：24 H^2 + 4 n H；乘以 n 个词元，再乘以 256 条序列",
    "relative to every step at 512": "相对于每一步都用 512",
    "a step at 128 has 4x fewer tokens, and each token's attention is 4x cheaper": "128 的一步只有 512 的四分之一的词元，每个词元的注意力开销也只有四分之一",
    "s steps at 512 and 1 - s at 128 should cost half of all-512": "比例为 s 的步用 512、1 - s 的步用 128，总开销应是全用 512 的一半",
    "a step at 128 costs a fixed fraction r of one at 512: solve s + (1 - s) r = 1/2":
        "128 的一步的开销是 512 的一步的固定比例 r：解 s + (1 - s) r = 1/2",
    "the batch and sequence axes stay; only 'concat_last_four' widens the last axis, to 4H":
        "批轴和序列轴不变；只有 'concat_last_four' 会把最后一个轴加宽到 4H",
    "layer -1 is the last; concatenate the fourth-to-last first": "第 -1 层是最后一层；拼接时倒数第四层放在最前面",
    "§5.3, Table 7: the feature-based rows (dev F1 on CoNLL-2003 NER); one of the four names above":
        "§5.3 的表 7：基于特征的方法那几行（CoNLL-2003 NER 开发集 F1）；答案是上面四个名字之一",
    "Table 7: that row against fine-tuning BERT_BASE, not BERT_LARGE": "表 7：拿那一行与微调的 BERT_BASE 比，不是 BERT_LARGE",
    "Table 7: Concat Last Four Hidden, 96.1": "表 7：Concat Last Four Hidden，96.1",
    "96.4 - 96.1 (Table 7)": "96.4 - 96.1（表 7）",
    "see chapter 04 and the guide's section 7.5": "见第 04 章和导读的 7.5 节",
    # issue 38 / 35: hints rewritten as pointers to the method
    "reread §3.1: which share of ALL tokens is first selected, and which share of those takes the random branch?":
        "重读 §3.1：所有词元中先有多大比例被选中，被选中的又有多大比例走随机分支？",
    "one rng.random() draw per removed token, from the longer list (from B when both are equally long)":
        "每删一个词元抽一次 rng.random()，从较长的列表里删（两者一样长时从 B 删）",
    "the drop is the score with NSP minus the score without it; not the highest score":
        "下降幅度是有 NSP 的分数减去没有 NSP 的分数；不是分数最高的任务",
    "100 sequences never split evenly over 8 replicas: raise ValueError":
        "100 个序列无法平均分给 8 个副本：抛出 ValueError",
    "no pair exists: raise ValueError":
        "不存在这样的组合：抛出 ValueError",
    "with window = n every position sees every other after one layer":
        "window = n 时，一层之后每个位置都能看见所有其他位置",
    "the accuracy is the share of the four (a, b) cases predicted right, the best over all choices":
        "准确率是四种 (a, b) 情况中预测正确的比例，取所有取值组合中最好的",
    "an additive score gets at most three of the four XOR cases right":
        "加性打分在 XOR 的四种情况中最多对三种",
    "min_correct with n = the 71 dev pairs and base_rate = the majority class's share of WNLI dev":
        "用 min_correct，n 取开发集的 71 对，base_rate 取 WNLI 开发集中多数类的比例",
    "only dev premises seen in train count; a tie (q: 0 then 1, t: 1 then 0) goes to the smaller label, whichever came first":
        "只统计在训练集中出现过的开发集前提；并列（q：先 0 后 1；t：先 1 后 0）时取较小的标签，不管哪个先出现",
    "count only the dev examples whose premise occurs in train; np.bincount(labels).argmax() per premise":
        "只统计前提在训练集中出现过的开发集样本；对每个前提做 np.bincount(labels).argmax()",
    "every dev example counts; the unseen premise s is predicted 0; the ties q and t are predicted 1":
        "每个开发集样本都要计入；没见过的前提 s 预测为 0；并列的 q 和 t 预测为 1",
    "80 + 10 + 5 is not 100: check the sum before building the masker":
        "80 + 10 + 5 不等于 100：先检查总和，再构造掩码器",
    "12 L H^2 for the blocks, plus (vocabulary + positions + segments) x H for the three embedding tables":
        "各层共 12 L H^2，再加上三张嵌入表的 (词表 + 位置 + 段) × H",
    "1.28e11 words / 3.3e9 words":
        "1.28e11 个词 / 3.3e9 个词",
    "name where the evidence is, what it measured, and only figures it shows; the guide's section 一 says where to look":
        "写明证据在哪里、它测了什么，只引用它给出的数字；导读第一部分“全局大图”告诉你该去哪里找",
    'MeanPooledNSPHead is a class':
        'MeanPooledNSPHead 是一个类',
    "keep the given base class: Keras tracks the weights of a Layer's sublayers":
        '保留给定的基类：Keras 会跟踪 Layer 子层的权重',
    'call(sequence_output, padding_mask) returns the logits, keras.ops throughout':
        'call(sequence_output, padding_mask) 返回 logits，全程使用 keras.ops',
    'one pair of NSP logits per row: (batch, 2)':
        '每行一对 NSP logits：(batch, 2)',
    'build makes self.pooler (H outputs, tanh) first, then self.classifier (2 outputs)':
        'build 先建 self.pooler（H 个输出，tanh），再建 self.classifier（2 个输出）',
    'pool may be given numpy arrays: ops.convert_to_tensor first, then keras.ops':
        'pool 可能收到 numpy 数组：先 ops.convert_to_tensor，再用 keras.ops',
    'sum the real tokens ([CLS] and [SEP] included) and divide by how many there are in the row':
        '把真实词元（包括 [CLS] 和 [SEP]）相加，再除以这一行真实词元的个数',
    'call = classifier(pooler(pool(...))): the pooled mean, then tanh(dense), then the 2-way dense':
        'call = classifier(pooler(pool(...)))：先取池化均值，再做 tanh(dense)，最后是两路的 dense',
    'padding changes nothing: pool over the positions where padding_mask is 1 only':
        '填充不改变任何结果：只在 padding_mask 为 1 的位置上池化',
    'WarmupCosineDecay is a class':
        'WarmupCosineDecay 是一个类',
    'keep the given base class: the optimizer treats only a LearningRateSchedule as a schedule':
        '保留给定的基类：优化器只把 LearningRateSchedule 当作学习率调度',
    'no Python if on the step: ops.where chooses between warmup and decay for every step':
        '不要对步数写 Python 的 if：用 ops.where 为每一步在预热和衰减之间选择',
    'Keras writes the config to JSON: float(peak), int(warmup_steps), not tensors or numpy numbers':
        'Keras 会把配置写进 JSON：float(peak)、int(warmup_steps)，不要张量或 numpy 数字',
    'return the four arguments as they were given, not derived values':
        '按给定的样子返回四个参数，不要返回推导出的值',
    "from_config(config) calls WarmupCosineDecay(**config): the keys are the arguments' names":
        'from_config(config) 会调用 WarmupCosineDecay(**config)：键就是参数的名字',
    'one rate for one step: keras.ops on the step, a float32 scalar back':
        '一步对应一个学习率：对步数用 keras.ops，返回一个 float32 标量',
    'warmup is peak x step / warmup_steps: what is it at step 0?':
        '预热是 peak x step / warmup_steps：步 0 时是多少？',
    'warmup is peak x step / warmup_steps, counted from step 0':
        '预热是 peak x step / warmup_steps，步数从 0 开始数',
    'at step warmup_steps the decay takes over with p = 0: measure p from the end of warmup':
        '到步 warmup_steps 时衰减接手，此时 p = 0：p 从预热结束时算起',
    'the decay is a half cosine from the peak down to the floor, over total_steps - warmup_steps':
        '衰减是从峰值降到下限的半个余弦，跨越 total_steps - warmup_steps 步',
    'p reaches 1 at total_steps, not before: divide by total_steps - warmup_steps':
        'p 在 total_steps 时才到 1，不会更早：除以 total_steps - warmup_steps',
    'at total_steps the rate is the floor, not 0':
        '到 total_steps 时学习率是下限，不是 0',
    'p stops at 1 (ops.clip, ops.minimum): the rate stays at the floor':
        'p 停在 1（ops.clip、ops.minimum）：学习率保持在下限',
    # Exercises 2.7 and 3.6 (Keras 3 layers)
    'query i sees key j only when j <= i AND key j is real: one boolean (batch, 1, query, key) mask, applied to the '
    'scaled scores before a softmax over the keys':
        '查询 i 只有在 j <= i 且键 j 是真实词元时才能看见键 j：一个布尔的 (batch, 1, query, key) 掩码，'
        '在沿键做 softmax 之前作用于缩放后的分数',
    'a Dense(3H) named query_key_value, then a Dense(H) named output':
        '先是名为 query_key_value 的 Dense(3H)，再是名为 output 的 Dense(H)',
    'padding_mask=None: every key is real, the causal mask still holds':
        'padding_mask=None：每个键都是真实的，因果掩码照样生效',
    "the decoder is the token embedding's own table, transposed: no decoder matrix of its own":
        '解码器就是词元嵌入自己的表的转置：没有自己的解码矩阵',
    "return {'logits': numpy array, 'loss': float}":
        "返回 {'logits': numpy 数组, 'loss': float}",
    'gather at mask_positions, dense, exact GELU, LayerNorm, the token table transposed plus the output bias; the '
    'loss over the real slots only':
        '在 mask_positions 处取出，全连接层、精确 GELU、LayerNorm，再乘以词元嵌入表的转置并加上输出偏置；'
        '损失只算真实槽位',
    'one real slot per row: the loss is the mean of their cross-entropies':
        '每行一个真实槽位：损失是它们交叉熵的平均',
    'decode with the token table itself: (batch, P, H) @ (H, V)':
        '直接用词元嵌入表解码：(batch, P, H) @ (H, V)',
    'your loss averages over every slot, padding slots included: only the slots with mask_weights 1.0 are masked '
    'tokens':
        '你的损失对所有槽位取平均，连填充槽位也算进去了：只有 mask_weights 为 1.0 的槽位才是被遮住的词元',
    'your loss sums the real slots but divides by every slot: average over the real slots only':
        '你的损失对真实槽位求和，却除以全部槽位数：只对真实槽位取平均',
    'your loss is a sum over the real slots: average it over them':
        '你的损失是真实槽位上的和：应对它们取平均',
    'masked_loss returns one number: the mean cross-entropy over the real slots':
        'masked_loss 返回一个数：真实槽位上交叉熵的平均',
    'the logits match, the loss does not: the cross-entropy of each slot is -log softmax(logits)[mask_id], and only '
    'the real slots (mask_weights 1.0) count, each once':
        'logits 一致，损失不一致：每个槽位的交叉熵是 -log softmax(logits)[mask_id]，只有真实槽位'
        '（mask_weights 为 1.0）计入，每个只算一次',
}
