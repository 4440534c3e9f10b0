# Can the fine-tune path fit 256 training windows of 'play'? (the diagnostic in README.md; CPU, one thread)
# $ PYTHONPATH=. python experiments/probing-pilot/gpu-epochs10/overfit.py <ar checkpoint> 1e-3 [seed]
# Prints the loss and the accuracy on the 256 windows every 30 steps, then the accuracy on play's 2,000 dev windows.
import csv, sys, torch, torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(int(sys.argv[3]) if len(sys.argv) > 3 else 0)  # the batches drawn (and the head's init)
from checkpoint import load_checkpoint
from evals.glue import TextClassifier, pad_batch


def windows(split, n=None):
    rows = list(csv.DictReader(open(f'data/glue/probing/play/{split}.tsv'), delimiter='\t'))[:n]
    ids = [[256] + list(r['sentence'].encode())[:126] for r in rows]  # BOS (256), then the window's bytes
    return ids, torch.tensor([int(r['label']) for r in rows])


def accuracy(net, ids, y, size=250):
    with torch.no_grad():
        hits = 0
        for i in range(0, len(ids), size):
            batch, lengths = pad_batch(ids[i:i + size], 'causal')
            hits += (net(**batch, lengths=lengths).argmax(-1) == y[i:i + size]).sum().item()
    return hits / len(ids)


model, *_ = load_checkpoint(sys.argv[1], 'cpu', dropout=0.0)
ids, y = windows('train', 256)
lr = float(sys.argv[2])
net = TextClassifier(model, 4, 'last', 0.0)
opt = torch.optim.AdamW(net.parameters(), lr=lr)
for step in range(150):
    idx = torch.randint(0, 256, (16,))
    batch, lengths = pad_batch([ids[i] for i in idx], 'causal')
    loss = F.cross_entropy(net(**batch, lengths=lengths), y[idx])
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 30 == 0 or step == 149:
        print(step, round(loss.item(), 3), 'train acc', round(accuracy(net, ids, y), 3), flush=True)
print('dev acc', round(accuracy(net, *windows('dev')), 3), '(2,000 windows)', flush=True)
