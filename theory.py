"""
The paper's theory, computed (evals/theory.py): exact toy spectra (Thm 4.2), the length-misalignment term
(Thm 4.3), and two surrogates measured on trained checkpoints: connectivity (Fig. 2, App. B.2) and effective rank
(MAE-LM Sec. 2.2); and Thm 4.3's misalignment measured: a masked checkpoint's loss at fixed mask ratios, inside and
outside its training range (maskloss). The command comes first, then --key=value flags; a key the command does not
read stops with one line.

  python theory.py toy --r=2 --s=5 --T=2                          # every objective side by side + PNG
  python theory.py toy --objective=mlm --r=2 --s=5 --T=2 --visible=2 --json=True
  python theory.py tails --r=2 --s=6 --T=2                        # sum of sigma^4 past r, every objective
  python theory.py misalign --s=128 --rho='(0.15,0.3)' --vm='(0.15,0.3)'    # vm: a range (a,b), or '()' for none
  python theory.py connectivity --ckpt=out-ar-shakespeare/ckpt_best.pt --ckpt=out-mlm15-shakespeare/ckpt_best.pt \
      --dataset=shakespeare
  python theory.py effrank --ckpt=out-mlm15-shakespeare/ckpt_best.pt --dataset=shakespeare
  python theory.py maskloss --ckpt=out-mlm15-shakespeare/ckpt_best.pt --ckpt=out-vm-shakespeare/ckpt_best.pt \
      --dataset=shakespeare
"""
import sys
from json import dumps
from pathlib import Path

import numpy as np

from configurator import UsageError, check_ranges, configure, one_line_errors
from data import dataset_dir
from evals.glue import pretraining_attention
from evals.theory import (connectivity_rows, encoding, layer_ranks, masked_loss_by_ratio, misalignment,
                          pooled_features, tail_sigma4, text_windows, top_pair_similarities, toy_report)
from output import line_plot, log_ranks, writable_folder, write_csv

# -----------------------------------------------------------------------------
# default config: one set of keys, each under the commands that read it
# toy, tails: Thm 4.2's toy model
r = 2                       # classes
s = 0                       # positions; 0 = 5 (toy, tails), 128 (misalign)
T = 2                       # tokens per (position, class)
visible = ()                # mlm / vm: numbers of visible tokens s_m, e.g. --visible=(1,2,3); () = 1..s-1
t = 2                       # toy: dar predicts one of the next t tokens (tails shows t = 1..4)
objective = ''              # toy: '' = every objective side by side, or one of ar, dar, mlm, vm (with --json=True)
json = False                # toy: print that one objective's report as JSON
max_entries = 2 * 10 ** 7   # toy, tails: refuse a class block of A with more entries (it is built exactly)
# misalign: Thm 4.3's length term
rho = (0.15, 0.3)           # fixed mask ratios, a curve each
vm = (0.15, 0.3)            # a vm range (a, b), averaged over rho ~ U[a, b]; () for none
# connectivity, effrank, maskloss: measured on trained text checkpoints
ckpt = ()                   # --ckpt=a.pt --ckpt=b.pt (effrank: one)
dataset = ''                # the held-out text: data/<name>, or a folder holding val.bin
num_samples = 0             # held-out windows; 0 = 8000 (connectivity), 512 (effrank, maskloss)
batch_size = 64
device = 'cpu'
progress = True
top = 10 ** 5               # connectivity: the most similar pairs kept (App. B.2)
cosine = False              # connectivity: unit-length features
centred = False             # connectivity: the mean feature taken out first
pooling = 'auto'            # connectivity: 'last', 'mean', or auto (the last token if causal, else the mean)
tau = 0.9                   # effrank: the share of the squared singular values a rank keeps
mask_ratio = 0.15           # effrank: the [MASK] ratio of the masked inputs
ratios = (0.05, 0.15, 0.3, 0.5, 0.7, 0.9)  # maskloss: the mask ratios scored
seed = 0                    # effrank, maskloss: the masks drawn
out_dir = 'out/theory'
# -----------------------------------------------------------------------------
one_line_errors('theory.py')
command, flags = (sys.argv[1], sys.argv[2:]) if sys.argv[1:2] and sys.argv[1][0] != '-' else ('', sys.argv[1:])
defaults = {k: v for k, v in globals().items()
            if not k.startswith('_') and isinstance(v, (int, float, bool, str, tuple))}
stray = [arg for arg in flags if not arg.startswith('-')]
if stray:
    raise UsageError(f"unexpected argument {stray[0]!r}: after the command theory.py takes --key=value flags only "
                     "(one --ckpt=<path> per checkpoint)")
configure(globals(), flags)  # --help: the docstring and every key, under the commands that read it
TOY_KEYS = ('r', 's', 'T', 'visible', 'max_entries')
CHECKPOINT_KEYS = ('ckpt', 'dataset', 'num_samples', 'batch_size', 'device', 'progress')
KEYS = {'toy': TOY_KEYS + ('t', 'objective', 'json'), 'tails': TOY_KEYS, 'misalign': ('s', 'rho', 'vm'),
        'connectivity': CHECKPOINT_KEYS + ('top', 'cosine', 'centred', 'pooling'),
        'effrank': CHECKPOINT_KEYS + ('tau', 'mask_ratio', 'seed'),
        'maskloss': CHECKPOINT_KEYS + ('ratios', 'seed')}  # what each command reads, besides out_dir
if command not in KEYS:
    raise UsageError(f"usage: python theory.py {{{'|'.join(KEYS)}}} [--key=value ...]"
                     + (f"; unknown command {command!r}" if command else ''))
unread = [k for k in defaults if globals()[k] != defaults[k] and k not in KEYS[command] + ('out_dir',)]
if unread:
    raise UsageError(f"{command} does not read --{unread[0]}: its keys are "
                     + ', '.join(f"--{k}" for k in KEYS[command] + ('out_dir',)))
check_ranges(globals(), {'s': '[0, inf)', 'max_entries': '[1, inf)', 'num_samples': '[0, inf)',
                         'batch_size': '[1, inf)', 'top': '[1, inf)', 'tau': '(0, 1]', 'mask_ratio': '[0, 1]'})
if pooling not in ('auto', 'last', 'mean'):  # 'first' would pool BOS alone
    raise UsageError(f"pooling must be 'auto', 'last' or 'mean', got {pooling!r}")
if objective and not json:
    raise UsageError(f"--objective={objective} is read with --json=True only: add it, or drop --objective to see "
                     "every objective side by side")
s = s or (128 if command == 'misalign' else 5)
num_samples = num_samples or (8000 if command == 'connectivity' else 512)
if not all(isinstance(v, int) for v in visible):
    raise UsageError(f"--visible takes numbers of visible tokens like --visible=2 or --visible=(1,2,3), got {visible}")
visible = (visible or tuple(range(1, s))) if command in ('toy', 'tails') else ()
if not json:  # every command but toy's JSON report writes there: a file in its place stops now, not after the work
    writable_folder(out_dir)

# -----------------------------------------------------------------------------
# toy: Thm 4.2's singular values of A_bar, one objective's report as JSON, or every objective side by side
if objective not in ('', 'ar', 'dar', 'mlm', 'vm'):
    raise UsageError(f"unknown --objective={objective}: choose ar, dar, mlm or vm")
if json:
    if not objective:
        raise UsageError("--json=True needs --objective=<ar, dar, mlm or vm>")
    print(dumps(toy_report(objective, r, s, T, visible if objective in ('mlm', 'vm') else (),
                           t if objective == 'dar' else None, max_entries)))
elif command in ('toy', 'tails'):  # (label, objective, visible, t); tails shows dar at t = 1..4
    dar_steps = (t,) if command == 'toy' else (1, 2, 3, 4)
    settings = [('ar', 'ar', (), None)] + [(f'dar t={k}', 'dar', (), k) for k in dar_steps]
    settings += [(f'mlm s_m={v}', 'mlm', (v,), None) for v in visible]
    settings += [('vm s_m in {' + ','.join(map(str, visible)) + '}', 'vm', visible, None)] if len(visible) > 1 else []
    labels = [label for label, *_ in settings]
    reports = [toy_report(name, r, s, T, shown, steps, max_entries) for _, name, shown, steps in settings]
if command == 'toy' and not json:
    print(f"toy model r={r} s={s} T={T}: singular values of A_bar (every one; zeros after r*s)")
    width = max(16, max(map(len, labels)) + 2)
    print('   j ' + ''.join(f"{label:>{width}}" for label in labels))
    for j in range(len(reports[0]['singular_values'])):
        print(f"{j + 1:4d} " + ''.join(f"{report['singular_values'][j]:{width}.10f}" for report in reports))
    print(f"\n{'objective':<22}{'rows x cols':>16}{'closed r<j<=rs':>16}{'max |diff|':>12}{'sum s^4 j>r':>14}")
    for label, report in zip(labels, reports):
        exact = '-' if report['closed_form'] is None else f"{report['closed_form'][r * s - 1]:.10f}"
        diff = '-' if report['max_abs_diff'] is None else f"{report['max_abs_diff']:.1e}"
        print(f"{label:<22}{report['rows']:>9} x {report['cols']:<5}{exact:>16}{diff:>12}"
              f"{report['sum_sigma4_beyond_r']:14.6f}")
    print("(ar rows include the r class-tagged empty prefixes; the paper prints r(T^s-T)/(T-1), r fewer. "
          "vm closed form is derived here, not the paper's)")
    path = Path(out_dir) / f"toy_spectra_r{r}_s{s}_T{T}.png"
    line_plot(str(path), {label: (range(1, len(report['singular_values']) + 1), report['singular_values'])
                          for label, report in reversed(list(zip(labels, reports)))},  # ar drawn on top
              f"Thm 4.2 toy spectra (r={r}, s={s}, T={T})", 'j', 'sigma_j')
    print(f"wrote {path} and {path.with_suffix('.csv')}")

# -----------------------------------------------------------------------------
# tails: every objective in the theorem's own currency, the sum of sigma^4 past r (Thm 4.1)
if command == 'tails':
    rows = [(label, report['sum_sigma4_beyond_r'],
             '' if report['closed_form'] is None else tail_sigma4(report['closed_form'], r))
            for label, report in zip(labels, reports)]
    print(f"sum of sigma_j^4 over j > r, toy r={r} s={s} T={T} (smaller = more connected)")
    for label, value, exact in rows:
        print(f"{label:<24}{value:14.8f}   closed form {exact if exact == '' else f'{exact:.8f}'}")
    path = Path(out_dir) / f"toy_tails_r{r}_s{s}_T{T}.csv"
    write_csv(path, ['objective', 'sum_sigma4_beyond_r', 'closed_form'], rows)
    print(f"wrote {path}")

# -----------------------------------------------------------------------------
# misalign: Thm 4.3's w_k for fixed mask ratios and a vm range
if command == 'misalign':
    if not all(isinstance(v, (int, float)) for v in rho + vm) or len(vm) not in (0, 2) or not rho + vm:
        raise UsageError(f"give --rho ratios like --rho=(0.15,0.3) and/or --vm a range (a,b) like --vm=(0.15,0.3) "
                         f"(--vm=() for none), got --rho={rho} --vm={vm}")
    ranges = [(float(v), float(v)) for v in rho] + ([tuple(map(float, vm))] if vm else [])
    labels = [f"rho={a:g}" if a == b else f"vm rho~U[{a:g},{b:g}]" for a, b in ranges]
    results = [misalignment(s, rho_range) for rho_range in ranges]
    print(f"Thm 4.3 misalignment w_k = (s(1-rho))^3 - (k-1)^3, s={s} (vm: averaged over rho ~ U[a, b])")
    print('   k ' + ''.join(f"{label:>24}" for label in labels))
    for i in range(s):
        print(f"{i + 1:4d} " + ''.join(f"{result['w'][i]:24.6g}" for result in results))
    print('Eq. 4 length part sum_k w_k^2/(k-1)^6 / (2s(1-rho)): ' +
          ', '.join(f"{label} {result['eq4_length_part']:.6g}" for label, result in zip(labels, results)))
    path = Path(out_dir) / f"misalignment_s{s}.png"
    line_plot(str(path), {label: (result['k'], result['w']) for label, result in zip(labels, results)},
              f"Thm 4.3 misalignment w_k (s={s})", 'k (target index; prefix length k-1)', 'w_k')
    print(f"wrote {path} and {path.with_suffix('.csv')}")

# -----------------------------------------------------------------------------
# connectivity, effrank, maskloss: every checkpoint read as it was pretrained, on the same held-out windows
if command in ('connectivity', 'effrank', 'maskloss'):
    from checkpoint import Pretrained  # torch: only the checkpoint commands need it
    from devices import check_device
    if not ckpt or command == 'effrank' and len(ckpt) > 1:
        raise UsageError(f"{command} needs --ckpt=<path to a text checkpoint>"
                         + (", once per checkpoint" if command != 'effrank' else ' (one)'))
    if not dataset:
        raise UsageError(f"{command} needs --dataset=<name under data/, or a folder holding val.bin>")
    if command == 'maskloss' and not (ratios and all(isinstance(v, (int, float)) and 0 < v < 1 for v in ratios)):
        raise UsageError(f"--ratios takes mask ratios in (0, 1) like --ratios=(0.15,0.5,0.9), got {ratios}")
    device, data_dir = check_device(device), dataset_dir(dataset)
    series = {}  # one curve per checkpoint (effrank: per kind of input, over the layers)
    for path in ckpt:
        checkpoint = Pretrained(path, 'tokens')
        model, pretraining = checkpoint.model(device), checkpoint.objective
        if command == 'maskloss' and not pretraining.kind.masked:
            raise UsageError(f"{path} is a {pretraining.label} checkpoint: maskloss scores masked (mlm, vm) "
                             "checkpoints; score ar and dar with eval_ppl.py")
        windows = text_windows(data_dir, model.config.block_size, num_samples, model.config.tokenizer)
        label = f"{len(series) + 1}: {pretraining.label} {Path(path).parent.name}"
        attention = pretraining_attention(pretraining)  # how the features are read: as the model saw text
        if command == 'connectivity':
            pooled_by = encoding(attention, pooling)
            features = pooled_features(model, windows, attention, pooled_by, batch_size, device, progress)
            similarities = top_pair_similarities(connectivity_rows(features, cosine, centred), top)
            ranks = log_ranks(len(similarities))  # the curve at log-spaced ranks: the full one is 1e5 numbers a model
            series[label] = (ranks, similarities[ranks - 1])
            print(f"{label} ({path}; {attention} attention, {pooled_by} pooling): top-1 {similarities[0]:.6g}, "
                  f"median of top {len(similarities)} {np.median(similarities):.6g}, last {similarities[-1]:.6g}")
        elif command == 'maskloss':
            losses = masked_loss_by_ratio(model, windows, pretraining.two_stream, ratios, seed, batch_size, device,
                                          progress)
            series[label] = (list(losses), [nll for nll, _ in losses.values()])
            print(f"{label} ({path}): " + ', '.join(f"rho={rho:g} {nll:.4f} ({n} targets)"
                                                    for rho, (nll, n) in losses.items()))
        else:
            ranks = layer_ranks(model, windows, attention, tau, mask_ratio, seed, batch_size, device, progress)
            print(f"rank_{tau:g} of token representations per layer, {path} ({pretraining.label}, "
                  f"{attention} attention; [MASK] ratio {mask_ratio:g}, BOS excluded)")
            print(f"{'layer':>5}" + ''.join(f"{name:>16}" for name in ranks))
            for layer in range(model.config.n_layer):
                print(f"{layer + 1:5d}" + ''.join(f"{ranks[name][layer]:16d}" for name in ranks))
            series = {name: (range(1, model.config.n_layer + 1), ranks[name]) for name in ranks}
    plots = {  # file, title, x and y labels, log x
        'connectivity': ('connectivity.png', f"Fig. 2 connectivity: top {top} pairwise inner products of "
                         f"{num_samples} held-out samples", 'pair rank', 'inner product', True),
        'effrank': (f"effective_rank_{Path(ckpt[0]).parent.name or 'ckpt'}.png",
                    f"effective rank (tau={tau:g}) per layer: {ckpt[0]}", 'layer', 'rank_tau', False),
        'maskloss': ('maskloss.png', f"masked loss by mask ratio ({num_samples} held-out windows; Thm 4.3)",
                     'mask ratio rho', 'nats per masked token', False)}
    name, title, xlabel, ylabel, logx = plots[command]
    line_plot(str(Path(out_dir) / name), series, title, xlabel, ylabel, logx=logx)
    print(f"wrote {Path(out_dir) / name} and {(Path(out_dir) / name).with_suffix('.csv')}")
