"""experiments/masked_generators.sh: every number experiments/README.md quotes from it comes back from its record."""
import json
import math
import os

import pytest

from conftest import ROOT

pytestmark = pytest.mark.record  # README quotes a committed record: make check-record
RECORD = os.path.join(ROOT, 'experiments', 'masked-generators')


def test_the_readme_table_is_the_record():
    prefix = {run['name']: run for run in json.load(open(os.path.join(RECORD, 'prefix.json')))['checkpoints']}
    bound = {run['name']: run for run in json.load(open(os.path.join(RECORD, 'elbo.json')))['checkpoints']}
    readme = open(os.path.join(ROOT, 'experiments', 'README.md')).read()
    rows = {'ar': 'ar', 'vm': 'vm [0.15, 0.3]', 'mdlm_2s': 'mdlm two-stream', '(unigram)': 'unigram floor',
            '(bigram)': 'bigram floor'}
    for name, label in rows.items():
        row = next(line for line in readme.splitlines() if line.startswith(f'| {label} |') and 'nats' not in line
                   and line.count('|') == 6)
        cells = [cell.strip().strip('*') for cell in row.strip('|').split('|')]
        assert cells[1] == f"{prefix[name]['ppl']:.2f}", (name, cells)
        assert cells[2] == f"{bound[name]['nll']:.3f} ± {bound[name]['se']:.3f}", (name, cells)
        assert cells[3] == f"{math.exp(bound[name]['nll']):.2f}", (name, cells)
        assert bound[name]['reading'] == ('any-order bound' if name in ('vm', 'mdlm_2s') else 'left-to-right')
