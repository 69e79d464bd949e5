/** Small hooks the views share. */
import { useEffect, useState } from "preact/hooks";

/** The time now, re-read every `everyMs` (countdowns and progress bars tick on it). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** The route in the URL's fragment, `#/logs/demo-chat` → `["logs", "demo-chat"]`. */
export function useRoute(): string[] {
  const read = () =>
    location.hash
      .replace(/^#\/?/, "")
      .split("/")
      .filter((s) => s !== "")
      .map((s) => decodeURIComponent(s));
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

export function hrefOf(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join("/")}`;
}
