#!/usr/bin/env bash
# Everything qm can learn about a real NVIDIA card in one run, for docs/gpu.md:
#   - the card, the driver, and whether nvidia-smi lists process ids here (it does not inside a
#     PID namespace or some sandboxes: then qm attributes memory by change);
#   - qm doctor and qm selftest gpu (real memory through libcuda.so.1), and qm selftest
#     (simulated) on the same box;
#   - what one demo model holding 2048 MiB reads as in nvidia-smi, and how long the driver takes
#     to show its memory free after SIGTERM and after SIGKILL (the spawn guard waits up to 5 s).
#
# Usage: scripts/gpu-check.sh [OUTDIR]      (QM=/path/to/qm; default ./qm, else dist/qm)
# Writes OUTDIR (default $OUT, else ./gpu-check-out): nvidia-smi.txt, doctor.json,
# selftest.json, selftest-sim.json, holder.txt, release.txt, summary.txt.
# Run after another script already wrote doctor.json or selftest.json into OUTDIR, it keeps them.
set -u
out=${1:-${OUT:-./gpu-check-out}}
mkdir -p "$out"
if [ -z "${QM:-}" ]; then
  if [ -x ./qm ]; then QM=./qm; else QM=dist/qm; fi
fi
[ -x "$QM" ] || { echo "gpu-check: no qm at $QM (set QM=…, or run 'npm run build')" >&2; exit 1; }
export XDG_STATE_HOME=${XDG_STATE_HOME:-/tmp/qm-gpu-check-state}
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
now_ms() { date +%s%3N; }
used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -d ' '; }

note "qm: $("$QM" version 2>&1)"
if ! command -v nvidia-smi >/dev/null; then
  note "nvidia-smi: not found"
else
  {
    nvidia-smi
    nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,memory.used,memory.free,persistence_mode,mig.mode.current --format=csv
    nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv
  } > "$out/nvidia-smi.txt" 2>&1
  note "card: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader -i 0 2>&1 | head -1)"
fi

if [ ! -s "$out/doctor.json" ]; then
  timeout 60 "$QM" doctor --json > "$out/doctor.json" 2> "$out/doctor.err"
fi
note "doctor gpu: $(grep -A3 '"name": "gpu"' "$out/doctor.json" | grep -o '"detail": .*' | head -1)"

if [ ! -s "$out/selftest.json" ]; then
  timeout 300 "$QM" selftest gpu --json > "$out/selftest.json" 2> "$out/selftest.err"
  note "selftest gpu: exit $?"
fi
timeout 120 "$QM" selftest --json > "$out/selftest-sim.json" 2> "$out/selftest-sim.err"
note "selftest (simulated): exit $?"

# One demo model holding 2048 MiB: what nvidia-smi shows for it, and how fast its memory
# comes back after each way it can end.
hold() {
  local log=$1
  "$QM" demo-upstream --port 0 --name holder --vram-mb 2048 > "$log" 2>&1 &
  holder=$!
  for _ in $(seq 1 200); do
    grep -q "listening on" "$log" && return 0
    kill -0 "$holder" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
released_after() {
  local signal=$1 before=$2 start
  start=$(now_ms)
  kill "-$signal" "$holder"
  while [ $(( $(now_ms) - start )) -lt 10000 ]; do
    local u; u=$(used_mib)
    if [ -n "$u" ] && [ "$u" -le $(( before + 64 )) ]; then echo $(( $(now_ms) - start )); return; fi
    sleep 0.02
  done
  echo "more than 10000"
}
if command -v nvidia-smi >/dev/null; then
  idle=$(used_mib)
  if hold "$out/holder.log"; then
    {
      echo "idle memory.used: ${idle} MiB"
      echo "holding 2048 MiB (pid $holder): memory.used $(used_mib) MiB"
      nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader
    } > "$out/holder.txt" 2>&1
    listed=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | grep -c "^$holder," || true)
    note "holder: memory.used $idle -> $(used_mib) MiB; nvidia-smi lists its pid: $([ "$listed" -gt 0 ] && echo yes || echo no)"
    note "release after SIGTERM: $(released_after TERM "$idle") ms"
    wait "$holder" 2>/dev/null
    if hold "$out/holder2.log"; then
      note "release after SIGKILL: $(released_after KILL "$idle") ms"
      wait "$holder" 2>/dev/null
    fi
  else
    note "holder: could not hold 2048 MiB: $(tail -1 "$out/holder.log")"
  fi
  grep -E "^release|^holder" "$summary" > "$out/release.txt"
fi
note "done: $out"
