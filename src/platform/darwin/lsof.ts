/**
 * Who listens on TCP ports, on Darwin (no /proc/net/tcp), from lsof(8):
 *
 *   lsof -nP -w -iTCP -sTCP:LISTEN -Fpcfn
 *
 * `-F` prints one field per line, each led by its letter: `p` starts a process (pid), `c` its
 * command name, `f` starts one of its files (the descriptor), `n` that file's name — for a
 * socket `HOST:PORT` (`*:8080`, `127.0.0.1:8080`, `[::1]:8080`; `-n -P`: no name or service
 * look-ups). `-w` keeps warnings about unreadable mounts off. lsof exits 1 when nothing
 * matched, and, not run as root, lists only this user's processes.
 */

export interface LsofListener {
  pid: number;
  comm: string;
  fd: string;
  host: string;
  port: number;
}

export const LSOF_LISTEN_ARGS = ["-nP", "-w", "-iTCP", "-sTCP:LISTEN", "-Fpcfn"] as const;

export function parseLsof(text: string): LsofListener[] {
  const out: LsofListener[] = [];
  let pid = -1;
  let comm = "";
  let fd = "";
  for (const line of text.split("\n")) {
    const value = line.slice(1);
    switch (line[0]) {
      case "p":
        pid = Number(value);
        comm = "";
        fd = "";
        break;
      case "c":
        comm = value;
        break;
      case "f":
        fd = value;
        break;
      case "n": {
        // The port follows the last colon; an IPv6 host is in brackets.
        const colon = value.lastIndexOf(":");
        const port = Number(value.slice(colon + 1));
        if (pid > 0 && colon > 0 && Number.isInteger(port) && port > 0) {
          out.push({ pid, comm, fd, host: value.slice(0, colon), port });
        }
        break;
      }
    }
  }
  return out;
}

/** Loopback or wildcard: what a `http://127.0.0.1:PORT` URL reaches. */
export function isLocalHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "*" || h === "0.0.0.0" || h === "::" || h === "::1") return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return /^127\.\d+\.\d+\.\d+$/.test(v4);
}
