/**
 * The shipped deployment files agree with qm and with each other: every YAML document under
 * deploy/kubernetes parses and is of a known kind; the probes reach `/health` and `/ready` on
 * the API port and pass qm's own edge (Host and key checks); metrics ports agree from the
 * listener to the ServiceMonitor; the grace periods cover qm's shutdown; the embedded
 * quartermaster.toml passes qm's loader; the systemd unit stops, restarts and keeps state as
 * qm needs, without hiding GPU devices.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { buildApp } from "../../src/api/app.ts";
import { parseHostPort } from "../../src/config/index.ts";
import { defaultStateDir, loadConfigText } from "../../src/config/load.ts";
import type { Config } from "../../src/config/types.ts";
import { isLoopbackName } from "../../src/shared/net.ts";
import { fakeGateway } from "../support/fake-gateway.ts";
import { quietLog } from "../support/in-process.ts";
import { ROOT } from "../support/qm-process.ts";

// biome-ignore lint/suspicious/noExplicitAny: manifests are read as loose JSON
type Obj = Record<string, any>;

const K8S = join(ROOT, "deploy/kubernetes");
const UNIT = join(ROOT, "deploy/systemd/quartermaster.service");

const files = readdirSync(K8S).filter((f) => /\.ya?ml$/.test(f));
const docs: { file: string; obj: Obj }[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(join(K8S, file), "utf8")).map((doc) => {
    if (doc.errors.length > 0 || doc.warnings.length > 0) {
      throw new Error(`${file}: ${[...doc.errors, ...doc.warnings].map((e) => e.message)}`);
    }
    return { file, obj: doc.toJS() as Obj };
  }),
);

function one(kind: string): Obj {
  const found = docs.filter((d) => d.obj.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0]!.obj;
}

const daemonSet = one("DaemonSet");
const service = one("Service");
const monitor = one("ServiceMonitor");
const configMap = one("ConfigMap");
const pod = daemonSet.spec.template.spec as Obj;
const container = pod.containers[0] as Obj;

/** What the Secret holds; the Secret itself is made by hand (README). */
const API_KEYS = "key-one,key-two";

/** The environment the container gives qm, Secret references filled in. */
function containerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env as Obj[]) {
    env[e.name] = e.valueFrom?.secretKeyRef ? API_KEYS : String(e.value);
  }
  return env;
}

/** The ConfigMap's quartermaster.toml through qm's own loader, as the container would load it. */
function loadEmbedded(): Config {
  const configPath = container.args[container.args.indexOf("-c") + 1] as string;
  const name = configPath.slice(configPath.lastIndexOf("/") + 1);
  const text = configMap.data[name] as string;
  return loadConfigText(text, {
    file: `configmap.yaml:${name}`,
    env: containerEnv(),
    isPortFree: () => true,
  });
}

const containerPort = (nameOrNumber: string | number): number => {
  if (typeof nameOrNumber === "number") return nameOrNumber;
  const port = (container.ports as Obj[]).find((p) => p.name === nameOrNumber);
  if (!port) throw new Error(`no container port named ${nameOrNumber}`);
  return port.containerPort;
};

const mountOf = (volume: string): string => {
  const mount = (container.volumeMounts as Obj[]).find((m) => m.name === volume);
  if (!mount) throw new Error(`volume ${volume} is not mounted`);
  return mount.mountPath;
};

/** qm's longest orderly stop: the in-flight grace, the listeners' second, the slowest model. */
function shutdownBoundS(config: Config): number {
  const stops = Object.values(config.models).map((m) => m.stopTimeoutS);
  return config.server.shutdownTimeoutS + 1 + Math.max(0, ...stops);
}

describe("kubernetes manifests", () => {
  test("every document is a known kind at its apiVersion, in the quartermaster namespace", () => {
    const kinds = docs.map(({ obj }) => `${obj.apiVersion} ${obj.kind}`).sort();
    expect(kinds).toEqual([
      "apps/v1 DaemonSet",
      "kustomize.config.k8s.io/v1beta1 Kustomization",
      "monitoring.coreos.com/v1 ServiceMonitor",
      "v1 ConfigMap",
      "v1 Namespace",
      "v1 Service",
    ]);
    const ns = one("Namespace").metadata.name;
    for (const { obj } of docs) {
      if (obj.kind === "Namespace" || obj.kind === "Kustomization") continue;
      expect([obj.kind, obj.metadata.namespace]).toEqual([obj.kind, ns]);
    }
  });

  test("the kustomization lists every other file", () => {
    const listed = [...(one("Kustomization").resources as string[])].sort();
    expect(listed).toEqual(files.filter((f) => f !== "kustomization.yaml").sort());
  });

  test("the DaemonSet runs on GPU nodes and asks for GPUs", () => {
    expect(Object.keys(pod.nodeSelector).some((k) => k.startsWith("nvidia.com/gpu"))).toBe(true);
    expect(pod.tolerations).toContainEqual(
      expect.objectContaining({ key: "nvidia.com/gpu", operator: "Exists" }),
    );
    expect(container.resources.limits["nvidia.com/gpu"]).toBeGreaterThanOrEqual(1);
    const labels = daemonSet.spec.template.metadata.labels;
    expect(labels).toMatchObject(daemonSet.spec.selector.matchLabels);
    expect(labels).toMatchObject(service.spec.selector);
  });

  test("the embedded quartermaster.toml passes qm's loader, keys from the Secret", () => {
    const config = loadEmbedded();
    expect(config.server.apiKeys).toEqual(API_KEYS.split(","));
    expect(config.server.listen.map((a) => parseHostPort(a)?.host)).toEqual(["0.0.0.0"]);
    expect(config.server.allowedHosts.length).toBeGreaterThan(0);
    // The Service's own names are among them, or in-cluster clients get 403.
    const { name, namespace } = service.metadata;
    for (const host of [name, `${name}.${namespace}`, `${name}.${namespace}.svc`]) {
      expect(config.server.allowedHosts).toContain(host);
    }
    expect(config.server.stateDir).toBe(mountOf("state"));
    expect(Object.keys(config.models).length).toBeGreaterThan(0);
    // Model files are read from the models volume.
    const models = mountOf("models");
    for (const m of Object.values(config.models)) {
      const weights = m.argv.filter((a) => a.endsWith(".gguf"));
      expect(weights.length).toBeGreaterThan(0);
      for (const f of weights) expect(f.startsWith(`${models}/`)).toBe(true);
    }
  });

  test("the API keys come from the Secret the README says to create", () => {
    const ref = (container.env as Obj[]).find((e) => e.name === "QM_SERVER__API_KEYS")?.valueFrom
      ?.secretKeyRef;
    expect(ref).toBeDefined();
    const readme = readFileSync(join(K8S, "README.md"), "utf8");
    expect(readme).toContain(`create secret generic ${ref.name}`);
    expect(readme).toContain(`--from-literal=${ref.key}=`);
  });

  test("the config the container reads is the ConfigMap's, mounted where args point", () => {
    const configPath = container.args[container.args.indexOf("-c") + 1] as string;
    expect(configPath.startsWith(`${mountOf("config")}/`)).toBe(true);
    const volume = (pod.volumes as Obj[]).find((v) => v.name === "config");
    expect(volume?.configMap.name).toBe(configMap.metadata.name);
  });

  test("probes: /health and /ready on the API listener's port", () => {
    const config = loadEmbedded();
    const apiPort = parseHostPort(config.server.listen[0]!)!.port;
    expect(container.livenessProbe.httpGet.path).toBe("/health");
    expect(container.readinessProbe.httpGet.path).toBe("/ready");
    for (const probe of [container.livenessProbe, container.readinessProbe]) {
      expect(containerPort(probe.httpGet.port)).toBe(apiPort);
    }
    const http = (service.spec.ports as Obj[]).find((p) => p.name === "http")!;
    expect(containerPort(http.targetPort)).toBe(apiPort);
  });

  test("each probe, as kubelet sends it (no key, its Host), passes qm's edge", async () => {
    const config = loadEmbedded();
    const gw = Object.assign(fakeGateway('[server]\nlog_level = "error"\n'), { config });
    const { host } = parseHostPort(config.server.listen[0]!)!;
    const app = buildApp(gw, { loopback: isLoopbackName(host), log: quietLog() });
    const podIp = "10.42.0.7:8080";
    for (const probe of [container.livenessProbe, container.readinessProbe]) {
      const headers: Record<string, string> = {};
      for (const h of probe.httpGet.httpHeaders ?? []) headers[h.name.toLowerCase()] = h.value;
      headers.host ??= podIp; // kubelet's default Host is the pod IP
      const res = await app.handle(
        new Request(`http://${podIp}${probe.httpGet.path}`, { headers }),
      );
      expect([probe.httpGet.path, res.status]).toEqual([probe.httpGet.path, 200]);
    }
    // The key from the Secret is in force, and the pod IP alone is not an allowed Host.
    const keyed = await app.handle(
      new Request(`http://${podIp}/api/status`, { headers: { host: "quartermaster" } }),
    );
    expect(keyed.status).toBe(401);
    const bare = await app.handle(
      new Request(`http://${podIp}/ready`, { headers: { host: podIp } }),
    );
    expect(bare.status).toBe(403);
  });

  test("one metrics port from qm's metrics listener to the ServiceMonitor", () => {
    const config = loadEmbedded();
    const metricsPort = parseHostPort(config.server.metricsListen)!.port;
    const servicePort = (service.spec.ports as Obj[]).find((p) => p.name === "metrics")!;
    expect(containerPort(servicePort.targetPort)).toBe(metricsPort);
    expect(monitor.spec.endpoints).toHaveLength(1);
    const endpoint = monitor.spec.endpoints[0];
    expect([endpoint.port, endpoint.path]).toEqual([servicePort.name, "/metrics"]);
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.namespaceSelector.matchNames).toContain(service.metadata.namespace);
  });

  test("the grace period outlasts the preStop pause and qm's whole shutdown", () => {
    const config = loadEmbedded();
    const pause = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(pause + shutdownBoundS(config));
  });

  test("every writable path is a volume: the root filesystem is read-only", () => {
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    const env = containerEnv();
    const mounts = (container.volumeMounts as Obj[]).filter((m) => !m.readOnly);
    const writable = (path: string) => mounts.some((m) => path.startsWith(m.mountPath));
    expect(writable(loadEmbedded().server.stateDir)).toBe(true);
    expect(writable(env.XDG_CACHE_HOME!)).toBe(true);
    expect(writable(env.HOME!)).toBe(true);
    expect(writable("/tmp")).toBe(true);
  });

  test("the image's user is the one the pod runs as", () => {
    const dockerfile = readFileSync(join(ROOT, "deploy/docker/Dockerfile"), "utf8");
    expect(dockerfile).toMatch(/^COPY --from=release \S+ \/usr\/local\/bin\/qm$/m);
    const user = /^USER (\d+):(\d+)$/m.exec(dockerfile);
    expect(user?.slice(1).map(Number)).toEqual([
      pod.securityContext.runAsUser,
      pod.securityContext.runAsGroup,
    ]);
  });
});

// ── systemd ────────────────────────────────────────────────────────────────────────────────

/** A unit file's settings, section → key → every value given, in order (systemd.syntax(7)). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | null = null;
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    if (line.endsWith("\\")) throw new Error(`line ${i + 1}: continuation lines are not parsed`);
    const section = /^\[([^\]]+)\]$/.exec(line);
    if (section) {
      current = new Map();
      sections.set(section[1]!, current);
      continue;
    }
    const eq = line.indexOf("=");
    if (!current || eq <= 0) throw new Error(`line ${i + 1}: not a setting: ${line}`);
    const key = line.slice(0, eq).trim();
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return sections;
}

const unitText = readFileSync(UNIT, "utf8");
const unit = parseUnit(unitText);
const svc = unit.get("Service")!;
const setting = (key: string) => svc.get(key)?.at(-1);
/** `Environment=` assignments, with the system-unit specifiers qm's paths use expanded. */
function unitEnv(): Record<string, string> {
  const specifiers: Record<string, string> = { "%S": "/var/lib", "%C": "/var/cache", "%%": "%" };
  const env: Record<string, string> = {};
  for (const value of svc.get("Environment") ?? []) {
    for (const word of value.split(/\s+/)) {
      const eq = word.indexOf("=");
      env[word.slice(0, eq)] = word.slice(eq + 1).replace(/%[SC%]/g, (s) => specifiers[s]!);
    }
  }
  return env;
}

describe("systemd unit", () => {
  test("runs qm serve on the /etc config, SIGTERM to qm alone, restarts on failure", () => {
    expect([...unit.keys()]).toEqual(["Unit", "Service", "Install"]);
    expect(svc.get("ExecStart")).toEqual([
      "/usr/local/bin/qm serve -c /etc/quartermaster/quartermaster.toml",
    ]);
    expect(setting("KillMode")).toBe("mixed");
    expect(setting("KillSignal") ?? "SIGTERM").toBe("SIGTERM");
    expect(setting("Restart")).toBe("on-failure");
    expect(unit.get("Install")!.get("WantedBy")).toEqual(["multi-user.target"]);
  });

  test("reload is SIGHUP to qm alone (qm rereads its config)", () => {
    expect(svc.get("ExecReload")).toEqual(["/bin/kill -HUP $MAINPID"]);
  });

  test("TimeoutStopSec outlasts qm's shutdown with the default grace and stop timeouts", () => {
    const defaults = loadConfigText('[models.m]\ncmd = "llama-server"\n', {
      file: "defaults.toml",
      env: {},
      isPortFree: () => true,
    });
    const timeout = /^(\d+)s?$/.exec(setting("TimeoutStopSec") ?? "");
    expect(timeout).not.toBeNull();
    expect(Number(timeout![1])).toBeGreaterThan(shutdownBoundS(defaults));
  });

  test("qm's default state_dir under the unit's environment is its StateDirectory", () => {
    const stateDirectory = setting("StateDirectory");
    expect(stateDirectory).toBe("quartermaster");
    expect(defaultStateDir(unitEnv())).toBe(`/var/lib/${stateDirectory}`);
    // Model servers' caches go where the unit lets them write.
    expect(unitEnv().XDG_CACHE_HOME).toBe(`/var/cache/${setting("CacheDirectory")}`);
  });

  test("hardened, but no setting that hides or filters devices (CUDA needs them all)", () => {
    expect(setting("NoNewPrivileges")).toBe("yes");
    expect(setting("ProtectSystem")).toBe("strict");
    expect(Number(setting("LimitNOFILE"))).toBeGreaterThanOrEqual(65536);
    for (const key of [
      "DeviceAllow",
      "DevicePolicy",
      "PrivateDevices",
      "ProtectClock", // implies a DeviceAllow= for the RTC
      "MemoryDenyWriteExecute", // JIT compilers (JavaScriptCore, Triton)
    ]) {
      expect([key, svc.has(key)]).toEqual([key, false]);
    }
    // The reason is written where an administrator tempted to add one will read it.
    expect(unitText).toContain("DeviceAllow=");
    expect(unitText).toMatch(/CUDA/);
  });

  test.skipIf(!Bun.which("systemd-analyze"))(
    "systemd-analyze verify accepts it (skipped where systemd-analyze is not on PATH)",
    () => {
      // verify checks that ExecStart's binary exists; point it at one that does.
      const dir = mkdtempSync(join(tmpdir(), "qm-unit-"));
      const copy = join(dir, "quartermaster.service");
      writeFileSync(copy, unitText.replace("/usr/local/bin/qm ", `${process.execPath} `));
      try {
        const run = Bun.spawnSync(["systemd-analyze", "verify", copy], { stderr: "pipe" });
        expect([run.exitCode, run.stderr.toString()]).toEqual([0, ""]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
