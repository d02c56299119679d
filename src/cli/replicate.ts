/**
 * `tenantry replicate create|list|get|delete`: ReplicatedDeployments (Liqo thesis, chapter 7) —
 * one Deployment per combination of the generation labels' values over the peered clusters the
 * namespace is offloaded to, each pinned to its clusters' virtual nodes.
 */
import type { V1Deployment, V1DeploymentSpec } from "@kubernetes/client-node";
import type { Command } from "commander";
import { UserError } from "../common/index.js";
import { REPLICATED_DEPLOYMENT_CRD, type ReplicatedDeployment } from "../multicluster/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import { parseClusterSelector } from "./cluster-selector.js";
import {
  age,
  collect,
  createObject,
  EXIT,
  integer,
  namespaceOf,
  type ObjectKind,
  objectGroup,
  readDocuments,
  readyOf,
  registerObjectCommands,
} from "./objects.js";
import { columns } from "./output.js";

const replicated: ObjectKind<ReplicatedDeployment> = {
  crd: REPLICATED_DEPLOYMENT_CRD,
  noun: "replicated deployment",
  columns: [
    ["NAME", (r) => r.metadata!.name!],
    ["DEPLOYMENTS", (r) => String(r.status?.deploymentCount ?? 0)],
    ["AVAILABLE", (r) => String(r.status?.availableDeploymentCount ?? 0)],
    ["GENERATION LABELS", (r) => (r.spec.generationLabels ?? []).join(",") || "(per cluster)"],
    ["READY", readyOf],
    ["AGE", (r) => age(r)],
  ],
  describe: (r) => {
    const ready = r.status?.conditions?.find((c) => c.type === "Ready");
    return [
      `Name:              ${r.metadata!.name}`,
      `Namespace:         ${r.metadata!.namespace}`,
      `Generation labels: ${(r.spec.generationLabels ?? []).join(", ") || "(none: one replica per cluster)"}`,
      `Ready:             ${ready ? `${ready.status} ${ready.reason}: ${ready.message}` : "Unknown"}`,
      ...columns([
        ["  REPLICA", "COMBINATION", "VIRTUAL NODES", "READY", "AVAILABLE", "ERROR"],
        ...(r.status?.deployments ?? []).map((d) => [
          `  ${d.name}`,
          Object.entries(d.generationLabelsValues ?? {})
            .map(([k, v]) => `${k}=${v}`)
            .join(","),
          (d.virtualNodes ?? []).join(","),
          `${d.readyReplicas ?? 0}/${d.replicas ?? 0}`,
          d.obsolete ? "obsolete" : String(d.available),
          d.error ?? "",
        ]),
      ]),
    ].join("\n");
  },
  flags: {
    "spec.template.spec": "--file or --image",
    "spec.generationLabels": "--generation-label",
    "spec.selectedClusters": "--clusters",
  },
};

/** The Deployment to replicate: from a Deployment manifest, or a one-container one from flags. */
function deploymentOf(
  name: string,
  opts: { file?: string; image?: string; replicas?: string; port?: string },
): ReplicatedDeployment["spec"]["template"] {
  if (opts.file && opts.image) throw new UserError("give --file or --image, not both", EXIT.badInput);
  if (opts.file) {
    const [deployment, ...rest] = readDocuments(opts.file) as V1Deployment[];
    if (!deployment || rest.length || deployment.kind !== "Deployment" || !deployment.spec)
      throw new UserError(`--file ${opts.file}: must hold one Deployment (kind: Deployment, with a spec)`);
    const { labels, annotations } = deployment.metadata ?? {};
    return {
      ...(labels || annotations
        ? { metadata: { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) } }
        : {}),
      spec: deployment.spec as ReplicatedDeployment["spec"]["template"]["spec"],
    };
  }
  if (!opts.image) throw new UserError("give --image (or --file with a Deployment)", EXIT.badInput);
  const labels = { app: name };
  const spec: V1DeploymentSpec = {
    replicas: integer(opts.replicas ?? "1", "--replicas", 0, 10_000),
    selector: { matchLabels: labels },
    template: {
      metadata: { labels },
      spec: {
        containers: [
          {
            name,
            image: opts.image,
            ...(opts.port ? { ports: [{ containerPort: integer(opts.port, "--port", 1, 65_535) }] } : {}),
          },
        ],
      },
    },
  };
  return { spec: spec as ReplicatedDeployment["spec"]["template"]["spec"] };
}

export function registerReplicateCommands(program: Command): void {
  const group = objectGroup(
    program,
    "replicate",
    replicated,
    "ReplicatedDeployments: one Deployment per region (or other label) over the clusters a namespace is offloaded to",
  );
  group
    .command("create")
    .description("replicate a Deployment once per combination of generation-label values")
    .argument("<name>", "name; replicas are <name>-<hash>")
    .option("-f, --file <file>", "the Deployment to replicate (a manifest; - for stdin)")
    .option("--image <image>", "or a one-container Deployment of this image")
    .option("--replicas <n>", "pods of each replica (with --image)", "1")
    .option("--port <port>", "container port (with --image)")
    .option(
      "--generation-label <key>",
      "a virtual-node label key, repeatable: one replica per combination of values (none: one per cluster)",
      collect,
    )
    .option(
      "--clusters <term>",
      "which clusters may hold a replica, a node selector term over their labels (k=v,k in (a,b),!k); repeatable, ORed",
      collect,
    )
    .option("--dry-run", "validate (here and by the API server), create nothing")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      const selectedClusters = parseClusterSelector((opts.clusters as string[] | undefined) ?? []);
      const body: ReplicatedDeployment = {
        apiVersion: TENANTS_API_VERSION,
        kind: "ReplicatedDeployment",
        metadata: { name, namespace: namespaceOf(command) },
        spec: {
          template: deploymentOf(name, opts),
          ...(opts.generationLabel ? { generationLabels: opts.generationLabel } : {}),
          ...(selectedClusters ? { selectedClusters } : {}),
        },
      };
      await createObject(command, replicated, body, opts);
    });
  registerObjectCommands(group, replicated);
}
