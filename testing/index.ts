/**
 * What tests and benchmarks share to drive tenantry from outside: tenantry as a child process, an
 * HTTP/WebSocket backend that echoes what reaches it, virtual nodes with no peer behind them, and
 * the replication fixtures. Never imported by src/ (nothing here ships).
 */
export { type Backend, startBackend } from "./backend.js";
export {
  standbyTenantryProcess,
  startTenantryProcess,
  type TenantryProcess,
  type TenantryProcessOptions,
} from "./tenantry-process.js";
export { FAKE_NODE_RUN_LABEL, fakeVirtualNodes } from "./virtual-nodes.js";
