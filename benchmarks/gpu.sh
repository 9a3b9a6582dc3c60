#!/usr/bin/env bash
# The GPU measurements behind the README's "GPU" section, one stage after the other, on a machine
# with one NVIDIA GPU and this project installed (make install). Each stage logs to
# benchmarks/results/gpu/<stage>.log and prints where it is; a failed stage is reported and the
# next one runs.
#
#   bash benchmarks/gpu.sh                      # all stages
#   bash benchmarks/gpu.sh checks bench         # some of them
#
# Stages: env (device, driver, versions), tests (make test: the default suite, CUDA tests
# included), checks (python -m benchmarks cuda_checks), bench (python -m benchmarks training
# --device cuda), study (the default study on the GPU, timed: workflow/configs/local-files.yaml +
# gpu.yaml, --cores $CORES --resources gpu=$GPU_JOBS; then python -m benchmarks study_overhead),
# pythia (Pythia-410M's architecture, random weights, fp16, 200 texts).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CORES=${CORES:-16}
GPU_JOBS=${GPU_JOBS:-15}
BENCH_STEPS=${BENCH_STEPS:-1000}
OUT=benchmarks/results/gpu
mkdir -p "$OUT"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(env checks bench study pythia tests)

stage() {  # stage NAME COMMAND...: run, log, time
    local name=$1 start=$SECONDS rc
    shift
    echo "[$(date +%T)] $name: $*"
    "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    echo "[$(date +%T)] $name: exit $rc after $((SECONDS - start)) s (log: $OUT/$name.log)"
    tail -n 25 "$OUT/$name.log"
    return 0
}

env_info() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nvidia-smi | head -n 4
    "$PY" -c "import torch, platform; print('python', platform.python_version(), 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), torch.cuda.get_device_name(), torch.cuda.get_device_capability())"
    nproc
    free -g | head -n 2
}

study() {
    rm -rf results .snakemake/log
    local start=$SECONDS
    TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1} \
        "$PY" -m snakemake --cores "$CORES" --resources gpu="$GPU_JOBS" --show-failed-logs \
        --configfile workflow/configs/local-files.yaml workflow/configs/gpu.yaml \
        --config train="{device: cuda, deterministic: $DET}"
    local rc=$?
    echo "study wall: $((SECONDS - start)) s (exit $rc)"
    "$PY" -m benchmarks study_overhead --cores "$CORES"
    return $rc
}

DET=true  # train.deterministic; false when the checks show a deterministic CUDA run cannot train

for s in "${stages[@]}"; do
    case $s in
        env) stage env env_info ;;
        tests) stage tests make test VENV="${VENV:-.venv}" PYTEST_ARGS="${PYTEST_ARGS:--q}" ;;
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
        study) stage study study ;;
        pythia) stage pythia "$PY" -m benchmarks pythia --arch 410m --device cuda \
            --dtype float16 --texts 200 --revisions 2 --out "$OUT/pythia_410m.json" ;;
        *) echo "unknown stage $s" >&2; exit 2 ;;
    esac
done
