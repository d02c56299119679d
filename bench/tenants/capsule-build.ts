/**
 * Builds Capsule's manager from its Go module (wrapper module in bench/capsule, pinned by its
 * go.mod) into tenantry's component cache (bench/support/go-peer.ts). Next to the binary it keeps
 * the CRDs and webhook templates from the module's own source, so a run needs nothing from outside
 * the cache.
 */
import { existsSync } from "node:fs";
import { cp, mkdir, readdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureGoPeer, PeerUnavailable, pinnedModuleVersion } from "../support/go-peer.js";

export { PeerUnavailable as CapsuleUnavailable } from "../support/go-peer.js";

export const CAPSULE_MODULE = "github.com/projectcapsule/capsule";
export const wrapperDir = join(dirname(fileURLToPath(import.meta.url)), "..", "capsule");

export interface CapsuleBuild {
  version: string;
  binary: string;
  /** CRD manifests from the module (charts/capsule/crds or config/crd/bases). */
  crdDir: string;
  /** The chart's webhook configuration templates, from which webhook paths and rules are read. */
  webhookTemplates: string[];
  reused: boolean;
}

export function pinnedCapsuleVersion(): Promise<string> {
  return pinnedModuleVersion(wrapperDir, CAPSULE_MODULE);
}

async function crdSource(moduleDir: string): Promise<string> {
  for (const candidate of ["charts/capsule/crds", "config/crd/bases"]) {
    const dir = join(moduleDir, candidate);
    if (existsSync(dir) && (await readdir(dir)).some((f) => f.endsWith(".yaml"))) return dir;
  }
  throw new PeerUnavailable(
    `ls ${moduleDir}/{charts/capsule/crds,config/crd/bases}`,
    "no CRD manifests in the module",
  );
}

const WEBHOOK_TEMPLATES = ["mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml"];

export async function ensureCapsule(): Promise<CapsuleBuild> {
  const build = await ensureGoPeer({
    name: "capsule",
    module: CAPSULE_MODULE,
    wrapperDir,
    // The manager's main package: `cmd` in recent releases, the module root in older ones.
    mainPackage: (moduleDir) =>
      existsSync(join(moduleDir, "cmd", "main.go")) ? `${CAPSULE_MODULE}/cmd` : CAPSULE_MODULE,
    ldflags: (version) => [`-X main.GitTag=${version}`, `-X main.GitRepo=${CAPSULE_MODULE}`],
    extra: async (moduleDir, staging) => {
      await cp(await crdSource(moduleDir), join(staging, "crds"), { recursive: true });
      await mkdir(join(staging, "webhooks"));
      for (const name of WEBHOOK_TEMPLATES) {
        const from = join(moduleDir, "charts", "capsule", "templates", name);
        if (!existsSync(from)) throw new PeerUnavailable(`cat ${from}`, "the chart has no such template");
        await cp(from, join(staging, "webhooks", name));
      }
    },
  });
  return {
    version: build.version,
    binary: build.binary,
    crdDir: join(build.dir, "crds"),
    webhookTemplates: WEBHOOK_TEMPLATES.map((name) => join(build.dir, "webhooks", name)),
    reused: build.reused,
  };
}
