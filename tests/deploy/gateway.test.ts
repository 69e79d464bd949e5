/**
 * The gateway path (deploy/kubernetes/gateway) and the standalone picker (deploy/llm-d) agree
 * with qm and with each other: every YAML document parses; the InferencePool selects the
 * DaemonSet's pods on qm's API port and names the picker's Service and port; the HTTPRoute goes
 * to the pool and outlasts a cold load; the picker's config holds the three scorers with the
 * weights docs/cluster.md explains (the same in both places); the DaemonSet patch makes
 * `/metrics` open on the API port, and a scrape as the picker sends it (pod IP as Host, no
 * key) passes qm's edge; file discovery names three IPv4 boxes on qm's API port, whose
 * quartermaster.toml passes qm's loader.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { buildApp } from "../../src/api/app.ts";
import { parseHostPort } from "../../src/config/index.ts";
import { loadConfigText } from "../../src/config/load.ts";
import type { Config } from "../../src/config/types.ts";
import { fakeGateway } from "../support/fake-gateway.ts";
import { quietLog } from "../support/in-process.ts";
import { ROOT } from "../support/qm-process.ts";

// biome-ignore lint/suspicious/noExplicitAny: manifests are read as loose JSON
type Obj = Record<string, any>;

const K8S = join(ROOT, "deploy/kubernetes");
const GATEWAY = join(K8S, "gateway");
const LLMD = join(ROOT, "deploy/llm-d");

function documents(dir: string): { file: string; obj: Obj }[] {
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), "utf8")).map((doc) => {
        if (doc.errors.length > 0 || doc.warnings.length > 0) {
          throw new Error(`${file}: ${[...doc.errors, ...doc.warnings].map((e) => e.message)}`);
        }
        return { file, obj: doc.toJS() as Obj };
      }),
    );
}

const base = documents(K8S);
const gateway = documents(GATEWAY);

function one(docs: { obj: Obj }[], kind: string, name?: string): Obj {
  const found = docs.filter((d) => d.obj.kind === kind && (!name || d.obj.metadata?.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0]!.obj;
}

const daemonSet = one(base, "DaemonSet");
const qmContainer = daemonSet.spec.template.spec.containers[0] as Obj;
const pool = one(gateway, "InferencePool");
const route = one(gateway, "HTTPRoute");
const epp = one(gateway, "Deployment");
const eppService = one(gateway, "Service");
const eppConfigMap = one(gateway, "ConfigMap");
const patch = one(gateway, "DaemonSet");

/** The env the patched container gives qm (Secret references filled in). */
function patchedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const all = [
    ...(qmContainer.env as Obj[]),
    ...(patch.spec.template.spec.containers[0].env as Obj[]),
  ];
  for (const e of all) env[e.name] = e.valueFrom?.secretKeyRef ? "key-one" : String(e.value);
  return env;
}

/** The base ConfigMap's quartermaster.toml through qm's loader, as the patched pod loads it. */
function patchedConfig(): Config {
  const configMap = one(base, "ConfigMap");
  const text = configMap.data["quartermaster.toml"] as string;
  return loadConfigText(text, {
    file: "configmap.yaml",
    env: patchedEnv(),
    isPortFree: () => true,
  });
}

/** The weights a picker config gives each scorer of its first profile. */
function weights(config: Obj): Record<string, number> {
  const profile = config.schedulingProfiles[0] as Obj;
  const types = new Map((config.plugins as Obj[]).map((p) => [p.name ?? p.type, p.type]));
  const out: Record<string, number> = {};
  for (const p of profile.plugins as Obj[]) {
    if (p.weight !== undefined) out[types.get(p.pluginRef)] = p.weight;
  }
  return out;
}

const eppConfig = parse(eppConfigMap.data["config.yaml"]) as Obj;

describe("deploy/kubernetes/gateway", () => {
  test("documents are known kinds in the quartermaster namespace; the kustomization lists them", () => {
    const kinds = gateway.map(({ obj }) => `${obj.apiVersion} ${obj.kind}`).sort();
    expect(kinds).toEqual([
      "apps/v1 DaemonSet",
      "apps/v1 Deployment",
      "gateway.networking.k8s.io/v1 HTTPRoute",
      "inference.networking.k8s.io/v1 InferencePool",
      "kustomize.config.k8s.io/v1beta1 Kustomization",
      "rbac.authorization.k8s.io/v1 Role",
      "rbac.authorization.k8s.io/v1 RoleBinding",
      "v1 ConfigMap",
      "v1 Service",
      "v1 ServiceAccount",
    ]);
    for (const { obj } of gateway) {
      if (obj.kind === "Kustomization") continue;
      expect([obj.kind, obj.metadata.namespace]).toEqual([obj.kind, "quartermaster"]);
    }
    const kust = one(gateway, "Kustomization");
    const files = readdirSync(GATEWAY).filter(
      (f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml",
    );
    const listed = [...kust.resources, ...kust.patches.map((p: Obj) => p.path)];
    expect(listed.filter((r: string) => r !== "../").sort()).toEqual(files.sort());
    expect(kust.resources).toContain("../");
    expect([patch.metadata.name, patch.metadata.namespace]).toEqual([
      daemonSet.metadata.name,
      daemonSet.metadata.namespace,
    ]);
  });

  test("the pool selects the DaemonSet's pods on qm's API port", () => {
    const labels = daemonSet.spec.template.metadata.labels;
    expect(labels).toMatchObject(pool.spec.selector.matchLabels);
    const apiPort = parseHostPort(patchedConfig().server.listen[0]!)!.port;
    expect(pool.spec.targetPorts).toEqual([{ number: apiPort }]);
    const http = (qmContainer.ports as Obj[]).find((p) => p.containerPort === apiPort);
    expect(http).toBeDefined();
  });

  test("the pool names the picker's Service and gRPC port; the picker watches that pool", () => {
    const ref = pool.spec.endpointPickerRef;
    expect(ref.name).toBe(eppService.metadata.name);
    const grpc = (eppService.spec.ports as Obj[]).find((p) => p.port === ref.port.number);
    expect(grpc).toBeDefined();
    const container = epp.spec.template.spec.containers[0] as Obj;
    const named = (container.ports as Obj[]).find((p) => p.name === grpc!.targetPort);
    expect(named?.containerPort).toBe(ref.port.number);
    const args = container.args as string[];
    expect(args).toContain(`--pool-name=${pool.metadata.name}`);
    expect(args).toContain(`--pool-namespace=${pool.metadata.namespace}`);
    expect(args).toContain(`--grpc-port=${ref.port.number}`);
    expect(eppService.spec.selector).toEqual(epp.spec.template.metadata.labels);
  });

  test("the picker reads its config from the ConfigMap, mounted where --config-file points", () => {
    const container = epp.spec.template.spec.containers[0] as Obj;
    const file = (container.args as string[])
      .find((a) => a.startsWith("--config-file="))!
      .split("=")[1]!;
    const mount = (container.volumeMounts as Obj[]).find((m) =>
      file.startsWith(`${m.mountPath}/`),
    )!;
    const volume = (epp.spec.template.spec.volumes as Obj[]).find((v) => v.name === mount.name)!;
    expect(volume.configMap.name).toBe(eppConfigMap.metadata.name);
    expect(Object.keys(eppConfigMap.data)).toContain(file.slice(mount.mountPath.length + 1));
  });

  test("the three scorers with the weights docs/cluster.md explains, and the max-score picker", () => {
    expect(eppConfig).toMatchObject({
      apiVersion: "llm-d.ai/v1alpha1",
      kind: "EndpointPickerConfig",
    });
    expect(weights(eppConfig)).toEqual({
      "lora-affinity-scorer": 6,
      "queue-scorer": 1,
      "kv-cache-utilization-scorer": 1,
    });
    expect((eppConfig.plugins as Obj[]).map((p) => p.type)).toContain("max-score-picker");
    const docs = readFileSync(join(ROOT, "docs/cluster.md"), "utf8");
    expect(docs).toContain("`lora-affinity-scorer` 6");
  });

  test("the route goes to the pool and outlasts a cold load", () => {
    const rule = route.spec.rules[0] as Obj;
    expect(rule.backendRefs).toEqual([
      { group: "inference.networking.k8s.io", kind: "InferencePool", name: pool.metadata.name },
    ]);
    const seconds = Number(/^(\d+)s$/.exec(rule.timeouts.request)![1]);
    expect(seconds).toBeGreaterThan(patchedConfig().server.healthCheckTimeoutS);
  });

  test("patched, /metrics is open on the API port and a scrape as the picker sends it passes", async () => {
    const config = patchedConfig();
    expect(config.server.metricsOnApi).toBe("open");
    expect(config.server.apiKeys.length).toBeGreaterThan(0);
    const gw = Object.assign(fakeGateway('[server]\nlog_level = "error"\n'), { config });
    const app = buildApp(gw, { loopback: false, log: quietLog() });
    const podIp = "10.42.0.7:8080";
    // The picker: GET /metrics on the pod's IP and target port, no key.
    const scrape = await app.handle(
      new Request(`http://${podIp}/metrics`, { headers: { host: podIp } }),
    );
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toContain("vllm:lora_requests_info");
    // Everything else still needs the key.
    const status = await app.handle(
      new Request(`http://${podIp}/api/status`, { headers: { host: podIp } }),
    );
    expect(status.status).toBe(401);
  });
});

describe("deploy/llm-d (the picker standalone)", () => {
  const endpoints = parse(readFileSync(join(LLMD, "endpoints.yaml"), "utf8")) as Obj;
  const config = parse(readFileSync(join(LLMD, "config.yaml"), "utf8")) as Obj;
  const qm = loadConfigText(readFileSync(join(LLMD, "quartermaster.toml"), "utf8"), {
    file: "quartermaster.toml",
    env: {},
    isPortFree: () => true,
  });

  test("three boxes, each a literal IPv4 address on qm's API port (a string, as file discovery reads it)", () => {
    const apiPort = parseHostPort(qm.server.listen[0]!)!.port;
    expect(endpoints.endpoints).toHaveLength(3);
    for (const e of endpoints.endpoints as Obj[]) {
      expect(e.address).toMatch(/^(\d{1,3}\.){3}\d{1,3}$/);
      expect(e.port).toBe(String(apiPort));
    }
    expect(new Set((endpoints.endpoints as Obj[]).map((e) => e.name)).size).toBe(3);
  });

  test("each box's qm: /metrics open on the API port, every box address an allowed host", () => {
    expect(qm.server.metricsOnApi).toBe("open");
    for (const e of endpoints.endpoints as Obj[])
      expect(qm.server.allowedHosts).toContain(e.address);
    expect(Object.keys(qm.models).length).toBeGreaterThan(1);
  });

  test("file discovery reads endpoints.yaml where the README puts it; the same scorers and weights", () => {
    const discovery = (config.plugins as Obj[]).find((p) => p.type === "file-discovery")!;
    expect(config.dataLayer.discovery.pluginRef).toBe(discovery.name);
    const readme = readFileSync(join(LLMD, "README.md"), "utf8");
    expect(discovery.parameters.path).toBe("/etc/epp/endpoints.yaml");
    expect(readme).toContain("cp endpoints.yaml config.yaml /etc/epp/");
    expect(readme).toContain("--config-file /etc/epp/config.yaml");
    expect(weights(config)).toEqual(weights(eppConfig));
    const source = config.dataLayer.sources[0] as Obj;
    const types = new Map((config.plugins as Obj[]).map((p) => [p.name ?? p.type, p.type]));
    expect(types.get(source.pluginRef)).toBe("metrics-data-source");
    expect(types.get(source.extractors[0].pluginRef)).toBe("core-metrics-extractor");
  });

  test("Envoy asks the picker on its gRPC port and routes by the header it sets, longer than a cold load", () => {
    const envoy = parse(readFileSync(join(LLMD, "envoy.yaml"), "utf8")) as Obj;
    const clusters = envoy.static_resources.clusters as Obj[];
    const boxes = clusters.find((c) => c.type === "ORIGINAL_DST")!;
    expect(boxes.original_dst_lb_config.http_header_name).toBe("x-gateway-destination-endpoint");
    const picker = clusters.find((c) => c.name === "epp")!;
    const address =
      picker.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
    expect(address.port_value).toBe(9002);
    expect(readFileSync(join(LLMD, "README.md"), "utf8")).toContain("--grpc-port 9002");
    const hcm = envoy.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
    const timeout = Number(
      /^(\d+)s$/.exec(hcm.route_config.virtual_hosts[0].routes[0].route.timeout)![1],
    );
    expect(timeout).toBeGreaterThan(qm.server.healthCheckTimeoutS);
  });
});
