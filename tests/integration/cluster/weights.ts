/** The weights of the shipped picker config (deploy/kubernetes/gateway/epp-config.yaml). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { ROOT } from "../../support/qm-process.ts";
import type { Weights } from "./picker.ts";

/** The weights the shipped EndpointPickerConfig gives the three scorers. */
export function shippedWeights(): Weights {
  const map = parse(
    readFileSync(join(ROOT, "deploy/kubernetes/gateway/epp-config.yaml"), "utf8"),
  ) as { data: Record<string, string> };
  const config = parse(map.data["config.yaml"]!) as {
    schedulingProfiles: { plugins: { pluginRef: string; weight?: number }[] }[];
  };
  const w: Record<string, number> = {};
  for (const p of config.schedulingProfiles[0]!.plugins)
    if (p.weight !== undefined) w[p.pluginRef] = p.weight;
  return w as unknown as Weights;
}
