/**
 * Signal masks as the kernel reports them (Linux /proc/PID/status `SigIgn`, BSD `ps -o
 * sigignore`): hex, bit N−1 set for signal N. SIGHUP is 1 on every Unix (POSIX, signal.h).
 */
export const SIGNAL_NUMBERS = { SIGHUP: 1 } as const;

export type MaskedSignal = keyof typeof SIGNAL_NUMBERS;

/** Whether a hex signal mask (any length, no prefix) has `signal` set. */
export function maskHas(hex: string, signal: MaskedSignal): boolean {
  const n = SIGNAL_NUMBERS[signal];
  const text = hex.trim();
  if (!/^[0-9a-fA-F]+$/.test(text)) return false;
  const digit = text.length - 1 - Math.floor((n - 1) / 4);
  if (digit < 0) return false;
  return ((Number.parseInt(text[digit]!, 16) >> ((n - 1) % 4)) & 1) === 1;
}
