#!/usr/bin/env bash
# The GPU measurements behind the README's "GPU" section, one stage after the other, on a machine
# with one NVIDIA GPU and this project installed (make install). Each stage logs to
# $GPU_LOG_DIR/<stage>.log (default benchmarks/results/gpu) and prints where it is; a failed stage
# is reported and the next one runs. BUDGET=<seconds>: stop starting stages (and cut the one
# running) when that much time has gone, so that a session with a time limit gets its logs back.
#
#   bash benchmarks/gpu.sh                      # all stages
#   bash benchmarks/gpu.sh checks bench         # some of them
#
# Stages: env (device, driver, versions), tests (make test: the default suite, CUDA tests
# included), cudatests (tests/test_cuda.py alone), checks (python -m benchmarks cuda_checks),
# bench (python -m benchmarks training --device cuda), ensemble (python -m benchmarks
# ensemble_jobs --device cuda: one ensemble job against one job per seed), study (the default
# 3-seed study on the GPU, timed: workflow/configs/local-files.yaml + gpu.yaml, --cores $CORES
# --resources gpu=$GPU_JOBS; then python -m benchmarks study_overhead): study3cold (the compile
# caches emptied first), study3warm (caches as the last study left them), study3ckpt (warm, one
# topology job per checkpoint instead of per training), study8 (warm, 8 seeds), pythia
# (Pythia-410M's architecture, random weights, fp16, 200 texts).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CORES=${CORES:-16}
BENCH_STEPS=${BENCH_STEPS:-1000}
GPU_JOBS=${GPU_JOBS:-40}
OUT=${GPU_LOG_DIR:-benchmarks/results/gpu}
DEADLINE=$((SECONDS + ${BUDGET:-1000000}))
mkdir -p "$OUT"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(env checks cudatests ensemble study3cold study3warm study8 study3ckpt bench pythia tests)

stage() {  # stage NAME COMMAND...: run (cut at the deadline), log, time
    local name=$1 start=$SECONDS rc left=$((DEADLINE - SECONDS))
    shift
    if [ $left -le 5 ]; then
        echo "[$(date +%T)] $name: skipped (budget spent)"
        return 0
    fi
    echo "[$(date +%T)] $name: $*"
    timeout -k 10 "$left" bash -c '"$@"' _ "$@" >"$OUT/$name.log" 2>&1  # functions: exported
    rc=$?
    echo "[$(date +%T)] $name: exit $rc after $((SECONDS - start)) s (log: $OUT/$name.log)"
    tail -n "${TAIL:-25}" "$OUT/$name.log"
    return 0
}

env_info() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nvidia-smi | head -n 4
    "$PY" -c "import torch, platform; print('python', platform.python_version(), 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), torch.cuda.get_device_name(), torch.cuda.get_device_capability())"
    nproc
    free -g | head -n 2
}

study() {  # study SEEDS TOPOLOGY_JOBS: the study from an empty results/, timed, then its stages
    rm -rf results .snakemake/log
    local start=$SECONDS
    TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1} \
        "$PY" -m snakemake --cores "$CORES" --resources gpu="$GPU_JOBS" --show-failed-logs \
        --configfile workflow/configs/local-files.yaml workflow/configs/gpu.yaml \
        --config seeds="$1" train="{device: cuda, deterministic: $DET}" topology="{jobs: $2}"
    local rc=$?
    echo "study wall: $((SECONDS - start)) s (exit $rc; seeds $1, topology jobs per $2)"
    "$PY" -m benchmarks study_overhead --cores "$CORES"
    return $rc
}

cold() {  # empty torch's compile caches (inductor, Triton), then run the arguments
    rm -rf "/tmp/torchinductor_$(whoami)" "$HOME/.triton/cache"
    "$@"
}

DET=true  # train.deterministic; false when the checks show a deterministic CUDA run cannot train
export PY CORES GPU_JOBS DET
export -f env_info study cold

for s in "${stages[@]}"; do
    case $s in
        env) stage env env_info ;;
        tests) stage tests make test VENV="${VENV:-.venv}" PYTEST_ARGS="${PYTEST_ARGS:--q}" ;;
        cudatests) stage cudatests "$PY" -m pytest tests/test_cuda.py -q ${CUDA_K:+-k "$CUDA_K"} ;;
        ensemble) stage ensemble "$PY" -m benchmarks ensemble_jobs --device cuda \
            --models ${ENSEMBLE_MODELS:-tiny-3k xl-97k} --steps "${ENSEMBLE_STEPS:-1000}" ;;
        checks)
            stage checks env TORCHINDUCTOR_COMPILE_THREADS=2 "$PY" -m benchmarks cuda_checks \
                --steps 200
            if grep -qE "/det(#2)? +FAILED" "$OUT/checks.log"; then
                DET=false
                echo "deterministic CUDA training failed in the checks:" \
                    "the next stages use train.deterministic: false"
            fi
            ;;
        bench) stage bench "$PY" -m benchmarks training --device cuda --steps "$BENCH_STEPS" \
            --deterministic "$DET" ;;
        study | study3warm) stage "$s" study "[42, 43, 44]" training ;;
        study3cold) stage "$s" cold study "[42, 43, 44]" training ;;
        study3ckpt) stage "$s" study "[42, 43, 44]" checkpoint ;;
        study8) stage "$s" study "[42, 43, 44, 45, 46, 47, 48, 49]" training ;;
        pythia) stage pythia "$PY" -m benchmarks pythia --arch 410m --device cuda \
            --dtype float16 --texts 200 --revisions 2 --out "$OUT/pythia_410m.json" ;;
        *) echo "unknown stage $s" >&2; exit 2 ;;
    esac
done
