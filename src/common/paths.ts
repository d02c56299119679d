import { homedir } from "node:os";
import { join } from "node:path";

/** Where built Kubernetes components are cached, shared by every checkout on the machine. */
export function cacheRoot(): string {
  if (process.env.TENANTRY_CACHE_DIR) return process.env.TENANTRY_CACHE_DIR;
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "tenantry");
}

/** Where local clusters keep their data, kubeconfigs and logs unless told otherwise. */
export function defaultClustersDir(): string {
  if (process.env.TENANTRY_CLUSTERS_DIR) return process.env.TENANTRY_CLUSTERS_DIR;
  return join(process.env.XDG_STATE_HOME ?? join(homedir(), ".local", "state"), "tenantry", "clusters");
}
