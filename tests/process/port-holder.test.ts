/** Who holds a listener's port: any address, found through /proc (a fake one here). */
import { describe, expect, test } from "bun:test";
import { describePortHolder, portHolder } from "../../src/process/port-holder.ts";
import { FakeProc } from "../support/fake-proc.ts";

describe("portHolder", () => {
  test("the process with the listening socket's inode, at a specific address too", () => {
    const fs = new FakeProc();
    fs.add(10, { comm: "nginx" });
    fs.add(11, { comm: "qm" });
    fs.sockets.set(10, new Set(["700"]));
    fs.sockets.set(11, new Set(["800"]));
    // A listener on 10.0.0.5:8080 is not "local", yet it is what a bind of 10.0.0.5:8080 meets.
    fs.tcp = [
      { port: 8080, inode: "700", local: false },
      { port: 9100, inode: "800", local: true },
    ];
    expect(portHolder(8080, fs)).toEqual({ pid: 10, comm: "nginx", start: 1 });
    expect(describePortHolder(9100, fs)).toBe("pid 11 (qm)");
  });

  test("nobody found (another user's process, or no /proc): how to look instead", () => {
    const fs = new FakeProc();
    fs.tcp = [{ port: 8080, inode: "700", local: true }];
    expect(portHolder(8080, fs)).toBeNull();
    expect(describePortHolder(8080, fs)).toBe(
      "another process (`ss -ltnp 'sport = :8080'` names it)",
    );
    fs.available = false;
    expect(portHolder(8080, fs)).toBeNull();
  });
});
