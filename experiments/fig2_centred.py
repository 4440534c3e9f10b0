"""Fig. 2 (App. B.2) with the features centred: the top pairwise cosine similarities of pooled features after the mean
feature over the held-out windows is subtracted. A model whose features all point one way (a shared offset, or a
collapse onto one direction) has every raw cosine near 1, which the plain curve reads as "well connected"; centred,
only what tells windows apart is left. Writes <out_dir>/connectivity.csv in theory.py connectivity's format, so
summarize.py reads it as the fig2-centred curve.
usage: python -m experiments.fig2_centred --ckpt=<ar ckpt> --ckpt=<mlm ckpt> --dataset=<name under data/>
       [--num_samples=8000] [--top=100000] [--out_dir=...]"""
import os
import sys
from pathlib import Path

import numpy as np

from configurator import UsageError, configure, one_line_errors
from evals.plot import line_plot, log_ranks
from theory import encoding, load_text_model, pooled_features, text_windows, top_pair_similarities

DEFAULTS = dict(ckpt=(), dataset='', num_samples=8000, top=10 ** 5, pooling='auto', batch_size=64, device='cpu',
                out_dir='out/fig2-centred', progress=True)


def centred_unit_rows(features):
    """Each row minus the mean row, then scaled to unit length: inner products of the result are centred cosines."""
    centred = np.asarray(features, np.float64) - np.mean(features, axis=0)
    return centred / np.linalg.norm(centred, axis=1, keepdims=True).clip(1e-12)


def main(argv):
    config = dict(DEFAULTS)
    configure(config, argv)
    if not config['ckpt'] or not config['dataset']:
        raise UsageError(__doc__.splitlines()[-2].strip() + ' ' + __doc__.splitlines()[-1].strip())
    dataset = config['dataset']
    data_dir = dataset if os.sep in dataset else str(Path(__file__).resolve().parents[1] / 'data' / dataset)
    series = {}
    for ckpt_path in config['ckpt']:
        model, pretraining = load_text_model(ckpt_path, config['device'])
        pooling = encoding(pretraining.attention, config['pooling'])  # as eval_glue.py and Fig. 2's other curves
        windows = text_windows(data_dir, model.config.block_size, config['num_samples'], model.config.tokenizer)
        features = pooled_features(model, windows, pretraining.attention, pooling, config['batch_size'],
                                   config['device'], config['progress'])
        top = top_pair_similarities(centred_unit_rows(features), config['top'])
        ranks = log_ranks(len(top))
        label = f"{len(series) + 1}: {pretraining.label} {Path(ckpt_path).parent.name}"
        series[label] = (ranks, top[ranks - 1])
        print(f"{label}: centred cosine top-1 {top[0]:.6g}, last {top[-1]:.6g}")
    os.makedirs(config['out_dir'], exist_ok=True)
    line_plot(str(Path(config['out_dir']) / 'connectivity.png'), series, f"Fig. 2, centred features: top "
              f"{config['top']} pairwise cosines of {config['num_samples']} held-out samples", 'pair rank',
              'inner product', logx=True)


if __name__ == '__main__':
    one_line_errors('experiments/fig2_centred.py')
    main(sys.argv[1:])
