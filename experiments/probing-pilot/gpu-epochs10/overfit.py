# Can the fine-tune path fit 256 training windows of 'play'? (the diagnostic in README.md; CPU, one thread)
# $ PYTHONPATH=. python experiments/probing-pilot/gpu-epochs10/overfit.py <ar checkpoint> 1e-3
import csv, sys, torch, torch.nn.functional as F
torch.set_num_threads(1)
from checkpoint import load_checkpoint
from evals.glue import TextClassifier, pad_batch

model, *_ = load_checkpoint(sys.argv[1], 'cpu', dropout=0.0)
rows = list(csv.DictReader(open('data/glue/probing/play/train.tsv'), delimiter='\t'))[:256]
ids = [[256] + list(r["sentence"].encode())[:126]  # BOS (256) + bytes for r in rows]
y = torch.tensor([int(r['label']) for r in rows])
lr = float(sys.argv[2])
net = TextClassifier(model, 4, 'last', 0.0)
opt = torch.optim.AdamW(net.parameters(), lr=lr)
for step in range(150):
    idx = torch.randint(0, 256, (16,))
    batch, lengths = pad_batch([ids[i] for i in idx], 'causal')
    loss = F.cross_entropy(net(**batch, lengths=lengths), y[idx])
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 30 == 0 or step == 149:
        with torch.no_grad():
            batch, lengths = pad_batch(ids, 'causal')
            acc = (net(**batch, lengths=lengths).argmax(-1) == y).float().mean().item()
        print(step, round(loss.item(), 3), 'train acc', round(acc, 3), flush=True)
