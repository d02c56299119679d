/** Builds the dashboard's client (Vite) into dist/dashboard/client when missing or stale; `--force` always. */
import { buildDashboardAssets, ensureDashboardAssets } from "../src/dashboard/index.js";

const log = (line: string) => process.stderr.write(line);
if (process.argv.includes("--force")) await buildDashboardAssets(log);
else if (!(await ensureDashboardAssets(log))) log("the dashboard's client is up to date\n");
