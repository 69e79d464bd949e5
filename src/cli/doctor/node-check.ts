/**
 * `qm doctor`'s look at each managed mistral.rs node (`kind = "mistralrs"`, src/peers/mistralrs.md):
 * does it answer `GET /v1/models`, and can it unload? A node shows it can unload only by doing
 * it, so the running qm is asked what it saw (`can_unload` in its `/api/status`); without
 * one, a model the node lists `unloaded` shows that it keeps loader configs.
 */
import type { Config, PeerConfig } from "../../config/types.ts";
import { MistralrsApi } from "../../peers/mistralrs.ts";
import type { Fetch } from "../../shared/fetch.ts";
import { realTimers, setTimeoutSignal } from "../../shared/timer.ts";
import { listenUrl } from "../client.ts";
import { type DoctorCheck, type Finding, fail, note, pass } from "./check.ts";

/** How long the running qm may take to answer its status. */
const QM_TIMEOUT_MS = 2000;

export const nodeCheck: DoctorCheck = {
  id: "nodes",
  async run({ config, deps }) {
    const fetcher = deps.fetch;
    if (!config || !fetcher) return [];
    const nodes = Object.values(config.peers).filter((p) => p.node !== null);
    if (nodes.length === 0) return [];
    const seen = await canUnloadSeen(config, fetcher);
    return Promise.all(nodes.map((p) => look(p, fetcher, seen.get(p.id) ?? null)));
  },
};

async function look(p: PeerConfig, fetcher: Fetch, seen: boolean | null): Promise<Finding> {
  const name = `node ${p.id}`;
  let listed: Map<string, string>;
  try {
    listed = await new MistralrsApi(p, realTimers, fetcher).list();
  } catch (err) {
    return fail(
      name,
      `${p.url} did not answer GET /v1/models: ${err instanceof Error ? err.message : String(err)}`,
      `start the node, or fix peers.${p.id}.url (and api_key)`,
    );
  }
  const count = (status: string) => [...listed.values()].filter((s) => s === status).length;
  const reloading = count("reloading");
  const what = `${listed.size} models (${count("loaded")} loaded, ${count("unloaded")} unloaded${reloading > 0 ? `, ${reloading} reloading` : ""})`;
  if (seen === false) {
    return fail(
      name,
      `${what}; it answered an unload with no_loader_config (stock \`mistralrs from-config\` multi-model serving): it cannot unload models, so qm unloads nothing there and refuses a load that needs room`,
      `serve models that keep a loader config (\`mistralrs serve\` with one model, or a server built on the mistralrs crate's MultiModelBuilder), or take max_loaded and vram_budget_gb off peers.${p.id}`,
    );
  }
  if (seen === true || count("unloaded") > 0) return pass(name, `${what}; it can unload`);
  const s = p.node!;
  if (s.maxLoaded > 0 || s.vramBudgetGb > 0) {
    return note(
      name,
      `${what}; whether it can unload is not known until qm unloads one there (a stock \`mistralrs from-config\` node cannot: its unload drops the model)`,
    );
  }
  return pass(name, what);
}

/** What the running qm saw of each node (`can_unload`); empty when none answers. */
async function canUnloadSeen(config: Config, fetcher: Fetch): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>();
  const listen = config.server.listen[0];
  if (!listen || listen.endsWith(":0")) return out;
  const key = config.server.apiKeys[0];
  const limit = setTimeoutSignal(realTimers, QM_TIMEOUT_MS);
  try {
    const res = await fetcher(`${listenUrl(listen)}/api/status`, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      signal: limit.signal,
    });
    if (!res.ok) return out;
    const peers = ((await res.json()) as { peers?: unknown }).peers;
    if (!Array.isArray(peers)) return out;
    for (const p of peers as { name?: unknown; can_unload?: unknown }[]) {
      if (typeof p?.name === "string" && typeof p.can_unload === "boolean") {
        out.set(p.name, p.can_unload);
      }
    }
  } catch {
    // No qm running there (or not this config's): the node's own list is all there is.
  } finally {
    limit.cancel();
  }
  return out;
}
