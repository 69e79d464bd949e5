/**
 * llama-swap's matrix set expressions: `&` runs models together, `|` offers alternatives,
 * `( )` groups, `+name` inlines another set's expression, names are the matrix's `vars`.
 * `(a | b) & c` stands for the sets [a, c] and [b, c]. `&` binds tighter than `|`.
 */

type Token = { kind: "name" | "ref"; text: string } | { kind: "op"; text: string };

function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  const re = /\s*(?:(\+)?([A-Za-z0-9_-]+)|([&|()]))/y;
  let i = 0;
  while (i < expr.length) {
    if (/^\s*$/.test(expr.slice(i))) break;
    re.lastIndex = i;
    const m = re.exec(expr);
    if (!m) throw new Error(`unexpected "${expr.slice(i).trim()[0]}" in "${expr}"`);
    i = re.lastIndex;
    if (m[3]) out.push({ kind: "op", text: m[3] });
    else out.push({ kind: m[1] ? "ref" : "name", text: m[2]! });
  }
  return out;
}

/** The sets one named expression stands for, each a duplicate-free list of names in the order written. */
export function expandSet(name: string, sets: Readonly<Record<string, string>>): string[][] {
  return expand(name, sets, []);
}

function expand(name: string, sets: Readonly<Record<string, string>>, stack: string[]): string[][] {
  if (stack.includes(name))
    throw new Error(`set "${name}" refers to itself (${[...stack, name].join(" → ")})`);
  const expr = sets[name];
  if (expr === undefined) throw new Error(`no set named "${name}"`);
  const tokens = tokenize(expr);
  let at = 0;
  const peek = () => tokens[at];
  const or = (): string[][] => {
    let out = and();
    while (peek()?.text === "|" && peek()?.kind === "op") {
      at++;
      out = [...out, ...and()];
    }
    return out;
  };
  const and = (): string[][] => {
    let out = atom();
    while (peek()?.text === "&" && peek()?.kind === "op") {
      at++;
      const right = atom();
      out = out.flatMap((l) => right.map((r) => [...l, ...r]));
    }
    return out;
  };
  const atom = (): string[][] => {
    const t = tokens[at++];
    if (!t) throw new Error(`"${expr}" ends too soon`);
    if (t.kind === "name") return [[t.text]];
    if (t.kind === "ref") return expand(t.text, sets, [...stack, name]);
    if (t.text === "(") {
      const inner = or();
      if (tokens[at++]?.text !== ")") throw new Error(`a "(" is not closed in "${expr}"`);
      return inner;
    }
    throw new Error(`unexpected "${t.text}" in "${expr}"`);
  };
  const result = or();
  if (at < tokens.length) throw new Error(`unexpected "${tokens[at]!.text}" in "${expr}"`);
  const seen = new Set<string>();
  const unique: string[][] = [];
  for (const set of result) {
    const norm = [...new Set(set)];
    const key = [...norm].sort().join("\0");
    if (!seen.has(key)) {
      seen.add(key);
      unique.push(norm);
    }
  }
  return unique;
}
