/**
 * The text exposition format parser and writer (src/observe/exposition.ts): what model
 * servers write is read sample for sample, and written back so that it reads the same.
 */
import { describe, expect, test } from "bun:test";
import {
  ExpositionError,
  type Family,
  formatFamily,
  parseExposition,
  parseValue,
} from "../../src/observe/exposition.ts";

/** llama-server's `/metrics` (`--metrics`), as it writes it. */
const LLAMA = `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1240
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
`;

const only = (text: string) => {
  const families = parseExposition(text);
  expect(families).toHaveLength(1);
  return families[0]!;
};

describe("parseExposition", () => {
  test("HELP, TYPE and plain samples; names with colons", () => {
    expect(parseExposition(LLAMA)).toEqual([
      {
        name: "llamacpp:prompt_tokens_total",
        type: "counter",
        help: "Number of prompt tokens processed.",
        samples: [
          { name: "llamacpp:prompt_tokens_total", labels: [], value: 1240, timestamp: null },
        ],
      },
      {
        name: "llamacpp:kv_cache_usage_ratio",
        type: "gauge",
        help: "KV-cache usage. 1 means 100 percent usage.",
        samples: [
          { name: "llamacpp:kv_cache_usage_ratio", labels: [], value: 0.125, timestamp: null },
        ],
      },
    ]);
  });

  test("label values with escapes, spaces around tokens, a trailing comma, a timestamp", () => {
    const f = only(
      'x { a = "q\\"uote" , b="back\\\\slash",c="new\\nline", d="{},= #",}  3.5   1700000000000\n',
    );
    expect(f.samples[0]).toEqual({
      name: "x",
      labels: [
        ["a", 'q"uote'],
        ["b", "back\\slash"],
        ["c", "new\nline"],
        ["d", "{},= #"],
      ],
      value: 3.5,
      timestamp: "1700000000000",
    });
    expect(f.type).toBe("untyped");
  });

  test("NaN, +Inf, -Inf (any case), exponents; a negative timestamp", () => {
    const f = only('x NaN\nx{a="1"} +Inf\nx{a="2"} -inf\nx{a="3"} 1.5e-3 -5\nx{a="4"} Inf\n');
    const v = f.samples.map((s) => s.value);
    expect(Number.isNaN(v[0])).toBe(true);
    expect(v.slice(1)).toEqual([
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      0.0015,
      Number.POSITIVE_INFINITY,
    ]);
    expect(f.samples[3]!.timestamp).toBe("-5");
  });

  test("a histogram's _bucket, _sum and _count and a summary's quantiles, _sum and _count are one family each", () => {
    const text = `# TYPE h histogram
h_bucket{le="0.5"} 1
h_bucket{le="+Inf"} 2
h_sum 1.25
h_count 2
# TYPE s summary
s{quantile="0.5"} 0.2
s_sum 4
s_count 9
# TYPE h2_count gauge
h2_count 1
`;
    const families = parseExposition(text);
    expect(families.map((f) => [f.name, f.type, f.samples.map((s) => s.name)])).toEqual([
      ["h", "histogram", ["h_bucket", "h_bucket", "h_sum", "h_count"]],
      ["s", "summary", ["s", "s_sum", "s_count"]],
      ["h2_count", "gauge", ["h2_count"]],
    ]);
  });

  test("comments and blank lines are skipped; CRLF line ends are read", () => {
    const families = parseExposition("# just a comment\r\n\r\n#\n# EOF\nx 1\r\n");
    expect(families.map((f) => [f.name, f.samples.length])).toEqual([["x", 1]]);
  });

  test("HELP text keeps other backslashes and reads \\\\ and \\n", () => {
    expect(only("# HELP x a\\\\b\\nc \\t d\nx 1\n").help).toBe("a\\b\nc \\t d");
  });

  test("untyped samples of an undeclared name form their own family", () => {
    const families = parseExposition("# TYPE a counter\na 1\nb_total 2\n");
    expect(families.map((f) => [f.name, f.type])).toEqual([
      ["a", "counter"],
      ["b_total", "untyped"],
    ]);
  });

  const bad: [string, string, RegExp][] = [
    ["no value", "x\n", /line 1: no value after x/],
    ["a bad value", "x one\n", /invalid value "one"/],
    ["a bad name", "1x 1\n", /invalid metric name/],
    ["a dash after the name", "x-1 1\n", /invalid metric name/],
    ["three tokens", "x 1 2 3\n", /expected "value \[timestamp\]"/],
    ["a float timestamp", "x 1 2.5\n", /invalid timestamp/],
    ["an unterminated label value", 'x{a="b} 1\n', /unterminated value of label a/],
    ["an unknown escape", 'x{a="\\t"} 1\n', /invalid escape/],
    ["an unquoted label value", "x{a=b} 1\n", /expected a quoted value for a/],
    ["a label twice", 'x{a="1",a="2"} 1\n', /label a twice/],
    ["a bad label name", 'x{1a="1"} 1\n', /invalid label name/],
    ["a missing comma", 'x{a="1" b="2"} 1\n', /expected "," or "}"/],
    ["an unknown type", "# TYPE x meter\nx 1\n", /unknown type "meter"/],
    ["two TYPE lines", "# TYPE x gauge\n# TYPE x gauge\nx 1\n", /second TYPE for x/],
    ["two HELP lines", "# HELP x a\n# HELP x b\nx 1\n", /second HELP for x/],
    ["TYPE after samples", "x 1\n# TYPE x gauge\n", /TYPE for x after its samples/],
    ["a bucket without le", "# TYPE h histogram\nh_bucket 1\n", /needs an "le" label/],
    ["a plain histogram sample", "# TYPE h histogram\nh 1\n", /has a plain sample/],
    ["a summary sample without quantile", "# TYPE s summary\ns 1\n", /needs a "quantile"/],
  ];
  for (const [what, text, message] of bad) {
    test(`refuses ${what}, naming the line`, () => {
      expect(() => parseExposition(`# fine\n${text}`)).toThrow(ExpositionError);
      expect(() => parseExposition(text)).toThrow(message);
    });
  }
});

describe("parseValue", () => {
  test("reads what Go's ParseFloat reads, and nothing else", () => {
    expect(parseValue("-0.5")).toBe(-0.5);
    expect(parseValue(".5")).toBe(0.5);
    expect(parseValue("5.")).toBe(5);
    expect(parseValue("1E3")).toBe(1000);
    expect(parseValue("+Infinity")).toBe(Number.POSITIVE_INFINITY);
    for (const text of ["", "1,5", "0x10", "1e", "--1", "Infx", "nan1"]) {
      expect({ text, value: parseValue(text) }).toEqual({ text, value: null });
    }
  });
});

describe("formatFamily", () => {
  test("writes HELP and TYPE once, then the samples; what it writes parses back the same", () => {
    const f: Family = {
      name: "vllm:e2e_request_latency_seconds",
      type: "histogram",
      help: 'Latency.\nIn "seconds" \\ s',
      samples: [
        {
          name: "vllm:e2e_request_latency_seconds_bucket",
          labels: [
            ["model_name", 'a "b"\\c\nd'],
            ["le", "+Inf"],
          ],
          value: 3,
          timestamp: null,
        },
        {
          name: "vllm:e2e_request_latency_seconds_sum",
          labels: [],
          value: Number.NaN,
          timestamp: "17",
        },
        {
          name: "vllm:e2e_request_latency_seconds_count",
          labels: [],
          value: 1e21,
          timestamp: null,
        },
      ],
    };
    const text = formatFamily(f);
    expect(text.split("\n")).toEqual([
      '# HELP vllm:e2e_request_latency_seconds Latency.\\nIn "seconds" \\\\ s',
      "# TYPE vllm:e2e_request_latency_seconds histogram",
      'vllm:e2e_request_latency_seconds_bucket{model_name="a \\"b\\"\\\\c\\nd",le="+Inf"} 3',
      "vllm:e2e_request_latency_seconds_sum NaN 17",
      "vllm:e2e_request_latency_seconds_count 1e+21",
      "",
    ]);
    const back = parseExposition(text)[0]!;
    expect(back.help).toBe(f.help);
    expect(back.samples.map((s) => s.labels)).toEqual(f.samples.map((s) => s.labels));
    expect(formatFamily(back)).toBe(text);
  });

  test("a family without samples writes nothing; one without HELP writes only its TYPE", () => {
    expect(formatFamily({ name: "x", type: "gauge", help: null, samples: [] })).toBe("");
    expect(
      formatFamily({
        name: "x",
        type: "untyped",
        help: null,
        samples: [{ name: "x", labels: [], value: -1, timestamp: null }],
      }),
    ).toBe("# TYPE x untyped\nx -1\n");
  });

  test("a parsed exposition, written back, parses to the same families", () => {
    const families = parseExposition(LLAMA);
    const text = families.map(formatFamily).join("");
    expect(parseExposition(text)).toEqual(families);
  });
});
