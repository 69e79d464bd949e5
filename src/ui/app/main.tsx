/**
 * The dashboard: boots by reading `/api/status` (a 401 asks for the key), then stays current
 * from `/api/events` — resuming with `Last-Event-ID` after a drop — re-reading the status when
 * an event says figures moved, and otherwise only every few seconds while something is busy.
 */
import { render } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { apiKey, getJson, HttpError, openSse, setApiKey } from "./api.ts";
import { duration } from "./format.ts";
import { hrefOf, useRoute } from "./hooks.ts";
import { follow } from "./sse.ts";
import { applyEvent, busy, type Dash, EMPTY, withRequests, withStatus } from "./state.ts";
import { ActivityPage } from "./views/activity.tsx";
import { HardwarePage } from "./views/hardware.tsx";
import { KeyPrompt } from "./views/key-prompt.tsx";
import { LogsPage } from "./views/logs.tsx";
import { ModelsPage } from "./views/models.tsx";
import { PerformancePage } from "./views/performance.tsx";
import { PlaygroundPage } from "./views/playground.tsx";
import { UsagePage } from "./views/usage.tsx";
import type { RequestRecord, Status } from "./wire.ts";

const TABS = [
  ["models", "Models"],
  ["activity", "Activity"],
  ["logs", "Logs"],
  ["playground", "Playground"],
  ["performance", "Performance"],
  ["usage", "Usage"],
  ["hardware", "Hardware"],
] as const;
type Tab = (typeof TABS)[number][0];

/** Status re-reads while something is loading or serving, and while all is quiet. */
const BUSY_POLL_MS = 2000;
const IDLE_POLL_MS = 15_000;
/** Events that move figures come in bursts: one status read per burst. */
const REFETCH_DEBOUNCE_MS = 200;

type Phase = { kind: "booting" } | { kind: "key"; error: string | null } | { kind: "ready" };

function App() {
  const [phase, setPhase] = useState<Phase>({ kind: "booting" });
  const [fatal, setFatal] = useState<string | null>(null);
  const [dash, setDash] = useState<Dash>(EMPTY);
  // The state as last changed, read synchronously by the event handler (which must know at
  // once whether an event asks for a status read); every change goes through `change`.
  const current = useRef<Dash>(EMPTY);
  const change = useCallback((f: (d: Dash) => Dash) => {
    current.current = f(current.current);
    setDash(current.current);
  }, []);
  const [live, setLive] = useState(false);
  const route = useRoute();
  const tab: Tab = TABS.some(([t]) => t === route[0]) ? (route[0] as Tab) : "models";

  const askKey = useCallback((error: string | null) => {
    setLive(false);
    setPhase({ kind: "key", error });
  }, []);

  const boot = useCallback(async () => {
    try {
      const status = await getJson<Status>("/api/status");
      change((d) => withStatus(d, status, Date.now()));
      setFatal(null);
      setPhase({ kind: "ready" });
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) {
        askKey(apiKey() ? `qm refused that key (${err.message}).` : null);
      } else {
        setFatal(`qm did not answer: ${(err as Error).message}`);
        setTimeout(() => void boot(), 3000);
      }
    }
  }, [askKey, change]);

  useEffect(() => {
    void boot();
  }, [boot]);

  const refetch = useRef<() => void>(() => {});
  useEffect(() => {
    if (phase.kind !== "ready") return;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const read = async () => {
      timer = null;
      try {
        const status = await getJson<Status>("/api/status");
        change((d) => withStatus(d, status, Date.now()));
      } catch (err) {
        if (err instanceof HttpError && err.status === 401) askKey("qm no longer takes this key.");
      }
    };
    refetch.current = () => {
      if (timer === null) timer = setTimeout(read, REFETCH_DEBOUNCE_MS);
    };
    getJson<{ requests: RequestRecord[] }>("/api/requests?limit=500")
      .then((r) => change((d) => withRequests(d, r.requests)))
      .catch(() => {});
    // Each connection after the first says which event it saw last, to get the ones it missed.
    const open = (signal: AbortSignal) =>
      openSse(
        "/api/events",
        signal,
        current.current.lastEventId > 0
          ? { "last-event-id": String(current.current.lastEventId) }
          : {},
      );
    const stop = follow(open, {
      onOpen: () => setLive(true),
      onDrop: () => setLive(false),
      onUnauthorized: () => askKey("qm no longer takes this key."),
      handlers: {
        event: (e) => {
          const r = applyEvent(current.current, e, Date.now());
          change(() => r.dash);
          if (r.refetch) refetch.current();
        },
      },
    });
    return () => {
      stop();
      if (timer !== null) clearTimeout(timer);
      refetch.current = () => {};
    };
  }, [phase.kind, askKey, change]);

  // A page opened again shows what is true now (leases and in-flight requests send no event).
  useEffect(() => {
    refetch.current();
  }, [tab]);

  const isBusy = busy(dash.status);
  useEffect(() => {
    if (phase.kind !== "ready") return;
    const t = setInterval(() => refetch.current(), isBusy ? BUSY_POLL_MS : IDLE_POLL_MS);
    return () => clearInterval(t);
  }, [phase.kind, isBusy]);

  if (phase.kind === "key") {
    return (
      <KeyPrompt
        error={phase.error}
        submit={(key) => {
          setApiKey(key);
          setPhase({ kind: "booting" });
          void boot();
        }}
      />
    );
  }
  if (phase.kind === "booting") {
    return <p class="booting">{fatal ?? "Connecting to qm…"}</p>;
  }
  const s = dash.status;
  return (
    <>
      <header class="top">
        <h1>quartermaster</h1>
        {s && (
          <span class="muted num">
            v{s.version} · up {duration(s.uptime_s * 1000)}
          </span>
        )}
        <span class={live ? "live on" : "live"} title="the /api/events stream">
          {live ? "live" : "reconnecting…"}
        </span>
        {apiKey() && (
          <button
            type="button"
            class="link"
            onClick={() => {
              setApiKey(null);
              askKey(null);
            }}
          >
            Forget key
          </button>
        )}
      </header>
      <Tabs current={tab} />
      <main>
        <div id="panel" role="tabpanel" aria-labelledby={`tab-${tab}`}>
          {tab === "models" && <ModelsPage dash={dash} refresh={() => refetch.current()} />}
          {tab === "activity" && <ActivityPage requests={dash.requests} />}
          {tab === "logs" && <LogsPage status={s} model={route[1] ?? null} />}
          {tab === "performance" && <PerformancePage requests={dash.requests} />}
          {tab === "hardware" && <HardwarePage status={s} requests={dash.requests} />}
          {tab === "usage" && <UsagePage status={s} />}
          {/* Kept mounted, so a conversation survives a look at another page. */}
          <div hidden={tab !== "playground"}>
            <PlaygroundPage model={tab === "playground" ? (route[1] ?? null) : null} />
          </div>
        </div>
      </main>
    </>
  );
}

/** The page tabs: links (the hash router), with the ARIA tabs pattern's arrow keys. */
function Tabs({ current }: { current: Tab }) {
  const onKey = (e: KeyboardEvent) => {
    const at = TABS.findIndex(([t]) => t === current);
    const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
    if (step === 0) return;
    e.preventDefault();
    const next = TABS[(at + step + TABS.length) % TABS.length]![0];
    location.hash = hrefOf(next);
    document.getElementById(`tab-${next}`)?.focus();
  };
  return (
    <nav>
      <div role="tablist" aria-label="Pages" class="tabs" onKeyDown={onKey}>
        {TABS.map(([t, label]) => (
          <a
            key={t}
            id={`tab-${t}`}
            role="tab"
            href={hrefOf(t)}
            aria-selected={t === current}
            aria-controls="panel"
            tabIndex={t === current ? 0 : -1}
          >
            {label}
          </a>
        ))}
      </div>
    </nav>
  );
}

render(<App />, document.getElementById("app")!);
