import { describe, expect, test } from "bun:test";
import { isPortFreeOnLoopback } from "../../src/config/index.ts";
import { PortAllocator } from "../../src/config/ports.ts";

describe("PortAllocator", () => {
  test("hands out increasing free ports, never twice, never reserved ones", () => {
    const ports = new PortAllocator(100, (p) => p !== 101, [102]);
    expect([ports.allocate(), ports.allocate(), ports.allocate()]).toEqual([100, 103, 104]);
  });

  test("gives up past 65535", () => {
    const ports = new PortAllocator(65534, () => true);
    expect([ports.allocate(), ports.allocate(), ports.allocate()]).toEqual([65534, 65535, null]);
  });
});

describe("isPortFreeOnLoopback", () => {
  test("false while something listens, true once it is gone", () => {
    // Port 0: the OS picks a free port, so the test never depends on a fixed one.
    const holder = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = holder.port;
    try {
      expect(isPortFreeOnLoopback(port)).toBe(false);
    } finally {
      holder.stop(true);
    }
    expect(isPortFreeOnLoopback(port)).toBe(true);
  });
});
