/** The config file watch (src/runtime/reload-watch.ts): debounced on fake timers, by content. */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigWatch, DEBOUNCE_MS, watchWithFs } from "../../src/runtime/reload-watch.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { quietLog } from "../support/in-process.ts";

function setup(first: string | null = "a = 1") {
  const timers = new FakeTimers();
  const files = new Map<string, string>();
  if (first !== null) files.set("/etc/qm/qm.toml", first);
  let fire: (name: string | null) => void = () => {};
  let watchedDir = "";
  let reloads = 0;
  const w = new ConfigWatch({
    file: "/etc/qm/qm.toml",
    timers,
    log: quietLog(),
    reload: () => reloads++,
    read: (p) => files.get(p) ?? null,
    watchDir: (dir, onEvent) => {
      watchedDir = dir;
      fire = onEvent;
      return () => {
        fire = () => {};
      };
    },
  });
  w.start();
  return {
    w,
    timers,
    files,
    event: (name: string | null = "qm.toml") => fire(name),
    write(text: string) {
      files.set("/etc/qm/qm.toml", text);
      fire("qm.toml");
    },
    reloads: () => reloads,
    dir: () => watchedDir,
  };
}

describe("ConfigWatch", () => {
  test("watches the directory; a burst of writes is one reload after 300 ms of quiet", () => {
    const t = setup();
    expect(t.dir()).toBe("/etc/qm");
    t.write("a = 2");
    t.timers.advance(200);
    t.write("a = 3");
    t.event(".qm.toml.swp");
    t.timers.advance(299);
    expect(t.reloads()).toBe(0);
    t.timers.advance(1);
    expect(t.reloads()).toBe(1);
  });

  test("a write that leaves the content as it was reloads nothing", () => {
    const t = setup();
    t.write("a = 1");
    t.timers.advance(1000);
    expect(t.reloads()).toBe(0);
    t.write("a = 2");
    t.timers.advance(300);
    t.write("a = 2");
    t.timers.advance(300);
    expect(t.reloads()).toBe(1);
  });

  test("other files in the directory are ignored; an event without a name counts", () => {
    const t = setup();
    t.files.set("/etc/qm/qm.toml", "a = 5");
    t.event("other.toml");
    t.timers.advance(1000);
    expect(t.reloads()).toBe(0);
    t.event(null);
    t.timers.advance(300);
    expect(t.reloads()).toBe(1);
  });

  test("a file missing mid-rename is waited for; its return reloads", () => {
    const t = setup();
    t.files.delete("/etc/qm/qm.toml");
    t.event();
    t.timers.advance(300);
    expect(t.reloads()).toBe(0);
    t.write("a = 9");
    t.timers.advance(300);
    expect(t.reloads()).toBe(1);
  });

  test("sync: content a reload by other means already read is not reloaded again", () => {
    const t = setup();
    t.files.set("/etc/qm/qm.toml", "a = 4");
    t.w.sync();
    t.event();
    t.timers.advance(300);
    expect(t.reloads()).toBe(0);
  });

  test("stop ends the watch and the pending timer", () => {
    const t = setup();
    t.write("a = 2");
    t.w.stop();
    t.timers.advance(1000);
    t.write("a = 3");
    t.timers.advance(1000);
    expect(t.reloads()).toBe(0);
    expect(t.timers.pending).toBe(0);
  });

  test("the real fs watch sees an editor's rename over the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-watch-"));
    const file = join(dir, "qm.toml");
    writeFileSync(file, "a = 1");
    // The OS's watch, told apart only so the test knows when its event for the file came;
    // the debounce runs on fake timers. (An event that never comes fails by the test's timeout.)
    let sawFile!: () => void;
    const fileEvent = new Promise<void>((r) => {
      sawFile = r;
    });
    const timers = new FakeTimers();
    let reloads = 0;
    const w = new ConfigWatch({
      file,
      timers,
      log: quietLog(),
      reload: () => reloads++,
      watchDir: (d, onEvent) =>
        watchWithFs(d, (name) => {
          onEvent(name);
          if (name === "qm.toml") sawFile();
        }),
    });
    w.start();
    try {
      writeFileSync(join(dir, "qm.toml.tmp"), "a = 2");
      renameSync(join(dir, "qm.toml.tmp"), file);
      await fileEvent;
      expect(reloads).toBe(0);
      timers.advance(DEBOUNCE_MS);
      expect(reloads).toBe(1);
    } finally {
      w.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
