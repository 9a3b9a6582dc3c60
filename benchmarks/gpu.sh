#!/usr/bin/env bash
# The GPU measurements behind docs/gpu.md, one stage after the other, on a machine with one NVIDIA
# GPU and this project installed (make install, or wheels on PYTHONPATH). Each stage logs to
# $GPU_LOG_DIR/<stage>.log (default benchmarks/results/gpu), prints where it is, and appends a row
# to $GPU_LOG_DIR/summary.tsv (stage, status: ok/failed/cut/skipped, exit code, seconds, budget)
# the moment it ends, so that a session cut short keeps every row it reached.
#
#   bash benchmarks/gpu.sh                      # the default stages, in priority order
#   bash benchmarks/gpu.sh study_warm cudatests # some of them (any stage below)
#   bash benchmarks/gpu.sh --plan               # the stages and their budgets, nothing run
#
# Budgets: BUDGET (seconds, default 540: 9 min of a 15-min device allotment) bounds the whole run;
# each stage also has its own (budget_of; BUDGET_<stage>=S overrides one) and is cut at the smaller
# of the two. A study stage stops its Snakemake 20 s before its budget, so its wall time, the
# per-rule seconds (python -m benchmarks study_overhead) and its jobs' benchmark files are written
# even when it is cut.
#
# Default stages, in priority order: env (device, driver, versions), study_cold (the default
# study — config.yaml's seeds × 201 checkpoints — on the GPU with torch's compile caches emptied:
# workflow/configs/local-files.yaml + gpu.yaml, --cores $CORES --resources gpu=$GPU_JOBS),
# study_warm (the same, caches as study_cold left them), study_many (the many-seed study:
# gpu.yaml's seeds, or MANY_SEEDS), cudatests (tests/test_cuda.py), llc (the LLC's jobs of the
# last study rerun alone: rule llc's seconds per training). Named only: checks (python -m
# benchmarks cuda_checks), ensemble (ensemble_jobs: one ensemble job against one job per seed),
# study_ckpt (warm, one topology job per checkpoint), bench (python -m benchmarks training
# --device cuda), pythia (Pythia-410M's architecture, random weights, fp16, 200 texts), tests
# (make test: the default suite).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CORES=${CORES:-16}
BENCH_STEPS=${BENCH_STEPS:-1000}
GPU_JOBS=${GPU_JOBS:-40}
OUT=${GPU_LOG_DIR:-benchmarks/results/gpu}
BUDGET=${BUDGET:-540}
DEFAULT_STAGES=(env study_cold study_warm study_many cudatests llc)

budget_of() {  # a stage's own budget in seconds (BUDGET_<stage> overrides it)
    local var="BUDGET_$1" own
    case $1 in
        env) own=15 ;;
        study_cold) own=150 ;;
        study_warm) own=120 ;;
        study_many) own=150 ;;
        cudatests) own=60 ;;
        llc) own=45 ;;
        *) own=600 ;;
    esac
    echo "${!var:-$own}"
}

plan() {  # the stages with their budgets, and the default stages' total against BUDGET
    local total=0 s b
    for s in "$@"; do
        b=$(budget_of "$s")
        total=$((total + b))
        printf '%s\t%s\n' "$s" "$b"
    done
    printf 'total\t%s\tof BUDGET %s\n' "$total" "$BUDGET"
}

stage() {  # stage NAME COMMAND...: run (cut at its budget or the deadline), log, time, summarise
    local name=$1 start=$SECONDS rc status left own
    shift
    own=$(budget_of "$name")
    left=$((DEADLINE - SECONDS))
    [ "$own" -lt "$left" ] && left=$own
    if [ "$left" -le 5 ]; then
        echo "[$(date +%T)] $name: skipped (budget spent)"
        printf '%s\tskipped\t-\t0\t%s\n' "$name" "$own" >>"$OUT/summary.tsv"
        return 0
    fi
    echo "[$(date +%T)] $name (budget $left s): $*"
    STAGE_SECONDS=$left timeout -k 10 "$left" bash -c '"$@"' _ "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    case $rc in
        0) status=ok ;;
        124 | 137) status=cut ;;
        *) status=failed ;;
    esac
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$rc" "$((SECONDS - start))" "$own" \
        >>"$OUT/summary.tsv"
    echo "[$(date +%T)] $name: $status (exit $rc) after $((SECONDS - start)) s (log: $OUT/$name.log)"
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

seeds_of() {  # seeds_of FILE: that YAML file's seeds, as a --config value
    "$PY" -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['seeds'])" "$1"
}

study() {  # study SEEDS TOPOLOGY_JOBS [NAME]: the study from an empty results/, timed; its stages
    rm -rf results .snakemake/log
    local start=$SECONDS limit=$((${STAGE_SECONDS:-1000000} - 20))
    TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1} \
        timeout -k 5 "$limit" "$PY" -m snakemake --cores "$CORES" --resources gpu="$GPU_JOBS" \
        --show-failed-logs \
        --configfile workflow/configs/local-files.yaml workflow/configs/gpu.yaml \
        --config seeds="$1" train="{device: cuda, deterministic: $DET}" topology="{jobs: $2}"
    local rc=$?
    [ $rc -eq 124 ] && echo "study cut at $limit s (its stage's budget less 20 s)"
    echo "study wall: $((SECONDS - start)) s (exit $rc; seeds $1, topology jobs per $2)"
    "$PY" -m benchmarks study_overhead --cores "$CORES"
    [ -d results/benchmarks ] && cp -r results/benchmarks "$OUT/${3:-study}-benchmarks"
    return $rc
}

llc_alone() {  # the LLC's jobs of the last study's trainings, rerun alone: rule llc's seconds
    local limit=$((${STAGE_SECONDS:-1000000} - 10))
    timeout -k 5 "$limit" "$PY" -m snakemake --cores "$CORES" --resources gpu="$GPU_JOBS" \
        --forcerun llc --until llc --show-failed-logs \
        --configfile workflow/configs/local-files.yaml workflow/configs/gpu.yaml \
        --config seeds="$1" train="{device: cuda, deterministic: $DET}"
    local rc=$?
    "$PY" -m benchmarks study_overhead --cores "$CORES"
    return $rc
}

cold() {  # empty torch's compile caches (inductor, Triton), then run the arguments
    rm -rf "/tmp/torchinductor_$(whoami)" "$HOME/.triton/cache"
    "$@"
}

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=("${DEFAULT_STAGES[@]}")
if [ "${stages[0]}" = "--plan" ]; then
    plan "${DEFAULT_STAGES[@]}"
    exit 0
fi
if [ -n "${GPU_SH_FUNCTIONS_ONLY:-}" ]; then  # sourced by tests: the functions only
    return 0 2>/dev/null || exit 0
fi

DEADLINE=$((SECONDS + BUDGET))
mkdir -p "$OUT"
printf 'stage\tstatus\texit\tseconds\tbudget\n' >"$OUT/summary.tsv"
DET=true  # train.deterministic; false when the checks show a deterministic CUDA run cannot train
DEFAULT_SEEDS=$(seeds_of config.yaml)
MANY_SEEDS=${MANY_SEEDS:-$(seeds_of workflow/configs/gpu.yaml)}
export PY CORES GPU_JOBS DET OUT
export -f env_info study llc_alone cold

for s in "${stages[@]}"; do
    case $s in
        env) stage env env_info ;;
        study_cold) stage "$s" cold study "$DEFAULT_SEEDS" training "$s" ;;
        study_warm) stage "$s" study "$DEFAULT_SEEDS" training "$s" ;;
        study_many) stage "$s" study "$MANY_SEEDS" training "$s" ;;
        study_ckpt) stage "$s" study "$DEFAULT_SEEDS" checkpoint "$s" ;;
        cudatests) stage cudatests "$PY" -m pytest tests/test_cuda.py -q ${CUDA_K:+-k "$CUDA_K"} ;;
        llc) stage llc llc_alone "$MANY_SEEDS" ;;
        tests) stage tests make test VENV="${VENV:-.venv}" PYTEST_ARGS="${PYTEST_ARGS:--q}" ;;
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
        pythia) stage pythia "$PY" -m benchmarks pythia --arch 410m --device cuda \
            --dtype float16 --texts 200 --revisions 2 --out "$OUT/pythia_410m.json" ;;
        *) echo "unknown stage $s" >&2; exit 2 ;;
    esac
done
echo "summary ($OUT/summary.tsv):"
column -t -s $'\t' "$OUT/summary.tsv" 2>/dev/null || cat "$OUT/summary.tsv"
