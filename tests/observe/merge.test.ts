/**
 * Merging model servers' metrics (src/observe/merge.ts): a `model` label on every sample,
 * one family per name across models, and the families that cannot be merged dropped with a
 * reason.
 */
import { describe, expect, test } from "bun:test";
import { formatFamily, parseExposition } from "../../src/observe/exposition.ts";
import { mergeUpstream } from "../../src/observe/merge.ts";

const scraped = (model: string, text: string) => ({ model, families: parseExposition(text) });

function merge(...inputs: { model: string; families: ReturnType<typeof parseExposition> }[]) {
  const drops: string[] = [];
  const families = mergeUpstream(inputs, (model, family, why) =>
    drops.push(`${model} ${family}: ${why}`),
  );
  return { text: families.map(formatFamily).join(""), drops };
}

const COUNTER = (n: number) =>
  `# HELP llamacpp:tokens_predicted_total Tokens predicted.\n# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total ${n}\n`;

describe("mergeUpstream", () => {
  test("the same family from two models is written once, both models' samples under it", () => {
    const { text, drops } = merge(scraped("a", COUNTER(5)), scraped("b", COUNTER(7)));
    expect(text).toBe(
      [
        "# HELP llamacpp:tokens_predicted_total Tokens predicted.",
        "# TYPE llamacpp:tokens_predicted_total counter",
        'llamacpp:tokens_predicted_total{model="a"} 5',
        'llamacpp:tokens_predicted_total{model="b"} 7',
        "",
      ].join("\n"),
    );
    expect(drops).toEqual([]);
  });

  test("a model label of the server's own becomes upstream_model (and one taken moves on)", () => {
    const { text } = merge(
      scraped("a", 'x{model="llama-3",le_x="1"} 1\ny{model="m",upstream_model="n"} 2\n'),
    );
    expect(text).toContain('x{model="a",upstream_model="llama-3",le_x="1"} 1');
    expect(text).toContain('y{model="a",upstream_model="m",upstream_upstream_model="n"} 2');
  });

  test("a histogram keeps its buckets, sum and count together, per model, in order", () => {
    const h = (m: string) =>
      `# TYPE lat histogram\nlat_bucket{le="1"} ${m}\nlat_bucket{le="+Inf"} ${m}\nlat_sum 0.5\nlat_count ${m}\n`;
    const { text } = merge(scraped("a", h("1")), scraped("b", h("2")));
    expect(text.split("\n").filter((l) => !l.startsWith("#") && l !== "")).toEqual([
      'lat_bucket{model="a",le="1"} 1',
      'lat_bucket{model="a",le="+Inf"} 1',
      'lat_sum{model="a"} 0.5',
      'lat_count{model="a"} 1',
      'lat_bucket{model="b",le="1"} 2',
      'lat_bucket{model="b",le="+Inf"} 2',
      'lat_sum{model="b"} 0.5',
      'lat_count{model="b"} 2',
    ]);
    expect(text.match(/# TYPE lat histogram/g)).toHaveLength(1);
  });

  test("HELP comes from the first model that has one", () => {
    const { text } = merge(
      scraped("a", "# TYPE g gauge\ng 1\n"),
      scraped("b", "# HELP g From b.\n# TYPE g gauge\ng 2\n"),
    );
    expect(text.startsWith("# HELP g From b.\n# TYPE g gauge\n")).toBe(true);
  });

  test("a family named like qm's own is dropped, with the reason", () => {
    const { text, drops } = merge(
      scraped(
        "a",
        "qm_requests_total 3\n# TYPE fine gauge\nfine 1\n# TYPE qm_x histogram\nqm_x_count 1\n",
      ),
    );
    expect(text).not.toContain("qm_");
    expect(text).toContain('fine{model="a"} 1');
    expect(drops).toEqual([
      "a qm_requests_total: its name is qm's own (qm_…)",
      "a qm_x: its name is qm's own (qm_…)",
    ]);
  });

  test("a family of another type than another model's of that name is dropped", () => {
    const { text, drops } = merge(
      scraped("a", "# TYPE g gauge\ng 1\n"),
      scraped("b", "# TYPE g counter\ng 2\n"),
    );
    expect(text).toBe('# TYPE g gauge\ng{model="a"} 1\n');
    expect(drops).toEqual(["b g: it is a counter where another model's is a gauge"]);
  });

  test("a family whose series another family writes is dropped (either order)", () => {
    const hist = '# TYPE lat histogram\nlat_bucket{le="+Inf"} 1\nlat_sum 1\nlat_count 1\n';
    const plain = "# TYPE lat_count gauge\nlat_count 4\n";
    const one = merge(scraped("a", hist), scraped("b", plain));
    expect(one.drops).toEqual(["b lat_count: its series lat_count is written by family lat"]);
    expect(one.text).not.toContain('model="b"');
    const other = merge(scraped("a", plain), scraped("b", hist));
    expect(other.drops).toEqual(["b lat: its series lat_count is written by family lat_count"]);
    expect(other.text).not.toContain('model="b"');
  });

  test("families declared without samples are left out; no input, no output", () => {
    expect(merge(scraped("a", "# HELP e Empty.\n# TYPE e gauge\n")).text).toBe("");
    expect(merge().text).toBe("");
  });
});
