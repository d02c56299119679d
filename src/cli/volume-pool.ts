/**
 * `tenantry volume-pool create|list|get|delete`: VolumePools — a StorageClass served by tenantry's
 * pooled provisioner, the sizes of volume kept ready ahead of demand, and the backing stores the
 * volumes are allocated on.
 */
import type { Command } from "commander";
import { UserError } from "../common/index.js";
import { type BackingStore, VOLUME_POOL_CRD, type VolumePool } from "../storage/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import {
  age,
  collect,
  createObject,
  integer,
  keyValue,
  type ObjectKind,
  objectGroup,
  readyOf,
  registerObjectCommands,
} from "./objects.js";
import { columns } from "./output.js";

const STORE_KEYS = ["name", "path", "node", "zone", "capacity"] as const;

/** `name=ssd,path=/srv/volumes,node=worker-1,capacity=100Gi` (or `zone=` instead of `node=`). */
export function parseStore(text: string): BackingStore {
  const fields: Record<string, string> = {};
  for (const part of text.split(",")) {
    const [key, value] = keyValue(part, "--store");
    if (!(STORE_KEYS as readonly string[]).includes(key))
      throw new UserError(`--store "${text}": "${key}" is not one of ${STORE_KEYS.join(", ")}`);
    fields[key] = value;
  }
  return fields as unknown as BackingStore;
}

const pools: ObjectKind<VolumePool> = {
  crd: VOLUME_POOL_CRD,
  noun: "volume pool",
  columns: [
    ["NAME", (p) => p.metadata!.name!],
    ["CLASS", (p) => p.spec.storageClass.name],
    ["SIZES", (p) => p.spec.sizes.join(",")],
    [
      "READY VOLUMES",
      (p) => (p.status?.sizes ?? []).map((s) => `${s.size}:${s.ready}/${s.target}`).join(" "),
    ],
    ["ENCRYPTION", (p) => p.spec.encryption ?? "Required"],
    ["READY", readyOf],
    ["AGE", (p) => age(p)],
  ],
  describe: (p) =>
    [
      `Name:          ${p.metadata!.name}`,
      `StorageClass:  ${p.spec.storageClass.name}${p.spec.storageClass.default ? " (default)" : ""}`,
      `Encryption:    ${p.spec.encryption ?? "Required"}`,
      ...(p.status?.conditions ?? []).map(
        (c) => `${`${c.type}:`.padEnd(15)}${c.status} ${c.reason}: ${c.message}`,
      ),
      ...columns([
        ["  SIZE", "READY", "TARGET", "ALLOCATING", "BOUND", "FAILED", "FORECAST"],
        ...(p.status?.sizes ?? []).map((s) => [
          `  ${s.size}`,
          String(s.ready),
          String(s.target),
          String(s.allocating),
          String(s.bound),
          String(s.failed),
          s.forecast,
        ]),
      ]),
      ...columns([
        ["  STORE", "PATH", "WHERE", "VOLUMES", "ALLOCATED", "CAPACITY", "EXHAUSTED"],
        ...p.spec.backingStores.map((b) => {
          const s = p.status?.stores?.find((x) => x.name === b.name);
          return [
            `  ${b.name}`,
            b.path,
            b.node ? `node ${b.node}` : `zone ${b.zone}`,
            String(s?.volumes ?? 0),
            s?.allocated ?? "0",
            b.capacity,
            s?.exhausted ? `yes${s.reason ? ` (${s.reason})` : ""}` : "no",
          ];
        }),
      ]),
    ].join("\n"),
  flags: {
    "spec.storageClass": "--storage-class",
    "spec.sizes": "--size",
    "spec.backingStores": "--store",
    "spec.encryption": "--encryption",
    "spec.warm": "--warm-min/--warm-max",
  },
};

export function registerVolumePoolCommands(program: Command): void {
  const group = objectGroup(
    program,
    "volume-pool",
    pools,
    "VolumePools: a StorageClass whose volumes are allocated ahead of demand (and encrypted per tenant)",
  );
  group
    .command("create")
    .description("create a pool and the StorageClass it serves")
    .argument("<name>", "pool name")
    .requiredOption("--storage-class <name>", "the StorageClass claims name")
    .requiredOption("--size <size>", "a volume size kept ready, repeatable (e.g. 1Gi)", collect)
    .requiredOption(
      "--store <fields>",
      "a backing store, repeatable: name=N,path=/abs/dir,node=NODE|zone=ZONE,capacity=100Gi",
      collect,
    )
    .option("--encryption <mode>", "Required (default), IfAvailable or Disabled")
    .option("--default-class", "make its StorageClass the cluster's default")
    .option("--binding-mode <mode>", "WaitForFirstConsumer (default) or Immediate")
    .option("--reclaim-policy <policy>", "Delete (default) or Retain")
    .option("--warm-min <n>", "volumes of each size always kept ready (default 1)")
    .option("--warm-max <n>", "most volumes of one size kept ready (default 100)")
    .option("--dry-run", "validate (here and by the API server), create nothing")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      const warm = {
        ...(opts.warmMin !== undefined ? { min: integer(opts.warmMin, "--warm-min") } : {}),
        ...(opts.warmMax !== undefined ? { max: integer(opts.warmMax, "--warm-max") } : {}),
      };
      const body: VolumePool = {
        apiVersion: TENANTS_API_VERSION,
        kind: "VolumePool",
        metadata: { name },
        spec: {
          storageClass: {
            name: opts.storageClass,
            ...(opts.defaultClass ? { default: true } : {}),
            ...(opts.bindingMode ? { volumeBindingMode: opts.bindingMode } : {}),
            ...(opts.reclaimPolicy ? { reclaimPolicy: opts.reclaimPolicy } : {}),
          },
          sizes: opts.size,
          backingStores: (opts.store as string[]).map(parseStore),
          ...(opts.encryption ? { encryption: opts.encryption } : {}),
          ...(Object.keys(warm).length ? { warm } : {}),
        },
      };
      await createObject(command, pools, body, opts);
    });
  registerObjectCommands(group, pools);
}
