import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SplitCommandError, splitCommand } from "../../src/config/index.ts";

describe("splitCommand", () => {
  test("splits on blanks of any kind and length", () => {
    expect(splitCommand("  llama-server\t--port  10001 \r\n -m x ")).toEqual([
      "llama-server",
      "--port",
      "10001",
      "-m",
      "x",
    ]);
    expect(splitCommand("")).toEqual([]);
    expect(splitCommand(" \n\t ")).toEqual([]);
  });

  test("single quotes are literal, including backslashes and $", () => {
    expect(splitCommand(`a 'b c' 'd\\e $HOME "q"'`)).toEqual(["a", "b c", 'd\\e $HOME "q"']);
  });

  test('double quotes honour \\" \\\\ \\$ and keep other backslashes', () => {
    expect(splitCommand(`"a \\"b\\" \\\\ \\$x \\n" 'x'`)).toEqual([`a "b" \\ $x \\n`, "x"]);
  });

  test("quotes join with adjacent text into one word; empty quotes give an empty word", () => {
    expect(splitCommand(`--name="my model"'s' '' ""`)).toEqual(["--name=my models", "", ""]);
  });

  test("backslash outside quotes escapes the next character", () => {
    expect(splitCommand("a\\ b \\'c \\\\ d\\")).toEqual(["a b", "'c", "\\", "d\\"]);
  });

  test("line continuations and multi-line TOML strings", () => {
    const cmd = `
llama-server \\
  --port 10001 \\
  -m /models/x.gguf
  --ctx-size "8192 \\
tokens"
`;
    expect(splitCommand(cmd)).toEqual([
      "llama-server",
      "--port",
      "10001",
      "-m",
      "/models/x.gguf",
      "--ctx-size",
      "8192 tokens",
    ]);
    expect(splitCommand("a \\\r\n b")).toEqual(["a", "b"]);
  });

  test("# starts a comment only at the start of a word", () => {
    const cmd = `server # the binary
  --flag a#b   # trailing "comment with 'quotes
  '#not-a-comment' x`;
    expect(splitCommand(cmd)).toEqual(["server", "--flag", "a#b", "#not-a-comment", "x"]);
  });

  test("unterminated quotes are errors", () => {
    expect(() => splitCommand("a 'b")).toThrow(SplitCommandError);
    expect(() => splitCommand('a "b\\"')).toThrow("unterminated double quote in command");
    expect(() => splitCommand("a 'b")).toThrow("unterminated single quote in command");
  });

  test("property: single-quoting any words and joining them round-trips", () => {
    const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;
    const blanks = fc.stringMatching(/^[ \t\n]{1,3}$/);
    fc.assert(
      fc.property(fc.array(fc.string()), blanks, (words, sep) => {
        expect(splitCommand(words.map(quote).join(sep))).toEqual(words);
      }),
    );
  });

  test("property: unquoted words without special characters split back unchanged", () => {
    const word = fc.stringMatching(/^[A-Za-z0-9_./=:,-]+$/);
    fc.assert(
      fc.property(fc.array(word), (words) => {
        expect(splitCommand(words.join(" "))).toEqual(words);
      }),
    );
  });
});
