import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..");
/** The client's sources (a Vite project). */
export const DASHBOARD_SOURCE_DIR = join(root, "src", "dashboard", "web");
/**
 * Where the built client goes and the server serves it from: a folder of its own, beside the
 * compiled server code in dist/dashboard (Vite empties it at every build; the server serves only it).
 */
export const DASHBOARD_ASSETS_DIR = join(root, "dist", "dashboard", "client");

function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

/**
 * Whether the built client is missing or older than its sources or the locked dependencies. An
 * installed tenantry ships the built client without its sources: never stale.
 */
export function dashboardAssetsStale(): boolean {
  if (!existsSync(DASHBOARD_SOURCE_DIR)) return false;
  let built: number;
  try {
    built = statSync(join(DASHBOARD_ASSETS_DIR, "index.html")).mtimeMs;
  } catch {
    return true;
  }
  return Math.max(newest(DASHBOARD_SOURCE_DIR), newest(join(root, "package-lock.json"))) > built;
}

/**
 * Builds the client with Vite when missing or stale (a second or two); a no-op otherwise. Vite is a
 * development dependency: an installed tenantry ships the built client.
 */
export async function ensureDashboardAssets(log: (line: string) => void = () => undefined): Promise<boolean> {
  if (!dashboardAssetsStale()) return false;
  await buildDashboardAssets(log);
  return true;
}

/** Builds the client with Vite into DASHBOARD_ASSETS_DIR. */
export async function buildDashboardAssets(log: (line: string) => void = () => undefined): Promise<void> {
  const started = Date.now();
  log("building the dashboard's client (vite)…\n");
  const { build } = await import("vite");
  await build({ configFile: join(DASHBOARD_SOURCE_DIR, "vite.config.ts"), logLevel: "warn" });
  log(`dashboard client built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
