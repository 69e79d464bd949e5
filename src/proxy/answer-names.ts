/**
 * The name each model's server answers with, learnt from its first answer's `"model"` field.
 * An upstream that already says the name the client sent (llama-server echoes the request's
 * `model`; a server started with the model's id as its name says that) needs no rewrite: its
 * answers then pass with no byte search at all (`forward`). Learnt once per model, and
 * forgotten when the model starts again (another process may answer otherwise); a model whose
 * name is learnt different keeps the rewrite, whose remembered field makes it one search and
 * one copy per chunk (`ModelRewrite`).
 */
export class AnswerNames {
  /** Model id → the upstream's value, as JSON (quotes included). Bounded by the models qm has. */
  private readonly names = new Map<string, string>();

  /** The last name asked about and its JSON: clients send the same few names again and again. */
  private lastName = "";
  private lastJson = '""';

  /** Whether `model`'s server is known to answer with `name` already. */
  answers(model: string, name: string): boolean {
    const known = this.names.get(model);
    // A JSON string is its text and two quotes at least: most other names fail on length.
    if (known === undefined || known.length < name.length + 2) return false;
    if (name !== this.lastName) {
      this.lastJson = JSON.stringify(name);
      this.lastName = name;
    }
    return known === this.lastJson;
  }

  /** What `model`'s server answered with (`value`: a JSON string, quotes included). */
  learn(model: string, value: string): void {
    this.names.set(model, value);
  }

  /** `model` (re)starts: whatever it answers with is learnt again. */
  forget(model: string): void {
    this.names.delete(model);
  }
}
