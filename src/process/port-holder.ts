/**
 * Who holds a TCP port, at any address: for a listener qm cannot bind (`qm serve` refusing to
 * start, `qm doctor`). The platform's listening sockets name it (Linux: /proc/net/tcp{,6} for
 * the socket's inode, then /proc/PID/fd for the process that has it open; Darwin: lsof);
 * where it cannot (no reader, or another user's process) the answer is null and the message
 * says how to look.
 */
import { platform } from "../platform/index.ts";
import type { ProcFs } from "../platform/types.ts";
import { describeHolder, findHolder, type Holder } from "./port-guard.ts";

export function portHolder(port: number, fs: ProcFs = platform.procs): Holder | null {
  if (!fs.available) return null;
  const inodes = new Set(
    fs
      .listeners()
      .filter((l) => l.port === port)
      .map((l) => l.inode),
  );
  return findHolder(inodes, fs);
}

/** "pid 123 (llama-server)", or how to find it (`ss -ltnp …`, `lsof …`). */
export function describePortHolder(port: number, fs: ProcFs = platform.procs): string {
  return describeHolder(port, portHolder(port, fs));
}
