/** Every CustomResourceDefinition tenantry installs, and their generated manifests in deploy/crds. */
import { stringify } from "yaml";
import { ACCESS_CRDS } from "../access/index.js";
import type { CustomResourceDefinition } from "../apis/index.js";
import { BACKUP_CRDS } from "../backup/index.js";
import { CLOUDS_CRDS } from "../clouds/index.js";
import { CLUSTERS_CRDS } from "../clusters/index.js";
import { IDENTITY_CRDS } from "../identity/index.js";
import { MONITOR_CRDS } from "../monitor/index.js";
import { MULTICLUSTER_CRDS } from "../multicluster/index.js";
import { NODES_CRDS } from "../nodes/index.js";
import { RUNTIMES_CRDS } from "../runtimes/index.js";
import { STORAGE_CRDS } from "../storage/index.js";
import { TENANTS_CRDS } from "../tenants/index.js";

export const ALL_CRDS: readonly CustomResourceDefinition[] = [
  ...TENANTS_CRDS,
  ...IDENTITY_CRDS,
  ...ACCESS_CRDS,
  ...MULTICLUSTER_CRDS,
  ...RUNTIMES_CRDS,
  ...MONITOR_CRDS,
  ...BACKUP_CRDS,
  ...STORAGE_CRDS,
  ...CLUSTERS_CRDS,
  ...CLOUDS_CRDS,
  ...NODES_CRDS,
];

/** Where the generated manifests live, relative to the repository root. */
export const CRD_MANIFEST_DIR = "deploy/crds";

export const CRD_MANIFEST_HEADER =
  "# Generated from the TypeBox schemas in src/<capability>/api by `npx tsx scripts/generate-crds.ts`. Edit the schemas there, not this file.\n";

/** The manifest files of {@link ALL_CRDS}: `<group>_<plural>.yaml` → YAML text. */
export function crdManifests(): { file: string; content: string }[] {
  return ALL_CRDS.map((crd) => ({
    file: `${crd.spec.group}_${crd.spec.names.plural}.yaml`,
    content: CRD_MANIFEST_HEADER + stringify(crd, { lineWidth: 0 }),
  }));
}
