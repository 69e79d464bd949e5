/** SIGHUP: a reload, or the terminal going away (src/cli/hangup.ts). */
import { describe, expect, test } from "bun:test";
import { hangupAction, hangupIgnored } from "../../src/cli/hangup.ts";

describe("hangupAction", () => {
  test("the terminal qm started with is gone: stop, or serve on under nohup", () => {
    expect(hangupAction({ hadTerminal: true, hasTerminal: false, ignoredAtStart: false })).toBe(
      "stop",
    );
    expect(hangupAction({ hadTerminal: true, hasTerminal: false, ignoredAtStart: true })).toBe(
      "ignore",
    );
  });

  test("a service without a terminal, or a terminal still there: reload", () => {
    for (const ignoredAtStart of [false, true]) {
      expect(hangupAction({ hadTerminal: false, hasTerminal: false, ignoredAtStart })).toBe(
        "reload",
      );
      expect(hangupAction({ hadTerminal: true, hasTerminal: true, ignoredAtStart })).toBe("reload");
    }
  });
});

describe("hangupIgnored", () => {
  test("reads bit 0 of SigIgn (signal 1, SIGHUP)", () => {
    const status = (mask: string) => `Name:\tqm\nSigBlk:\t0000000000000001\nSigIgn:\t${mask}\n`;
    expect(hangupIgnored(status("0000000001001001"))).toBe(true);
    expect(hangupIgnored(status("0000000001001000"))).toBe(false);
    expect(hangupIgnored(status("0000000000000003"))).toBe(true);
    expect(hangupIgnored("Name:\tqm\n")).toBe(false);
  });
});
