/** `[peers.NAME]`: the keys peers add, and what the loader refuses. */
import { describe, expect, test } from "bun:test";
import { errors, load } from "../config/support.ts";

describe("peer config", () => {
  test("an openai peer must list its models; a qm peer may discover them", () => {
    expect(errors('[peers.box2]\nurl = "http://h:1"\nkind = "openai"\n')).toEqual([
      'quartermaster.toml:1:1: peers.box2.models: a peer of kind "openai" must list its models',
    ]);
    expect(load('[peers.box2]\nurl = "http://h:1"\nkind = "qm"\n').peers.box2?.models).toEqual([]);
  });

  test("timeout_s, weight and poll_s: defaults, and bounds", () => {
    const p = load('[peers.b]\nurl = "http://h:1"\nmodels = ["m"]\n').peers.b;
    expect(p).toMatchObject({ timeoutMs: 30_000, weight: 1, pollMs: 5000 });
    expect(errors('[peers.b]\nurl = "http://h:1"\nmodels = ["m"]\nweight = -1\n').join()).toContain(
      "peers.b.weight",
    );
    expect(
      errors('[peers.b]\nurl = "http://h:1"\nmodels = ["m"]\ntimeout_s = "x"\n').join(),
    ).toContain("peers.b.timeout_s");
  });
});
