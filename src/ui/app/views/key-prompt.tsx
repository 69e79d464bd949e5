/** The form that asks for qm's API key when `/api/status` answers 401. */
import { useState } from "preact/hooks";

export function KeyPrompt({ error, submit }: { error: string | null; submit(key: string): void }) {
  const [key, setKey] = useState("");
  return (
    <main class="key-prompt">
      <form
        aria-labelledby="key-title"
        onSubmit={(e) => {
          e.preventDefault();
          if (key.trim()) submit(key.trim());
        }}
      >
        <h1 id="key-title">quartermaster</h1>
        <p>
          This qm asks for an API key (one of <code>server.api_keys</code>, or a{" "}
          <code>[keys.NAME]</code> key).
        </p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="current-password"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby={error ? "key-error" : "key-help"}
          aria-invalid={error ? true : undefined}
          required
        />
        <p id="key-help" class="muted">
          Kept in this tab only (session storage) and sent with every call the page makes.
        </p>
        {error && (
          <p id="key-error" class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit">Unlock</button>
      </form>
    </main>
  );
}
