#!/bin/sh
# Regenerates the examples: each examples/NAME/request.json is exported from
# a real model with partd.exporter (python/partd) (random weights, latencies measured
# on this machine's CPU: medians of timed runs; the GPT-2 and ViT examples
# use short inputs and two or three runs, as this Debian torch multiplies matrices
# slowly on the CPU), and examples/NAME/result.json is what `partd plan`
# answers. Results are deterministic: planning a stored request again gives
# the stored result byte for byte (tests/python/test_schemas.py checks it);
# re-exporting re-measures the latencies.
#
#   examples/generate.sh [--plan-only] [PARTD_BIN]   (from anywhere in the tree)
#
# --plan-only keeps the requests and only plans them again (after a planner
# change; seconds instead of the exports' minutes).
set -eu
PLAN_ONLY=0
if [ "${1:-}" = "--plan-only" ]; then PLAN_ONLY=1; shift; fi
PY=${PYTHON:-/usr/bin/python3}
PARTD=${1:-${PARTD_BIN:-build/partd}}
EXPORT="env PYTHONPATH=python $PY -m partd.exporter"
cd "$(dirname "$0")/.."
if [ "$PLAN_ONLY" = 0 ]; then
mkdir -p examples/resnet50 examples/resnet50-size_based examples/gpt2-small examples/gpt2-sac \
    examples/vit_b_16 examples/gpt2-training

# ResNet-50, microbatches of 32 images (node sizes are per microbatch),
# four microbatches in flight (GPipe) over four 16 GiB GPUs.
$EXPORT torchvision.models:resnet50 --input 32,3,224,224 --devices 4x16GiB \
    --mode pipeline --balance-by time --schedule gpipe --microbatches 4 \
    -o examples/resnet50/request.json

# ResNet-50 with torch.fx's own sizes, size_based over three small devices:
# the same partitions as PyTorch's Partitioner (see test_parity.py).
$EXPORT torchvision.models:resnet50 --input 1,3,224,224 --fx-sizes --no-timing \
    --devices a=112MiB,b=96MiB,c=80MiB --mode size_based \
    -o examples/resnet50-size_based/request.json

# GPT-2 small (124M, tied embedding and LM head), 1 x 64 tokens, mode
# pipeline: the graph is one microbatch, forward time only; stages hold
# 1F1B's activations in flight for 8 microbatches and weights + grads + Adam
# moments (param_factor 4), over two fast and two half-speed GPUs. The tied
# weight shows up in tied_params. (For a training step's time, see
# gpt2-training.)
$EXPORT tests/python/models.py:gpt2 --input 1,64:int64 --timing-runs 2 \
    --devices a100-0=40GiB,a100-1=40GiB,t4-0=16GiB@0.5,t4-1=16GiB@0.5 \
    --mode pipeline --balance-by time --schedule 1f1b --microbatches 8 \
    --param-factor 4 -o examples/gpt2-small/request.json

# GPT-2 small, one training step of 8 sequences of 64 tokens planned jointly
# (mode training): measured backward_ms and weight_grad_ms per node, module
# fqns for the units, 1F1B over 8 microbatches of one sequence each
# (training takes the graph as the whole batch and divides it by M; the
# exporter records the batch it traced as graph.batch_size); partd picks the
# stage count, which of two fast 2 GiB and two half-speed 1 GiB devices run
# the stages and in which order, and which units to checkpoint (weights +
# grads + Adam moments, param_factor 4, come to 2091 MiB for the whole
# model: more than any one device holds).
$EXPORT tests/python/models.py:gpt2 --input 8,64:int64 --timing-runs 3 \
    --devices fast0=2GiB,fast1=2GiB,slow0=1GiB@0.5,slow1=1GiB@0.5 \
    --mode training --training-schedule 1f1b --training-microbatches 8 \
    --training-stages auto --training-device-order auto --training-checkpoint auto \
    --training-param-factor 4 -o examples/gpt2-training/request.json

# A GPT-2-shaped model whose activations dominate (4 x 512 tokens, width 128,
# 4 layers), with the module statistics of one training step and the
# activation-checkpointing plan for a 96 MiB budget (about 60 % of its
# unconstrained peak), op-level policies included.
$EXPORT tests/python/models.py:gpt2 \
    --kwargs '{"vocab": 1000, "positions": 512, "width": 128, "layers": 4, "heads": 4}' \
    --input 4,512:int64 --timing-runs 2 --devices 2x8GiB --module-info \
    --sac-budget 96MiB --sac-op-level -o examples/gpt2-sac/request.json

# ViT-B/16, one image, inference on one large and one small GPU, stages
# balanced by time with the small GPU 3x slower.
$EXPORT torchvision.models:vit_b_16 --input 1,3,224,224 --timing-runs 2 \
    --devices a100=40GiB,t4=16GiB@0.33 --mode pipeline --balance-by time \
    -o examples/vit_b_16/request.json

fi

for req in examples/*/request.json; do
    res=${req%request.json}result.json
    status=0
    "$PARTD" plan "$req" -o "$res" || status=$?
    echo "$req -> $res (exit $status)"
done
