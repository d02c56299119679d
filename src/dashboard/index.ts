/** The web dashboard (capability C7): its only public entry. */

export {
  buildDashboardAssets,
  DASHBOARD_ASSETS_DIR,
  dashboardAssetsStale,
  ensureDashboardAssets,
} from "./build.js";
export { DASHBOARD, DashboardCapability, type DashboardCapabilityOptions } from "./capability.js";
export { type DashboardOptions, type RunningDashboard, startDashboard } from "./server.js";
