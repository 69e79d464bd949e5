import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A fake nvidia-smi for integration tests: answers the two CSV queries qm makes (the exact
 * format of `--format=csv,noheader,nounits`) from files the test rewrites while qm runs. Like
 * the real one, it lists a process only while it is alive, and the card's used memory follows.
 *
 * `releaseLagMs` > 0 plays a driver that reclaims an exited process's memory late: from the
 * first query that finds the process dead, its memory stays in memory.used (no longer listed
 * per process) for that long.
 */
export const FAKE_GPU_UUID = "GPU-5f6c4c1e-0000-4000-8000-000000000001";
export const FAKE_TOTAL_MIB = 24576;

export interface FakeSmi {
  /** The script, for `resources.gpu_probe`. */
  smi: string;
  /** qm's models (pid → MiB; listed only while alive) and what other programs use. */
  card(models: Record<number, number>, foreignMib: number): void;
}

export function fakeSmi(releaseLagMs = 0): FakeSmi {
  const dir = mkdtempSync(join(tmpdir(), "qm-fake-smi-"));
  const smi = join(dir, "nvidia-smi");
  const ours = join(dir, "ours.txt");
  const foreign = join(dir, "foreign.txt");
  const lag = Math.max(0, Math.round(releaseLagMs));
  writeFileSync(
    smi,
    `#!/bin/sh
rows=""; used=0; now=$(date +%s%3N)
while read -r pid mib; do
  [ -n "$pid" ] || continue
  if kill -0 "$pid" 2>/dev/null; then
    rows="$rows$pid, ${FAKE_GPU_UUID}, $mib\\n"; used=$((used + mib))
  elif [ ${lag} -gt 0 ]; then
    gone="${dir}/gone-$pid"
    [ -f "$gone" ] || echo "$now" > "$gone"
    if [ $((now - $(cat "$gone"))) -lt ${lag} ]; then used=$((used + mib)); fi
  fi
done < "${ours}"
f=$(cat "${foreign}")
if [ "$f" -gt 0 ]; then rows="$rows"'999999, ${FAKE_GPU_UUID}, '"$f\\n"; used=$((used + f)); fi
for a in "$@"; do
  case "$a" in
    --query-gpu=*) echo "0, ${FAKE_GPU_UUID}, NVIDIA GeForce RTX 4090, ${FAKE_TOTAL_MIB}, $used, $((${FAKE_TOTAL_MIB} - used))"; exit 0 ;;
    --query-compute-apps=*) printf "$rows"; exit 0 ;;
  esac
done
echo "fake nvidia-smi: unexpected arguments: $*" >&2
exit 2
`,
  );
  chmodSync(smi, 0o755);
  const card = (models: Record<number, number>, foreignMib: number) => {
    writeFileSync(
      ours,
      Object.entries(models)
        .map(([pid, mib]) => `${pid} ${mib}\n`)
        .join(""),
    );
    writeFileSync(foreign, String(foreignMib));
  };
  card({}, 0);
  return { smi, card };
}

/** The uuid of fake card `i` (`fakeSmiCards`). */
export const fakeCardUuid = (i: number) =>
  `GPU-5f6c4c1e-0000-4000-8000-${String(i + 1).padStart(12, "0")}`;

export interface FakeSmiCards {
  smi: string;
  /** qm's models: pid → [MiB, card] (listed on that card only while alive). */
  place(models: Record<number, [number, number]>): void;
}

/**
 * A fake nvidia-smi with `count` cards of `FAKE_TOTAL_MIB` each: like `fakeSmi`, it lists a
 * process only while it is alive, on the card the test put it on, and that card's used memory
 * follows. No other program uses memory.
 */
export function fakeSmiCards(count: number): FakeSmiCards {
  const dir = mkdtempSync(join(tmpdir(), "qm-fake-smi-"));
  const smi = join(dir, "nvidia-smi");
  const ours = join(dir, "ours.txt");
  const cards = Array.from({ length: count }, (_, i) => i);
  writeFileSync(
    smi,
    `#!/bin/sh
rows=""
${cards.map((i) => `u${i}=0`).join("; ")}
while read -r pid mib card; do
  [ -n "$pid" ] || continue
  if kill -0 "$pid" 2>/dev/null; then
    case "$card" in
${cards.map((i) => `      ${i}) rows="$rows$pid, ${fakeCardUuid(i)}, $mib\\n"; u${i}=$((u${i} + mib)) ;;`).join("\n")}
    esac
  fi
done < "${ours}"
for a in "$@"; do
  case "$a" in
    --query-gpu=*)
${cards.map((i) => `      echo "${i}, ${fakeCardUuid(i)}, NVIDIA GeForce RTX 4090, ${FAKE_TOTAL_MIB}, $u${i}, $((${FAKE_TOTAL_MIB} - u${i}))"`).join("\n")}
      exit 0 ;;
    --query-compute-apps=*) printf "$rows"; exit 0 ;;
  esac
done
echo "fake nvidia-smi: unexpected arguments: $*" >&2
exit 2
`,
  );
  chmodSync(smi, 0o755);
  const place = (models: Record<number, [number, number]>) =>
    writeFileSync(
      ours,
      Object.entries(models)
        .map(([pid, [mib, card]]) => `${pid} ${mib} ${card}\n`)
        .join(""),
    );
  place({});
  return { smi, place };
}
