/**
 * The Playground: a chat with any model over `/v1/chat/completions`, streamed. It asks for no
 * hold after its answers (`X-QM-Hold-Ms: 0`: a person typing is not an agent loop) and honours
 * other models' holds for a minute at most (`X-QM-Patience-Ms: 60000`).
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { apiUrl, authHeaders, getJson } from "../api.ts";
import { answerTurn, applyChunk, messagesOf, type Turn, userTurn } from "../chat.ts";
import { errorOfBody } from "../errors.ts";
import { hrefOf } from "../hooks.ts";
import { renderMarkdown } from "../markdown.ts";
import { readSse } from "../sse.ts";
import { describeWait, parseWaitStatus } from "../wait-status.ts";

export function PlaygroundPage({ model }: { model: string | null }) {
  const [models, setModels] = useState<string[]>([]);
  const [listError, setListError] = useState<string | null>(null);
  const [turns, setTurns] = useState<Turn[]>([]);
  const [draft, setDraft] = useState("");
  const [system, setSystem] = useState("");
  const [temperature, setTemperature] = useState("");
  const [maxTokens, setMaxTokens] = useState("");
  const [wait, setWait] = useState<string | null>(null);
  const [running, setRunning] = useState<AbortController | null>(null);
  const end = useRef<HTMLDivElement>(null);

  useEffect(() => {
    getJson<{ data: { id: string }[] }>("/v1/models")
      .then((r) => setModels(r.data.map((m) => m.id)))
      .catch((err: Error) => setListError(err.message));
  }, []);
  const chosen = model ?? models[0] ?? null;

  useEffect(() => {
    end.current?.scrollIntoView?.({ block: "end" });
  }, [turns, wait]);

  const send = async () => {
    const text = draft.trim();
    if (!text || !chosen || running) return;
    const history = [...turns, userTurn(text)];
    let answer = answerTurn();
    const show = () => setTurns([...history, answer]);
    const ctrl = new AbortController();
    setDraft("");
    setRunning(ctrl);
    // Until the first byte: a ready model that is busy keeps its queue silent (no wait-status
    // stream: that is for models that must load), so say at least what is awaited.
    setWait(`waiting for ${chosen}…`);
    show();
    try {
      const res = await fetch(apiUrl("/v1/chat/completions"), {
        method: "POST",
        headers: authHeaders({
          "content-type": "application/json",
          "x-qm-patience-ms": "60000",
          "x-qm-hold-ms": "0",
        }),
        body: JSON.stringify({
          model: chosen,
          stream: true,
          stream_options: { include_usage: true },
          messages: [
            ...(system.trim() ? [{ role: "system", content: system.trim() }] : []),
            ...messagesOf(history),
          ],
          ...numberField("temperature", temperature),
          ...numberField("max_tokens", maxTokens),
        }),
        signal: ctrl.signal,
      });
      if (!res.ok) {
        answer = { ...answer, error: errorOfBody(res.status, await res.text()) };
        return;
      }
      await readSse(res, {
        comment: (c) => {
          const w = parseWaitStatus(c);
          if (w) setWait(describeWait(w));
        },
        event: (e) => {
          setWait(null);
          const next = applyChunk(answer, e.data);
          if (next !== "done") {
            answer = next;
            show();
          }
        },
      });
    } catch (err) {
      answer = ctrl.signal.aborted
        ? { ...answer, finish: "stopped" }
        : { ...answer, error: `the request failed: ${(err as Error).message}` };
    } finally {
      setWait(null);
      setRunning(null);
      show();
    }
  };

  return (
    <section aria-label="Playground" class="playground">
      <div class="toolbar">
        <label>
          Model{" "}
          <select
            value={chosen ?? ""}
            onChange={(e) => {
              location.hash = hrefOf("playground", e.currentTarget.value);
            }}
            disabled={running !== null}
          >
            {models.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          onClick={() => setTurns([])}
          disabled={running !== null || turns.length === 0}
        >
          Clear conversation
        </button>
        {listError && (
          <span class="error" role="alert">
            {listError}
          </span>
        )}
      </div>
      <details class="options">
        <summary>Options</summary>
        <div class="options-grid">
          <label for="system">System prompt</label>
          <textarea
            id="system"
            rows={2}
            value={system}
            onInput={(e) => setSystem(e.currentTarget.value)}
          />
          <label for="temperature">Temperature</label>
          <input
            id="temperature"
            type="number"
            min="0"
            max="2"
            step="0.1"
            placeholder="model default"
            value={temperature}
            onInput={(e) => setTemperature(e.currentTarget.value)}
          />
          <label for="max-tokens">Max tokens</label>
          <input
            id="max-tokens"
            type="number"
            min="1"
            step="1"
            placeholder="model default"
            value={maxTokens}
            onInput={(e) => setMaxTokens(e.currentTarget.value)}
          />
        </div>
      </details>
      <div class="chat" aria-live="polite">
        {turns.length === 0 && <p class="muted">Send a message to start.</p>}
        {turns.map((t, i) => (
          <TurnView key={i} turn={t} />
        ))}
        <div ref={end} />
      </div>
      <output class="wait">{wait ?? ""}</output>
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <label for="message" class="sr-only">
          Message
        </label>
        <textarea
          id="message"
          rows={3}
          placeholder="Message (Enter sends, Shift+Enter for a new line)"
          value={draft}
          onInput={(e) => setDraft(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              void send();
            }
          }}
        />
        {running ? (
          <button type="button" class="stop" onClick={() => running.abort()}>
            Stop
          </button>
        ) : (
          <button type="submit" disabled={!chosen || draft.trim() === ""}>
            Send
          </button>
        )}
      </form>
    </section>
  );
}

function TurnView({ turn }: { turn: Turn }) {
  // Rendered again only when the text changed (a streaming answer), not on every render.
  const html = useMemo(
    () => (turn.role === "assistant" ? renderMarkdown(turn.content) : ""),
    [turn.role, turn.content],
  );
  if (turn.role === "user") {
    return (
      <div class="turn user">
        <span class="who">you</span>
        <div class="text plain">{turn.content}</div>
      </div>
    );
  }
  return (
    <div class="turn assistant">
      <span class="who">model</span>
      {turn.reasoning !== "" && (
        <details class="reasoning">
          <summary>Reasoning ({turn.reasoning.length} characters)</summary>
          <div class="text plain">{turn.reasoning}</div>
        </details>
      )}
      {turn.content !== "" && (
        <div
          class="text markdown"
          // markdown-it with html off: the model's text is escaped, never markup (markdown.ts).
          dangerouslySetInnerHTML={{ __html: html }}
        />
      )}
      {turn.error && (
        <p class="error" role="alert">
          {turn.error}
        </p>
      )}
      {(turn.finish || turn.usage) && (
        <p class="meta num">
          {turn.finish && `finish: ${turn.finish}`}
          {turn.usage && ` · ${turn.usage.prompt} in, ${turn.usage.completion} out`}
        </p>
      )}
    </div>
  );
}

/** `{name: N}` when the field holds a number, else nothing (the model's default applies). */
function numberField(name: string, value: string): Record<string, number> {
  const n = value.trim() === "" ? Number.NaN : Number(value);
  return Number.isFinite(n) ? { [name]: n } : {};
}
